#include "costmodel/latency/kernel_sum_latency.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"

namespace specplan::costmodel {

KernelSumFeatures ComputeKernelSumFeatures(const ModelSpec& model, const GpuSpec& gpu,
                                           const PassTotals& pass, int64_t tile) {
  SPECPLAN_CHECK(tile >= 1);
  const RooflineTerms t = ComputeRooflineTerms(model, pass);
  const double L = model.layers, bp = model.bytes_per_element();
  // Per GPU under tensor parallelism (as in ComputeRooflineTerms).
  const double h_kv = static_cast<double>(model.kv_heads_per_gpu()) * model.head_dim;
  const double n_q = static_cast<double>(model.n_q) / static_cast<double>(model.tp);
  const double cache_read = bp * L * 2 * pass.context * h_kv;
  const double scores = bp * L * 2 * n_q * pass.score_pairs;
  const double S = pass.tokens;
  const double s_tiled = std::ceil(S / static_cast<double>(tile)) * static_cast<double>(tile);
  KernelSumFeatures f;
  f.s = static_cast<int64_t>(S);
  f.waves = 1;
  f.gemm_s = (t.attn_proj_flops + t.ffn_flops + t.lm_head_flops) * s_tiled / S / gpu.peak_flops;
  f.weights_s = t.weight_bytes / gpu.mem_bw;
  f.kv_s = cache_read / gpu.mem_bw;
  f.attention_s = t.attn_score_flops / gpu.peak_flops;
  f.elementwise_s =
      std::max(0.0, t.kv_bytes + t.activation_bytes - cache_read - scores) / gpu.mem_bw;
  f.comm_s = CommunicationSeconds(model, gpu, pass.tokens);
  return f;
}

KernelSumFeatures ComputeKernelSumFeatures(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                           int64_t c, int64_t tile, int64_t attention_tile,
                                           int64_t b) {
  SPECPLAN_CHECK(attention_tile >= 1 && b >= 1);
  KernelSumFeatures f = ComputeKernelSumFeatures(
      model, gpu,
      UniformPass(static_cast<double>(b), static_cast<double>(s), static_cast<double>(c)), tile);
  f.s = s;
  f.waves = (s + attention_tile - 1) / attention_tile;
  return f;
}

double KernelSumCoefficients::PassSeconds(const KernelSumFeatures& f) const {
  const double a = gemm * f.gemm_s, b = weights * f.weights_s;
  const double hi = std::max(a, b);
  double gemms = 0;
  if (hi > 0) gemms = hi * std::pow(std::pow(a / hi, p) + std::pow(b / hi, p), 1.0 / p);
  return overhead_s + gemms + attention * f.attention_s + elementwise * f.elementwise_s + f.comm_s;
}

double KernelSumCoefficients::Predict(const KernelSumFeatures& f) const {
  const double attn = f.s == 1 ? decode * f.kv_s
                               : verify_overhead_s + verify * static_cast<double>(f.waves) * f.kv_s;
  return PassSeconds(f) + attn;
}

double KernelSumLatency::VerifySeconds(int64_t s, int64_t c) const {
  return coef_.Predict(ComputeKernelSumFeatures(roofline_.model(), roofline_.gpu(), s, c,
                                                coef_.tile, coef_.attention_tile));
}

double KernelSumLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  if (batch.size() == 1) return VerifySeconds(batch[0].s, batch[0].c);
  const ModelSpec& m = roofline_.model();
  const KernelSumFeatures f =
      ComputeKernelSumFeatures(m, roofline_.gpu(), batch.totals(), coef_.tile);
  // Seconds to read one cached token's K and V in every layer.
  const double kv_per_token = m.bytes_per_element() * m.layers * 2 *
                              static_cast<double>(m.kv_heads_per_gpu()) * m.head_dim /
                              roofline_.gpu().mem_bw;
  double attn = coef_.decode * batch.decode_context() * kv_per_token;
  if (batch.verify_sequences() > 0) {
    // One verify kernel per layer covers every s > 1 row; each sequence reads its cache once per
    // wave of attention_tile query tokens.
    double wave_context = batch.verify_context();
    if (batch.max_s() > coef_.attention_tile) {
      wave_context = 0;
      for (const SequenceShape& q : batch.sequences()) {
        if (q.s > 1) {
          wave_context +=
              static_cast<double>((q.s + coef_.attention_tile - 1) / coef_.attention_tile) *
              static_cast<double>(q.c);
        }
      }
    }
    attn += coef_.verify_overhead_s + coef_.verify * wave_context * kv_per_token;
  }
  return coef_.PassSeconds(f) + attn;
}

}  // namespace specplan::costmodel
