// The built-in models: each one's config.json as published on the HuggingFace hub, stored as an
// HfConfig (sources in model_registry.cc). The cost model takes its ModelSpec (LookupModel); the
// runtime builds the whole model from the same entry (runtime/model_config.h RegistryConfig).
#ifndef SPECPLAN_COSTMODEL_MODEL_REGISTRY_H_
#define SPECPLAN_COSTMODEL_MODEL_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/hardware/hf_config.h"
#include "costmodel/hardware/model_spec.h"

namespace specplan::costmodel {

// Case-insensitive. NotFound names every known model.
absl::StatusOr<HfConfig> LookupHfConfig(const std::string& name);
absl::StatusOr<ModelSpec> LookupModel(const std::string& name);  // ToModelSpec(LookupHfConfig)
std::vector<std::string> KnownModelNames();

// Resolves a --model argument: a built-in name, or a path to a config.json (or a directory holding
// one).
absl::StatusOr<ModelSpec> ResolveModel(const std::string& name_or_path);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_MODEL_REGISTRY_H_
