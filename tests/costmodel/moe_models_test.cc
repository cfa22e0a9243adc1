// The MoE families' HF configs (issue 54): glm4_moe with shared experts and first_k_dense_replace,
// deepseek_v3's FFN, the refused MLA attention, and the registry names against the configs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "costmodel/hardware/hf_config.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "tests/paths/test_paths.h"
#include "util/file.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return ::specplan::test_paths::SourceDir() + "/tests/costmodel/data/hf/" + name;
}

nlohmann::json FixtureJson(const std::string& name) {
  auto text = ReadFileToString(Fixture(name));
  EXPECT_TRUE(text.ok()) << text.status();
  return nlohmann::json::parse(text.ok() ? *text : "{}");
}

// zai-org/GLM-4.5-Air's config.json: 128 routed experts of 1408, top-8, one shared expert of the
// same width, the first layer dense (10944 wide).
TEST(MoeModels, Glm4MoeConfigReadsSharedExpertsAndDenseLayers) {
  auto parsed = ModelSpecFromHfConfigFile(Fixture("glm4_moe_config.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->model_type, "glm4_moe");
  EXPECT_EQ(parsed->experts, 128);
  EXPECT_EQ(parsed->experts_active, 8);
  EXPECT_EQ(parsed->expert_ffn, 1408);
  EXPECT_EQ(parsed->shared_expert_ffn, 1408);
  EXPECT_EQ(parsed->dense_layers, 1);
  EXPECT_EQ(parsed->dense_ffn, 10944);
  EXPECT_EQ(parsed->ffn, 0);
  EXPECT_EQ(parsed->n_q, 96);
  EXPECT_EQ(parsed->n_kv, 8);
  EXPECT_EQ(parsed->head_dim, 128);
  auto registry = LookupModel("glm-4.5-air");
  ASSERT_TRUE(registry.ok()) << registry.status();
  EXPECT_EQ(parsed->ParameterCount(), registry->ParameterCount());
  // 45 MoE layers of 128 x 3 x 4096 x 1408 + a shared expert + router, one dense layer of
  // 3 x 4096 x 10944, attention 46 x (2 x 4096 x 12288 + 2 x 4096 x 1024), embeddings
  // 2 x 151552 x 4096: 106.85 B (GLM-4.5-Air's published 106 B counts the MTP layer too).
  EXPECT_NEAR(parsed->ParameterCount() / 1e9, 106.85, 0.01);
  auto hf = HfConfigFromFile(Fixture("glm4_moe_config.json"));
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_DOUBLE_EQ(hf->rotary_pct, 0.5);
  EXPECT_TRUE(hf->attention_bias);
  EXPECT_FALSE(hf->qk_norm);  // use_qk_norm false
  EXPECT_THAT(hf->unsupported, HasSubstr("mixture of experts"));
  // The layer count bounds first_k_dense_replace; a missing intermediate_size is named.
  nlohmann::json j = FixtureJson("glm4_moe_config.json");
  j["first_k_dense_replace"] = 46;
  auto bad = ModelSpecFromHfConfig(j, "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("first_k_dense_replace = 46: must be in [0, num_hidden_layers = 46)"));
  j = FixtureJson("glm4_moe_config.json");
  j.erase("intermediate_size");
  bad = ModelSpecFromHfConfig(j, "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("intermediate_size"));
  // No dense layer: no dense width needed, every layer MoE.
  j = FixtureJson("glm4_moe_config.json");
  j["first_k_dense_replace"] = 0;
  j.erase("intermediate_size");
  auto all_moe = ModelSpecFromHfConfig(j, "x");
  ASSERT_TRUE(all_moe.ok()) << all_moe.status();
  EXPECT_EQ(all_moe->dense_layers, 0);
  EXPECT_EQ(all_moe->dense_ffn, 0);
}

TEST(MoeModels, RegistryGlmEntriesMatchPublishedConfigs) {
  auto air = LookupModel("glm-4.5-air");
  ASSERT_TRUE(air.ok()) << air.status();
  EXPECT_EQ(air->layers, 46);
  EXPECT_EQ(air->dense_layers, 1);
  auto full = LookupModel("glm-4.5");
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->layers, 92);
  EXPECT_EQ(full->experts, 160);
  EXPECT_EQ(full->expert_ffn, 1536);
  EXPECT_EQ(full->shared_expert_ffn, 1536);
  EXPECT_EQ(full->dense_layers, 3);
  EXPECT_EQ(full->dense_ffn, 12288);
  EXPECT_NEAR(full->ParameterCount() / 1e9, 352.8, 0.1);  // published 355 B with the MTP layer
  EXPECT_TRUE(ValidateModelSpec(*full).ok());
}

// deepseek-ai/DeepSeek-V3's config.json: its FFN reads (256 routed experts of 2048, top-8, one
// shared, three dense layers of 18432), its MLA attention is refused by name.
TEST(MoeModels, DeepseekV3FfnReadsAndItsMlaAttentionIsRefused) {
  const nlohmann::json j = FixtureJson("deepseek_v3_config.json");
  auto ffn = HfMoeFieldsFromJson(j);
  ASSERT_TRUE(ffn.ok()) << ffn.status();
  EXPECT_EQ(ffn->model_type, "deepseek_v3");
  EXPECT_EQ(ffn->experts, 256);
  EXPECT_EQ(ffn->experts_active, 8);
  EXPECT_EQ(ffn->expert_ffn, 2048);
  EXPECT_EQ(ffn->shared_expert_ffn, 2048);
  EXPECT_EQ(ffn->dense_layers, 3);
  EXPECT_EQ(ffn->dense_ffn, 18432);
  EXPECT_EQ(ffn->num_layers, 61);

  auto refused = HfConfigFromJson(j, "deepseek-v3");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(refused.status().message(), HasSubstr("kv_lora_rank = 512: MLA attention"));
  // The file and --model path forms give the same named error.
  auto by_path = ResolveModel(Fixture("deepseek_v3_config.json"));
  ASSERT_FALSE(by_path.ok());
  EXPECT_THAT(by_path.status().message(), HasSubstr("MLA attention"));
  // Kimi-K2 is the same architecture under its own model_type.
  nlohmann::json kimi = j;
  kimi["model_type"] = "kimi_k2";
  auto k2 = HfConfigFromJson(kimi, "kimi-k2");
  ASSERT_FALSE(k2.ok());
  EXPECT_THAT(k2.status().message(), HasSubstr("MLA attention (multi-head latent attention"));
  // A bad FFN key is named before anything else.
  nlohmann::json bad = j;
  bad["n_shared_experts"] = -1;
  auto neg = HfMoeFieldsFromJson(bad);
  ASSERT_FALSE(neg.ok());
  EXPECT_THAT(neg.status().message(), HasSubstr("n_shared_experts = -1: must be >= 0"));
  bad = j;
  bad["moe_layer_freq"] = 2;
  EXPECT_THAT(HfMoeFieldsFromJson(bad).status().message(), HasSubstr("moe_layer_freq = 2"));
  // A dense config is not a MoE FFN.
  EXPECT_THAT(HfMoeFieldsFromJson(nlohmann::json{{"model_type", "llama"}}).status().message(),
              HasSubstr("not a mixture of experts"));
}

// Every MoE family reads its FFN fields through the one reader.
TEST(MoeModels, EachFamilysFfnFields) {
  struct Want {
    const char* file;
    int64_t experts, k, expert_ffn, shared, dense_layers;
  };
  const Want want[] = {{"qwen3_moe_config.json", 128, 8, 768, 0, 0},
                       {"glm4_moe_config.json", 128, 8, 1408, 1408, 1},
                       {"gpt_oss_config.json", 32, 4, 2880, 0, 0},
                       {"mixtral_config.json", 8, 2, 14336, 0, 0},
                       {"deepseek_v3_config.json", 256, 8, 2048, 2048, 3}};
  for (const Want& w : want) {
    SCOPED_TRACE(w.file);
    auto c = HfMoeFieldsFromJson(FixtureJson(w.file));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->experts, w.experts);
    EXPECT_EQ(c->experts_active, w.k);
    EXPECT_EQ(c->expert_ffn, w.expert_ffn);
    EXPECT_EQ(c->shared_expert_ffn, w.shared);
    EXPECT_EQ(c->dense_layers, w.dense_layers);
  }
}

TEST(MoeModels, DenseLayerFieldsValidateAndRoundTrip) {
  auto air = LookupModel("glm-4.5-air");
  ASSERT_TRUE(air.ok());
  auto back = ModelSpecFromJson(ModelSpecToJson(*air));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dense_layers, 1);
  EXPECT_EQ(back->dense_ffn, 10944);
  EXPECT_EQ(back->shared_expert_ffn, 1408);
  ModelSpec m = *air;
  m.dense_ffn = 0;
  EXPECT_THAT(std::string(ValidateModelSpec(m).message()),
              HasSubstr("dense_ffn = 0: must be > 0 exactly when dense_layers = 1 > 0"));
  m = *air;
  m.dense_layers = 46;
  EXPECT_THAT(std::string(ValidateModelSpec(m).message()),
              HasSubstr("dense_layers = 46: must be in [0, layers = 46)"));
  // A dense model's JSON carries neither field.
  auto dense = LookupModel("qwen3-8b");
  ASSERT_TRUE(dense.ok());
  EXPECT_FALSE(ModelSpecToJson(*dense).contains("dense_layers"));
}

}  // namespace
}  // namespace specplan::costmodel
