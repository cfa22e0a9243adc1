#include "runtime/model_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/hardware/model_registry.h"
#include "planner/tree/token.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

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

absl::Status ValidateModelConfig(const ModelConfig& c) {
  SPECPLAN_RETURN_IF_ERROR(costmodel::ValidateHfConfig(c));
  if (!c.unsupported.empty()) return absl::InvalidArgumentError(c.unsupported);
  if (c.vocab_size > planner::kMaxVocabSize) {
    return absl::InvalidArgumentError(absl::StrCat("vocab_size = ", c.vocab_size,
                                                   ": token ids are int32 (planner::TokenId), "
                                                   "so it must be <= ",
                                                   planner::kMaxVocabSize));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ParseHfConfig(const nlohmann::json& j, const std::string& name) {
  SPECPLAN_ASSIGN_OR_RETURN(ModelConfig c, costmodel::HfConfigFromJson(j, name));
  SPECPLAN_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

absl::StatusOr<ModelConfig> LoadHfConfig(const std::string& path) {
  SPECPLAN_ASSIGN_OR_RETURN(ModelConfig c, costmodel::HfConfigFromFile(path));
  if (!c.unsupported.empty()) {
    std::filesystem::path p(path);
    if (std::filesystem::is_directory(p)) p /= "config.json";
    return absl::InvalidArgumentError(absl::StrCat(p.string(), ": ", c.unsupported));
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

absl::StatusOr<ModelConfig> RegistryConfig(const std::string& name) {
  SPECPLAN_ASSIGN_OR_RETURN(ModelConfig c, costmodel::LookupHfConfig(name));
  SPECPLAN_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
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
      if (registry.status().code() != absl::StatusCode::kNotFound) {
        return absl::InvalidArgumentError(
            absl::StrCat("model source \"", spec, "\": ", registry.status().message()));
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
