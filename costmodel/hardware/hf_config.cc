#include "costmodel/hardware/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

namespace ju = ::specplan::json_util;

bool Has(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

absl::StatusOr<int64_t> IntOr(const nlohmann::json& j, const char* key, int64_t fallback) {
  if (!Has(j, key)) return fallback;
  return ju::GetInt(j, key);
}
absl::StatusOr<double> NumberOr(const nlohmann::json& j, const char* key, double fallback) {
  if (!Has(j, key)) return fallback;
  return ju::GetNumber(j, key);
}
absl::StatusOr<bool> BoolOr(const nlohmann::json& j, const char* key, bool fallback) {
  if (!Has(j, key)) return fallback;
  return ju::GetBool(j, key);
}
absl::StatusOr<int64_t> PositiveInt(const nlohmann::json& j, const std::string& key) {
  SPECPLAN_ASSIGN_OR_RETURN(int64_t v, ju::GetInt(j, key));
  if (v <= 0) return absl::InvalidArgumentError(absl::StrCat(key, " = ", v, ": must be > 0"));
  return v;
}
// eos_token_id may be a list; take the first.
int64_t TokenIdOr(const nlohmann::json& j, const char* key) {
  if (!Has(j, key)) return -1;
  const auto& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();
  return -1;
}

constexpr const char* kDenseTypes[] = {"llama", "mistral", "qwen2", "qwen3", "gpt_neox"};
constexpr const char* kMoeTypes[] = {"qwen3_moe", "glm4_moe", "gpt_oss", "mixtral"};

template <typename List>
bool OneOf(const std::string& s, const List& list) {
  return std::find_if(std::begin(list), std::end(list), [&](const char* t) { return s == t; }) !=
         std::end(list);
}

// Records the first runtime limitation (later ones would only repeat the verdict).
void Unsupported(HfConfig* c, std::string why) {
  if (c->unsupported.empty()) c->unsupported = std::move(why);
}

void ReadActivation(const std::string& s, HfConfig* c) {
  if (s == "silu" || s == "swish") {
    c->hidden_act = Activation::kSilu;
  } else if (s == "gelu") {
    c->hidden_act = Activation::kGelu;
  } else if (s == "gelu_new" || s == "gelu_pytorch_tanh" || s == "gelu_fast") {
    c->hidden_act = Activation::kGeluTanh;
  } else if (s == "relu") {
    c->hidden_act = Activation::kRelu;
  } else {
    Unsupported(c, absl::StrCat("hidden_act = \"", s,
                                "\": unsupported (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)"));
  }
}

// `field` names the object in errors: "rope_scaling" (transformers < 5) or "rope_parameters".
absl::Status ReadRopeScaling(const nlohmann::json& j, const std::string& field, HfConfig* c) {
  RopeScaling& r = c->rope_scaling;
  r = RopeScaling{};
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " = ", json_util::Quote(j), ": expected an object or null"));
  }
  std::string type;
  if (Has(j, "rope_type")) {
    SPECPLAN_ASSIGN_OR_RETURN(type, ju::GetString(j, "rope_type", field));
  } else if (Has(j, "type")) {
    SPECPLAN_ASSIGN_OR_RETURN(type, ju::GetString(j, "type", field));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(field, ".rope_type: missing"));
  }
  if (type == "default") return absl::OkStatus();
  if (type == "linear") {
    r.type = RopeScalingType::kLinear;
  } else if (type == "llama3") {
    r.type = RopeScalingType::kLlama3;
  } else {
    r.type = RopeScalingType::kUnsupported;
    Unsupported(c, absl::StrCat(field, ".rope_type = \"", type,
                                "\": unsupported (default, linear, llama3)"));
    return absl::OkStatus();
  }
  SPECPLAN_ASSIGN_OR_RETURN(r.factor, ju::GetNumber(j, "factor", field));
  if (!(r.factor >= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".factor = ", r.factor, ": must be >= 1"));
  }
  if (r.type == RopeScalingType::kLlama3) {
    SPECPLAN_ASSIGN_OR_RETURN(r.low_freq_factor, ju::GetNumber(j, "low_freq_factor", field));
    SPECPLAN_ASSIGN_OR_RETURN(r.high_freq_factor, ju::GetNumber(j, "high_freq_factor", field));
    SPECPLAN_ASSIGN_OR_RETURN(r.original_max_position_embeddings,
                              ju::GetInt(j, "original_max_position_embeddings", field));
    if (!(r.high_freq_factor > r.low_freq_factor) || !(r.low_freq_factor > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".high_freq_factor = ", r.high_freq_factor,
                       ": must be > low_freq_factor = ", r.low_freq_factor, " > 0"));
    }
    if (r.original_max_position_embeddings <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".original_max_position_embeddings = ", r.original_max_position_embeddings,
          ": must be > 0"));
    }
  }
  return absl::OkStatus();
}

