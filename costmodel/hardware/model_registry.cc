#include "costmodel/hardware/model_registry.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace specplan::costmodel {
namespace {

struct BuiltinModel {
  const char* name;
  HfConfig config;
};

// A llama-family config (RMSNorm, RoPE, SwiGLU, silu) with the architecture numbers of
// config.json: num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, tie_word_embeddings.
HfConfig Gated(const char* type, int64_t L, int64_t h, int64_t nq, int64_t nkv, int64_t d,
               int64_t ffn, int64_t V, bool tied) {
  HfConfig c;
  c.model_type = type;
  c.family = ArchFamily::kLlama;
  c.num_layers = L;
  c.hidden_size = h;
  c.num_heads = nq;
  c.num_kv_heads = nkv;
  c.head_dim = d;
  c.intermediate_size = ffn;
  c.vocab_size = V;
  c.tie_word_embeddings = tied;
  c.qk_norm = std::string(type) == "qwen3" || std::string(type) == "qwen3_moe";
  return c;
}

// Qwen3 (dense and MoE): rope_theta 1e6, max_position_embeddings 40960, rms_norm_eps 1e-6.
HfConfig Qwen3(HfConfig c) {
  c.rope_theta = 1e6;
  c.max_position_embeddings = 40960;
  c.norm_eps = 1e-6;
  return c;
}

// Llama 3.x: rope_theta 5e5, rms_norm_eps 1e-5, max_position_embeddings 131072, rope_scaling
// {rope_type llama3, factor, low_freq_factor 1, high_freq_factor 4,
// original_max_position_embeddings 8192}; factor 8 (3.1, 3.3) or 32 (3.2).
HfConfig Llama3(HfConfig c, double factor) {
  c.rope_theta = 5e5;
  c.norm_eps = 1e-5;
  c.max_position_embeddings = 131072;
  c.rope_scaling = {RopeScalingType::kLlama3, factor, 1.0, 4.0, 8192};
  return c;
}

// GPT-NeoX (Pythia): LayerNorm (eps 1e-5) with biases everywhere, rotary_pct 0.25, rotary base
// 1e4, parallel residual, gelu, max_position_embeddings 2048, no GQA.
HfConfig NeoX(int64_t L, int64_t h, int64_t heads, int64_t ffn, int64_t V) {
  HfConfig c = Gated("gpt_neox", L, h, heads, heads, h / heads, ffn, V, false);
  c.family = ArchFamily::kGptNeox;
  c.norm_eps = 1e-5;
  c.rotary_pct = 0.25;
  c.use_parallel_residual = true;
  c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
  c.hidden_act = Activation::kGelu;
  c.max_position_embeddings = 2048;
  return c;
}

// Every layer a router over E gated experts of width he, k per token; no dense MLP, no shared
// expert, untied embeddings (the Qwen3, gpt-oss and Mixtral MoE models).
HfConfig Moe(const char* type, int64_t L, int64_t h, int64_t nq, int64_t nkv, int64_t d, int64_t E,
             int64_t k, int64_t he, int64_t V) {
  HfConfig c = Gated(type, L, h, nq, nkv, d, 0, V, false);
  c.experts = E;
  c.experts_active = k;
  c.expert_ffn = he;
  c.unsupported = absl::StrCat("model_type = \"", type,
                               "\": a mixture of experts, which the runtime does not run");
  return c;
}

// gpt-oss: rope_theta 150000 with YaRN scaling (not modelled by the runtime), rms_norm_eps 1e-5.
HfConfig GptOss(HfConfig c) {
  c.rope_theta = 150000;
  c.rope_scaling.type = RopeScalingType::kUnsupported;
  c.norm_eps = 1e-5;
  c.max_position_embeddings = 131072;
  return c;
}

// GLM-4.5 family (glm4_moe): a router over E experts of width he with one shared expert of the
// same width, the first `dense` layers a dense MLP of width ffn; attention_bias true,
// partial_rotary_factor 0.5, rope_theta 1e6, rms_norm_eps 1e-5, max_position_embeddings 131072.
HfConfig Glm45(int64_t L, int64_t h, int64_t nq, int64_t nkv, int64_t d, int64_t E, int64_t k,
               int64_t he, int64_t dense, int64_t ffn, bool qk_norm) {
  HfConfig c = Moe("glm4_moe", L, h, nq, nkv, d, E, k, he, 151552);
  c.shared_expert_ffn = he;
  c.dense_layers = dense;
  c.dense_ffn = ffn;
  c.attention_bias = c.attention_out_bias = true;
  c.qk_norm = qk_norm;
  c.rotary_pct = 0.5;
  c.rope_theta = 1e6;
  c.norm_eps = 1e-5;
  c.max_position_embeddings = 131072;
  return c;
}

// Mixtral: rope_theta 1e6, rms_norm_eps 1e-5, max_position_embeddings 32768.
HfConfig Mixtral(HfConfig c) {
  c.rope_theta = 1e6;
  c.norm_eps = 1e-5;
  c.max_position_embeddings = 32768;
  return c;
}

// Values copied from each model's published config.json on the HuggingFace hub. Sources:
//   Qwen/Qwen3-0.6B, Qwen/Qwen3-1.7B, Qwen/Qwen3-4B, Qwen/Qwen3-8B, Qwen/Qwen3-14B, Qwen/Qwen3-32B,
//   meta-llama/Llama-3.1-8B(-Instruct), meta-llama/Llama-3.1-70B, meta-llama/Llama-3.2-1B,
//   meta-llama/Llama-3.3-70B-Instruct, EleutherAI/pythia-70m, EleutherAI/pythia-2.8b.
// MoE models (Moe(type, L, h, n_q, n_kv, head_dim, E, k, expert width, V)):
//   Qwen/Qwen3-30B-A3B: 48 layers, hidden 2048, 32/4 heads, head_dim 128, num_experts 128,
//     num_experts_per_tok 8, moe_intermediate_size 768, vocab 151936, tie false
//     (decoder_sparse_step 1, mlp_only_layers [] : every layer is MoE; intermediate_size 6144
//     unused).
//   Qwen/Qwen3-235B-A22B: 94 layers, hidden 4096, 64/4 heads, head_dim 128, num_experts 128,
//     num_experts_per_tok 8, moe_intermediate_size 1536, vocab 151936, tie false.
//   openai/gpt-oss-20b: 24 layers, hidden 2880, 64/8 heads, head_dim 64, num_local_experts 32,
//     experts_per_token 4, intermediate_size 2880 (per expert), vocab 201088, tie false.
//   openai/gpt-oss-120b: as gpt-oss-20b but 36 layers and num_local_experts 128.
//   mistralai/Mixtral-8x7B-v0.1: 32 layers, hidden 4096, 32/8 heads (head_dim 128),
//     num_local_experts 8, num_experts_per_tok 2, intermediate_size 14336 (per expert), vocab
//     32000.
//   zai-org/GLM-4.5-Air: 46 layers, hidden 4096, 96/8 heads, head_dim 128, n_routed_experts 128,
//     num_experts_per_tok 8, moe_intermediate_size 1408, n_shared_experts 1,
//     first_k_dense_replace 1, intermediate_size 10944, vocab 151552, use_qk_norm false.
//   zai-org/GLM-4.5: 92 layers, hidden 5120, 96/8 heads, head_dim 128, n_routed_experts 160,
//     num_experts_per_tok 8, moe_intermediate_size 1536, n_shared_experts 1,
//     first_k_dense_replace 3, intermediate_size 12288, vocab 151552, use_qk_norm true.
//   (Their MTP layer, num_nextn_predict_layers 1, is a drafter, not part of the target.)
// Parameter counts from these (ModelSpec::ParameterCount): 30.5B, 235.1B, 20.9B, 116.8B, 46.7B,
// 106.9B, 352.8B, matching the published totals (GLM's 106B and 355B include the MTP layer). Not
// modelled by the cost model: gpt-oss's MXFP4 expert weights (every weight is costed at the spec's
// dtype, bf16 by default) and its 128-token sliding window on alternate layers (every layer is
// costed as full attention over c), so gpt-oss estimates are upper bounds.
const std::vector<BuiltinModel>& Builtins() {
  static const std::vector<BuiltinModel> kModels = {
      {"qwen3-0.6b", Qwen3(Gated("qwen3", 28, 1024, 16, 8, 128, 3072, 151936, true))},
      {"qwen3-1.7b", Qwen3(Gated("qwen3", 28, 2048, 16, 8, 128, 6144, 151936, true))},
      {"qwen3-4b", Qwen3(Gated("qwen3", 36, 2560, 32, 8, 128, 9728, 151936, true))},
      {"qwen3-8b", Qwen3(Gated("qwen3", 36, 4096, 32, 8, 128, 12288, 151936, false))},
      {"qwen3-14b", Qwen3(Gated("qwen3", 40, 5120, 40, 8, 128, 17408, 151936, false))},
      {"qwen3-32b", Qwen3(Gated("qwen3", 64, 5120, 64, 8, 128, 25600, 151936, false))},
      {"llama-3.2-1b", Llama3(Gated("llama", 16, 2048, 32, 8, 64, 8192, 128256, true), 32)},
      {"llama-3.1-8b", Llama3(Gated("llama", 32, 4096, 32, 8, 128, 14336, 128256, false), 8)},
      {"llama-3.1-70b", Llama3(Gated("llama", 80, 8192, 64, 8, 128, 28672, 128256, false), 8)},
      {"llama-3.3-70b", Llama3(Gated("llama", 80, 8192, 64, 8, 128, 28672, 128256, false), 8)},
      {"pythia-70m", NeoX(6, 512, 8, 2048, 50304)},
      {"pythia-2.8b", NeoX(32, 2560, 32, 10240, 50304)},
      {"qwen3-30b-a3b", Qwen3(Moe("qwen3_moe", 48, 2048, 32, 4, 128, 128, 8, 768, 151936))},
      {"qwen3-235b-a22b", Qwen3(Moe("qwen3_moe", 94, 4096, 64, 4, 128, 128, 8, 1536, 151936))},
      {"gpt-oss-20b", GptOss(Moe("gpt_oss", 24, 2880, 64, 8, 64, 32, 4, 2880, 201088))},
      {"gpt-oss-120b", GptOss(Moe("gpt_oss", 36, 2880, 64, 8, 64, 128, 4, 2880, 201088))},
      {"mixtral-8x7b", Mixtral(Moe("mixtral", 32, 4096, 32, 8, 128, 8, 2, 14336, 32000))},
      {"glm-4.5-air", Glm45(46, 4096, 96, 8, 128, 128, 8, 1408, 1, 10944, false)},
      {"glm-4.5", Glm45(92, 5120, 96, 8, 128, 160, 8, 1536, 3, 12288, true)},
  };
  return kModels;
}

}  // namespace

