// The decoder-only transformers the runtime executes. A ModelConfig is the cost model's HfConfig
// (costmodel/hardware/hf_config.h: one HuggingFace config reader for both), restricted to what the
// runtime can run: model_type llama, mistral, qwen2, qwen3 or gpt_neox, with RoPE scaling none,
// linear or llama3. Built-in tiny configurations serve the tests and the CPU benchmark.
//
// Model sources (the --target / --draft arguments of specplan-bench):
//   "random:NAME"        built-in config NAME (see BuiltinConfigNames) or cost-model registry model
//                        NAME (qwen3-8b, llama-3.1-8b, ...: see RegistryConfig) with random weights
//   "random:/path/DIR"   the config.json in DIR with random weights
//   "/path/DIR"          config.json plus safetensors weights in DIR
#ifndef SPECPLAN_RUNTIME_MODEL_CONFIG_H_
#define SPECPLAN_RUNTIME_MODEL_CONFIG_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/hardware/hf_config.h"

namespace specplan::runtime {

using ModelConfig = costmodel::HfConfig;
using costmodel::Activation;
using costmodel::ArchFamily;
using costmodel::RopeScaling;
using costmodel::RopeScalingType;

// costmodel::ValidateHfConfig, and the runtime can execute it (config.unsupported is empty: no
// mixture of experts, no RoPE scaling but linear and llama3, a supported hidden_act) with token ids
// that fit planner::TokenId (vocab_size <= planner::kMaxVocabSize).
absl::Status ValidateModelConfig(const ModelConfig& config);

// Parses a HuggingFace config.json object the runtime can execute. Errors name the key:
// "rope_scaling.rope_type = \"yarn\": unsupported (default, linear, llama3)", "model_type =
// \"gpt2\": unsupported (...)".
absl::StatusOr<ModelConfig> ParseHfConfig(const nlohmann::json& config, const std::string& name);
// Reads DIR/config.json (or a path to the json file itself).
absl::StatusOr<ModelConfig> LoadHfConfig(const std::string& path);

// Built-in configurations: "tiny" (llama-style target: h=64, 4 layers, 4 q / 2 kv heads, V=256),
// "tiny-draft" (same family, 1 layer), "tiny-qwen3" (q/k norm, tied embeddings, GQA),
// "tiny-neox" (gpt_neox, partial rotary, parallel residual), "tiny-llama3" (llama3 rope scaling,
// q/k/v bias).
absl::StatusOr<ModelConfig> BuiltinConfig(const std::string& name);
std::vector<std::string> BuiltinConfigNames();

// The runtime config of a costmodel registry model (costmodel::LookupHfConfig: qwen3-8b,
// qwen3-0.6b, llama-3.1-8b, ...). NotFound for names the registry does not know;
// InvalidArgument for registry models the runtime does not run (mixtures of experts).
absl::StatusOr<ModelConfig> RegistryConfig(const std::string& name);

// A parsed model source (see the header comment).
struct ModelSource {
  ModelConfig config;
  bool random = false;      // random weights (no checkpoint)
  std::string weights_dir;  // directory holding *.safetensors when !random
};
absl::StatusOr<ModelSource> ResolveModelSource(const std::string& spec);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_MODEL_CONFIG_H_
