#include "costmodel/hardware/model_spec.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "util/enum_names.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {

namespace {
// The first spelling of each dtype is its name; the later ones are aliases ParseDType takes.
constexpr EnumEntry<DType> kDTypeNames[] = {
    {DType::kFloat32, "fp32"},      {DType::kBFloat16, "bf16"},       {DType::kFloat16, "fp16"},
    {DType::kFloat8, "fp8"},        {DType::kFloat32, "float32"},     {DType::kFloat32, "float"},
    {DType::kBFloat16, "bfloat16"}, {DType::kFloat16, "float16"},     {DType::kFloat16, "half"},
    {DType::kFloat8, "float8"},     {DType::kFloat8, "float8_e4m3fn"}};
}  // namespace

absl::StatusOr<DType> ParseDType(const std::string& name) {
  // Case-insensitive; an error names the value as given.
  if (auto dtype = ParseEnum(kDTypeNames, "dtype", absl::AsciiStrToLower(name)); dtype.ok()) {
    return dtype;
  }
  return ParseEnum(kDTypeNames, "dtype", name);
}

const char* DTypeName(DType dtype) { return EnumName(kDTypeNames, dtype); }

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
  if (is_moe() && dense_layers > 0) {  // the first dense_layers have a dense MLP instead
    return layers * attn + (layers - dense_layers) * mlp + dense_layers * 3 * hidden * dense_ffn +
           emb;
  }
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
  if (m.dense_layers < 0 || m.dense_layers >= m.layers) {
    return bad("dense_layers", m.dense_layers,
               absl::StrCat("must be in [0, layers = ", m.layers, ")"));
  }
  if ((m.dense_layers > 0) != (m.dense_ffn > 0) || m.dense_ffn < 0) {
    return bad("dense_ffn", m.dense_ffn,
               absl::StrCat("must be > 0 exactly when dense_layers = ", m.dense_layers, " > 0"));
  }
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
  const double dense_mlp =
      m.is_moe() ? 3 * h * static_cast<double>(m.dense_ffn) * static_cast<double>(m.dense_layers)
                 : 0;
  const double params =
      static_cast<double>(m.layers) * (2 * h * (static_cast<double>(m.n_q) * m.head_dim) +
                                       2 * h * (static_cast<double>(m.n_kv) * m.head_dim) + mlp) +
      dense_mlp + (m.tied_embeddings ? 1 : 2) * static_cast<double>(m.vocab) * h;
  if (!(params <= kMaxParameters)) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameters = ", params, ": must be <= ", kMaxParameters,
                     " (layers, hidden, heads, head_dim, ffn, experts or vocab too large)"));
  }
  return absl::OkStatus();
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
    if (m.dense_layers > 0) {
      j["dense_layers"] = m.dense_layers;
      j["dense_ffn"] = m.dense_ffn;
    }
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
                            {"dense_layers", &m.dense_layers},
                            {"dense_ffn", &m.dense_ffn},
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
