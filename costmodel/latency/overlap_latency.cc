#include "costmodel/latency/overlap_latency.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"

namespace specplan::costmodel {

OverlapFeatures ComputeOverlapFeatures(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                       int64_t c, int64_t tile) {
  return ComputeOverlapFeatures(model, gpu, SinglePass(s, c), tile);
}

OverlapFeatures ComputeOverlapFeatures(const ModelSpec& model, const GpuSpec& gpu,
                                       const PassTotals& pass, int64_t tile) {
  SPECPLAN_CHECK(tile >= 1);
  const RooflineTerms t = ComputeRooflineTerms(model, pass);
  const double S = pass.tokens;
  const double s_tiled = std::ceil(S / static_cast<double>(tile)) * static_cast<double>(tile);
  // Projection, MLP and LM-head FLOPs are linear in the pass's tokens; the tile pads the GEMM's
  // row count (one GEMM over all the sequences' tokens in a ragged batch).
  const double gemm_flops = (t.attn_proj_flops + t.ffn_flops + t.lm_head_flops) * s_tiled / S;
  OverlapFeatures f;
  f.gemm_s = gemm_flops / gpu.peak_flops;
  f.attention_s = t.attn_score_flops / gpu.peak_flops;
  f.weights_s = t.weight_bytes / gpu.mem_bw;
  f.kv_attention_s = (t.kv_bytes + t.activation_bytes) / gpu.mem_bw;
  f.comm_s = CommunicationSeconds(model, gpu, pass.tokens);
  return f;
}

double OverlapCoefficients::Predict(const OverlapFeatures& f) const {
  const double compute_branch = gemm * f.gemm_s + attention * f.attention_s;
  const double memory_branch = weights * f.weights_s + kv_attention * f.kv_attention_s;
  const double hi = std::max(compute_branch, memory_branch);
  if (hi <= 0) return overhead_s + f.comm_s;
  // Smooth max, scaled by the larger branch so large p cannot overflow.
  const double sum = std::pow(compute_branch / hi, p) + std::pow(memory_branch / hi, p);
  return overhead_s + hi * std::pow(sum, 1.0 / p) + f.comm_s;
}

double OverlapLatency::VerifySeconds(int64_t s, int64_t c) const {
  return coef_.Predict(
      ComputeOverlapFeatures(roofline_.model(), roofline_.gpu(), s, c, coef_.tile));
}

double OverlapLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  return coef_.Predict(
      ComputeOverlapFeatures(roofline_.model(), roofline_.gpu(), batch.totals(), coef_.tile));
}

}  // namespace specplan::costmodel
