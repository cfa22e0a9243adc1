// A HuggingFace config.json, read once: every architecture fact the cost model and the runtime take
// from it. The cost model keeps the numbers the roofline needs (ToModelSpec); the runtime executes
// the whole config (runtime/model_config.h: ModelConfig is this struct). One reader serves both,
// and the built-in registry (costmodel/hardware/model_registry.h) stores its models as HfConfigs.
//
// Supported model_type values: llama, mistral, qwen2, qwen3, gpt_neox (dense: the runtime runs
// them), and qwen3_moe, glm4_moe, gpt_oss, mixtral (mixture of experts: the cost model only).
// deepseek_v3's FFN (routed and shared experts, first_k_dense_replace) is read by
// HfMoeFieldsFromJson, but a deepseek_v3 config is refused as a whole: its attention is
// multi-head latent attention (MLA), which no kernel table holds and the roofline does not price.
#ifndef SPECPLAN_COSTMODEL_HF_CONFIG_H_
#define SPECPLAN_COSTMODEL_HF_CONFIG_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/hardware/model_spec.h"

namespace specplan::costmodel {

enum class ArchFamily {
  kLlama,    // llama, mistral, qwen2, qwen3 (+ the MoE types): RMSNorm, RoPE, SwiGLU, sequential
  kGptNeox,  // gpt_neox (Pythia): LayerNorm, partial rotary, GELU MLP, (parallel) residual
};

enum class Activation { kSilu, kGelu, kGeluTanh, kRelu };

// RoPE frequency scaling (HF rope_scaling / rope_parameters). The runtime executes the
// position-independent kinds; any other kind (yarn, dynamic, longrope, ...) reads as
// kUnsupported, which the cost model ignores and the runtime refuses (HfConfig::unsupported).
enum class RopeScalingType { kNone, kLinear, kLlama3, kUnsupported };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;                              // linear, llama3
  double low_freq_factor = 1.0;                     // llama3
  double high_freq_factor = 4.0;                    // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3
};

struct HfConfig {
  std::string name;        // registry name, built-in name or the config's directory
  std::string model_type;  // HF model_type
  ArchFamily family = ArchFamily::kLlama;
  int64_t vocab_size = 0;         // [V]
  int64_t hidden_size = 0;        // [h]
  int64_t intermediate_size = 0;  // [h_ffn] dense MLP width; 0 for MoE models
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
  DType dtype = DType::kBFloat16;  // torch_dtype (default bf16)

  // Mixture of experts (experts > 0; see ModelSpec for the meaning of each field).
  int64_t experts = 0;
  int64_t experts_active = 0;
  int64_t expert_ffn = 0;
  int64_t shared_expert_ffn = 0;  // n_shared_experts x moe_intermediate_size (glm4_moe, deepseek)
  int64_t dense_layers = 0;       // first_k_dense_replace: the first layers have a dense MLP
  int64_t dense_ffn = 0;          // their width (intermediate_size); 0 when dense_layers = 0

  // The first thing in the config the runtime cannot execute, as an error message that names the
  // key ("model_type = \"mixtral\": ...", "rope_scaling.rope_type = \"yarn\": unsupported ...",
  // "hidden_act = \"mish\": ..."); empty when the runtime can run it. The cost model ignores it.
  std::string unsupported;

  bool is_moe() const { return experts > 0; }
  int64_t rotary_dim() const;  // [d_rot] rotated channels per head (even, <= head_dim)
  int64_t q_width() const { return num_heads * head_dim; }
  int64_t kv_width() const { return num_kv_heads * head_dim; }
};

// Checks every size is positive and consistent; errors name the config key and value, e.g.
// "num_key_value_heads = 3: must divide num_attention_heads = 4".
absl::Status ValidateHfConfig(const HfConfig& config);

// Parses a HuggingFace config.json object; `name` is recorded. Errors name the key:
// "model_type = \"gpt2\": unsupported (...)", "hidden_size: missing",
// "rope_scaling.low_freq_factor: missing".
absl::StatusOr<HfConfig> HfConfigFromJson(const nlohmann::json& config, const std::string& name);
// The expert fields alone (experts, experts_active, expert_ffn, shared_expert_ffn, dense_layers,
// dense_ffn, model_type) of a MoE config of type qwen3_moe, glm4_moe, gpt_oss, mixtral or
// deepseek_v3 (whose attention HfConfigFromJson refuses). Errors name the key and value.
absl::StatusOr<HfConfig> HfMoeFieldsFromJson(const nlohmann::json& config);
// Reads DIR/config.json (or a path to the json file itself); errors are prefixed with the path.
// The config's name is its directory.
absl::StatusOr<HfConfig> HfConfigFromFile(const std::string& path);

// The roofline's view of a config (architecture numbers and dtype; tp = 1, routing_skew = 0).
ModelSpec ToModelSpec(const HfConfig& config);

// HfConfigFromJson + ToModelSpec + ValidateModelSpec. The File form reads a config.json path and
// names the spec by that path.
absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const nlohmann::json& config,
                                                const std::string& name);
absl::StatusOr<ModelSpec> ModelSpecFromHfConfigFile(const std::string& path);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_HF_CONFIG_H_
