#include "runtime/model_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/model_spec.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::runtime {
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
// eos_token_id may be a list; take the first.
int64_t TokenIdOr(const nlohmann::json& j, const char* key) {
  if (!Has(j, key)) return -1;
  const auto& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();
  return -1;
}

absl::StatusOr<Activation> ParseActivation(const std::string& s) {
  if (s == "silu" || s == "swish") return Activation::kSilu;
  if (s == "gelu") return Activation::kGelu;
  if (s == "gelu_new" || s == "gelu_pytorch_tanh" || s == "gelu_fast") return Activation::kGeluTanh;
  if (s == "relu") return Activation::kRelu;
  return absl::InvalidArgumentError(absl::StrCat(
      "hidden_act = \"", s, "\": unsupported (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)"));
}

// `field` names the object in errors: "rope_scaling" (transformers < 5) or "rope_parameters".
absl::StatusOr<RopeScaling> ParseRopeScaling(const nlohmann::json& j, const std::string& field) {
  RopeScaling r;
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " = ", j.dump(), ": expected an object or null"));
  }
  std::string type;
  if (Has(j, "rope_type")) {
    SPECPLAN_ASSIGN_OR_RETURN(type, ju::GetString(j, "rope_type", field));
  } else if (Has(j, "type")) {
    SPECPLAN_ASSIGN_OR_RETURN(type, ju::GetString(j, "type", field));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(field, ".rope_type: missing"));
  }
  if (type == "default") return r;
  if (type == "linear") {
    r.type = RopeScalingType::kLinear;
  } else if (type == "llama3") {
    r.type = RopeScalingType::kLlama3;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".rope_type = \"", type, "\": unsupported (default, linear, llama3)"));
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
  return r;
}

ModelConfig TinyLlama() {
  ModelConfig c;
  c.name = "tiny";
  c.model_type = "llama";
  c.family = ArchFamily::kLlama;
  c.vocab_size = 256;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_layers = 4;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.max_position_embeddings = 2048;
  c.rope_theta = 10000.0;
  c.norm_eps = 1e-6;
  c.hidden_act = Activation::kSilu;
  return c;
}

}  // namespace

int64_t ModelConfig::rotary_dim() const {
  int64_t r = static_cast<int64_t>(static_cast<double>(head_dim) * rotary_pct);
  r -= r % 2;
  return std::max<int64_t>(0, std::min(r, head_dim));
}

absl::Status ValidateModelConfig(const ModelConfig& c) {
  auto positive = [](const char* field, int64_t v) -> absl::Status {
    if (v <= 0) return absl::InvalidArgumentError(absl::StrCat(field, " = ", v, ": must be > 0"));
    return absl::OkStatus();
  };
  SPECPLAN_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size));
  SPECPLAN_RETURN_IF_ERROR(positive("hidden_size", c.hidden_size));
  SPECPLAN_RETURN_IF_ERROR(positive("intermediate_size", c.intermediate_size));
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

