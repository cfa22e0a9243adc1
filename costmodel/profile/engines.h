// The engines whose costs a profile can describe (Profile::engine) and how their names are read.
#ifndef SPECPLAN_COSTMODEL_ENGINES_H_
#define SPECPLAN_COSTMODEL_ENGINES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace specplan::costmodel {

// Engines a profile can describe, in the order a lookup without --engine tries them: the three
// engines whose kernel timings compose profiles (costmodel/compose/compose.h), then "specplan"
// (this project's own LibTorch runtime, measured by calibrate). kRuntimeEngine names the last.
inline constexpr char kRuntimeEngine[] = "specplan";
const std::vector<std::string>& KnownEngines();  // {"sglang", "vllm", "trtllm", "specplan"}
// Canonical engine name, case-insensitive, with aliases ("tensorrt-llm", "trt-llm" = "trtllm").
// INVALID_ARGUMENT naming the value and the known names otherwise ("engine 'foo': unknown (known:
// sglang, vllm, trtllm, specplan)").
absl::StatusOr<std::string> ParseEngine(const std::string& name);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_ENGINES_H_
