#include "costmodel/model_spec.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/json_util.h"
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

// Values copied from each model's published config.json on the HuggingFace hub
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, tie_word_embeddings). Sources:
//   Qwen/Qwen3-0.6B, Qwen/Qwen3-1.7B, Qwen/Qwen3-4B, Qwen/Qwen3-8B, Qwen/Qwen3-14B,
//   meta-llama/Llama-3.1-8B(-Instruct), meta-llama/Llama-3.1-70B, meta-llama/Llama-3.2-1B,
//   EleutherAI/pythia-70m, EleutherAI/pythia-2.8b.
const std::vector<BuiltinModel>& Builtins() {
  static const std::vector<BuiltinModel> kModels = {
      {"qwen3-0.6b", Gated("qwen3", 28, 1024, 16, 8, 128, 3072, 151936, true)},
      {"qwen3-1.7b", Gated("qwen3", 28, 2048, 16, 8, 128, 6144, 151936, true)},
      {"qwen3-4b", Gated("qwen3", 36, 2560, 32, 8, 128, 9728, 151936, true)},
      {"qwen3-8b", Gated("qwen3", 36, 4096, 32, 8, 128, 12288, 151936, false)},
      {"qwen3-14b", Gated("qwen3", 40, 5120, 40, 8, 128, 17408, 151936, false)},
      {"llama-3.2-1b", Gated("llama", 16, 2048, 32, 8, 64, 8192, 128256, true)},
      {"llama-3.1-8b", Gated("llama", 32, 4096, 32, 8, 128, 14336, 128256, false)},
      {"llama-3.1-70b", Gated("llama", 80, 8192, 64, 8, 128, 28672, 128256, false)},
      {"pythia-70m", NeoX(6, 512, 8, 2048, 50304)},
      {"pythia-2.8b", NeoX(32, 2560, 32, 10240, 50304)},
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
    case DType::kFloat32: return "fp32";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "fp16";
    case DType::kFloat8: return "fp8";
  }
  return "?";
}

int DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kBFloat16:
    case DType::kFloat16: return 2;
    case DType::kFloat8: return 1;
  }
  return 0;
}

int64_t ModelSpec::ParameterCount() const {
  const int64_t attn = hidden * h_q() * 2 + hidden * h_kv() * 2;
  const int64_t mlp = (gated_mlp ? 3 : 2) * hidden * ffn;
  const int64_t emb = (tied_embeddings ? 1 : 2) * vocab * hidden;
  return layers * (attn + mlp) + emb;
}

absl::Status ValidateModelSpec(const ModelSpec& m) {
  const std::pair<const char*, int64_t> fields[] = {
      {"layers", m.layers}, {"hidden", m.hidden}, {"n_q", m.n_q},  {"n_kv", m.n_kv},
      {"head_dim", m.head_dim}, {"ffn", m.ffn},   {"vocab", m.vocab}};
  for (const auto& [name, value] : fields) {
    if (value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " = ", value, ": must be > 0"));
    }
  }
  if (m.n_q % m.n_kv != 0) {
    return absl::InvalidArgumentError(absl::StrCat("n_kv = ", m.n_kv, ": must divide n_q = ", m.n_q));
  }
  // ParameterCount() and h_q()/h_kv() multiply in int64: bound the count (computed in double, where
  // it cannot overflow) so that every product stays far below 2^63.
  constexpr double kMaxParameters = 1e15;
  const double h = m.hidden;
  const double params =
      static_cast<double>(m.layers) *
          (2 * h * (static_cast<double>(m.n_q) * m.head_dim) +
           2 * h * (static_cast<double>(m.n_kv) * m.head_dim) + (m.gated_mlp ? 3 : 2) * h * m.ffn) +
      (m.tied_embeddings ? 1 : 2) * static_cast<double>(m.vocab) * h;
  if (!(params <= kMaxParameters)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameters = ", params, ": must be <= ", kMaxParameters,
        " (layers, hidden, heads, head_dim, ffn or vocab too large)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const nlohmann::json& config,
                                                const std::string& name) {
  if (!config.is_object()) return absl::InvalidArgumentError("config: expected a JSON object");
  SPECPLAN_ASSIGN_OR_RETURN(std::string type, json_util::GetString(config, "model_type"));
  static const char* kSupported[] = {"llama", "mistral", "qwen2", "qwen3", "gpt_neox"};
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
  SPECPLAN_ASSIGN_OR_RETURN(m.ffn, PositiveInt(config, "intermediate_size"));
  SPECPLAN_ASSIGN_OR_RETURN(m.vocab, PositiveInt(config, "vocab_size"));
  m.n_kv = m.n_q;
  if (config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()) {
    SPECPLAN_ASSIGN_OR_RETURN(m.n_kv, PositiveInt(config, "num_key_value_heads"));
  }
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    SPECPLAN_ASSIGN_OR_RETURN(m.head_dim, PositiveInt(config, "head_dim"));
  } else {
    if (m.hidden % m.n_q != 0) {
      return absl::InvalidArgumentError(absl::StrCat("hidden_size = ", m.hidden,
                                                     ": not divisible by num_attention_heads = ",
                                                     m.n_q, " and no head_dim given"));
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
  return nlohmann::json{{"name", m.name},         {"model_type", m.model_type},
                        {"layers", m.layers},     {"hidden", m.hidden},
                        {"n_q", m.n_q},           {"n_kv", m.n_kv},
                        {"head_dim", m.head_dim}, {"ffn", m.ffn},
                        {"vocab", m.vocab},       {"gated_mlp", m.gated_mlp},
                        {"tied_embeddings", m.tied_embeddings}, {"dtype", DTypeName(m.dtype)}};
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
  SPECPLAN_ASSIGN_OR_RETURN(std::string dtype, json_util::GetString(j, "dtype", p));
  auto dt = ParseDType(dtype);
  if (!dt.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ".", dt.status().message()));
  m.dtype = *dt;
  absl::Status st = ValidateModelSpec(m);
  if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ".", st.message()));
  return m;
}

}  // namespace specplan::costmodel