absl::StatusOr<ModelConfig> ParseHfConfig(const nlohmann::json& j, const std::string& name) {
  ModelConfig c;
  c.name = name;
  SPECPLAN_ASSIGN_OR_RETURN(c.model_type, ju::GetString(j, "model_type"));
  const std::string& t = c.model_type;
  if (t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3") {
    c.family = ArchFamily::kLlama;
  } else if (t == "gpt_neox") {
    c.family = ArchFamily::kGptNeox;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "model_type = \"", t, "\": unsupported (llama, mistral, qwen2, qwen3, gpt_neox)"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(c.vocab_size, ju::GetInt(j, "vocab_size"));
  SPECPLAN_ASSIGN_OR_RETURN(c.hidden_size, ju::GetInt(j, "hidden_size"));
  SPECPLAN_ASSIGN_OR_RETURN(c.intermediate_size, ju::GetInt(j, "intermediate_size"));
  SPECPLAN_ASSIGN_OR_RETURN(c.num_layers, ju::GetInt(j, "num_hidden_layers"));
  SPECPLAN_ASSIGN_OR_RETURN(c.num_heads, ju::GetInt(j, "num_attention_heads"));
  SPECPLAN_ASSIGN_OR_RETURN(c.num_kv_heads, IntOr(j, "num_key_value_heads", c.num_heads));
  if (c.num_heads <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_attention_heads = ", c.num_heads, ": must be > 0"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(c.head_dim, IntOr(j, "head_dim", c.hidden_size / c.num_heads));
  SPECPLAN_ASSIGN_OR_RETURN(c.max_position_embeddings, IntOr(j, "max_position_embeddings", 4096));
  SPECPLAN_ASSIGN_OR_RETURN(c.tie_word_embeddings, BoolOr(j, "tie_word_embeddings", false));
  c.bos_token_id = TokenIdOr(j, "bos_token_id");
  c.eos_token_id = TokenIdOr(j, "eos_token_id");

  std::string act = c.family == ArchFamily::kGptNeox ? "gelu" : "silu";
  if (Has(j, "hidden_act")) {
    SPECPLAN_ASSIGN_OR_RETURN(act, ju::GetString(j, "hidden_act"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(c.hidden_act, ParseActivation(act));

  if (c.family == ArchFamily::kLlama) {
    SPECPLAN_ASSIGN_OR_RETURN(c.norm_eps, NumberOr(j, "rms_norm_eps", 1e-6));
    SPECPLAN_ASSIGN_OR_RETURN(c.rope_theta, NumberOr(j, "rope_theta", 10000.0));
    c.qk_norm = t == "qwen3";
    // Qwen2 hard-codes bias on q/k/v; the others read attention_bias (default false).
    SPECPLAN_ASSIGN_OR_RETURN(c.attention_bias, BoolOr(j, "attention_bias", t == "qwen2"));
    c.attention_out_bias = t == "qwen2" ? false : c.attention_bias;
    SPECPLAN_ASSIGN_OR_RETURN(c.mlp_bias, BoolOr(j, "mlp_bias", false));
    double partial = 1.0;
    SPECPLAN_ASSIGN_OR_RETURN(partial, NumberOr(j, "partial_rotary_factor", 1.0));
    c.rotary_pct = partial;
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(c.norm_eps, NumberOr(j, "layer_norm_eps", 1e-5));
    double base = 10000.0;
    SPECPLAN_ASSIGN_OR_RETURN(base, NumberOr(j, "rotary_emb_base", 10000.0));
    SPECPLAN_ASSIGN_OR_RETURN(c.rope_theta, NumberOr(j, "rope_theta", base));
    SPECPLAN_ASSIGN_OR_RETURN(c.rotary_pct, NumberOr(j, "rotary_pct", 0.25));
    if (Has(j, "partial_rotary_factor")) {
      SPECPLAN_ASSIGN_OR_RETURN(c.rotary_pct, ju::GetNumber(j, "partial_rotary_factor"));
    }
    SPECPLAN_ASSIGN_OR_RETURN(c.use_parallel_residual, BoolOr(j, "use_parallel_residual", true));
    SPECPLAN_ASSIGN_OR_RETURN(c.attention_bias, BoolOr(j, "attention_bias", true));
    c.attention_out_bias = c.attention_bias;
    c.mlp_bias = true;
  }
  if (Has(j, "rope_parameters")) {
    // transformers >= 5 writes RoPE as one object: rope_theta, rope_type with its scaling fields,
    // and (gpt_neox) partial_rotary_factor. It replaces the top-level keys.
    const nlohmann::json& rp = j["rope_parameters"];
    SPECPLAN_ASSIGN_OR_RETURN(c.rope_scaling, ParseRopeScaling(rp, "rope_parameters"));
    if (Has(rp, "rope_theta")) {
      SPECPLAN_ASSIGN_OR_RETURN(c.rope_theta, ju::GetNumber(rp, "rope_theta", "rope_parameters"));
    }
    if (Has(rp, "partial_rotary_factor")) {
      SPECPLAN_ASSIGN_OR_RETURN(c.rotary_pct,
                                ju::GetNumber(rp, "partial_rotary_factor", "rope_parameters"));
    }
  } else if (Has(j, "rope_scaling")) {
    SPECPLAN_ASSIGN_OR_RETURN(c.rope_scaling, ParseRopeScaling(j["rope_scaling"], "rope_scaling"));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

absl::StatusOr<ModelConfig> LoadHfConfig(const std::string& path) {
  std::filesystem::path p(path);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  SPECPLAN_ASSIGN_OR_RETURN(nlohmann::json j, ju::ReadJsonFile(p.string()));
  auto c = ParseHfConfig(j, p.parent_path().string());
  if (!c.ok()) {
    return absl::Status(c.status().code(), absl::StrCat(p.string(), ": ", c.status().message()));
  }
  return c;
}

std::vector<std::string> BuiltinConfigNames() {
  return {"tiny", "tiny-draft", "tiny-qwen3", "tiny-neox", "tiny-llama3"};
}

absl::StatusOr<ModelConfig> BuiltinConfig(const std::string& name) {
  ModelConfig c = TinyLlama();
  if (name == "tiny") return c;
  if (name == "tiny-draft") {
    c.name = name;
    c.num_layers = 1;
    return c;
  }
  if (name == "tiny-qwen3") {
    c.name = name;
    c.model_type = "qwen3";
    c.qk_norm = true;
    c.tie_word_embeddings = true;
    c.head_dim = 32;  // qwen3 decouples head_dim from hidden / heads
    c.num_kv_heads = 1;
    c.rope_theta = 1000000.0;
    return c;
  }
  if (name == "tiny-llama3") {
    c.name = name;
    c.attention_bias = true;
    c.rope_theta = 500000.0;
    c.rope_scaling.type = RopeScalingType::kLlama3;
    c.rope_scaling.factor = 8.0;
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 64;
    return c;
  }
  if (name == "tiny-neox") {
    c.name = name;
    c.model_type = "gpt_neox";
    c.family = ArchFamily::kGptNeox;
    c.num_kv_heads = c.num_heads;
    c.intermediate_size = 256;
    c.rotary_pct = 0.25;
    c.norm_eps = 1e-5;
    c.use_parallel_residual = true;
    c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
    c.hidden_act = Activation::kGelu;
    return c;
  }
  return absl::NotFoundError(absl::StrCat("model \"", name, "\": not a built-in config (",
                                          absl::StrJoin(BuiltinConfigNames(), ", "), ")"));
}

namespace {
// A HuggingFace-style config for a costmodel registry model, so the runtime can build it. The
// architecture numbers come from the spec; RoPE constants follow the family's published configs.
nlohmann::json HfConfigFromSpec(const costmodel::ModelSpec& m) {
  nlohmann::json j = {{"model_type", m.model_type},
                      {"vocab_size", m.vocab},
                      {"hidden_size", m.hidden},
                      {"intermediate_size", m.ffn},
                      {"num_hidden_layers", m.layers},
                      {"num_attention_heads", m.n_q},
                      {"num_key_value_heads", m.n_kv},
                      {"head_dim", m.head_dim},
                      {"tie_word_embeddings", m.tied_embeddings},
                      {"max_position_embeddings", 32768}};
  if (m.model_type == "qwen3" || m.model_type == "qwen2") {
    j["rope_theta"] = 1000000.0;
    j["max_position_embeddings"] = 40960;
  } else if (m.model_type == "llama" && absl::StartsWith(m.name, "llama-3")) {
    j["rope_theta"] = 500000.0;
    j["max_position_embeddings"] = 131072;
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  } else if (m.model_type == "gpt_neox") {
    j["num_key_value_heads"] = m.n_q;
    j["max_position_embeddings"] = 2048;
  }
  return j;
}

}  // namespace

absl::StatusOr<ModelConfig> RegistryConfig(const std::string& name) {
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::ModelSpec spec, costmodel::LookupModel(name));
  return ParseHfConfig(HfConfigFromSpec(spec), spec.name);
}

absl::StatusOr<ModelSource> ResolveModelSource(const std::string& spec) {
  ModelSource src;
  std::string rest = spec;
  if (absl::StartsWith(spec, "random:")) {
    src.random = true;
    rest = spec.substr(7);
    if (rest.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model source \"", spec, "\": expected random:NAME or random:DIR"));
    }
    auto builtin = BuiltinConfig(rest);
    if (builtin.ok()) {
      src.config = *std::move(builtin);
      return src;
    }
    if (!std::filesystem::exists(rest)) {
      auto registry = RegistryConfig(rest);
      if (registry.ok()) {
        src.config = *std::move(registry);
        return src;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "model source \"", spec, "\": not a built-in config (",
          absl::StrJoin(BuiltinConfigNames(), ", "), "), a cost-model registry model (",
          absl::StrJoin(costmodel::KnownModelNames(), ", "), ") nor a directory"));
    }
  }
  if (!std::filesystem::exists(rest)) {
    return absl::NotFoundError(
        absl::StrCat("model source \"", spec, "\": no such directory (or use random:NAME)"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(src.config, LoadHfConfig(rest));
  if (!src.random) {
    src.weights_dir = std::filesystem::is_directory(rest)
                          ? rest
                          : std::filesystem::path(rest).parent_path().string();
  }
  return src;
}

}  // namespace specplan::runtime