// The expert fields of a MoE config (transformers' Qwen3MoeConfig, Glm4MoeConfig, GptOssConfig,
// MixtralConfig, DeepseekV3Config):
//   qwen3_moe    num_experts, num_experts_per_tok, moe_intermediate_size (every layer sparse:
//                decoder_sparse_step 1 and mlp_only_layers empty, else unsupported)
//   glm4_moe,    n_routed_experts, num_experts_per_tok, moe_intermediate_size, n_shared_experts
//   deepseek_v3  (shared width = n_shared_experts x moe_intermediate_size; transformers' default
//                1), first_k_dense_replace (the first layers keep a dense MLP of
//                intermediate_size; transformers' default 1 for glm4_moe, 3 for deepseek_v3)
//   gpt_oss      num_local_experts, num_experts_per_tok (or experts_per_token), intermediate_size
//   mixtral      num_local_experts, num_experts_per_tok, intermediate_size
// The routed expert width goes to expert_ffn; intermediate_size (the dense MLP width) is 0.
absl::Status ReadExperts(const nlohmann::json& j, HfConfig* c) {
  const std::string& type = c->model_type;
  const bool deepseek_style = type == "glm4_moe" || type == "deepseek_v3";
  if (type == "qwen3_moe") {
    SPECPLAN_ASSIGN_OR_RETURN(c->experts, PositiveInt(j, "num_experts"));
    SPECPLAN_ASSIGN_OR_RETURN(c->expert_ffn, PositiveInt(j, "moe_intermediate_size"));
    if (Has(j, "decoder_sparse_step")) {
      SPECPLAN_ASSIGN_OR_RETURN(int64_t step, ju::GetInt(j, "decoder_sparse_step"));
      if (step != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "decoder_sparse_step = ", step, ": unsupported (only every layer MoE, step 1)"));
      }
    }
    if (Has(j, "mlp_only_layers") &&
        !(j["mlp_only_layers"].is_array() && j["mlp_only_layers"].empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat("mlp_only_layers = ", json_util::Quote(j["mlp_only_layers"]),
                       ": unsupported (only every layer MoE, [])"));
    }
  } else if (deepseek_style) {
    SPECPLAN_ASSIGN_OR_RETURN(c->experts, PositiveInt(j, "n_routed_experts"));
    SPECPLAN_ASSIGN_OR_RETURN(c->expert_ffn, PositiveInt(j, "moe_intermediate_size"));
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t shared, IntOr(j, "n_shared_experts", 1));
    if (shared < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("n_shared_experts = ", shared, ": must be >= 0"));
    }
    c->shared_expert_ffn = shared * c->expert_ffn;
    SPECPLAN_ASSIGN_OR_RETURN(c->dense_layers,
                              IntOr(j, "first_k_dense_replace", type == "glm4_moe" ? 1 : 3));
    if (c->dense_layers < 0 || (c->num_layers > 0 && c->dense_layers >= c->num_layers)) {
      return absl::InvalidArgumentError(
          absl::StrCat("first_k_dense_replace = ", c->dense_layers,
                       ": must be in [0, num_hidden_layers = ", c->num_layers, ")"));
    }
    if (c->dense_layers > 0) {
      SPECPLAN_ASSIGN_OR_RETURN(c->dense_ffn, PositiveInt(j, "intermediate_size"));
    }
    if (Has(j, "moe_layer_freq")) {
      SPECPLAN_ASSIGN_OR_RETURN(const int64_t freq, ju::GetInt(j, "moe_layer_freq"));
      if (freq != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("moe_layer_freq = ", freq,
                         ": unsupported (only every layer after the dense ones MoE)"));
      }
    }
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(c->experts, PositiveInt(j, "num_local_experts"));
    SPECPLAN_ASSIGN_OR_RETURN(c->expert_ffn, PositiveInt(j, "intermediate_size"));
  }
  const char* k_key = type == "gpt_oss" && !Has(j, "num_experts_per_tok") ? "experts_per_token"
                                                                          : "num_experts_per_tok";
  SPECPLAN_ASSIGN_OR_RETURN(c->experts_active, PositiveInt(j, k_key));
  if (c->experts_active > c->experts) {
    return absl::InvalidArgumentError(absl::StrCat(k_key, " = ", c->experts_active,
                                                   ": must be <= the expert count ", c->experts));
  }
  c->intermediate_size = 0;
  return absl::OkStatus();
}

