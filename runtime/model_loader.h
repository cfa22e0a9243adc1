// Builds a Transformer from a model source string (see model_config.h): random weights for
// "random:NAME" / "random:DIR", safetensors weights for a checkpoint directory.
#ifndef SPECPLAN_RUNTIME_MODEL_LOADER_H_
#define SPECPLAN_RUNTIME_MODEL_LOADER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/model_config.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<Transformer>> LoadModel(const ModelSource& source, uint64_t seed,
                                                       const RuntimeOptions& options);
absl::StatusOr<std::unique_ptr<Transformer>> LoadModel(const std::string& spec, uint64_t seed,
                                                       const RuntimeOptions& options);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_MODEL_LOADER_H_
