#include "costmodel/hardware/model_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>

#include "costmodel/hardware/hf_config.h"
#include "costmodel/hardware/model_registry.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

TEST(ModelSpec, BuiltinsMatchPublishedConfigs) {
  auto q8 = LookupModel("qwen3-8b");
  ASSERT_TRUE(q8.ok());
  // layers, hidden, n_q, n_kv, head_dim, ffn, vocab.
  EXPECT_EQ(std::tie(q8->layers, q8->hidden, q8->n_q, q8->n_kv, q8->head_dim, q8->ffn, q8->vocab),
            std::make_tuple(36, 4096, 32, 8, 128, 12288, 151936));
  EXPECT_TRUE(q8->gated_mlp);
  EXPECT_FALSE(q8->tied_embeddings);
  // Qwen3-8B model card: 8.2B parameters.
  EXPECT_NEAR(q8->ParameterCount() / 1e9, 8.19, 0.05);

  auto llama = LookupModel("Llama-3.1-8B");  // case-insensitive
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->ffn, 14336);
  EXPECT_EQ(llama->vocab, 128256);
  EXPECT_NEAR(llama->ParameterCount() / 1e9, 8.03, 0.05);

  auto q4 = LookupModel("qwen3-4b");
  ASSERT_TRUE(q4.ok());
  EXPECT_TRUE(q4->tied_embeddings);
  EXPECT_NEAR(q4->ParameterCount() / 1e9, 4.02, 0.05);

  auto q06 = LookupModel("qwen3-0.6b");
  ASSERT_TRUE(q06.ok());
  EXPECT_EQ(q06->hidden, 1024);
  EXPECT_EQ(q06->head_dim, 128);  // head_dim is explicit in Qwen3, not hidden / heads

  auto p70 = LookupModel("pythia-70m");
  ASSERT_TRUE(p70.ok());
  EXPECT_FALSE(p70->gated_mlp);
  EXPECT_EQ(p70->head_dim, 64);
  EXPECT_EQ(p70->vocab, 50304);
  auto p28 = LookupModel("pythia-2.8b");
  ASSERT_TRUE(p28.ok());
  EXPECT_EQ(p28->layers, 32);
  EXPECT_EQ(p28->head_dim, 80);
  EXPECT_NEAR(p28->ParameterCount() / 1e9, 2.78, 0.05);
}

TEST(ModelSpec, UnknownNameListsKnownNames) {
  ExpectUnknownNameListsKnown(LookupModel("gpt-17").status(), "gpt-17", {"qwen3-8b", "pythia-70m"});
  for (const char* name :
       {"qwen3-0.6b", "qwen3-4b", "qwen3-8b", "llama-3.1-8b", "pythia-70m", "pythia-2.8b"}) {
    EXPECT_TRUE(LookupModel(name).ok()) << name;
  }
}

TEST(ModelSpec, ParsesLlamaConfigWithDefaults) {
  nlohmann::json cfg = {{"model_type", "llama"},    {"num_hidden_layers", 4},
                        {"hidden_size", 256},       {"num_attention_heads", 8},
                        {"intermediate_size", 512}, {"vocab_size", 1000},
                        {"torch_dtype", "float16"}};
  auto m = ModelSpecFromHfConfig(cfg, "tiny");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->n_kv, 8);       // MHA default
  EXPECT_EQ(m->head_dim, 32);  // hidden / heads
  EXPECT_FALSE(m->tied_embeddings);
  EXPECT_TRUE(m->gated_mlp);
  EXPECT_EQ(m->dtype, DType::kFloat16);
}

TEST(ModelSpec, ParsesQwen3AndNeoxConfigs) {
  nlohmann::json q = {{"model_type", "qwen3"},       {"num_hidden_layers", 28},
                      {"hidden_size", 1024},         {"num_attention_heads", 16},
                      {"num_key_value_heads", 8},    {"head_dim", 128},
                      {"intermediate_size", 3072},   {"vocab_size", 151936},
                      {"tie_word_embeddings", true}, {"torch_dtype", "bfloat16"}};
  auto qm = ModelSpecFromHfConfig(q, "q");
  ASSERT_TRUE(qm.ok()) << qm.status();
  auto builtin = LookupModel("qwen3-0.6b");
  EXPECT_EQ(qm->h_q(), builtin->h_q());
  EXPECT_EQ(qm->ParameterCount(), builtin->ParameterCount());

  nlohmann::json n = {{"model_type", "gpt_neox"},  {"num_hidden_layers", 6},
                      {"hidden_size", 512},        {"num_attention_heads", 8},
                      {"intermediate_size", 2048}, {"vocab_size", 50304}};
  auto nm = ModelSpecFromHfConfig(n, "n");
  ASSERT_TRUE(nm.ok()) << nm.status();
  EXPECT_FALSE(nm->gated_mlp);
  EXPECT_EQ(nm->ParameterCount(), LookupModel("pythia-70m")->ParameterCount());
}

TEST(ModelSpec, BadConfigsNameTheField) {
  nlohmann::json base = {{"model_type", "mistral"},  {"num_hidden_layers", 4},
                         {"hidden_size", 256},       {"num_attention_heads", 8},
                         {"intermediate_size", 512}, {"vocab_size", 1000}};
  ASSERT_TRUE(ModelSpecFromHfConfig(base, "x").ok());

  auto missing = base;
  missing.erase("vocab_size");
  EXPECT_THAT(ModelSpecFromHfConfig(missing, "x").status().message(), HasSubstr("vocab_size"));

  auto wrong_type = base;
  wrong_type["hidden_size"] = "big";
  EXPECT_THAT(ModelSpecFromHfConfig(wrong_type, "x").status().message(), HasSubstr("hidden_size"));

  auto negative = base;
  negative["num_hidden_layers"] = -2;
  EXPECT_THAT(ModelSpecFromHfConfig(negative, "x").status().message(),
              HasSubstr("num_hidden_layers = -2"));

  auto gqa = base;
  gqa["num_key_value_heads"] = 3;
  EXPECT_THAT(ModelSpecFromHfConfig(gqa, "x").status().message(),
              HasSubstr("num_key_value_heads = 3"));

  auto unsupported = base;
  unsupported["model_type"] = "mamba";
  EXPECT_THAT(ModelSpecFromHfConfig(unsupported, "x").status().message(), HasSubstr("mamba"));

  EXPECT_FALSE(ModelSpecFromHfConfig(nlohmann::json::array(), "x").ok());
}

TEST(ModelSpec, JsonRoundTrip) {
  auto m = LookupModel("llama-3.1-8b");
  auto back = ModelSpecFromJson(ModelSpecToJson(*m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ModelSpecToJson(*back), ModelSpecToJson(*m));
}

TEST(ModelSpec, DTypes) {
  EXPECT_EQ(*ParseDType("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(DTypeBytes(*ParseDType("fp32")), 4);
  EXPECT_EQ(DTypeBytes(*ParseDType("fp8")), 1);
  EXPECT_THAT(ParseDType("int3").status().message(), HasSubstr("int3"));
}

}  // namespace
}  // namespace specplan::costmodel
