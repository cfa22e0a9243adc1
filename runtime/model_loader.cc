#include "runtime/model_loader.h"

#include "runtime/safetensors.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<Transformer>> LoadModel(const ModelSource& source, uint64_t seed,
                                                       const RuntimeOptions& options) {
  if (source.random) return Transformer::CreateRandom(source.config, seed, options);
  SPECPLAN_ASSIGN_OR_RETURN(auto checkpoint, SafetensorsCheckpoint::Open(source.weights_dir));
  return Transformer::CreateFromSource(source.config, *checkpoint, options);
}

absl::StatusOr<std::unique_ptr<Transformer>> LoadModel(const std::string& spec, uint64_t seed,
                                                       const RuntimeOptions& options) {
  SPECPLAN_ASSIGN_OR_RETURN(ModelSource source, ResolveModelSource(spec));
  return LoadModel(source, seed, options);
}

}  // namespace specplan::runtime
