// CostSpec: everything that chooses how a verification pass is priced — target model, GPU, engine,
// dtype, tensor parallelism, an explicit profile, a latency model kind — and ResolveCost, the one
// function that turns it into a latency model. The CLI's cost flags (cli/cost_flags.h) fill a
// CostSpec; every command that prices a pass resolves through ResolveCost.
//
// Which profile: an explicit profile_path, else the bundled one under calib_dir
// (BundledProfilePath(calib_dir, gpu, model, dtype, tp, engine)). A named engine takes only that
// engine's file ("specplan" = the file without "@"); no engine takes the first of KnownEngines()
// (sglang, vllm, trtllm, specplan) whose file exists, else the bare roofline.
#ifndef SPECPLAN_COSTMODEL_COST_SPEC_H_
#define SPECPLAN_COSTMODEL_COST_SPEC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/latency_model.h"
#include "costmodel/model_spec.h"

namespace specplan::costmodel {

struct CostSpec {
  std::string model;          // registry name or HF config.json path; may be "" with a
                              // profile_path (the profile's own model)
  std::string gpu;            // registry name or GPU spec JSON path; may be "" likewise
  std::string engine;         // "sglang", "vllm", "trtllm", "specplan" or an alias ParseEngine
                              // takes; "" = default (see the top of this file)
  std::string profile_path;   // explicit profile JSON; "" = the bundled lookup
  std::string latency_model;  // kind of the profile to use; "" = its default
  DType dtype = DType::kBFloat16;
  int64_t tp = 0;         // tensor parallelism; 0 = not given: the profile's, else 1
  std::string calib_dir;  // where bundled profiles live; "" = DefaultCalibDir()
};

// What a cost spec resolved to (ResolveCost).
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
// The latency model `spec` describes. Errors begin with the CostSpec field and its value,
// "<field> = '<value>': " ("tp = <N>: " for the number), so that a front end can name its own
// option instead (the CLI's cli/cost_flags.h, "--engine foo: ..."):
//   INVALID_ARGUMENT: an unknown engine ("engine = 'foo': unknown (known: sglang, vllm, trtllm,
//     specplan)"); a profile_path whose engine is not the given one ("engine = 'sglang': profile P
//     describes engine 'specplan'"), or whose model, gpu or tp is not the given one; a bad tp
//     ("tp = 3: must divide n_q = 64 (query heads)").
//   NOT_FOUND: a named engine without its bundled file ("engine = 'sglang': no profile for
//     h100-sxm x qwen3-8b (bf16) at PATH; shipped for this GPU and model: vllm, specplan (or set
//     profile_path)"); a latency_model other than "roofline" when no profile exists
//     ("latency_model = 'linear': no profile for ...").
//   Unknown model or GPU names, unreadable or invalid profiles: the registry's or loader's error.
absl::StatusOr<ResolvedLatencyModel> ResolveCost(const CostSpec& spec);

// Engines whose bundled profile for (gpu, model, dtype, tp) exists under calib_dir, in
// KnownEngines() order. gpu and model are registry names as the files use them ("h100-sxm").
std::vector<std::string> BundledEngines(const std::string& calib_dir, const std::string& gpu,
                                        const std::string& model, DType dtype, int64_t tp = 1);

// ResolveCost of a spec without an engine: with profile_path set, loads
// it (and checks it matches model/gpu when those are given); otherwise the first bundled profile
// of KnownEngines() for (gpu, model, dtype, tp), else the bare roofline. `kind` picks a model of
// the profile other than its default (errors name latency_model); `tp` as CostSpec::tp (0 = not
// given).
// Kept for callers that do not choose an engine; see ResolveCost for the rules and errors.
absl::StatusOr<ResolvedLatencyModel> ResolveLatencyModel(
    const std::string& model, const std::string& gpu, const std::string& profile_path,
    DType dtype = DType::kBFloat16, const std::string& kind = "", int64_t tp = 0);
// Convenience for callers that only need the model.
absl::StatusOr<std::unique_ptr<LatencyModel>> LoadLatencyModel(const std::string& model,
                                                               const std::string& gpu,
                                                               const std::string& profile_path);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_COST_SPEC_H_
