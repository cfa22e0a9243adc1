// Architecture numbers of a decoder-only target model, as the roofline needs them
// (BASTION (docs/references.md) Appendix F notation in brackets).
#ifndef SPECPLAN_COSTMODEL_MODEL_SPEC_H_
#define SPECPLAN_COSTMODEL_MODEL_SPEC_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace specplan::costmodel {

// Element type of weights, KV cache and activations.
enum class DType { kFloat32, kBFloat16, kFloat16, kFloat8 };
absl::StatusOr<DType> ParseDType(
    const std::string& name);        // "fp32"|"float32", "bf16"|"bfloat16", ...
const char* DTypeName(DType dtype);  // "fp32", "bf16", "fp16", "fp8"
int DTypeBytes(DType dtype);         // 4, 2, 2, 1

struct ModelSpec {
  std::string name;        // registry name or the config's path
  std::string model_type;  // HF model_type: llama, mistral, qwen2, qwen3, gpt_neox,
                           // qwen3_moe, gpt_oss, mixtral
  int64_t layers = 0;      // [L] transformer blocks
  int64_t hidden = 0;      // [h] residual width
  int64_t n_q = 0;         // [n_q] query heads
  int64_t n_kv = 0;        // [n_kv] key/value heads (GQA); == n_q for MHA
  int64_t head_dim = 0;    // [d] per-head width
  int64_t ffn = 0;         // [h_ffn] dense MLP intermediate width; 0 for MoE models (experts > 0)
  int64_t vocab = 0;       // [V]
  bool gated_mlp = true;   // SwiGLU (3 matrices) vs plain GELU MLP (2 matrices, GPT-NeoX)
  bool tied_embeddings = false;  // input embedding shares the LM head's matrix
  DType dtype = DType::kBFloat16;

  // Mixture of experts (experts > 0): every layer's MLP is a router over `experts` gated MLPs of
  // width expert_ffn, of which each token uses experts_active, plus optional always-active shared
  // experts. experts = 0 is a dense model (the other expert fields then must be 0).
  int64_t experts = 0;            // [E] routed experts per layer
  int64_t experts_active = 0;     // [k] routed experts per token (top-k), 1 <= k <= E
  int64_t expert_ffn = 0;         // [h_e] intermediate width of one routed expert
  int64_t shared_expert_ffn = 0;  // [h_sh] summed width of the shared experts; 0 = none
  // The first dense_layers of the L layers keep a dense gated MLP of width dense_ffn instead of
  // the experts (HF first_k_dense_replace: GLM-4.5, DeepSeek-V3); 0 = every layer is MoE. MoE
  // models only: a dense model ignores both (and they are not written for it). The roofline
  // (costmodel/latency/roofline.h) prices every layer as MoE; the composer
  // (costmodel/compose/compose.h) and ParameterCount() price these layers as dense.
  int64_t dense_layers = 0;  // [L_d] 0 <= L_d < L
  int64_t dense_ffn = 0;     // [h_d] > 0 iff dense_layers > 0
  // Zipf exponent alpha of expert popularity (roofline.h ExpectedDistinctExperts): expert i
  // (1-based) is chosen by a token with probability min(1, k * i^-alpha / sum_j j^-alpha);
  // 0 = uniform routing. A measured figure for the deployment's traffic, not a config value.
  double routing_skew = 0;

  // Tensor parallelism (a deployment choice, not architecture): weights, heads and KV cache are
  // split over tp GPUs, with two all-reduces of the residual stream per layer. tp must divide n_q;
  // each GPU holds n_kv / tp KV heads when tp divides n_kv, else one replicated KV head, which
  // needs tp to be a multiple of n_kv (vLLM's rule). Roofline terms of a spec with tp > 1 are per
  // GPU.
  int64_t tp = 1;

  bool is_moe() const { return experts > 0; }

  int64_t h_q() const { return n_q * head_dim; }               // [h_q] query width
  int64_t h_kv() const { return n_kv * head_dim; }             // [h_kv] key (= value) width
  int bytes_per_element() const { return DTypeBytes(dtype); }  // [bp]
  int64_t kv_heads_per_gpu() const { return n_kv >= tp ? n_kv / tp : 1; }
  // Parameter count of the whole model, all experts and all tp shards (embeddings counted once
  // when tied; norms and biases ignored).
  int64_t ParameterCount() const;
};

// Checks every field is positive and consistent (n_q divisible by n_kv, expert fields, tp);
// names the bad field.
absl::Status ValidateModelSpec(const ModelSpec& spec);

// Why `tp` GPUs cannot split `spec` ("must divide n_q = 32", ...), or "" when they can. Callers
// name the field themselves ("--tp 3: must divide n_q = 32").
std::string TensorParallelProblem(const ModelSpec& spec, int64_t tp);

// The expert fields and tp are written only when set (MoE, tp > 1) and read as optional, so
// profiles written before they existed load as dense models at tp = 1.
nlohmann::json ModelSpecToJson(const ModelSpec& spec);
absl::StatusOr<ModelSpec> ModelSpecFromJson(const nlohmann::json& j);  // inverse of ModelSpecToJson

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_MODEL_SPEC_H_
