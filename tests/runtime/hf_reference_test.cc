// The runtime against HuggingFace transformers: checkpoints written by transformers 5.17 and its
// float64 logits (tests/runtime/data/hf/README.md), loaded through the runtime's own loader.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "planner/tree/tree.h"
#include "runtime/model_config.h"
#include "runtime/model_loader.h"
#include "runtime/safetensors.h"
#include "tests/paths/test_paths.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

std::string FixtureDir(const std::string& arch) {
  return ::specplan::test_paths::SourceDir() + "/tests/runtime/data/hf/" + arch;
}

using testing::LoadReferenceLogits;
using Reference = testing::ReferenceLogits;

Reference LoadReference(const std::string& arch) {
  return LoadReferenceLogits(FixtureDir(arch) + "/reference.safetensors");
}

using testing::RelativeError;

// float32 against transformers' float64 through 2 layers: ~1e-7 relative; 1e-5 leaves room for
// summation order while still failing on any RoPE, norm or head-layout mistake (those give > 1e-2).
constexpr double kTolerance = 1e-5;

class HfReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReferenceTest, CausalLogitsMatchTransformers) {
  auto model = LoadModel(FixtureDir(GetParam()), 0, RuntimeOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  Reference ref = LoadReference(GetParam());
  const int64_t T = static_cast<int64_t>(ref.ids.size());
  KvCache cache = (*model)->NewCache(T);
  torch::Tensor got = (*model)->ForwardCausal(ref.ids, 0, &cache);
  ASSERT_EQ(got.sizes(), ref.logits.sizes());
  for (int64_t i = 0; i < T; ++i) {
    EXPECT_LT(RelativeError(got[i], ref.logits[i]), kTolerance) << GetParam() << " token " << i;
    EXPECT_EQ(got[i].argmax().item<int64_t>(), ref.logits[i].argmax().item<int64_t>()) << i;
  }
}

// The last 8 tokens verified as a chain-shaped tree over the cached first 16, in one masked pass:
// the verification path itself, against transformers' full causal forward.
TEST_P(HfReferenceTest, ChainVerificationOverTheCacheMatchesTransformers) {
  auto model = LoadModel(FixtureDir(GetParam()), 0, RuntimeOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  Reference ref = LoadReference(GetParam());
  const int64_t T = static_cast<int64_t>(ref.ids.size()), c = 16, s = T - c;
  KvCache cache = (*model)->NewCache(T);
  (*model)->ForwardCausal(std::vector<planner::TokenId>(ref.ids.begin(), ref.ids.begin() + c), 0,
                          &cache);
  planner::Tree tree;
  tree.ResetRoot(static_cast<int32_t>(ref.ids[c]));
  for (int64_t i = 1; i < s; ++i) {
    tree.AddNode(static_cast<int>(i - 1), static_cast<int32_t>(ref.ids[c + i]), 1.0);
  }
  torch::Tensor got = testing::VerifyTree(**model, tree, c, &cache);
  for (int64_t i = 0; i < s; ++i) {
    EXPECT_LT(RelativeError(got[i], ref.logits[c + i]), kTolerance) << GetParam() << " node " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, HfReferenceTest,
                         ::testing::Values("llama", "qwen3", "gpt_neox"));

// transformers 5 writes RoPE as one rope_parameters object; the reader takes it.
TEST(HfReferenceConfigTest, RopeParametersAreRead) {
  auto llama = LoadHfConfig(FixtureDir("llama"));
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_DOUBLE_EQ(llama->rope_theta, 500000.0);
  EXPECT_EQ(llama->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(llama->rope_scaling.original_max_position_embeddings, 32);
  auto neox = LoadHfConfig(FixtureDir("gpt_neox"));
  ASSERT_TRUE(neox.ok()) << neox.status();
  EXPECT_DOUBLE_EQ(neox->rotary_pct, 0.5);
  EXPECT_DOUBLE_EQ(neox->rope_theta, 10000.0);
  auto qwen = LoadHfConfig(FixtureDir("qwen3"));
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_DOUBLE_EQ(qwen->rope_theta, 1e6);
  EXPECT_EQ(qwen->head_dim, 16);
  EXPECT_TRUE(qwen->tie_word_embeddings);
  // Errors name the object.
  auto bad = ParseHfConfig(nlohmann::json::parse(R"({"model_type": "llama", "hidden_size": 32,
      "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 8,
      "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}})"),
                           "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rope_parameters.rope_type = \"yarn\""), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace specplan::runtime
