// Tree verification in one pass equals sequential decoding along every root-to-node path; KV
// compaction equals recomputation; chunked prefill equals token-by-token decoding.
#include "runtime/transformer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <random>

#include "planner/tree/tree_outputs.h"
#include "runtime/kv_cache.h"
#include "runtime/step_buffers.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

using testing::CausalLogits;
using testing::LastLogits;
using testing::PathTo;
using testing::RandomTokens;
using testing::RandomTree;
using testing::TinyModel;
using testing::VerifyTree;

class TreeVerifyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TreeVerifyTest, OnePassEqualsSequentialAlongEveryPath) {
  auto model = TinyModel(GetParam(), 11);
  const int V = static_cast<int>(model->config().vocab_size);
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 3; ++trial) {
    const int c = 3 + trial * 5;
    const int n = 6 + trial * 7;
    std::vector<planner::TokenId> prefix = RandomTokens(c, V, rng);
    planner::Tree tree = RandomTree(n, V, rng);
    KvCache cache = model->NewCache(c + n + 1);
    model->ForwardCausal(prefix, 0, &cache);
    const int s = tree.size();
    torch::Tensor logits = VerifyTree(*model, tree, c, &cache);
    ASSERT_EQ(logits.size(0), s);
    ASSERT_EQ(logits.size(1), V);
    for (int i = 0; i < s; ++i) {
      std::vector<planner::TokenId> seq = prefix;
      const std::vector<planner::TokenId> path = PathTo(tree, i, c).tokens;
      seq.insert(seq.end(), path.begin(), path.end());
      torch::Tensor ref = LastLogits(*model, seq);
      EXPECT_TRUE(torch::allclose(logits[i], ref, 1e-4, 1e-4))
          << GetParam() << " trial " << trial << " node " << i << " max diff "
          << (logits[i] - ref).abs().max().item<float>();
    }
  }
}

TEST_P(TreeVerifyTest, CompactionEqualsRecomputation) {
  auto model = TinyModel(GetParam(), 3);
  const int V = static_cast<int>(model->config().vocab_size);
  std::mt19937_64 rng(17);
  const int c = 6, n = 14;
  // Accept the path to the deepest last node.
  testing::VerifiedRandomTree v = testing::VerifyRandomTree(*model, V, c, n, rng);
  v.cache.GatherSlots(v.accepted.slots, c);
  const int64_t len = c + static_cast<int64_t>(v.accepted.tokens.size());
  v.cache.set_length(len);
  // Next token decoded over the compacted cache == full recomputation.
  const planner::TokenId next = 42;
  torch::Tensor got = model->ForwardCausal({next}, len, &v.cache)[0];
  std::vector<planner::TokenId> seq = v.prefix;
  seq.insert(seq.end(), v.accepted.tokens.begin(), v.accepted.tokens.end());
  seq.push_back(next);
  torch::Tensor ref = LastLogits(*model, seq);
  EXPECT_TRUE(torch::allclose(got, ref, 1e-4, 1e-4))
      << "max diff " << (got - ref).abs().max().item<float>();
}

