// Roofline cost of one verification pass: s new tokens over c cached tokens
// (bastion.txt Appendix F, eq. 8 for FLOPs and eq. 9 for bytes), itemised per term. A ragged batch
// pass sums eqs. (8)-(9) over its sequences and streams the weights once (costmodel/batch_shape.h).
#ifndef SPECPLAN_COSTMODEL_ROOFLINE_H_
#define SPECPLAN_COSTMODEL_ROOFLINE_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>

#include "costmodel/batch_shape.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/model_spec.h"

namespace specplan::costmodel {

// FLOPs (multiply-add = 2) and bytes of DRAM traffic for one pass. All doubles to avoid overflow.
struct RooflineTerms {
  // FLOPs (Table 3).
  double attn_proj_flops = 0;   // L(4 s h h_q + 4 s h h_kv): Q, K, V, O projections
  double attn_score_flops = 0;  // L(4 s (c + s) h_q): QK^T and attention-value products
  double ffn_flops = 0;         // L(6 s h h_ffn) gated; L(4 s h h_ffn) plain (2 matrices)
  double lm_head_flops = 0;     // 2 s h V
  // Bytes (Table 4), already multiplied by bytes per element.
  double weight_bytes = 0;  // bp[L(2 h h_q + 2 h h_kv + m h h_ffn) + 2 V h], m = 3 gated, 2 plain
  double kv_bytes = 0;      // bp[L(2 c h_kv + 2 s h_kv)]: past-context read + new-token write
  double activation_bytes = 0;  // bp[L(4sh + 4sh_q + 2sh_kv + a sh_ffn + 2 n_q s(c+s)) + sh + sV],
                                // a = 4 gated, 2 plain

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

enum class Bound { kCompute, kMemory };
const char* BoundName(Bound bound);  // "compute" | "memory"

struct RooflineEstimate {
  RooflineTerms terms;
  double compute_s = 0;  // seconds, total_flops / peak_flops
  double memory_s = 0;   // seconds, total_bytes / mem_bw
  double seconds = 0;    // max(compute_s, memory_s)
  Bound bound = Bound::kMemory;
};

RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu, int64_t s, int64_t c);
RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu,
                                  const PassTotals& pass);

nlohmann::json RooflineEstimateToJson(const RooflineEstimate& e);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_ROOFLINE_H_
