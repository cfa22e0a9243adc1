// Operation Compose: engine-grade profiles composed from engines' per-kernel timings
// (costmodel/compose/compose.h), one per (kernel folder, target model), and where each is written.
// Serves `specplan profiles compose` and the Python module's compose_profile.
//
// Composing and writing are two steps: Compose prices every profile and checks every output path
// before anything is written, so bad input (or a path inside the shipped profiles) writes nothing;
// Write then replaces each file atomically.
//
//   ComposeRequest req;  req.kernel_dirs = {"data/kernels/h100_sxm/sglang-0.5.14"};
//   req.models = {"qwen3-8b"};  req.out_file = "/tmp/qwen3-8b.json";
//   absl::StatusOr<ComposeResult> r = ops::Compose(req);  // then ops::Write(*r)
#ifndef SPECPLAN_OPS_COMPOSE_OP_H_
#define SPECPLAN_OPS_COMPOSE_OP_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/compose/compose.h"
#include "costmodel/profile/profile.h"

namespace specplan::ops {

struct ComposeRequest {
  std::vector<std::string> kernel_dirs;  // engine folders (aiconfigurator's layout), >= 1
  std::vector<std::string> models;       // registry names or HF config.json paths, >= 1
  std::string dtype = "bf16";            // must be the tables' (they hold bf16 only)
  // engine, gpu, tp, grids, drafters, unmeasured_terms, allow_extrapolation; dtype is set from
  // the field above.
  costmodel::ComposeOptions options;
  // Where the profiles go: exactly one of out_file (one folder and one model) and out_dir
  // (<out_dir>/<gpu>/<model>-<dtype>@<engine>.json each); both empty: composed, not written.
  std::string out_file;
  std::string out_dir;
  // Directories no profile is written into unless force (the shipped calib/: the front end's
  // util/shipped_dir.h ShippedCalibDirs).
  std::vector<std::string> protected_dirs;
  bool force = false;
};

struct ComposedProfile {
  costmodel::Profile profile;
  std::string path;    // where Write puts it; "" when the request names no output
  double seconds = 0;  // time composing it took
  double t1_ms = 0;    // T(1, 1, 1024) on its table: one sequence, one token, 1,024 cached
  double t64_ms = 0;   // T(64, 1, 1024): 64 such sequences in one ragged pass
};

struct ComposeResult {
  std::vector<ComposedProfile> profiles;  // folder-major: every model of the first folder first
  double seconds = 0;                     // the whole composition
};

// The request alone: folders and models given, dtype known, the outputs consistent (errors name
// the field: "--out" style names are the front end's, these are "out_file", "out_dir").
absl::Status Validate(const ComposeRequest& req);
// Validates, loads each folder's tables, composes every profile and checks every output path
// against protected_dirs; writes nothing. Errors name the folder and model
// ("<dir> x <model>: ...").
absl::StatusOr<ComposeResult> Compose(const ComposeRequest& req);
// Writes each composed profile to its path, atomically, in order; stops at the first error.
absl::Status Write(const ComposeResult& result);

// The text line of one written profile: "wrote PATH: ENGINE VERSION on GPU, T(1,1,1024) = ...
// ms, T(64,1,1024) = ... ms (...x), composed in ... ms" ('\n'-terminated).
std::string WrittenLine(const ComposedProfile& composed);
// The JSON form: one object per profile (path, gpu, model, dtype, tp, engine, engine_version,
// t1_ms, t64_ms, compose_ms) under "profiles", and "seconds".
nlohmann::json ToJson(const ComposeResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_COMPOSE_OP_H_