// deepseek_v3 (DeepSeek-V3/R1) and kimi_k2 (Kimi-K2, the same architecture) attend with
// multi-head latent attention.
bool IsMlaType(const std::string& t) { return t == "deepseek_v3" || t == "kimi_k2"; }

// The named refusal of MLA attention: the kernel tables hold none, and pricing it as GQA would
// misstate both its KV cache (a latent of kv_lora_rank + qk_rope_head_dim per token) and its FLOPs.
absl::Status MlaRefusal(const nlohmann::json& j, const std::string& type) {
  std::string key = absl::StrCat("model_type = \"", type, "\"");
  if (Has(j, "kv_lora_rank") && j["kv_lora_rank"].is_number_integer()) {
    key = absl::StrCat("kv_lora_rank = ", j["kv_lora_rank"].get<int64_t>());
  }
  return absl::UnimplementedError(absl::StrCat(
      key, ": MLA attention (multi-head latent attention, ", type,
      ") is not priced: the engines' kernel tables hold no MLA attention and the roofline models "
      "GQA only, which would misstate its KV cache and FLOPs (the MoE FFN itself is read)"));
}

// Norms, RoPE, biases and activation, with each family's transformers defaults.
absl::Status ReadLayerDetails(const nlohmann::json& j, HfConfig* c) {
  const std::string& t = c->model_type;
  std::string act = c->family == ArchFamily::kGptNeox ? "gelu" : "silu";
  if (Has(j, "hidden_act")) {
    SPECPLAN_ASSIGN_OR_RETURN(act, ju::GetString(j, "hidden_act"));
  }
  ReadActivation(act, c);
  if (c->family == ArchFamily::kLlama) {
    SPECPLAN_ASSIGN_OR_RETURN(c->norm_eps, NumberOr(j, "rms_norm_eps", 1e-6));
    SPECPLAN_ASSIGN_OR_RETURN(c->rope_theta, NumberOr(j, "rope_theta", 10000.0));
    c->qk_norm = t == "qwen3" || t == "qwen3_moe";
    if (t == "glm4_moe") {
      SPECPLAN_ASSIGN_OR_RETURN(c->qk_norm, BoolOr(j, "use_qk_norm", false));
    }
    // Qwen2 hard-codes bias on q/k/v; the others read attention_bias (default false).
    SPECPLAN_ASSIGN_OR_RETURN(c->attention_bias, BoolOr(j, "attention_bias", t == "qwen2"));
    c->attention_out_bias = t == "qwen2" ? false : c->attention_bias;
    SPECPLAN_ASSIGN_OR_RETURN(c->mlp_bias, BoolOr(j, "mlp_bias", false));
    SPECPLAN_ASSIGN_OR_RETURN(c->rotary_pct, NumberOr(j, "partial_rotary_factor", 1.0));
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(c->norm_eps, NumberOr(j, "layer_norm_eps", 1e-5));
    SPECPLAN_ASSIGN_OR_RETURN(double base, NumberOr(j, "rotary_emb_base", 10000.0));
    SPECPLAN_ASSIGN_OR_RETURN(c->rope_theta, NumberOr(j, "rope_theta", base));
    SPECPLAN_ASSIGN_OR_RETURN(c->rotary_pct, NumberOr(j, "rotary_pct", 0.25));
    if (Has(j, "partial_rotary_factor")) {
      SPECPLAN_ASSIGN_OR_RETURN(c->rotary_pct, ju::GetNumber(j, "partial_rotary_factor"));
    }
    SPECPLAN_ASSIGN_OR_RETURN(c->use_parallel_residual, BoolOr(j, "use_parallel_residual", true));
    SPECPLAN_ASSIGN_OR_RETURN(c->attention_bias, BoolOr(j, "attention_bias", true));
    c->attention_out_bias = c->attention_bias;
    c->mlp_bias = true;
  }
  if (Has(j, "rope_parameters")) {
    // transformers >= 5 writes RoPE as one object: rope_theta, rope_type with its scaling fields,
    // and (gpt_neox) partial_rotary_factor. It replaces the top-level keys.
    const nlohmann::json& rp = j["rope_parameters"];
    SPECPLAN_RETURN_IF_ERROR(ReadRopeScaling(rp, "rope_parameters", c));
    if (Has(rp, "rope_theta")) {
      SPECPLAN_ASSIGN_OR_RETURN(c->rope_theta, ju::GetNumber(rp, "rope_theta", "rope_parameters"));
    }
    if (Has(rp, "partial_rotary_factor")) {
      SPECPLAN_ASSIGN_OR_RETURN(c->rotary_pct,
                                ju::GetNumber(rp, "partial_rotary_factor", "rope_parameters"));
    }
  } else if (Has(j, "rope_scaling")) {
    SPECPLAN_RETURN_IF_ERROR(ReadRopeScaling(j["rope_scaling"], "rope_scaling", c));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t HfConfig::rotary_dim() const {
  int64_t r = static_cast<int64_t>(static_cast<double>(head_dim) * rotary_pct);
  r -= r % 2;
  return std::max<int64_t>(0, std::min(r, head_dim));
}

absl::Status ValidateHfConfig(const HfConfig& c) {
  auto positive = [](const char* field, int64_t v) -> absl::Status {
    if (v <= 0) return absl::InvalidArgumentError(absl::StrCat(field, " = ", v, ": must be > 0"));
    return absl::OkStatus();
  };
  SPECPLAN_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size));
  SPECPLAN_RETURN_IF_ERROR(positive("hidden_size", c.hidden_size));
  if (!c.is_moe()) SPECPLAN_RETURN_IF_ERROR(positive("intermediate_size", c.intermediate_size));
  SPECPLAN_RETURN_IF_ERROR(positive("num_hidden_layers", c.num_layers));
  SPECPLAN_RETURN_IF_ERROR(positive("num_attention_heads", c.num_heads));
  SPECPLAN_RETURN_IF_ERROR(positive("num_key_value_heads", c.num_kv_heads));
  SPECPLAN_RETURN_IF_ERROR(positive("head_dim", c.head_dim));
  SPECPLAN_RETURN_IF_ERROR(positive("max_position_embeddings", c.max_position_embeddings));
  if (c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_key_value_heads = ", c.num_kv_heads,
                     ": must divide num_attention_heads = ", c.num_heads));
  }
  if (c.family == ArchFamily::kGptNeox && c.num_kv_heads != c.num_heads) {
    return absl::InvalidArgumentError(absl::StrCat("num_key_value_heads = ", c.num_kv_heads,
                                                   ": gpt_neox has no GQA (must equal ",
                                                   c.num_heads, ")"));
  }
  if (c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("head_dim = ", c.head_dim, ": must be even"));
  }
  if (!(c.rope_theta > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("rope_theta = ", c.rope_theta, ": must be > 0"));
  }
  if (!(c.rotary_pct > 0 && c.rotary_pct <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rotary_pct = ", c.rotary_pct, ": must be in (0, 1]"));
  }
  if (!(c.norm_eps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("norm_eps = ", c.norm_eps, ": must be > 0"));
  }
  return absl::OkStatus();
}

