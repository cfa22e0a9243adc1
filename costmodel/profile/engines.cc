#include "costmodel/profile/engines.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace specplan::costmodel {

const std::vector<std::string>& KnownEngines() {
  static const std::vector<std::string> engines = {"sglang", "vllm", "trtllm", kRuntimeEngine};
  return engines;
}

absl::StatusOr<std::string> ParseEngine(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const std::string& engine : KnownEngines()) {
    if (lower == engine) return engine;
  }
  for (const char* alias : {"tensorrt-llm", "tensorrt_llm", "trt-llm", "trt_llm"}) {
    if (lower == alias) return std::string("trtllm");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "engine '", name, "': unknown (known: ", absl::StrJoin(KnownEngines(), ", "), ")"));
}

}  // namespace specplan::costmodel
