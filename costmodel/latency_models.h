// The latency models behind LatencyModel::VerifySeconds(s, c):
//   roofline    bare max(FLOPs/peak, bytes/bandwidth); BASTION (docs/references.md) App. F
//   linear      a * R(s, c) + b, R = bare roofline; BASTION (docs/references.md) §2.4, H.4 "Static"
//   per_term    max(k_c * F + b_c, k_w * W + k_kv * KVA): compute, weight-streaming and
//               KV/attention traffic each with its own efficiency, all >= 0
//   overlap     b + smooth_max_p(k_g*G_q + k_a*A, k_w*W + k_kv*KVA): separate achieved efficiencies
//               for GEMMs (FLOPs with s rounded up to the GEMM tile q), attention scores, weight
//               streaming and KV/activation traffic; the exponent p >= 1 says how well compute and
//               memory overlap (p = 1: they add up; p -> infinity: the bare max of the roofline)
//   kernel_sum  the pass as one stream of kernels, so the time of each kernel class adds up:
//               b + smooth_max_p(k_g*G_q, k_w*W)              GEMMs: weight streaming until the
//                                                             knee in s, then compute
//                 + k_d*KV                    (s = 1)         decode attention kernel
//                 + b_v + k_v*ceil(s/t_a)*KV  (s > 1)         verify/prefill attention kernel:
//                                                             streams the cache once per wave
//                                                             of t_a query tokens
//                 + k_a*A + k_e*E                             score FLOPs; elementwise traffic
//               (fits measured H100 passes to ~2-3 % where overlap cannot get under ~10 %: see
//               docs/costmodel.md, "Latency models")
//   table       measured grid over (s, c), bilinear inside, roofline-scaled outside
//   ema         multiplicative bias on any base, updated online (EMA, EMA+Calib); BASTION
//               (docs/references.md) H.4
// Under tensor parallelism (ModelSpec::tp > 1) every feature is per GPU, and the all-reduce time
// X = CommunicationSeconds (roofline.h) is added to every calibrated form unscaled (per_term,
// overlap, kernel_sum: + X; linear: a * R + b with R = the roofline, which includes X).
#ifndef SPECPLAN_COSTMODEL_LATENCY_MODELS_H_
#define SPECPLAN_COSTMODEL_LATENCY_MODELS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/latency_model.h"
#include "costmodel/model_spec.h"
#include "costmodel/roofline.h"

namespace specplan::costmodel {

class RooflineLatency : public LatencyModel {
 public:
  RooflineLatency(ModelSpec model, GpuSpec gpu) : model_(std::move(model)), gpu_(std::move(gpu)) {}
  double VerifySeconds(int64_t s, int64_t c) const override { return Estimate(s, c).seconds; }
  double VerifyBatchSeconds(const BatchShape& batch) const override {
    return Estimate(batch.totals()).seconds;
  }
  std::string Kind() const override { return "roofline"; }
  RooflineEstimate Estimate(int64_t s, int64_t c) const {
    return EstimateRoofline(model_, gpu_, s, c);
  }
  RooflineEstimate Estimate(const PassTotals& pass) const {
    return EstimateRoofline(model_, gpu_, pass);
  }
  const ModelSpec& model() const { return model_; }
  const GpuSpec& gpu() const { return gpu_; }

 private:
  ModelSpec model_;
  GpuSpec gpu_;
};

// T = a * R(s, c) + b.
struct LinearCoefficients {
  double a = 1.0;    // dimensionless slope on the bare roofline
  double b_s = 0.0;  // seconds, fixed overhead
};

class LinearCalibratedLatency : public LatencyModel {
 public:
  LinearCalibratedLatency(RooflineLatency roofline, LinearCoefficients coef)
      : roofline_(std::move(roofline)), coef_(coef) {}
  double VerifySeconds(int64_t s, int64_t c) const override {
    return coef_.a * roofline_.VerifySeconds(s, c) + coef_.b_s;
  }
  double VerifyBatchSeconds(const BatchShape& batch) const override {
    return coef_.a * roofline_.VerifyBatchSeconds(batch) + coef_.b_s;
  }
  std::string Kind() const override { return "linear"; }
  const LinearCoefficients& coefficients() const { return coef_; }

 private:
  RooflineLatency roofline_;
  LinearCoefficients coef_;
};

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

class PerTermLatency : public LatencyModel {
 public:
  PerTermLatency(RooflineLatency roofline, PerTermCoefficients coef)
      : roofline_(std::move(roofline)), coef_(coef) {}
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "per_term"; }
  const PerTermCoefficients& coefficients() const { return coef_; }

 private:
  RooflineLatency roofline_;
  PerTermCoefficients coef_;
};

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

class OverlapLatency : public LatencyModel {
 public:
  OverlapLatency(RooflineLatency roofline, OverlapCoefficients coef)
      : roofline_(std::move(roofline)), coef_(coef) {}
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "overlap"; }
  const OverlapCoefficients& coefficients() const { return coef_; }

 private:
  RooflineLatency roofline_;
  OverlapCoefficients coef_;
};

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

