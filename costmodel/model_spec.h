// Architecture numbers of a decoder-only target model, as the roofline needs them
// (bastion.txt Appendix F notation in brackets).
#ifndef SPECPLAN_COSTMODEL_MODEL_SPEC_H_
#define SPECPLAN_COSTMODEL_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"

namespace specplan::costmodel {

// Element type of weights, KV cache and activations.
enum class DType { kFloat32, kBFloat16, kFloat16, kFloat8 };
absl::StatusOr<DType> ParseDType(const std::string& name);  // "fp32"|"float32", "bf16"|"bfloat16", ...
const char* DTypeName(DType dtype);                        // "fp32", "bf16", "fp16", "fp8"
int DTypeBytes(DType dtype);                               // 4, 2, 2, 1

struct ModelSpec {
  std::string name;        // registry name or the config's path
  std::string model_type;  // HF model_type: llama, mistral, qwen2, qwen3, gpt_neox
  int64_t layers = 0;      // [L] transformer blocks
  int64_t hidden = 0;      // [h] residual width
  int64_t n_q = 0;         // [n_q] query heads
  int64_t n_kv = 0;        // [n_kv] key/value heads (GQA); == n_q for MHA
  int64_t head_dim = 0;    // [d] per-head width
  int64_t ffn = 0;         // [h_ffn] MLP intermediate width
  int64_t vocab = 0;       // [V]
  bool gated_mlp = true;   // SwiGLU (3 matrices) vs plain GELU MLP (2 matrices, GPT-NeoX)
  bool tied_embeddings = false;  // input embedding shares the LM head's matrix
  DType dtype = DType::kBFloat16;

  int64_t h_q() const { return n_q * head_dim; }    // [h_q] query width
  int64_t h_kv() const { return n_kv * head_dim; }  // [h_kv] key (= value) width
  int bytes_per_element() const { return DTypeBytes(dtype); }  // [bp]
  // Parameter count (embeddings counted once when tied; norms and biases ignored).
  int64_t ParameterCount() const;
};

// Checks every field is positive and consistent (n_q divisible by n_kv); names the bad field.
absl::Status ValidateModelSpec(const ModelSpec& spec);

// Reads a HuggingFace config.json object (model_type llama, mistral, qwen2, qwen3, gpt_neox).
// `name` is recorded in the spec. Missing required keys or unsupported model_type are errors.
absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const nlohmann::json& config, const std::string& name);
absl::StatusOr<ModelSpec> ModelSpecFromHfConfigFile(const std::string& path);

// Built-in specs copied from the published config.json files (see model_spec.cc for sources).
absl::StatusOr<ModelSpec> LookupModel(const std::string& name);  // case-insensitive
std::vector<std::string> KnownModelNames();

// Resolves a --model argument: a built-in name, or a path to a config.json (or a directory holding one).
absl::StatusOr<ModelSpec> ResolveModel(const std::string& name_or_path);

nlohmann::json ModelSpecToJson(const ModelSpec& spec);
absl::StatusOr<ModelSpec> ModelSpecFromJson(const nlohmann::json& j);  // inverse of ModelSpecToJson

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_MODEL_SPEC_H_
