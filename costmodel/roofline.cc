#include "costmodel/roofline.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "util/check.h"

namespace specplan::costmodel {

RooflineTerms ComputeRooflineTerms(const ModelSpec& m, int64_t s_in, int64_t c_in) {
  SPECPLAN_CHECK(s_in >= 1 && c_in >= 0);
  const double L = m.layers, h = m.hidden, hq = m.h_q(), hkv = m.h_kv(), hf = m.ffn, V = m.vocab;
  const double nq = m.n_q, s = s_in, c = c_in, bp = m.bytes_per_element();
  // A gated (SwiGLU) MLP has gate, up and down matrices; a plain (GPT-NeoX) MLP only up and down.
  const double mlp_mats = m.gated_mlp ? 3 : 2;
  // FFN activation traffic per layer: read input + write output (2sh) plus, per intermediate
  // tensor of width h_ffn, one write and one read: gated has gate and up (4 s h_ffn),
  // plain has only up (2 s h_ffn).
  const double ffn_act = m.gated_mlp ? 4 : 2;

  RooflineTerms t;
  t.attn_proj_flops = L * (4 * s * h * hq + 4 * s * h * hkv);
  t.attn_score_flops = L * (4 * s * (c + s) * hq);
  t.ffn_flops = L * (2 * mlp_mats * s * h * hf);
  t.lm_head_flops = 2 * s * h * V;

  // Embedding and LM head are counted separately even when tied (Appendix F remark).
  t.weight_bytes = bp * (L * (2 * h * hq + 2 * h * hkv + mlp_mats * h * hf) + 2 * V * h);
  t.kv_bytes = bp * (L * (2 * c * hkv + 2 * s * hkv));
  t.activation_bytes =
      bp * (L * (4 * s * h + 4 * s * hq + 2 * s * hkv + ffn_act * s * hf + 2 * nq * s * (c + s)) +
            s * h + s * V);
  return t;
}

const char* BoundName(Bound bound) { return bound == Bound::kCompute ? "compute" : "memory"; }

RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu, int64_t s, int64_t c) {
  RooflineEstimate e;
  e.terms = ComputeRooflineTerms(model, s, c);
  e.compute_s = e.terms.total_flops() / gpu.peak_flops;
  e.memory_s = e.terms.total_bytes() / gpu.mem_bw;
  e.bound = e.compute_s > e.memory_s ? Bound::kCompute : Bound::kMemory;
  e.seconds = std::max(e.compute_s, e.memory_s);
  return e;
}

nlohmann::json RooflineEstimateToJson(const RooflineEstimate& e) {
  const RooflineTerms& t = e.terms;
  return nlohmann::json{
      {"flops", t.total_flops()},
      {"bytes", t.total_bytes()},
      {"bound", BoundName(e.bound)},
      {"compute_s", e.compute_s},
      {"memory_s", e.memory_s},
      {"roofline_s", e.seconds},
      {"flops_terms",
       {{"attention_proj", t.attn_proj_flops},
        {"attention_score", t.attn_score_flops},
        {"attention", t.attention_flops()},
        {"ffn", t.ffn_flops},
        {"lm_head", t.lm_head_flops}}},
      {"bytes_terms",
       {{"weights", t.weight_bytes}, {"kv_cache", t.kv_bytes}, {"activations", t.activation_bytes}}},
  };
}

}  // namespace specplan::costmodel
