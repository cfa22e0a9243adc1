// Architecture of a decoder-only transformer the runtime can execute, read from a HuggingFace
// config.json (model_type llama, mistral, qwen2, qwen3, gpt_neox) or taken from the built-in tiny
// configurations used by tests and the CPU benchmark.
//
// Model sources (the --target / --draft arguments of specplan-bench):
//   "random:NAME"        built-in config NAME (see BuiltinConfigNames) or cost-model registry model
//                        NAME (qwen3-8b, llama-3.1-8b, ...: see RegistryConfig) with random weights
//   "random:/path/DIR"   the config.json in DIR with random weights
//   "/path/DIR"          config.json plus safetensors weights in DIR
#ifndef SPECPLAN_RUNTIME_MODEL_CONFIG_H_
#define SPECPLAN_RUNTIME_MODEL_CONFIG_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace specplan::runtime {

enum class ArchFamily {
  kLlama,    // llama, mistral, qwen2, qwen3: RMSNorm, full RoPE, SwiGLU, sequential residual
  kGptNeox,  // gpt_neox (Pythia): LayerNorm, partial rotary, GELU MLP, (parallel) residual
};

enum class Activation { kSilu, kGelu, kGeluTanh, kRelu };

// RoPE frequency scaling (HF rope_scaling). Only the position-independent kinds are supported.
enum class RopeScalingType { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;                              // linear, llama3
  double low_freq_factor = 1.0;                     // llama3
  double high_freq_factor = 4.0;                    // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3
};

struct ModelConfig {
  std::string name;        // built-in name or the config's directory
  std::string model_type;  // HF model_type
  ArchFamily family = ArchFamily::kLlama;
  int64_t vocab_size = 0;         // [V]
  int64_t hidden_size = 0;        // [h]
  int64_t intermediate_size = 0;  // [h_ffn]
  int64_t num_layers = 0;         // [L]
  int64_t num_heads = 0;          // [n_q]
  int64_t num_kv_heads = 0;       // [n_kv] (GQA: n_q % n_kv == 0)
  int64_t head_dim = 0;           // [d]
  int64_t max_position_embeddings = 4096;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double rotary_pct = 1.0;          // fraction of head_dim that is rotated (GPT-NeoX rotary_pct)
  double norm_eps = 1e-6;           // rms_norm_eps (llama family) or layer_norm_eps (gpt_neox)
  bool qk_norm = false;             // Qwen3: RMSNorm over head_dim on q and k before RoPE
  bool attention_bias = false;      // bias on q/k/v projections (qwen2: true; gpt_neox: on all)
  bool attention_out_bias = false;  // bias on the output projection (gpt_neox)
  bool mlp_bias = false;            // bias on MLP projections (gpt_neox, llama mlp_bias)
  bool tie_word_embeddings = false;
  bool use_parallel_residual = false;  // gpt_neox: x + attn(ln1 x) + mlp(ln2 x)
  Activation hidden_act = Activation::kSilu;
  int64_t bos_token_id = -1;  // -1 = not given
  int64_t eos_token_id = -1;

  int64_t rotary_dim() const;  // [d_rot] rotated channels per head (even, <= head_dim)
  int64_t q_width() const { return num_heads * head_dim; }
  int64_t kv_width() const { return num_kv_heads * head_dim; }
};

// Checks every size is positive and consistent; errors name the field and value,
// e.g. "num_key_value_heads = 3: must divide num_attention_heads = 4".
absl::Status ValidateModelConfig(const ModelConfig& config);

// Parses a HuggingFace config.json object. Errors name the key: "rope_scaling.rope_type =
// \"yarn\": unsupported (default, linear, llama3)", "model_type = \"gpt2\": unsupported".
absl::StatusOr<ModelConfig> ParseHfConfig(const nlohmann::json& config, const std::string& name);
// Reads DIR/config.json (or a path to the json file itself).
absl::StatusOr<ModelConfig> LoadHfConfig(const std::string& path);

// Built-in configurations: "tiny" (llama-style target: h=64, 4 layers, 4 q / 2 kv heads, V=256),
// "tiny-draft" (same family, 1 layer), "tiny-qwen3" (q/k norm, tied embeddings, GQA),
// "tiny-neox" (gpt_neox, partial rotary, parallel residual), "tiny-llama3" (llama3 rope scaling,
// q/k/v bias).
absl::StatusOr<ModelConfig> BuiltinConfig(const std::string& name);
std::vector<std::string> BuiltinConfigNames();

// The runtime config of a costmodel registry model (costmodel::LookupModel: qwen3-8b, qwen3-0.6b,
// llama-3.1-8b, ...): the registry's architecture numbers plus the RoPE constants of the family's
// published configs (qwen2/qwen3: theta 1e6; llama-3*: theta 5e5 with llama3 scaling). NotFound
// for names the registry does not know.
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