absl::StatusOr<HfConfig> LookupHfConfig(const std::string& name) {
  const std::string key = absl::AsciiStrToLower(name);
  for (const BuiltinModel& b : Builtins()) {
    if (key == b.name) {
      HfConfig c = b.config;
      c.name = b.name;
      return c;
    }
  }
  return absl::NotFoundError(absl::StrCat("model: unknown name '", name,
                                          "' (known: ", absl::StrJoin(KnownModelNames(), ", "),
                                          "; or pass a path to a HuggingFace config.json)"));
}

absl::StatusOr<ModelSpec> LookupModel(const std::string& name) {
  absl::StatusOr<HfConfig> c = LookupHfConfig(name);
  if (!c.ok()) return c.status();
  return ToModelSpec(*c);
}

std::vector<std::string> KnownModelNames() {
  std::vector<std::string> names;
  for (const BuiltinModel& b : Builtins()) names.push_back(b.name);
  return names;
}

absl::StatusOr<ModelSpec> ResolveModel(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(name_or_path, ec)) {
    return ModelSpecFromHfConfigFile((fs::path(name_or_path) / "config.json").string());
  }
  if (fs::is_regular_file(name_or_path, ec)) return ModelSpecFromHfConfigFile(name_or_path);
  return LookupModel(name_or_path);
}

}  // namespace specplan::costmodel
