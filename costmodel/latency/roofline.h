// Roofline cost of one verification pass: s new tokens over c cached tokens
// (BASTION (docs/references.md) Appendix F, eq. 8 for FLOPs and eq. 9 for bytes), itemised per
// term, extended to mixture-of-experts targets (only the experts the tokens route to are streamed),
// to tensor parallelism (terms per GPU, plus two ring all-reduces per layer) and to ragged batch
// passes (eqs. (8)-(9) summed over the sequences, the weights streamed once;
// costmodel/latency/batch_shape.h).
#ifndef SPECPLAN_COSTMODEL_ROOFLINE_H_
#define SPECPLAN_COSTMODEL_ROOFLINE_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/batch_shape.h"

namespace specplan::costmodel {

// Expected number of distinct routed experts per layer that `tokens` tokens route to, each token
// picking experts_active = k of experts = E independently of the other tokens:
//   uniform (routing_skew = 0):  D(T) = E (1 - (1 - k/E)^T)
//   skewed (routing_skew = a):   D(T) = sum_i 1 - (1 - p_i)^T,  p_i = min(1, k i^-a / sum_j j^-a)
// (Zipf popularity over experts i = 1..E; a = 0 gives the uniform form). 0 for a dense model.
// Requires tokens >= 0. O(1) uniform, O(E) skewed.
double ExpectedDistinctExperts(const ModelSpec& model, double tokens);

// Bytes of weights a pass with `tokens` tokens streams from DRAM, per GPU (1/tp of every matrix;
// the MoE router is replicated): attention, MLP (dense) or shared experts plus the
// ExpectedDistinctExperts(tokens) routed experts (MoE), embedding and LM head. For a batched pass,
// `tokens` is the total over all sequences: the experts streamed depend on all of them. Dense
// models do not depend on `tokens`.
double WeightBytes(const ModelSpec& model, double tokens);

// Seconds of one ring all-reduce of `bytes` over tp GPUs (Thakur, Rabenseifner & Gropp 2005):
//   2 (tp - 1) link_latency_s + 2 (tp - 1) / tp * bytes / link_bw;  0 when tp = 1.
// Requires gpu.link_bw > 0 when tp > 1.
double AllReduceSeconds(const GpuSpec& gpu, int64_t tp, double bytes);

// Why `gpu` cannot run `model` split over tp GPUs, or "" when it can: the head rule of
// TensorParallelProblem(model, tp), or no interconnect (link_bw = 0) when tp > 1.
std::string TensorParallelProblem(const ModelSpec& model, const GpuSpec& gpu, int64_t tp);

// FLOPs (multiply-add = 2) and bytes of DRAM traffic for one pass, per GPU when model.tp > 1. All
// doubles to avoid overflow. Notation: N = tp, h_q' = h_q / N, h_kv' = kv_heads_per_gpu() d,
// F = h_ffn (dense) or k h_e + h_sh (MoE: the experts one token uses).
struct RooflineTerms {
  // FLOPs (Table 3).
  double attn_proj_flops = 0;   // L(4 s h h_q' + 4 s h h_kv'): Q, K, V, O projections
  double attn_score_flops = 0;  // L(4 s (c + s) h_q'): QK^T and attention-value products
  double ffn_flops = 0;         // dense: L(2 m s h h_ffn) / N, m = 3 gated, 2 plain;
                                // MoE: L(6 s h (k h_e + h_sh) / N + 2 s h E) (experts + router)
  double lm_head_flops = 0;     // 2 s h V / N
  // Bytes (Table 4), already multiplied by bytes per element.
  double weight_bytes = 0;      // WeightBytes(model, s): once per pass, however many sequences
  double kv_bytes = 0;          // bp[L(2 c h_kv' + 2 s h_kv')]: past-context read + new-token write
  double activation_bytes = 0;  // bp[L(4sh + 4sh_q' + 2sh_kv' + a s F / N + 2 (n_q/N) s(c+s)) +
                                //    sh + sV/N], a = 4 gated, 2 plain
  // Tensor parallelism: after the attention output and after the MLP, the partial sums of the
  // residual stream (s h elements) are all-reduced over the N GPUs.
  int64_t allreduces = 0;      // 2L when N > 1, else 0
  double allreduce_bytes = 0;  // bp s h: bytes of one all-reduce

  double attention_flops() const { return attn_proj_flops + attn_score_flops; }
  double total_flops() const {
    return attn_proj_flops + attn_score_flops + ffn_flops + lm_head_flops;
  }
  double total_bytes() const { return weight_bytes + kv_bytes + activation_bytes; }
};

// Requires ValidateModelSpec(model).ok(), s >= 1, c >= 0.
RooflineTerms ComputeRooflineTerms(const ModelSpec& model, int64_t s, int64_t c);
// The same for a whole pass given its sums (BatchShape::totals()); the weights are counted once.
// Requires tokens >= 1, context >= 0, score_pairs >= tokens.
RooflineTerms ComputeRooflineTerms(const ModelSpec& model, const PassTotals& pass);

// Seconds of the all-reduces of a pass over `tokens` tokens (all sequences of a batch):
// 2L * AllReduceSeconds(gpu, tp, bp * tokens * h). Requires TensorParallelProblem(model, gpu,
// model.tp) == "".
double CommunicationSeconds(const ModelSpec& model, const GpuSpec& gpu, double tokens);

enum class Bound { kCompute, kMemory };
const char* BoundName(Bound bound);  // "compute" | "memory"

struct RooflineEstimate {
  RooflineTerms terms;
  double compute_s = 0;  // seconds, total_flops / peak_flops
  double memory_s = 0;   // seconds, total_bytes / mem_bw
  double comm_s = 0;     // seconds, CommunicationSeconds (0 when tp = 1)
  // max(compute_s, memory_s) + comm_s: the all-reduces sit between a layer's GEMMs (each needs the
  // reduced residual stream) and do not overlap them.
  double seconds = 0;
  Bound bound = Bound::kMemory;  // of the compute/memory part
};

// Requires TensorParallelProblem(model, gpu, model.tp) == "".
RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu, int64_t s, int64_t c);
RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu,
                                  const PassTotals& pass);

nlohmann::json RooflineEstimateToJson(const RooflineEstimate& e);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_ROOFLINE_H_
