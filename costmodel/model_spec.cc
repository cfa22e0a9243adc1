#include "costmodel/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

struct BuiltinModel {
  const char* name;
  ModelSpec spec;
};

ModelSpec Gated(const char* type, int64_t L, int64_t h, int64_t nq, int64_t nkv, int64_t d,
                int64_t ffn, int64_t V, bool tied) {
  ModelSpec m;
  m.model_type = type;
  m.layers = L;
  m.hidden = h;
  m.n_q = nq;
  m.n_kv = nkv;
  m.head_dim = d;
  m.ffn = ffn;
  m.vocab = V;
  m.gated_mlp = true;
  m.tied_embeddings = tied;
  return m;
}

ModelSpec NeoX(int64_t L, int64_t h, int64_t heads, int64_t ffn, int64_t V) {
  ModelSpec m = Gated("gpt_neox", L, h, heads, heads, h / heads, ffn, V, false);
  m.gated_mlp = false;
  return m;
}

// Every layer a router over E gated experts of width he, k per token; no dense MLP, no shared
// expert, untied embeddings (all five MoE registry models).
ModelSpec Moe(const char* type, int64_t L, int64_t h, int64_t nq, int64_t nkv, int64_t d, int64_t E,
              int64_t k, int64_t he, int64_t V) {
  ModelSpec m = Gated(type, L, h, nq, nkv, d, 0, V, false);
  m.experts = E;
  m.experts_active = k;
  m.expert_ffn = he;
  return m;
}

// Values copied from each model's published config.json on the HuggingFace hub
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, tie_word_embeddings). Sources:
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
// Parameter counts from these (ParameterCount): 30.5B, 235.1B, 20.9B, 116.8B, 46.7B, matching the
// published totals. Not modelled: gpt-oss's MXFP4 expert weights (every weight is costed at the
// spec's dtype, bf16 by default) and its 128-token sliding window on alternate layers (every layer
// is costed as full attention over c), so gpt-oss estimates are upper bounds.
const std::vector<BuiltinModel>& Builtins() {
  static const std::vector<BuiltinModel> kModels = {
      {"qwen3-0.6b", Gated("qwen3", 28, 1024, 16, 8, 128, 3072, 151936, true)},
      {"qwen3-1.7b", Gated("qwen3", 28, 2048, 16, 8, 128, 6144, 151936, true)},
      {"qwen3-4b", Gated("qwen3", 36, 2560, 32, 8, 128, 9728, 151936, true)},
      {"qwen3-8b", Gated("qwen3", 36, 4096, 32, 8, 128, 12288, 151936, false)},
      {"qwen3-14b", Gated("qwen3", 40, 5120, 40, 8, 128, 17408, 151936, false)},
      {"qwen3-32b", Gated("qwen3", 64, 5120, 64, 8, 128, 25600, 151936, false)},
      {"llama-3.2-1b", Gated("llama", 16, 2048, 32, 8, 64, 8192, 128256, true)},
      {"llama-3.1-8b", Gated("llama", 32, 4096, 32, 8, 128, 14336, 128256, false)},
      {"llama-3.1-70b", Gated("llama", 80, 8192, 64, 8, 128, 28672, 128256, false)},
      {"llama-3.3-70b", Gated("llama", 80, 8192, 64, 8, 128, 28672, 128256, false)},
      {"pythia-70m", NeoX(6, 512, 8, 2048, 50304)},
      {"pythia-2.8b", NeoX(32, 2560, 32, 10240, 50304)},
      {"qwen3-30b-a3b", Moe("qwen3_moe", 48, 2048, 32, 4, 128, 128, 8, 768, 151936)},
      {"qwen3-235b-a22b", Moe("qwen3_moe", 94, 4096, 64, 4, 128, 128, 8, 1536, 151936)},
      {"gpt-oss-20b", Moe("gpt_oss", 24, 2880, 64, 8, 64, 32, 4, 2880, 201088)},
      {"gpt-oss-120b", Moe("gpt_oss", 36, 2880, 64, 8, 64, 128, 4, 2880, 201088)},
      {"mixtral-8x7b", Moe("mixtral", 32, 4096, 32, 8, 128, 8, 2, 14336, 32000)},
  };
  return kModels;
}

absl::StatusOr<int64_t> PositiveInt(const nlohmann::json& config, const std::string& key) {
  SPECPLAN_ASSIGN_OR_RETURN(int64_t v, json_util::GetInt(config, key));
  if (v <= 0) return absl::InvalidArgumentError(absl::StrCat(key, " = ", v, ": must be > 0"));
  return v;
}

}  // namespace