absl::StatusOr<HfConfig> HfConfigFromJson(const nlohmann::json& j, const std::string& name) {
  if (!j.is_object()) return absl::InvalidArgumentError("config: expected a JSON object");
  HfConfig c;
  c.name = name;
  SPECPLAN_ASSIGN_OR_RETURN(c.model_type, ju::GetString(j, "model_type"));
  const std::string& t = c.model_type;
  const bool moe = OneOf(t, kMoeTypes);
  if (IsMlaType(t)) return MlaRefusal(j, t);
  if (!OneOf(t, kDenseTypes) && !moe) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_type = \"", t, "\": unsupported (", absl::StrJoin(kDenseTypes, ", "),
                     "; the cost model also reads ", absl::StrJoin(kMoeTypes, ", "),
                     "; deepseek_v3 and kimi_k2 are refused for their MLA attention)"));
  }
  if (moe) {
    Unsupported(&c, absl::StrCat("model_type = \"", t,
                                 "\": a mixture of experts, which the runtime does not run (",
                                 absl::StrJoin(kDenseTypes, ", "), ")"));
  }
  c.family = t == "gpt_neox" ? ArchFamily::kGptNeox : ArchFamily::kLlama;
  SPECPLAN_ASSIGN_OR_RETURN(c.num_layers, PositiveInt(j, "num_hidden_layers"));
  SPECPLAN_ASSIGN_OR_RETURN(c.hidden_size, PositiveInt(j, "hidden_size"));
  SPECPLAN_ASSIGN_OR_RETURN(c.num_heads, PositiveInt(j, "num_attention_heads"));
  if (moe) {
    SPECPLAN_RETURN_IF_ERROR(ReadExperts(j, &c));
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(c.intermediate_size, PositiveInt(j, "intermediate_size"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(c.vocab_size, PositiveInt(j, "vocab_size"));
  c.num_kv_heads = c.num_heads;
  if (Has(j, "num_key_value_heads")) {
    SPECPLAN_ASSIGN_OR_RETURN(c.num_kv_heads, PositiveInt(j, "num_key_value_heads"));
  }
  if (Has(j, "head_dim")) {
    SPECPLAN_ASSIGN_OR_RETURN(c.head_dim, PositiveInt(j, "head_dim"));
  } else if (c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hidden_size = ", c.hidden_size, ": not divisible by num_attention_heads = ", c.num_heads,
        " and no head_dim given"));
  } else {
    c.head_dim = c.hidden_size / c.num_heads;
  }
  SPECPLAN_ASSIGN_OR_RETURN(c.max_position_embeddings, IntOr(j, "max_position_embeddings", 4096));
  // transformers' defaults for these model types are all tie_word_embeddings = false.
  SPECPLAN_ASSIGN_OR_RETURN(c.tie_word_embeddings, BoolOr(j, "tie_word_embeddings", false));
  c.bos_token_id = TokenIdOr(j, "bos_token_id");
  c.eos_token_id = TokenIdOr(j, "eos_token_id");
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) {
    SPECPLAN_ASSIGN_OR_RETURN(c.dtype, ParseDType(j["torch_dtype"].get<std::string>()));
  }
  SPECPLAN_RETURN_IF_ERROR(ReadLayerDetails(j, &c));
  SPECPLAN_RETURN_IF_ERROR(ValidateHfConfig(c));
  return c;
}

