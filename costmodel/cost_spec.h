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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/model_spec.h"
#include "costmodel/profile.h"

namespace specplan::costmodel {

struct CostSpec {
  std::string model;          // registry name or HF config.json path (--model); may be "" with a
                              // profile_path (the profile's own model)
  std::string gpu;            // registry name or GPU spec JSON path (--gpu); may be "" likewise
  std::string engine;         // "sglang", "vllm", "trtllm", "specplan" or an alias ParseEngine
                              // takes (--engine); "" = default (see the top of this file)
  std::string profile_path;   // explicit profile JSON (--profile); "" = the bundled lookup
  std::string latency_model;  // kind of the profile to use (--latency-model); "" = its default
  DType dtype = DType::kBFloat16;
  int64_t tp = 0;         // tensor parallelism (--tp); 0 = not given: the profile's, else 1
  std::string calib_dir;  // where bundled profiles live; "" = DefaultCalibDir()
};

// The latency model `spec` describes. Errors name the flag and value:
//   INVALID_ARGUMENT: an unknown engine ("--engine foo: unknown (known: sglang, vllm, trtllm,
//     specplan)"); a profile_path whose engine is not the given one ("--engine sglang: profile P
//     describes engine 'specplan'"), or whose model, gpu or tp is not the given one; a bad --tp.
//   NOT_FOUND: a named engine without its bundled file ("--engine sglang: no profile for h100-sxm x
//     qwen3-8b (bf16) at PATH; shipped for h100-sxm x qwen3-8b (bf16): vllm, specplan"); a
//     latency_model other than "roofline" when no profile exists ("--latency-model linear: no
//     profile for ...").
//   Unknown model or GPU names, unreadable or invalid profiles: the registry's or loader's error.
absl::StatusOr<ResolvedLatencyModel> ResolveCost(const CostSpec& spec);

// Engines whose bundled profile for (gpu, model, dtype, tp) exists under calib_dir, in
// KnownEngines() order. gpu and model are registry names as the files use them ("h100-sxm").
std::vector<std::string> BundledEngines(const std::string& calib_dir, const std::string& gpu,
                                        const std::string& model, DType dtype, int64_t tp = 1);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_COST_SPEC_H_