absl::StatusOr<DType> ParseDType(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "fp32" || n == "float32" || n == "float") return DType::kFloat32;
  if (n == "bf16" || n == "bfloat16") return DType::kBFloat16;
  if (n == "fp16" || n == "float16" || n == "half") return DType::kFloat16;
  if (n == "fp8" || n == "float8" || n == "float8_e4m3fn") return DType::kFloat8;
  return absl::InvalidArgumentError(
      absl::StrCat("dtype: unknown value '", name, "' (known: fp32, bf16, fp16, fp8)"));
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "fp32";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat16:
      return "fp16";
    case DType::kFloat8:
      return "fp8";
  }
  return "?";
}

int DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kBFloat16:
    case DType::kFloat16:
      return 2;
    case DType::kFloat8:
      return 1;
  }
  return 0;
}

int64_t ModelSpec::ParameterCount() const {
  const int64_t attn = hidden * h_q() * 2 + hidden * h_kv() * 2;
  const int64_t mlp = is_moe() ? experts * 3 * hidden * expert_ffn +
                                     3 * hidden * shared_expert_ffn + hidden * experts  // router
                               : (gated_mlp ? 3 : 2) * hidden * ffn;
  const int64_t emb = (tied_embeddings ? 1 : 2) * vocab * hidden;
  return layers * (attn + mlp) + emb;
}

std::string TensorParallelProblem(const ModelSpec& m, int64_t tp) {
  if (tp < 1) return "must be >= 1";
  if (tp > 1024) return "must be <= 1024";
  if (m.n_q % tp != 0) return absl::StrCat("must divide n_q = ", m.n_q, " (query heads)");
  if (m.n_kv % tp != 0 && tp % m.n_kv != 0) {
    return absl::StrCat("must divide n_kv = ", m.n_kv, " or be a multiple of it (KV heads)");
  }
  return "";
}

namespace {

absl::Status ValidateExperts(const ModelSpec& m) {
  auto bad = [](const char* field, auto value, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
  };
  if (m.experts < 0) return bad("experts", m.experts, "must be >= 0 (0 = dense)");
  if (!m.is_moe()) {
    if (m.ffn <= 0) return bad("ffn", m.ffn, "must be > 0");
    if (m.experts_active != 0)
      return bad("experts_active", m.experts_active, "must be 0 when experts = 0");
    if (m.expert_ffn != 0) return bad("expert_ffn", m.expert_ffn, "must be 0 when experts = 0");
    if (m.shared_expert_ffn != 0) {
      return bad("shared_expert_ffn", m.shared_expert_ffn, "must be 0 when experts = 0");
    }
    if (m.routing_skew != 0)
      return bad("routing_skew", m.routing_skew, "must be 0 when experts = 0");
    return absl::OkStatus();
  }
  if (m.experts > 4096) return bad("experts", m.experts, "must be <= 4096");
  if (m.experts_active < 1 || m.experts_active > m.experts) {
    return bad("experts_active", m.experts_active,
               absl::StrCat("must be in [1, experts = ", m.experts, "]"));
  }
  if (m.expert_ffn <= 0) return bad("expert_ffn", m.expert_ffn, "must be > 0");
  if (m.shared_expert_ffn < 0) return bad("shared_expert_ffn", m.shared_expert_ffn, "must be >= 0");
  if (m.ffn != 0) {
    return bad("ffn", m.ffn,
               absl::StrCat("must be 0 for a MoE model (experts = ", m.experts,
                            "); the expert width is expert_ffn"));
  }
  if (!m.gated_mlp) return bad("gated_mlp", "false", "MoE experts are gated (SwiGLU) MLPs");
  if (!std::isfinite(m.routing_skew) || m.routing_skew < 0 || m.routing_skew > 16) {
    return bad("routing_skew", m.routing_skew, "must be in [0, 16] (0 = uniform routing)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateModelSpec(const ModelSpec& m) {
  const std::pair<const char*, int64_t> fields[] = {{"layers", m.layers},     {"hidden", m.hidden},
                                                    {"n_q", m.n_q},           {"n_kv", m.n_kv},
                                                    {"head_dim", m.head_dim}, {"vocab", m.vocab}};
  for (const auto& [name, value] : fields) {
    if (value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " = ", value, ": must be > 0"));
    }
  }
  if (m.n_q % m.n_kv != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_kv = ", m.n_kv, ": must divide n_q = ", m.n_q));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateExperts(m));
  if (const std::string why = TensorParallelProblem(m, m.tp); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", m.tp, ": ", why));
  }
  // ParameterCount() and h_q()/h_kv() multiply in int64: bound the count (computed in double, where
  // it cannot overflow) so that every product stays far below 2^63.
  constexpr double kMaxParameters = 1e15;
  const double h = m.hidden;
  const double mlp = m.is_moe() ? 3 * h *
                                          (static_cast<double>(m.experts) * m.expert_ffn +
                                           static_cast<double>(m.shared_expert_ffn)) +
                                      h * static_cast<double>(m.experts)
                                : (m.gated_mlp ? 3 : 2) * h * static_cast<double>(m.ffn);
  const double params =
      static_cast<double>(m.layers) * (2 * h * (static_cast<double>(m.n_q) * m.head_dim) +
                                       2 * h * (static_cast<double>(m.n_kv) * m.head_dim) + mlp) +
      (m.tied_embeddings ? 1 : 2) * static_cast<double>(m.vocab) * h;
  if (!(params <= kMaxParameters)) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameters = ", params, ": must be <= ", kMaxParameters,
                     " (layers, hidden, heads, head_dim, ffn, experts or vocab too large)"));
  }
  return absl::OkStatus();
}

