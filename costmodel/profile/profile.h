// Profile: the calibrated latency profile of one (gpu, model, dtype, tp, engine) in memory, and the
// latency models it can build. Its JSON file form is costmodel/profile/profile_json.h, fitting one
// from samples costmodel/fit/profile_fit.h, the checks on its coefficients
// costmodel/profile/profile_validate.h, where bundled ones live and what they are called
// costmodel/profile/calib_dir.h.
#ifndef SPECPLAN_COSTMODEL_PROFILE_H_
#define SPECPLAN_COSTMODEL_PROFILE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/fit/fit.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/profile/engines.h"
#include "costmodel/step/drafter_arch.h"

namespace specplan::costmodel {

inline constexpr int kProfileVersion = 1;

struct ProfileSample {
  LatencySample sample;
  bool heldout = false;  // true: scored, not fitted
};

// One drafter architecture's forward on this GPU in this engine, composed from the same kernel
// tables as the target's table (costmodel/compose/compose.h ComposeDrafterTable): table cell (b, s,
// c) is one drafter forward of b sequences, each s new tokens over c cached; s > 1 is the extend
// forward over tokens the target verified (with the fc over its hidden states where the head has
// one).
struct DrafterProfile {
  DrafterArch arch;
  LatencyTable table;
};

struct Profile {
  std::string gpu;    // registry name (or the user spec's name)
  std::string model;  // registry name (or the config's name)
  DType dtype = DType::kBFloat16;
  GpuSpec gpu_spec;
  ModelSpec model_spec;
  std::string device_name;  // what the driver called the device
  std::string timer = "external";
  std::map<std::string, std::string> software;
  std::string created_utc;
  std::string default_model = "roofline";
  std::optional<LinearCoefficients> linear;
  std::optional<PerTermCoefficients> per_term;
  std::optional<OverlapCoefficients> overlap;
  std::optional<KernelSumCoefficients> kernel_sum;
  std::optional<LatencyTable> table;
  std::map<std::string, FitStats> heldout;  // scores on the held-out samples (empty: none held out)
  std::map<std::string, FitStats> cv;       // cross-validated scores over the fitted samples
  std::string cv_method;                    // "leave-one-out", "10-fold"; "" when not run
  // Where the samples come from, e.g. "derived from public measurements: microsoft/vidur@7d47513
  // ..."; "" = not recorded (a profile calibrate measured on this machine's device).
  std::string provenance;
  // Whose kernels the costs describe: "sglang", "vllm", "trtllm" (composed from an engine's kernel
  // timings, costmodel/compose/compose.h) or "specplan" (this project's own runtime, measured by
  // calibrate).
  std::string engine = "specplan";
  std::string engine_version;      // e.g. "0.5.14"; "" when not recorded
  std::vector<std::string> notes;  // what the fit dropped or skipped, and why
  std::vector<ProfileSample> samples;
  // Composed drafter forwards by architecture name ("eagle", "eagle3", "mtp", "draft:MODEL"):
  // what prices T_draft (costmodel/step/step_model.h); empty for measured (specplan) profiles.
  std::map<std::string, DrafterProfile> drafters;
};

// Every latency model kind a profile can hold, in a fixed order: roofline, linear, per_term,
// overlap, kernel_sum, table. The one list the CLI, the server and the loader check against.
const std::vector<std::string>& LatencyModelKinds();

// A profile of `model` on `gpu` with nothing fitted yet: gpu, model and dtype named after the
// specs.
Profile ProfileFor(const ModelSpec& model, const GpuSpec& gpu);

// The latency model a profile describes. kind "" = profile.default_model; also "roofline",
// "linear", "per_term", "overlap", "kernel_sum", "table". NOT_FOUND if the profile lacks that
// model.
absl::StatusOr<std::unique_ptr<LatencyModel>> MakeLatencyModel(const Profile& profile,
                                                               const std::string& kind = "");

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_PROFILE_H_