// The decoder's [s][s] mask block (TreeMaskBlock) gives exactly the logits of the full
// [s][c + s] TreeAttentionMask, and is that mask's last s columns; so does any wider block over the
// last slots, and int64 token ids give the int32 ids' logits.
TEST_P(TreeVerifyTest, MaskBlockEqualsFullMask) {
  auto model = TinyModel(GetParam(), 13);
  const int V = static_cast<int>(model->config().vocab_size);
  std::mt19937_64 rng(9);
  for (int c : {0, 1, 7}) {
    std::vector<planner::TokenId> prefix = RandomTokens(c, V, rng);
    planner::Tree tree = RandomTree(9, V, rng);
    planner::TreeOutputOptions oo;
    oo.position_offset = c;
    oo.dense_mask = true;
    planner::TreeOutputs out;
    planner::ComputeTreeOutputs(tree, oo, &out);
    const int s = tree.size();
    const torch::Tensor full = TreeAttentionMask(out.mask_dense, s, c, model->options().device);
    const torch::Tensor block = TreeMaskBlock(out.mask_dense, s, model->options().device);
    ASSERT_EQ(block.size(0), s);
    ASSERT_EQ(block.size(1), s);
    EXPECT_TRUE(torch::equal(block, full.narrow(1, c, s)));
    // Also a block over the last s + e slots (e cached columns included), and int64 token ids.
    const int e = std::min(c, 3);
    const torch::Tensor wider = full.narrow(1, c - e, s + e).contiguous();
    torch::Tensor logits[4];
    for (int k = 0; k < 4; ++k) {
      KvCache cache = model->NewCache(c + s + 1);
      if (c > 0) model->ForwardCausal(prefix, 0, &cache);
      const torch::Tensor mask = k == 1 ? block : k == 2 ? wider : full;
      logits[k] = model->Forward(
          torch::tensor(tree.tokens, torch::kInt32).to(k == 3 ? torch::kInt64 : torch::kInt32),
          torch::tensor(out.positions, torch::kInt64), c, mask, &cache);
    }
    EXPECT_TRUE(torch::equal(logits[0], logits[1])) << GetParam() << " c " << c;
    EXPECT_TRUE(torch::equal(logits[0], logits[2])) << GetParam() << " c " << c;
    EXPECT_TRUE(torch::equal(logits[0], logits[3])) << GetParam() << " c " << c;
  }
}

// StepBuffers: views of the right shapes and contents, before and after growing.
TEST(StepBuffersTest, ViewsHoldTheStagedStepAndGrow) {
  StepBuffers b(torch::kCPU, 2, 2);
  EXPECT_EQ(b.row_capacity(), 2);
  for (int64_t s : {1, 2, 5, 3}) {
    const int64_t cols = s == 1 ? 0 : s + 1;
    b.Begin(s, cols);
    for (int64_t i = 0; i < s; ++i) {
      b.tokens()[i] = static_cast<planner::TokenId>(10 + i);
      b.positions()[i] = 100 + i;
    }
    for (int64_t i = 0; i < s * cols; ++i) b.mask()[i] = static_cast<float>(i);
    const StepInputs in = b.Upload();
    ASSERT_EQ(in.tokens.scalar_type(), torch::kInt32);
    ASSERT_EQ(in.positions.scalar_type(), torch::kInt64);
    ASSERT_EQ(in.tokens.size(0), s);
    ASSERT_EQ(in.positions.size(0), s);
    EXPECT_TRUE(torch::equal(in.tokens, torch::arange(10, 10 + s, torch::kInt32)));
    EXPECT_TRUE(torch::equal(in.positions, torch::arange(100, 100 + s, torch::kInt64)));
    if (cols == 0) {
      EXPECT_FALSE(in.mask.defined());
    } else {
      ASSERT_EQ(in.mask.size(0), s);
      ASSERT_EQ(in.mask.size(1), cols);
      EXPECT_TRUE(torch::equal(in.mask, torch::arange(s * cols, torch::kFloat32).view({s, cols})));
    }
  }
  EXPECT_GE(b.row_capacity(), 5);
  EXPECT_GE(b.mask_capacity(), 30);
}

INSTANTIATE_TEST_SUITE_P(Archs, TreeVerifyTest,
                         ::testing::Values("tiny", "tiny-qwen3", "tiny-neox", "tiny-llama3"));

TEST(TransformerTest, ChunkedPrefillEqualsTokenByToken) {
  auto model = TinyModel("tiny", 2);
  std::mt19937_64 rng(1);
  std::vector<planner::TokenId> seq = RandomTokens(9, 256, rng);
  KvCache a = model->NewCache(16);
  torch::Tensor full = model->ForwardCausal(seq, 0, &a);
  KvCache b = model->NewCache(16);
  for (size_t i = 0; i < seq.size(); ++i) {
    torch::Tensor row = model->ForwardCausal({seq[i]}, static_cast<int64_t>(i), &b)[0];
    EXPECT_TRUE(torch::allclose(row, full[i], 1e-4, 1e-4)) << i;
  }
}