absl::StatusOr<HfConfig> HfMoeFieldsFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("config: expected a JSON object");
  HfConfig c;
  SPECPLAN_ASSIGN_OR_RETURN(c.model_type, ju::GetString(j, "model_type"));
  if (!OneOf(c.model_type, kMoeTypes) && !IsMlaType(c.model_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_type = \"", c.model_type, "\": not a mixture of experts (",
                     absl::StrJoin(kMoeTypes, ", "), ", deepseek_v3, kimi_k2)"));
  }
  if (c.model_type == "kimi_k2") c.model_type = "deepseek_v3";
  SPECPLAN_ASSIGN_OR_RETURN(c.num_layers, PositiveInt(j, "num_hidden_layers"));
  SPECPLAN_RETURN_IF_ERROR(ReadExperts(j, &c));
  return c;
}

absl::StatusOr<HfConfig> HfConfigFromFile(const std::string& path) {
  std::filesystem::path p(path);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  return ju::ReadJsonFileAs(p.string(), [&](const nlohmann::json& j) {
    return HfConfigFromJson(j, p.parent_path().string());
  });
}

ModelSpec ToModelSpec(const HfConfig& c) {
  ModelSpec m;
  m.name = c.name;
  m.model_type = c.model_type;
  m.layers = c.num_layers;
  m.hidden = c.hidden_size;
  m.n_q = c.num_heads;
  m.n_kv = c.num_kv_heads;
  m.head_dim = c.head_dim;
  m.ffn = c.intermediate_size;
  m.vocab = c.vocab_size;
  m.gated_mlp = c.family == ArchFamily::kLlama;
  m.tied_embeddings = c.tie_word_embeddings;
  m.dtype = c.dtype;
  m.experts = c.experts;
  m.experts_active = c.experts_active;
  m.expert_ffn = c.expert_ffn;
  m.shared_expert_ffn = c.shared_expert_ffn;
  m.dense_layers = c.dense_layers;
  m.dense_ffn = c.dense_ffn;
  return m;
}

absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const nlohmann::json& config,
                                                const std::string& name) {
  SPECPLAN_ASSIGN_OR_RETURN(HfConfig c, HfConfigFromJson(config, name));
  ModelSpec m = ToModelSpec(c);
  SPECPLAN_RETURN_IF_ERROR(ValidateModelSpec(m));
  return m;
}

absl::StatusOr<ModelSpec> ModelSpecFromHfConfigFile(const std::string& path) {
  return ju::ReadJsonFileAs(
      path, [&](const nlohmann::json& j) { return ModelSpecFromHfConfig(j, path); });
}

}  // namespace specplan::costmodel
