#include "costmodel/latency/per_term_latency.h"

#include <algorithm>

namespace specplan::costmodel {

PerTermFeatures ComputePerTermFeatures(const RooflineEstimate& e, const GpuSpec& gpu) {
  PerTermFeatures f;
  f.compute_s = e.terms.total_flops() / gpu.peak_flops;
  f.weights_s = e.terms.weight_bytes / gpu.mem_bw;
  f.kv_attention_s = (e.terms.kv_bytes + e.terms.activation_bytes) / gpu.mem_bw;
  f.comm_s = e.comm_s;
  return f;
}

double PerTermCoefficients::Predict(const PerTermFeatures& f) const {
  const double compute_branch = compute * f.compute_s + compute_overhead_s;
  const double memory_branch = weights * f.weights_s + kv_attention * f.kv_attention_s;
  return std::max(compute_branch, memory_branch) + f.comm_s;
}

double PerTermLatency::VerifySeconds(int64_t s, int64_t c) const {
  return coef_.Predict(ComputePerTermFeatures(roofline_.Estimate(s, c), roofline_.gpu()));
}

double PerTermLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  return coef_.Predict(ComputePerTermFeatures(roofline_.Estimate(batch.totals()), roofline_.gpu()));
}

}  // namespace specplan::costmodel
