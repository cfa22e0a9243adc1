// HF config.json parsing: every supported family, rope scaling, and errors that name the key.
#include "runtime/model_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace specplan::runtime {
namespace {

nlohmann::json Llama() {
  return {{"model_type", "llama"},
          {"vocab_size", 128256},
          {"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"tie_word_embeddings", false},
          {"hidden_act", "silu"},
          {"eos_token_id", {128001, 128009}},
          {"rope_scaling",
           {{"rope_type", "llama3"},
            {"factor", 8.0},
            {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", 8192}}}};
}

TEST(ModelConfigTest, Llama3) {
  auto c = ParseHfConfig(Llama(), "llama3-8b");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, ArchFamily::kLlama);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(c->norm_eps, 1e-5);
  EXPECT_EQ(c->eos_token_id, 128001);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->rotary_dim(), 128);
}

TEST(ModelConfigTest, Qwen3AndQwen2) {
  nlohmann::json j = Llama();
  j["model_type"] = "qwen3";
  j["head_dim"] = 128;
  j["hidden_size"] = 2560;
  j["tie_word_embeddings"] = true;
  j.erase("rope_scaling");
  auto c = ParseHfConfig(j, "q3");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qk_norm);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  j["model_type"] = "qwen2";
  c = ParseHfConfig(j, "q2");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->attention_bias);
  EXPECT_FALSE(c->attention_out_bias);
  EXPECT_FALSE(c->qk_norm);
}

TEST(ModelConfigTest, GptNeox) {
  nlohmann::json j = {{"model_type", "gpt_neox"}, {"vocab_size", 50304},
                      {"hidden_size", 512},       {"intermediate_size", 2048},
                      {"num_hidden_layers", 6},   {"num_attention_heads", 8},
                      {"rotary_pct", 0.25},       {"rotary_emb_base", 10000},
                      {"layer_norm_eps", 1e-5},   {"use_parallel_residual", true},
                      {"hidden_act", "gelu"},     {"tie_word_embeddings", false}};
  auto c = ParseHfConfig(j, "pythia-70m");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, ArchFamily::kGptNeox);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rotary_dim(), 16);
  EXPECT_TRUE(c->use_parallel_residual);
  EXPECT_TRUE(c->attention_bias);
  EXPECT_TRUE(c->mlp_bias);
  EXPECT_EQ(c->hidden_act, Activation::kGelu);
  EXPECT_EQ(c->num_kv_heads, 8);
}

TEST(ModelConfigTest, ErrorsNameTheKey) {
  auto msg = [](const nlohmann::json& j) {
    auto c = ParseHfConfig(j, "x");
    EXPECT_FALSE(c.ok());
    return std::string(c.status().message());
  };
  nlohmann::json j = Llama();
  j["model_type"] = "gpt2";
  EXPECT_NE(msg(j).find("model_type = \"gpt2\": unsupported"), std::string::npos);
  j = Llama();
  j["rope_scaling"]["rope_type"] = "yarn";
  EXPECT_NE(msg(j).find("rope_scaling.rope_type = \"yarn\": unsupported"), std::string::npos);
  j = Llama();
  j["num_key_value_heads"] = 5;
  EXPECT_NE(msg(j).find("num_key_value_heads = 5: must divide num_attention_heads = 32"),
            std::string::npos);
  j = Llama();
  j.erase("hidden_size");
  EXPECT_NE(msg(j).find("hidden_size: missing"), std::string::npos);
  j = Llama();
  j["hidden_act"] = "mish";
  EXPECT_NE(msg(j).find("hidden_act = \"mish\""), std::string::npos);
  j = Llama();
  j["rope_scaling"].erase("low_freq_factor");
  EXPECT_NE(msg(j).find("rope_scaling.low_freq_factor: missing"), std::string::npos);
  // Token ids are int32: a vocabulary of 2^31 cannot be decoded (the cost model still reads it).
  j = Llama();
  j["vocab_size"] = int64_t{1} << 31;
  EXPECT_NE(msg(j).find("vocab_size = 2147483648: token ids are int32"), std::string::npos)
      << msg(j);
  j["vocab_size"] = (int64_t{1} << 31) - 1;
  EXPECT_TRUE(ParseHfConfig(j, "x").ok());
}

TEST(ModelConfigTest, BuiltinsAndSources) {
  for (const std::string& name : BuiltinConfigNames()) {
    auto c = BuiltinConfig(name);
    ASSERT_TRUE(c.ok()) << name;
    EXPECT_TRUE(ValidateModelConfig(*c).ok()) << name;
    EXPECT_EQ(c->vocab_size, 256);
  }
  EXPECT_FALSE(BuiltinConfig("huge").ok());
  auto src = ResolveModelSource("random:tiny-draft");
  ASSERT_TRUE(src.ok());
  EXPECT_TRUE(src->random);
  EXPECT_EQ(src->config.num_layers, 1);
  EXPECT_FALSE(ResolveModelSource("random:").ok());
  EXPECT_FALSE(ResolveModelSource("random:nope").ok());
  EXPECT_FALSE(ResolveModelSource("/no/such/dir").ok());
}

TEST(ModelConfigTest, RegistryModelsAreRandomSources) {
  auto qwen = ResolveModelSource("random:qwen3-8b");
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_TRUE(qwen->random);
  EXPECT_EQ(qwen->config.model_type, "qwen3");
  EXPECT_EQ(qwen->config.num_layers, 36);
  EXPECT_EQ(qwen->config.hidden_size, 4096);
  EXPECT_EQ(qwen->config.num_kv_heads, 8);
  EXPECT_EQ(qwen->config.head_dim, 128);
  EXPECT_EQ(qwen->config.vocab_size, 151936);
  EXPECT_TRUE(qwen->config.qk_norm);
  EXPECT_FALSE(qwen->config.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(qwen->config.rope_theta, 1e6);
  auto small = RegistryConfig("qwen3-0.6b");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_TRUE(small->tie_word_embeddings);
  auto llama = RegistryConfig("llama-3.1-8b");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(llama->rope_theta, 500000.0);
  EXPECT_EQ(llama->max_position_embeddings, 131072);
  EXPECT_FALSE(RegistryConfig("tiny").ok());
  // An unknown name lists both kinds of names.
  auto bad = ResolveModelSource("random:nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("qwen3-8b"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("tiny-draft"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace specplan::runtime
