// KernelSumLatency: the pass as one stream of kernels, so the time of each kernel class adds up:
//   b + smooth_max_p(k_g*G_q, k_w*W)              GEMMs: weight streaming until the knee in s,
//                                                 then compute
//     + k_d*KV                    (s = 1)         decode attention kernel
//     + b_v + k_v*ceil(s/t_a)*KV  (s > 1)         verify/prefill attention kernel: streams the
//                                                 cache once per wave of t_a query tokens
//     + k_a*A + k_e*E + X                         score FLOPs; elementwise traffic; all-reduces
// (fits measured H100 passes to ~2-3 % where overlap cannot get under ~10 %: see
// docs/costmodel.md, "Latency models").
#ifndef SPECPLAN_COSTMODEL_KERNEL_SUM_LATENCY_H_
#define SPECPLAN_COSTMODEL_KERNEL_SUM_LATENCY_H_

#include <cstdint>
#include <string>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"

namespace specplan::costmodel {

// Features of the kernel_sum model, in seconds at peak, for one (s, c): G = GEMM FLOPs with s
// rounded up to the tile q, / peak_flops (as in OverlapFeatures); W = weight bytes / mem_bw;
// KV = bytes of the past KV cache (c tokens) / mem_bw; A = attention-score FLOPs / peak_flops;
// E = bytes of activations that grow with s only (norms, rotary, MLP intermediates, logits, the
// new tokens' K/V write), i.e. the roofline's activation and KV bytes minus the cache read and the
// score matrix, / mem_bw. waves = ceil(s / attention_tile).
struct KernelSumFeatures {
  int64_t s = 1;  // tokens per sequence: 1 prices the decode attention kernel, > 1 the verify one
  int64_t waves = 1;
  double gemm_s = 0;
  double weights_s = 0;
  double kv_s = 0;
  double attention_s = 0;
  double elementwise_s = 0;
  double comm_s = 0;  // all-reduces (tensor parallelism), added unscaled
};
// Requires tile >= 1 and attention_tile >= 1. With b > 1: the pass of b sequences of (s, c) each
// (a uniform ragged batch, as calibrate --b-grid times): the GEMM, weight, cache, score and
// elementwise terms are the whole pass's, while s and waves stay per sequence, so Predict prices it
// exactly as KernelSumLatency::VerifyBatchSeconds prices those b sequences.
KernelSumFeatures ComputeKernelSumFeatures(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                           int64_t c, int64_t tile, int64_t attention_tile,
                                           int64_t b = 1);
// The pass-level features of a ragged batch (s = S, the GEMM tile pads S; kv_s is the whole
// batch's cache; waves = 1). KernelSumLatency::VerifyBatchSeconds prices the attention kernels
// per sequence itself: decode rows (s_i = 1) at `decode`, and one verify kernel for the s_i > 1
// rows, verify_overhead_s once plus `verify` x waves_i x KV_i summed over those sequences.
KernelSumFeatures ComputeKernelSumFeatures(const ModelSpec& model, const GpuSpec& gpu,
                                           const PassTotals& pass, int64_t tile);

// T = overhead_s + ((gemm G)^p + (weights W)^p)^(1/p)
//     + (s = 1 ? decode KV : verify_overhead_s + verify waves KV) + attention A + elementwise E +
//     X.
// Every multiplier (1 / achieved fraction of peak) and both overheads are >= 0; p >= 1;
// tile in [1, 4096] is the GEMM row tile; attention_tile in [1, 65536] is how many query tokens
// the verify attention kernel covers per pass over the cache (the fit picks it from 64..2048).
struct KernelSumCoefficients {
  double overhead_s = 0.0;  // seconds: launch gaps and fixed per-kernel costs
  double gemm = 1.0;
  double weights = 1.0;
  double p = 8.0;
  double decode = 1.0;             // KV multiplier of the s = 1 attention kernel
  double verify = 1.0;             // KV multiplier per wave of the s > 1 attention kernel
  double verify_overhead_s = 0.0;  // seconds the s > 1 attention kernel costs at c = 0
  double attention = 0.0;          // score-FLOP multiplier
  double elementwise = 1.0;
  int64_t tile = 1;               // tokens
  int64_t attention_tile = 2048;  // tokens

  double Predict(const KernelSumFeatures& f) const;
  // Everything but the attention kernels' KV term: overhead, GEMMs, score FLOPs, elementwise and
  // the all-reduces.
  double PassSeconds(const KernelSumFeatures& f) const;
};

class KernelSumLatency : public CalibratedLatency<KernelSumCoefficients> {
 public:
  using CalibratedLatency::CalibratedLatency;
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "kernel_sum"; }
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_KERNEL_SUM_LATENCY_H_
