#include "costmodel/latency/roofline.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::costmodel {

double ExpectedDistinctExperts(const ModelSpec& m, double tokens) {
  SPECPLAN_CHECK(tokens >= 0);
  if (!m.is_moe()) return 0;
  const double E = static_cast<double>(m.experts), k = static_cast<double>(m.experts_active);
  if (m.routing_skew == 0) return E * (1 - std::pow(1 - k / E, tokens));
  double norm = 0;
  for (int64_t i = 1; i <= m.experts; ++i)
    norm += std::pow(static_cast<double>(i), -m.routing_skew);
  double distinct = 0;
  for (int64_t i = 1; i <= m.experts; ++i) {
    const double p = std::min(1.0, k * std::pow(static_cast<double>(i), -m.routing_skew) / norm);
    distinct += 1 - std::pow(1 - p, tokens);
  }
  return distinct;
}

namespace {

// Per-GPU widths (see RooflineTerms).
struct Shard {
  double n;    // tp
  double hq;   // query width per GPU
  double hkv;  // key (= value) width per GPU
  double nq;   // query heads per GPU
};

Shard ShardOf(const ModelSpec& m) {
  const double n = static_cast<double>(m.tp);
  return {n, static_cast<double>(m.h_q()) / n,
          static_cast<double>(m.kv_heads_per_gpu()) * static_cast<double>(m.head_dim),
          static_cast<double>(m.n_q) / n};
}

}  // namespace

double WeightBytes(const ModelSpec& m, double tokens) {
  const Shard g = ShardOf(m);
  const double L = m.layers, h = m.hidden, V = m.vocab, bp = m.bytes_per_element();
  double mlp;  // elements per layer per GPU
  if (m.is_moe()) {
    const double experts = ExpectedDistinctExperts(m, tokens);
    mlp = 3 * h * (experts * m.expert_ffn + m.shared_expert_ffn) / g.n + h * m.experts;
  } else {
    mlp = (m.gated_mlp ? 3 : 2) * h * m.ffn / g.n;
  }
  // Embedding and LM head are counted separately even when tied (Appendix F remark); both are
  // split over the vocabulary under tensor parallelism.
  return bp * (L * (2 * h * g.hq + 2 * h * g.hkv + mlp) + 2 * V * h / g.n);
}

double AllReduceSeconds(const GpuSpec& gpu, int64_t tp, double bytes) {
  SPECPLAN_CHECK(tp >= 1);
  if (tp == 1) return 0;
  SPECPLAN_CHECK(gpu.link_bw > 0, "tensor parallelism needs an interconnect (link_bw > 0)");
  const double n = static_cast<double>(tp);
  return 2 * (n - 1) * gpu.link_latency_s + 2 * (n - 1) / n * bytes / gpu.link_bw;
}

std::string TensorParallelProblem(const ModelSpec& model, const GpuSpec& gpu, int64_t tp) {
  std::string why = TensorParallelProblem(model, tp);
  if (why.empty() && tp > 1 && !(gpu.link_bw > 0)) {
    why = absl::StrCat("gpu '", gpu.name, "' has no interconnect (link_bw = ", gpu.link_bw, ")");
  }
  return why;
}

RooflineTerms ComputeRooflineTerms(const ModelSpec& m, const PassTotals& pass) {
  SPECPLAN_CHECK(pass.tokens >= 1 && pass.context >= 0 && pass.score_pairs >= pass.tokens);
  const Shard g = ShardOf(m);
  // S tokens, C cached tokens and P query-key pairs, summed over the sequences of the pass; for one
  // sequence S = s, C = c and P = s (c + s), the symbols of Appendix F.
  const double S = pass.tokens, C = pass.context, P = pass.score_pairs;
  const double L = m.layers, h = m.hidden, V = m.vocab, bp = m.bytes_per_element();
  // A gated (SwiGLU) MLP has gate, up and down matrices; a plain (GPT-NeoX) MLP only up and down.
  const double mlp_mats = m.gated_mlp ? 3 : 2;
  // FFN activation traffic per layer: read input + write output (2sh) plus, per intermediate
  // tensor of width F, one write and one read: gated has gate and up (4 s F), plain only up (2 s
  // F).
  const double ffn_act = m.gated_mlp ? 4 : 2;
  // Intermediate width one token uses: the dense MLP, or its k routed experts and the shared ones.
  const double F = m.is_moe() ? static_cast<double>(m.experts_active) * m.expert_ffn +
                                    static_cast<double>(m.shared_expert_ffn)
                              : static_cast<double>(m.ffn);

  RooflineTerms t;
  t.attn_proj_flops = L * (4 * S * h * g.hq + 4 * S * h * g.hkv);
  t.attn_score_flops = L * (4 * P * g.hq);
  t.ffn_flops = L * (2 * mlp_mats * S * h * F / g.n);
  if (m.is_moe()) t.ffn_flops += L * 2 * S * h * m.experts;  // router logits, replicated
  t.lm_head_flops = 2 * S * h * V / g.n;

  // Streamed once per pass, however many sequences share it (for MoE: the experts all S tokens
  // route to).
  t.weight_bytes = WeightBytes(m, S);
  t.kv_bytes = bp * (L * (2 * C * g.hkv + 2 * S * g.hkv));
  t.activation_bytes =
      bp * (L * (4 * S * h + 4 * S * g.hq + 2 * S * g.hkv + ffn_act * S * F / g.n + 2 * g.nq * P) +
            S * h + S * V / g.n);
  if (m.tp > 1) {
    t.allreduces = 2 * m.layers;
    t.allreduce_bytes = bp * S * h;
  }
  return t;
}

RooflineTerms ComputeRooflineTerms(const ModelSpec& m, int64_t s, int64_t c) {
  SPECPLAN_CHECK(s >= 1 && c >= 0);
  return ComputeRooflineTerms(m, SinglePass(s, c));
}

double CommunicationSeconds(const ModelSpec& m, const GpuSpec& gpu, double tokens) {
  if (m.tp == 1) return 0;
  const double bytes =
      static_cast<double>(m.bytes_per_element()) * tokens * static_cast<double>(m.hidden);
  return 2 * static_cast<double>(m.layers) * AllReduceSeconds(gpu, m.tp, bytes);
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
  e.comm_s = CommunicationSeconds(model, gpu, pass.tokens);
  e.bound = e.compute_s > e.memory_s ? Bound::kCompute : Bound::kMemory;
  e.seconds = std::max(e.compute_s, e.memory_s) + e.comm_s;
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
      {"comm_s", e.comm_s},
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
      {"allreduces", t.allreduces},
      {"allreduce_bytes", t.allreduce_bytes},
  };
}

}  // namespace specplan::costmodel
