// OverlapLatency: b + smooth_max_p(k_g*G_q + k_a*A, k_w*W + k_kv*KVA) + X: separate achieved
// efficiencies for GEMMs (FLOPs with s rounded up to the GEMM tile q), attention scores, weight
// streaming and KV/activation traffic; the exponent p >= 1 says how well compute and memory overlap
// (p = 1: they add up; p -> infinity: the bare max of the roofline); X = the all-reduces (tp > 1).
#ifndef SPECPLAN_COSTMODEL_OVERLAP_LATENCY_H_
#define SPECPLAN_COSTMODEL_OVERLAP_LATENCY_H_

#include <cstdint>
#include <string>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"

namespace specplan::costmodel {

// Features of the overlap model, in seconds at peak: G = GEMM FLOPs (Q/K/V/O projections, MLP,
// LM head) with s rounded up to a multiple of the tile q, / peak_flops; A = attention-score FLOPs
// / peak_flops; W and KVA as in PerTermFeatures.
struct OverlapFeatures {
  double gemm_s = 0;
  double attention_s = 0;
  double weights_s = 0;
  double kv_attention_s = 0;
  double comm_s = 0;  // all-reduces (tensor parallelism), added unscaled
};
// Requires tile >= 1. With tile = 1 the GEMM FLOPs are exact.
OverlapFeatures ComputeOverlapFeatures(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                       int64_t c, int64_t tile);
// The same for a ragged batch pass: the GEMMs run over all S tokens at once, so the tile pads S.
OverlapFeatures ComputeOverlapFeatures(const ModelSpec& model, const GpuSpec& gpu,
                                       const PassTotals& pass, int64_t tile);

// T = overhead_s + ((k_g G + k_a A)^p + (k_w W + k_kv KVA)^p)^(1/p) + X. Each k is 1 / the achieved
// fraction of peak for its term (all >= 0, not all 0); p >= 1; overhead_s >= 0 is the fixed cost
// of a pass (per-layer launches and host work times the layer count, which one profile cannot
// tell apart); tile in [1, 4096] is the GEMM row tile in s (1, 16, 32, 64 or 128 from the fit).
struct OverlapCoefficients {
  double gemm = 1.0;
  double attention = 1.0;
  double weights = 1.0;
  double kv_attention = 1.0;
  double p = 2.0;
  double overhead_s = 0.0;  // seconds
  int64_t tile = 1;         // tokens

  double Predict(const OverlapFeatures& f) const;
};

class OverlapLatency : public CalibratedLatency<OverlapCoefficients> {
 public:
  using CalibratedLatency::CalibratedLatency;
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "overlap"; }
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_OVERLAP_LATENCY_H_
