#include "costmodel/hardware/memory_fit.h"

#include "absl/strings/str_format.h"

namespace specplan::costmodel {

MemoryNeed PassMemory(const ModelSpec& m, int64_t b, int64_t s, int64_t c) {
  MemoryNeed need;
  const double bp = m.bytes_per_element();
  need.weight_bytes = static_cast<double>(m.ParameterCount()) * bp / static_cast<double>(m.tp);
  need.kv_bytes = static_cast<double>(b) * static_cast<double>(c + s) * 2.0 *
                  static_cast<double>(m.layers) * static_cast<double>(m.kv_heads_per_gpu()) *
                  static_cast<double>(m.head_dim) * bp;
  return need;
}

absl::Status CheckFitsInMemory(const ModelSpec& model, const GpuSpec& gpu, int64_t b, int64_t s,
                               int64_t c) {
  if (!(gpu.mem_bytes > 0)) return absl::OkStatus();
  const MemoryNeed need = PassMemory(model, b, s, c);
  if (need.total() <= gpu.mem_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "b = %d, s = %d, c = %d: the KV cache of %.4g tokens (%.4g bytes) and the weights of %s "
      "(%.4g bytes per GPU at tp %d) need %.4g bytes; one %s holds %.4g",
      b, s, c, static_cast<double>(b) * static_cast<double>(c + s), need.kv_bytes, model.name,
      need.weight_bytes, model.tp, need.total(), gpu.name, gpu.mem_bytes));
}

}  // namespace specplan::costmodel
