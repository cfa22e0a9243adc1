#include "costmodel/roofline.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/check.h"

namespace specplan::costmodel {

RooflineTerms ComputeRooflineTerms(const ModelSpec& m, const PassTotals& pass) {
  SPECPLAN_CHECK(pass.tokens >= 1 && pass.context >= 0 && pass.score_pairs >= pass.tokens);
  const double L = m.layers, h = m.hidden, hq = m.h_q(), hkv = m.h_kv(), hf = m.ffn, V = m.vocab;
  // S tokens, C cached tokens and P query-key pairs, summed over the sequences of the pass; for one
  // sequence S = s, C = c and P = s (c + s), which are the symbols of Appendix F.
  const double nq = m.n_q, S = pass.tokens, C = pass.context, P = pass.score_pairs;
  const double bp = m.bytes_per_element();
  // A gated (SwiGLU) MLP has gate, up and down matrices; a plain (GPT-NeoX) MLP only up and down.
  const double mlp_mats = m.gated_mlp ? 3 : 2;
  // FFN activation traffic per layer: read input + write output (2sh) plus, per intermediate
  // tensor of width h_ffn, one write and one read: gated has gate and up (4 s h_ffn),
  // plain has only up (2 s h_ffn).
  const double ffn_act = m.gated_mlp ? 4 : 2;

  RooflineTerms t;
  t.attn_proj_flops = L * (4 * S * h * hq + 4 * S * h * hkv);
  t.attn_score_flops = L * (4 * P * hq);
  t.ffn_flops = L * (2 * mlp_mats * S * h * hf);
  t.lm_head_flops = 2 * S * h * V;

  // Streamed once per pass, however many sequences share it. Embedding and LM head are counted
  // separately even when tied (Appendix F remark).
  t.weight_bytes = bp * (L * (2 * h * hq + 2 * h * hkv + mlp_mats * h * hf) + 2 * V * h);
  t.kv_bytes = bp * (L * (2 * C * hkv + 2 * S * hkv));
  t.activation_bytes =
      bp *
      (L * (4 * S * h + 4 * S * hq + 2 * S * hkv + ffn_act * S * hf + 2 * nq * P) + S * h + S * V);
  return t;
}

RooflineTerms ComputeRooflineTerms(const ModelSpec& m, int64_t s, int64_t c) {
  SPECPLAN_CHECK(s >= 1 && c >= 0);
  return ComputeRooflineTerms(m, SinglePass(s, c));
}

const char* BoundName(Bound bound) { return bound == Bound::kCompute ? "compute" : "memory"; }

RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                  int64_t c) {
  return EstimateRoofline(model, gpu, SinglePass(s, c));
}

RooflineEstimate EstimateRoofline(const ModelSpec& model, const GpuSpec& gpu,
                                  const PassTotals& pass) {
  RooflineEstimate e;
  e.terms = ComputeRooflineTerms(model, pass);
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
       {{"weights", t.weight_bytes},
        {"kv_cache", t.kv_bytes},
        {"activations", t.activation_bytes}}},
  };
}

}  // namespace specplan::costmodel
