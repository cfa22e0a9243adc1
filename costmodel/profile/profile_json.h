// The profile file: a versioned JSON form of Profile (costmodel/profile/profile.h), read with every
// field checked, and saved atomically.
//
// Format (version 1), every key required unless marked optional:
// {
//   "format": "specplan.profile", "version": 1,
//   "gpu": "h100-sxm", "model": "qwen3-8b", "dtype": "bf16",
//   "gpu_spec": {GpuSpec}, "model_spec": {ModelSpec},   // model_spec.tp: tensor parallelism the
//                                                    // samples were measured at (absent = 1)
//   "device_name": str, "timer": "cupti" | "cuda_events" | "host_clock" | "external",
//   "software": {str: str},                       // driver, CUDA, LibTorch versions (free-form)
//   "created_utc": str,
//   "default_model": "roofline" | "linear" | "per_term" | "overlap" | "kernel_sum" | "table",
//   "models": {"linear": {"a", "b_s"},            // each optional
//              "per_term": {"compute", "compute_overhead_s", "weights", "kv_attention"},
//              "overlap": {"gemm", "attention", "weights", "kv_attention", "p", "overhead_s",
//                          "tile": int},
//              "kernel_sum": {"overhead_s", "gemm", "weights", "p", "tile": int, "decode",
//                             "verify", "verify_overhead_s", "attention_tile": int, "attention",
//                             "elementwise"},
//              "table": {"s": [int], "c": [int], "seconds": [[float] per c],
//                        "b": [int], "batch_seconds": [[[float] per c] per b],  // b optional
//                        "batch_s": [int], "batch_c": [int]}},  // optional: the layers' grid
//   "heldout": {"<kind>": {"n", "rmse_s", "mape", "max_abs_s"}},   // scores on held-out samples
//                                                                   // ({} when none were held out)
//   "cv": {"<kind>": {"n", "rmse_s", "mape", "max_abs_s"}},        // optional: cross-validated
//   "cv_method": str,                             // optional: "leave-one-out" or "<k>-fold"
//   "provenance": str,                            // optional: where the samples come from
//   "engine": "sglang" | "vllm" | "trtllm" | "specplan",  // optional (absent = "specplan"):
//                                                 // whose kernels the costs describe
//   "engine_version": str,                        // optional: e.g. "0.5.14"
//   "notes": [str],                               // optional: models the fit dropped or skipped
//   "samples": [{"s", "c", "seconds", "heldout": bool, "b": int}]   // b optional (absent = 1)
// }
// The batch axis: a sample with "b" = B > 1 timed one ragged pass of B sequences, each verifying
// s tokens over c cached tokens (calibrate --b-grid); the table's "b"/"batch_seconds" hold those
// passes as layers over one (s, c) grid of their own ("batch_s"/"batch_c", absent when it is the
// single-sequence grid). Files without it (every profile written before it
// existed) load as single-sequence profiles. Files written before "overlap", "kernel_sum", "cv",
// "cv_method", "provenance", "engine" and "notes" existed still load (without "engine": profiles
// of specplan's own runtime).
// Where bundled files live and what they are called: costmodel/profile/calib_dir.h.
#ifndef SPECPLAN_COSTMODEL_PROFILE_JSON_H_
#define SPECPLAN_COSTMODEL_PROFILE_JSON_H_

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/profile/profile.h"
#include "util/env.h"

namespace specplan::costmodel {

nlohmann::json ProfileToJson(const Profile& profile);
// Validates everything; errors name the field path and value (e.g. "models.linear.a = nan").
absl::StatusOr<Profile> ProfileFromJson(const nlohmann::json& j);

absl::StatusOr<Profile> LoadProfile(const std::string& path);
// Atomic replace through `env` (util/atomic_file.h): writes <path>.tmp.<pid>, fsyncs, renames over
// path, fsyncs the directory. On any error the previous file at `path` is untouched. Creates parent
// directories.
absl::Status SaveProfile(const Profile& profile, const std::string& path,
                         Env* env = Env::Default());

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_PROFILE_JSON_H_