class KernelSumLatency : public LatencyModel {
 public:
  KernelSumLatency(RooflineLatency roofline, KernelSumCoefficients coef)
      : roofline_(std::move(roofline)), coef_(coef) {}
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "kernel_sum"; }
  const KernelSumCoefficients& coefficients() const { return coef_; }

 private:
  RooflineLatency roofline_;
  KernelSumCoefficients coef_;
};

// Measured grid: seconds[ci][si] at (s_grid[si], c_grid[ci]); grids strictly increasing. An
// optional batch axis adds layers: batch_seconds[bi][ci][si] is the pass of b_grid[bi] sequences,
// each of (batch_s_grid[si], batch_c_grid[ci]); b_grid is strictly increasing with every entry
// >= 2 (b = 1 is `seconds`). The batch layers share one (s, c) grid of their own, usually coarser
// than the single-sequence one (a batch of long contexts holds b caches); empty batch grids mean
// the single-sequence grid.
struct LatencyTable {
  std::vector<int64_t> s_grid;
  std::vector<int64_t> c_grid;
  std::vector<std::vector<double>> seconds;                     // [c_grid.size()][s_grid.size()]
  std::vector<int64_t> b_grid;                                  // empty: single sequences only
  std::vector<std::vector<std::vector<double>>> batch_seconds;  // [b][batch c][batch s]
  std::vector<int64_t> batch_s_grid;                            // empty: s_grid
  std::vector<int64_t> batch_c_grid;                            // empty: c_grid

  const std::vector<int64_t>& layer_s_grid(size_t k) const {  // k = 0: b = 1, else b_grid[k - 1]
    return k == 0 || batch_s_grid.empty() ? s_grid : batch_s_grid;
  }
  const std::vector<int64_t>& layer_c_grid(size_t k) const {
    return k == 0 || batch_c_grid.empty() ? c_grid : batch_c_grid;
  }
};
absl::Status ValidateLatencyTable(const LatencyTable& table);  // names the bad field

// Bilinear interpolation inside the grid; outside, the nearest grid value scaled by the bare
// roofline's ratio R(s, c) / R(s_clamped, c_clamped), so extrapolation follows the physics.
// A batch of B sequences is priced as its mean sequence: s_eq = S / B and c_eq = Σ c_i / B.
//   With batch layers: the two layers around B are each read at (s_eq, c_eq) clamped to that
//   layer's grid (bilinear) and divided by the roofline of the uniform batch B x (s_cl, c_cl) it
//   read; those ratios are linear in B between the layers, and the result is that ratio times
//   R(batch), the roofline of the real batch. A uniform batch on the grid reads its measured cell
//   exactly.
//   Without: the single sequence T(S, round(c_eq)) times R(batch) / R(S, round(c_eq)).
class TableLatency : public LatencyModel {
 public:
  TableLatency(RooflineLatency roofline, LatencyTable table)
      : roofline_(std::move(roofline)), table_(std::move(table)) {}
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "table"; }
  const LatencyTable& table() const { return table_; }

 private:
  // Bilinear inside one layer ([c][s]) on its grids; s and c must lie within them (callers clamp).
  static double Interpolate(const std::vector<std::vector<double>>& layer,
                            const std::vector<int64_t>& s_grid, const std::vector<int64_t>& c_grid,
                            double s, double c);
  RooflineLatency roofline_;
  LatencyTable table_;
};

// Online residual correction, BASTION (docs/references.md) H.4: bias <- (1 - alpha) bias + alpha *
// obs / base(s, c); predicts bias * base(s, c). Over the bare roofline this is "EMA"; over a
// calibrated model it is "EMA+Calib". Observe() may run concurrently with VerifySeconds() (the bias
// is atomic).
class EmaCorrectedLatency : public LatencyModel {
 public:
  EmaCorrectedLatency(std::shared_ptr<const LatencyModel> base, double alpha,
                      double initial_bias = 1);
  double VerifySeconds(int64_t s, int64_t c) const override {
    return bias_.load(std::memory_order_relaxed) * base_->VerifySeconds(s, c);
  }
  double VerifyBatchSeconds(const BatchShape& batch) const override {
    return bias_.load(std::memory_order_relaxed) * base_->VerifyBatchSeconds(batch);
  }
  std::string Kind() const override;  // "ema" over roofline, else "ema+<base kind>"
  // Folds in one observed pass; ignores non-finite or non-positive observations (returns false).
  bool Observe(int64_t s, int64_t c, double observed_s);
  double bias() const { return bias_.load(std::memory_order_relaxed); }
  double alpha() const { return alpha_; }
  int64_t observations() const { return observations_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const LatencyModel> base_;
  double alpha_;
  std::atomic<double> bias_;
  std::atomic<int64_t> observations_{0};
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_LATENCY_MODELS_H_