namespace {

bool Has(const nlohmann::json& config, const char* key) {
  return config.contains(key) && !config[key].is_null();
}

// The expert fields of a MoE config (transformers' Qwen3MoeConfig, GptOssConfig, MixtralConfig):
//   qwen3_moe  num_experts, num_experts_per_tok, moe_intermediate_size (every layer sparse:
//              decoder_sparse_step 1 and mlp_only_layers empty, else unsupported)
//   gpt_oss    num_local_experts, num_experts_per_tok (or experts_per_token), intermediate_size
//   mixtral    num_local_experts, num_experts_per_tok, intermediate_size
// The expert width goes to expert_ffn; ffn (the dense MLP width) is 0.
absl::Status ReadExperts(const nlohmann::json& config, const std::string& type, ModelSpec* m) {
  if (type == "qwen3_moe") {
    SPECPLAN_ASSIGN_OR_RETURN(m->experts, PositiveInt(config, "num_experts"));
    SPECPLAN_ASSIGN_OR_RETURN(m->expert_ffn, PositiveInt(config, "moe_intermediate_size"));
    if (Has(config, "decoder_sparse_step")) {
      SPECPLAN_ASSIGN_OR_RETURN(int64_t step, json_util::GetInt(config, "decoder_sparse_step"));
      if (step != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "decoder_sparse_step = ", step, ": unsupported (only every layer MoE, step 1)"));
      }
    }
    if (Has(config, "mlp_only_layers") &&
        !(config["mlp_only_layers"].is_array() && config["mlp_only_layers"].empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat("mlp_only_layers = ", config["mlp_only_layers"].dump(),
                       ": unsupported (only every layer MoE, [])"));
    }
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(m->experts, PositiveInt(config, "num_local_experts"));
    SPECPLAN_ASSIGN_OR_RETURN(m->expert_ffn, PositiveInt(config, "intermediate_size"));
  }
  const char* k_key = type == "gpt_oss" && !Has(config, "num_experts_per_tok")
                          ? "experts_per_token"
                          : "num_experts_per_tok";
  SPECPLAN_ASSIGN_OR_RETURN(m->experts_active, PositiveInt(config, k_key));
  if (m->experts_active > m->experts) {
    return absl::InvalidArgumentError(absl::StrCat(k_key, " = ", m->experts_active,
                                                   ": must be <= the expert count ", m->experts));
  }
  m->ffn = 0;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const nlohmann::json& config,
                                                const std::string& name) {
  if (!config.is_object()) return absl::InvalidArgumentError("config: expected a JSON object");
  SPECPLAN_ASSIGN_OR_RETURN(std::string type, json_util::GetString(config, "model_type"));
  static const char* kSupported[] = {"llama",    "mistral",   "qwen2",   "qwen3",
                                     "gpt_neox", "qwen3_moe", "gpt_oss", "mixtral"};
  if (std::find_if(std::begin(kSupported), std::end(kSupported),
                   [&](const char* t) { return type == t; }) == std::end(kSupported)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model_type = '", type, "': unsupported (known: ", absl::StrJoin(kSupported, ", "), ")"));
  }
  ModelSpec m;
  m.name = name;
  m.model_type = type;
  SPECPLAN_ASSIGN_OR_RETURN(m.layers, PositiveInt(config, "num_hidden_layers"));
  SPECPLAN_ASSIGN_OR_RETURN(m.hidden, PositiveInt(config, "hidden_size"));
  SPECPLAN_ASSIGN_OR_RETURN(m.n_q, PositiveInt(config, "num_attention_heads"));
  const bool moe = type == "qwen3_moe" || type == "gpt_oss" || type == "mixtral";
  if (moe) {
    SPECPLAN_RETURN_IF_ERROR(ReadExperts(config, type, &m));
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(m.ffn, PositiveInt(config, "intermediate_size"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(m.vocab, PositiveInt(config, "vocab_size"));
  m.n_kv = m.n_q;
  if (config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()) {
    SPECPLAN_ASSIGN_OR_RETURN(m.n_kv, PositiveInt(config, "num_key_value_heads"));
  }
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    SPECPLAN_ASSIGN_OR_RETURN(m.head_dim, PositiveInt(config, "head_dim"));
  } else {
    if (m.hidden % m.n_q != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hidden_size = ", m.hidden, ": not divisible by num_attention_heads = ", m.n_q,
          " and no head_dim given"));
    }
    m.head_dim = m.hidden / m.n_q;
  }
  m.gated_mlp = type != "gpt_neox";
  // transformers' defaults for these model types are all tie_word_embeddings = false.
  m.tied_embeddings = false;
  if (config.contains("tie_word_embeddings")) {
    SPECPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, json_util::GetBool(config, "tie_word_embeddings"));
  }
  m.dtype = DType::kBFloat16;
  if (config.contains("torch_dtype") && config["torch_dtype"].is_string()) {
    SPECPLAN_ASSIGN_OR_RETURN(m.dtype, ParseDType(config["torch_dtype"].get<std::string>()));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateModelSpec(m));
  return m;
}