TEST(TransformerTest, SameSeedSameWeightsDifferentSeedDifferent) {
  auto a = TinyModel("tiny", 7);
  auto b = TinyModel("tiny", 7);
  auto c = TinyModel("tiny", 8);
  torch::Tensor la = CausalLogits(*a, {1, 2, 3});
  EXPECT_TRUE(torch::equal(la, CausalLogits(*b, {1, 2, 3})));
  EXPECT_FALSE(torch::allclose(la, CausalLogits(*c, {1, 2, 3})));
}

TEST(TransformerTest, CopyToKeepsTheWeights) {
  auto model = TinyModel("tiny-qwen3", 4);
  RuntimeOptions same;
  auto copy = model->CopyTo(same);
  ASSERT_TRUE(copy.ok()) << copy.status();
  torch::Tensor x = CausalLogits(*model, {5, 6, 7});
  EXPECT_TRUE(torch::equal(x, CausalLogits(**copy, {5, 6, 7})));
  // A copy does not alias the original's storage (parameters are inference tensors).
  {
    c10::InferenceMode guard;
    (*copy)->NamedParameters()[0].second.zero_();
  }
  EXPECT_FALSE(
      torch::equal(model->NamedParameters()[0].second, (*copy)->NamedParameters()[0].second));
  RuntimeOptions bf16;
  bf16.dtype = torch::kBFloat16;
  auto half = model->CopyTo(bf16);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ((*half)->NamedParameters()[0].second.scalar_type(), torch::kBFloat16);
  RuntimeOptions bad;
  bad.dtype = torch::kInt32;
  EXPECT_FALSE(model->CopyTo(bad).ok());
}

TEST(TransformerTest, TruncatedSharesWeights) {
  auto model = TinyModel("tiny", 4);
  auto same = model->Truncated(model->config().num_layers);
  auto one = model->Truncated(1);
  EXPECT_EQ(one->config().num_layers, 1);
  EXPECT_LT(one->NamedParameters().size(), model->NamedParameters().size());
  torch::Tensor full = CausalLogits(*model, {5, 6, 7});
  EXPECT_TRUE(torch::equal(full, CausalLogits(*same, {5, 6, 7})));
  EXPECT_FALSE(torch::allclose(full, CausalLogits(*one, {5, 6, 7})));
}

TEST(TransformerTest, Bf16TracksFp32) {
  auto f32 = TinyModel("tiny", 9);
  auto bf16 = TinyModel("tiny", 9, torch::kBFloat16);
  const std::vector<planner::TokenId> seq = {3, 1, 4, 1, 5, 9};
  torch::Tensor x = CausalLogits(*f32, seq);
  torch::Tensor y = CausalLogits(*bf16, seq);
  EXPECT_EQ(y.scalar_type(), torch::kFloat32);  // logits are returned as float32
  const float scale = x.abs().max().item<float>();
  EXPECT_LT((x - y).abs().max().item<float>(), 0.1f * scale);
}

TEST(TransformerTest, DtypeAndDeviceParsing) {
  EXPECT_EQ(*ParseDtype("bf16"), torch::kBFloat16);
  EXPECT_EQ(*ParseDtype("fp32"), torch::kFloat32);
  EXPECT_FALSE(ParseDtype("int4").ok());
  // One table of names with the cost model (costmodel::ParseDType): its aliases and case, and
  // its fp8, which the runtime does not compute in.
  EXPECT_EQ(*ParseDtype("BFloat16"), torch::kBFloat16);
  EXPECT_EQ(*ParseDtype("half"), torch::kFloat16);
  EXPECT_STREQ(DtypeName(torch::kFloat16), "fp16");
  const absl::Status fp8 = ParseDtype("fp8").status();
  EXPECT_NE(std::string(fp8.message()).find("the runtime computes in fp32, bf16 or fp16"),
            std::string::npos)
      << fp8;
  EXPECT_TRUE(ParseDevice("cpu").ok());
  EXPECT_EQ(ParseDevice("cuda").ok(), torch::cuda::is_available());
  EXPECT_FALSE(ParseDevice("tpu").ok());
}

}  // namespace
}  // namespace specplan::runtime
