// Calibrated latency profile of one (gpu, model, dtype): a versioned JSON file under calib/.
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
// One file per (gpu, model, dtype, tp, engine): calib/<gpu>/<model>-<dtype>[-tp<N>][@<engine>].json
// (BundledProfilePath; no "@" for engine "specplan").
#ifndef SPECPLAN_COSTMODEL_PROFILE_H_
#define SPECPLAN_COSTMODEL_PROFILE_H_

#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/fit.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/latency_models.h"
#include "costmodel/model_spec.h"
#include "util/env.h"

namespace specplan::costmodel {

inline constexpr int kProfileVersion = 1;

struct ProfileSample {
  LatencySample sample;
  bool heldout = false;  // true: scored, not fitted
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
  // timings, costmodel/compose.h) or "specplan" (this project's own runtime, measured by
  // calibrate).
  std::string engine = "specplan";
  std::string engine_version;      // e.g. "0.5.14"; "" when not recorded
  std::vector<std::string> notes;  // what the fit dropped or skipped, and why
  std::vector<ProfileSample> samples;
};

// Checks fitted coefficients as the loader does; errors name the field and value
// ("models.linear.a = 0: must be > 0"). A linear model may have a negative intercept b_s, so it
// is also checked against the roofline it scales: the roofline grows with s and c, so
// a * R(1, 0) + b_s is its smallest prediction and must be > 0.
absl::Status ValidateLinear(const LinearCoefficients& c, const RooflineLatency& roofline);
absl::Status ValidatePerTerm(const PerTermCoefficients& c);
absl::Status ValidateOverlap(const OverlapCoefficients& c);
absl::Status ValidateKernelSum(const KernelSumCoefficients& c);

// Holds out a random `heldout_fraction` of the samples (0 = none), fits every calibrated model
// (linear, per_term, overlap, kernel_sum) on the rest, cross-validates each fitting procedure on
// the rest (leave-one-out up to kMaxLeaveOneOut samples, else 10-fold), scores every model on the
// held-out samples, and picks default_model = the calibrated model with the lowest cross-validated
// MAPE. A model whose fit fails or whose coefficients the loader would reject is dropped with a
// note in Profile::notes, as is a model whose cross-validation fails (it cannot be the default);
// the table is built from all samples when they form a full (s, c) grid, else skipped with a note.
// Samples with b > 1 (passes of b sequences) are fitted and scored with the rest, each priced as
// PredictSample prices it; they become table layers when every b covers the grid (else the table
// keeps the b = 1 samples, with a note).
// If no calibrated model survives, the default is the roofline. The returned profile always passes
// ProfileFromJson(ProfileToJson(profile)). Needs >= 3 valid samples, and >= 3 left to fit.
inline constexpr size_t kMaxLeaveOneOut = 60;
struct FitOptions {
  double heldout_fraction = 0;  // in [0, 1)
  uint64_t seed = 1;            // held-out split and k-fold shuffle
};
absl::StatusOr<Profile> FitProfile(const ModelSpec& model, const GpuSpec& gpu,
                                   const std::vector<LatencySample>& samples,
                                   const FitOptions& options = {});

// What a fit produced, for people: the default model, each model's cross-validated and held-out
// MAPE and RMSE, the fitted samples, and the notes. Lines end in '\n'.
std::string DescribeFit(const Profile& profile);

nlohmann::json ProfileToJson(const Profile& profile);
// Validates everything; errors name the field path and value (e.g. "models.linear.a = nan").
absl::StatusOr<Profile> ProfileFromJson(const nlohmann::json& j);

absl::StatusOr<Profile> LoadProfile(const std::string& path);
// Atomic replace through `env` (util/atomic_file.h): writes <path>.tmp.<pid>, fsyncs, renames over
// path, fsyncs the directory. On any error the previous file at `path` is untouched. Creates parent
// directories.
absl::Status SaveProfile(const Profile& profile, const std::string& path,
                         Env* env = Env::Default());

// Every latency model kind a profile can hold, in a fixed order: roofline, linear, per_term,
// overlap, kernel_sum, table. The one list the CLI, the server and the loader check against.
const std::vector<std::string>& LatencyModelKinds();

// The latency model a profile describes. kind "" = profile.default_model; also "roofline",
// "linear", "per_term", "overlap", "kernel_sum", "table". NOT_FOUND if the profile lacks that
// model.
absl::StatusOr<std::unique_ptr<LatencyModel>> MakeLatencyModel(const Profile& profile,
                                                               const std::string& kind = "");

// Engines a profile can describe, in the order a lookup without --engine tries them: the three
// engines whose kernel timings compose profiles (costmodel/compose.h), then "specplan" (this
// project's own LibTorch runtime, measured by calibrate). kRuntimeEngine names the last.
inline constexpr char kRuntimeEngine[] = "specplan";
const std::vector<std::string>& KnownEngines();  // {"sglang", "vllm", "trtllm", "specplan"}
// Canonical engine name, case-insensitive, with aliases ("tensorrt-llm", "trt-llm" = "trtllm").
// INVALID_ARGUMENT naming the value and the known names otherwise ("engine 'foo': unknown (known:
// sglang, vllm, trtllm, specplan)").
absl::StatusOr<std::string> ParseEngine(const std::string& name);

// Directory of bundled profiles: $SPECPLAN_CALIB_DIR if set, else the repository's calib/ when it
// exists, else the installed copy (<prefix>/share/specplan/calib).
std::string DefaultCalibDir();
// calib/<gpu>/<model>-<dtype>.json under `calib_dir`; calib/<gpu>/<model>-<dtype>-tp<N>.json
// for a profile fitted at tensor parallelism tp = N > 1.
// An engine other than "specplan" is appended as "@<engine>":
// calib/h100-sxm/qwen3-8b-bf16@sglang.json.
std::string BundledProfilePath(const std::string& calib_dir, const std::string& gpu,
                               const std::string& model, DType dtype, int64_t tp = 1,
                               const std::string& engine = kRuntimeEngine);

// What a CLI --model/--gpu/--profile triple resolves to.
// "<gpu>/<model>-<dtype>", e.g. "h100-sxm/qwen3-8b-bf16": how the server and reports name a
// profile (its path under a profiles directory, without ".json"); "-tp<N>" is appended when the
// profile was fitted at tp = N > 1 ("h100-sxm/llama-3.3-70b-bf16-tp4").
// "@<engine>" follows for an engine other than "specplan" ("h100-sxm/qwen3-8b-bf16@sglang").
std::string ProfileId(const std::string& gpu, const std::string& model, DType dtype, int64_t tp = 1,
                      const std::string& engine = kRuntimeEngine);

// What a cost spec resolved to (costmodel/cost_spec.h, ResolveCost).
struct ResolvedLatencyModel {
  std::unique_ptr<LatencyModel> model;
  ModelSpec model_spec;
  GpuSpec gpu_spec;
  std::string profile_path;    // empty when no profile was used (bare roofline)
  std::string profile_id;      // ProfileId of the profile used (with its engine); empty when none
  std::string provenance;      // the profile's provenance ("" when none recorded or no profile)
  std::string engine;          // the profile's engine ("sglang", ..., "specplan"); "" when none
  std::string engine_version;  // the profile's engine_version; "" when not recorded or none
};
// ResolveCost (costmodel/cost_spec.h) of a spec without an engine: with profile_path set, loads
// it (and checks it matches model/gpu when those are given); otherwise the first bundled profile
// of KnownEngines() for (gpu, model, dtype, tp), else the bare roofline. `kind` picks a model of
// the profile other than its default (errors name --latency-model); `tp` is --tp (0 = not given).
// Kept for callers that do not choose an engine; see ResolveCost for the rules and errors.
absl::StatusOr<ResolvedLatencyModel> ResolveLatencyModel(
    const std::string& model, const std::string& gpu, const std::string& profile_path,
    DType dtype = DType::kBFloat16, const std::string& kind = "", int64_t tp = 0);
// Convenience for callers that only need the model.
absl::StatusOr<std::unique_ptr<LatencyModel>> LoadLatencyModel(const std::string& model,
                                                               const std::string& gpu,
                                                               const std::string& profile_path);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_PROFILE_H_
