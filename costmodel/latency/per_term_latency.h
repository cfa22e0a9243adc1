// PerTermLatency: max(k_c * F + b_c, k_w * W + k_kv * KVA) + X: compute, weight-streaming and
// KV/attention traffic each with its own efficiency, all >= 0; X = the all-reduces (tp > 1).
#ifndef SPECPLAN_COSTMODEL_PER_TERM_LATENCY_H_
#define SPECPLAN_COSTMODEL_PER_TERM_LATENCY_H_

#include <cstdint>
#include <string>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"

namespace specplan::costmodel {

// Per-term features of one pass, in seconds at peak: F = FLOPs / peak_flops,
// W = weight bytes / mem_bw, KVA = (KV-cache + activation bytes) / mem_bw.
struct PerTermFeatures {
  double compute_s = 0;
  double weights_s = 0;
  double kv_attention_s = 0;
  double comm_s = 0;  // all-reduces (tensor parallelism), added unscaled
};
PerTermFeatures ComputePerTermFeatures(const RooflineEstimate& e, const GpuSpec& gpu);

// T = max(compute * F + compute_overhead_s, weights * W + kv_attention * KVA) + X; all >= 0.
// Each multiplier is 1 / achieved fraction of peak for that term.
struct PerTermCoefficients {
  double compute = 1.0;
  double compute_overhead_s = 0.0;  // seconds, launch/scheduling overhead of the compute branch
  double weights = 1.0;
  double kv_attention = 1.0;

  double Predict(const PerTermFeatures& f) const;
};

class PerTermLatency : public CalibratedLatency<PerTermCoefficients> {
 public:
  using CalibratedLatency::CalibratedLatency;
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "per_term"; }
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_PER_TERM_LATENCY_H_
