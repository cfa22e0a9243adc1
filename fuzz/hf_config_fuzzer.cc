// HuggingFace config.json -> ModelSpecFromHfConfigFile -> roofline (every built-in GPU, a few (s,
// c) points) and the spec's own JSON round trip. A spec that parses must give finite, positive
// roofline times and a parameter count without overflow.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/hf_config.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  using namespace specplan::fuzz;
  // Through the file reader --model <config.json> uses (read + parse + ModelSpecFromHfConfig).
  auto spec = costmodel::ModelSpecFromHfConfigFile(WriteScratchFile(AsText(data, size)));
  if (!spec.ok()) return 0;
  CheckOk(costmodel::ValidateModelSpec(*spec), "ValidateModelSpec after ModelSpecFromHfConfig");
  SPECPLAN_CHECK(spec->ParameterCount() > 0);
  auto again = costmodel::ModelSpecFromJson(costmodel::ModelSpecToJson(*spec));
  CheckOk(again.status(), "ModelSpecFromJson(ModelSpecToJson)");
  SPECPLAN_CHECK(again->layers == spec->layers && again->hidden == spec->hidden &&
                 again->vocab == spec->vocab && again->head_dim == spec->head_dim);

  static const std::vector<costmodel::GpuSpec> kGpus = [] {
    std::vector<costmodel::GpuSpec> gpus;
    for (const std::string& name : costmodel::KnownGpuNames()) {
      if (name.find('=') != std::string::npos) continue;  // aliases
      auto g = costmodel::LookupGpu(name);
      if (g.ok()) gpus.push_back(*g);
    }
    return gpus;
  }();
  for (const costmodel::GpuSpec& gpu : kGpus) {
    for (int64_t s : {int64_t{1}, int64_t{64}, int64_t{8192}}) {
      for (int64_t c : {int64_t{0}, int64_t{4096}, int64_t{1} << 24}) {
        const costmodel::RooflineEstimate e = costmodel::EstimateRoofline(*spec, gpu, s, c);
        SPECPLAN_CHECK(std::isfinite(e.seconds) && e.seconds > 0, "roofline time not finite > 0");
        (void)costmodel::RooflineEstimateToJson(e);
      }
    }
  }
  return 0;
}