absl::StatusOr<ModelSpec> ModelSpecFromHfConfigFile(const std::string& path) {
  SPECPLAN_ASSIGN_OR_RETURN(nlohmann::json j, json_util::ReadJsonFile(path));
  auto spec = ModelSpecFromHfConfig(j, path);
  if (!spec.ok()) {
    return absl::Status(spec.status().code(), absl::StrCat(path, ": ", spec.status().message()));
  }
  return spec;
}

absl::StatusOr<ModelSpec> LookupModel(const std::string& name) {
  const std::string key = absl::AsciiStrToLower(name);
  for (const BuiltinModel& b : Builtins()) {
    if (key == b.name) {
      ModelSpec m = b.spec;
      m.name = b.name;
      return m;
    }
  }
  return absl::NotFoundError(absl::StrCat("model: unknown name '", name,
                                          "' (known: ", absl::StrJoin(KnownModelNames(), ", "),
                                          "; or pass a path to a HuggingFace config.json)"));
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

nlohmann::json ModelSpecToJson(const ModelSpec& m) {
  nlohmann::json j{{"name", m.name},
                   {"model_type", m.model_type},
                   {"layers", m.layers},
                   {"hidden", m.hidden},
                   {"n_q", m.n_q},
                   {"n_kv", m.n_kv},
                   {"head_dim", m.head_dim},
                   {"ffn", m.ffn},
                   {"vocab", m.vocab},
                   {"gated_mlp", m.gated_mlp},
                   {"tied_embeddings", m.tied_embeddings},
                   {"dtype", DTypeName(m.dtype)}};
  if (m.is_moe()) {
    j["experts"] = m.experts;
    j["experts_active"] = m.experts_active;
    j["expert_ffn"] = m.expert_ffn;
    j["shared_expert_ffn"] = m.shared_expert_ffn;
    j["routing_skew"] = m.routing_skew;
  }
  if (m.tp != 1) j["tp"] = m.tp;
  return j;
}

absl::StatusOr<ModelSpec> ModelSpecFromJson(const nlohmann::json& j) {
  const std::string p = "model_spec";
  ModelSpec m;
  SPECPLAN_ASSIGN_OR_RETURN(m.name, json_util::GetString(j, "name", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.model_type, json_util::GetString(j, "model_type", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.layers, json_util::GetInt(j, "layers", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.hidden, json_util::GetInt(j, "hidden", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.n_q, json_util::GetInt(j, "n_q", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.n_kv, json_util::GetInt(j, "n_kv", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.head_dim, json_util::GetInt(j, "head_dim", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.ffn, json_util::GetInt(j, "ffn", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.vocab, json_util::GetInt(j, "vocab", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.gated_mlp, json_util::GetBool(j, "gated_mlp", p));
  SPECPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, json_util::GetBool(j, "tied_embeddings", p));
  // Optional (absent in profiles written before MoE and tensor parallelism): dense, tp = 1.
  for (auto [key, field] : {std::pair<const char*, int64_t*>{"experts", &m.experts},
                            {"experts_active", &m.experts_active},
                            {"expert_ffn", &m.expert_ffn},
                            {"shared_expert_ffn", &m.shared_expert_ffn},
                            {"tp", &m.tp}}) {
    if (j.is_object() && j.contains(key)) {
      SPECPLAN_ASSIGN_OR_RETURN(*field, json_util::GetInt(j, key, p));
    }
  }
  if (j.is_object() && j.contains("routing_skew")) {
    SPECPLAN_ASSIGN_OR_RETURN(m.routing_skew, json_util::GetNumber(j, "routing_skew", p));
  }
  SPECPLAN_ASSIGN_OR_RETURN(std::string dtype, json_util::GetString(j, "dtype", p));
  auto dt = ParseDType(dtype);
  if (!dt.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ".", dt.status().message()));
  m.dtype = *dt;
  absl::Status st = ValidateModelSpec(m);
  if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ".", st.message()));
  return m;
}

}  // namespace specplan::costmodel
