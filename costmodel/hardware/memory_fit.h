// Whether a pass fits in the GPU's memory: the weights one GPU holds plus the KV cache of b
// sequences of c + s tokens each, against the GPU's memory. A request that cannot fit is refused
// with the numbers, by every front end through this one check (estimate in the CLI, the server
// and the Python module).
//   weights  = ParameterCount() x bytes per element / tp
//   KV cache = b (c + s) x 2 L (n_kv per GPU) d x bytes per element
// Activations, the CUDA context and the engine's reserve are not counted, so a pass this check
// lets through may still not fit; one it refuses cannot.
#ifndef SPECPLAN_COSTMODEL_MEMORY_FIT_H_
#define SPECPLAN_COSTMODEL_MEMORY_FIT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"

namespace specplan::costmodel {

struct MemoryNeed {
  double weight_bytes = 0;  // one GPU's share
  double kv_bytes = 0;      // b (c + s) tokens
  double total() const { return weight_bytes + kv_bytes; }
};
MemoryNeed PassMemory(const ModelSpec& model, int64_t b, int64_t s, int64_t c);

// OK when PassMemory fits in gpu.mem_bytes (or the GPU's memory is not known: 0);
// RESOURCE_EXHAUSTED otherwise, naming b, s, c and the bytes: "b = 1, c = 1000000000000: the KV
// cache of 1e+12 tokens (1.3e+17 bytes) and the weights (1.6e+10 bytes) need 1.3e+17 bytes; the
// h100-sxm holds 8e+10".
absl::Status CheckFitsInMemory(const ModelSpec& model, const GpuSpec& gpu, int64_t b, int64_t s,
                               int64_t c);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_MEMORY_FIT_H_
