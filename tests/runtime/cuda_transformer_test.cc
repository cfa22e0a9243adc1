// The CUDA path of the transformer (SDPA with the folded-GQA mask) against the CPU fp32 explicit
// path on the same weights: tree verification, several sequences' trees in one ragged pass
// (ForwardBatch), chunked and token-by-token decoding, and the KV gather. Skipped where LibTorch
// has no CUDA device.
//
// Tolerances, as relative L2 error ||got - ref|| / ||ref|| per logits row (4-layer tiny models,
// logits of std ~6): fp32 1e-4 (the CUDA and CPU kernels sum in different orders; TF32 is off in
// LibTorch by default), fp16 1e-2, bf16 4e-2 (bf16 keeps 8 mantissa bits: ~4e-3 per rounding,
// compounded over 4 layers and the LM head).
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <random>
#include <string>
#include <tuple>

#include "runtime/kv_cache.h"
#include "runtime/transformer.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

using testing::LastLogits;
using testing::PathTo;
using testing::RandomTokens;
using testing::RandomTree;
using testing::RelativeError;
using testing::TinyModel;
using testing::VerifyTree;

double Tolerance(torch::ScalarType dtype) {
  if (dtype == torch::kFloat32) return 1e-4;
  if (dtype == torch::kFloat16) return 1e-2;
  return 4e-2;
}

class CudaTransformerTest
    : public ::testing::TestWithParam<std::tuple<std::string, torch::ScalarType>> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch/machine";
    arch_ = std::get<0>(GetParam());
    dtype_ = std::get<1>(GetParam());
    cpu_ = TinyModel(arch_, 21);
    RuntimeOptions options;
    options.device = torch::Device(torch::kCUDA, 0);
    options.dtype = dtype_;
    auto gpu = cpu_->CopyTo(options);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = *std::move(gpu);
  }
  std::string arch_;
  torch::ScalarType dtype_ = torch::kFloat32;
  std::unique_ptr<Transformer> cpu_, gpu_;
};

TEST_P(CudaTransformerTest, TreeVerificationMatchesCpuFp32AlongEveryPath) {
  const int V = static_cast<int>(cpu_->config().vocab_size);
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 3; ++trial) {
    const int c = 5 + trial * 9;   // 5, 14, 23 cached tokens
    const int n = 7 + trial * 12;  // 8, 20, 32 tree tokens with the root
    std::vector<planner::TokenId> prefix = RandomTokens(c, V, rng);
    planner::Tree tree = RandomTree(n, V, rng);
    const int s = tree.size();
    KvCache cache = gpu_->NewCache(c + s);
    gpu_->ForwardCausal(prefix, 0, &cache);
    torch::Tensor logits = VerifyTree(*gpu_, tree, c, &cache);
    ASSERT_TRUE(logits.is_cuda());
    ASSERT_EQ(logits.size(0), s);
    ASSERT_FALSE(torch::isnan(logits).any().item<bool>());
    for (int i = 0; i < s; ++i) {
      std::vector<planner::TokenId> seq = prefix;
      const std::vector<planner::TokenId> path = PathTo(tree, i, c).tokens;
      seq.insert(seq.end(), path.begin(), path.end());
      const double err = RelativeError(logits[i], LastLogits(*cpu_, seq));
      EXPECT_LT(err, Tolerance(dtype_)) << arch_ << " trial " << trial << " node " << i;
    }
  }
}

// Several sequences in one ragged pass (ForwardBatch): every segment's rows match the CPU fp32
// verification of that segment alone, with caches of their own (SDPA per segment) and with caches
// that are consecutive rows of one arena (one SDPA call per layer for the whole batch, padded).
TEST_P(CudaTransformerTest, ForwardBatchMatchesCpuFp32PerSegment) {
  const int V = static_cast<int>(cpu_->config().vocab_size);
  for (const bool arena : {false, true}) {
    std::mt19937_64 rng(11);
    const std::vector<int> contexts = {5, 0, 11, 7}, nodes = {6, 0, 9, 9};
    std::vector<KvCache> gpu_caches, cpu_caches;
    std::vector<planner::Tree> trees;
    std::vector<planner::TreeOutputs> outs(contexts.size());
    std::vector<ForwardSegment> segments;
    std::vector<torch::Tensor> expected;
    if (arena) {
      gpu_caches = KvCache::Batch(gpu_->config(), static_cast<int64_t>(contexts.size()), 32,
                                  gpu_->options().dtype, gpu_->options().device);
    }
    for (size_t i = 0; i < contexts.size(); ++i) {
      if (!arena) gpu_caches.push_back(gpu_->NewCache(32));
      cpu_caches.push_back(cpu_->NewCache(32));
    }
    for (size_t i = 0; i < contexts.size(); ++i) {
      const std::vector<planner::TokenId> prefix = RandomTokens(contexts[i], V, rng);
      if (contexts[i] > 0) {
        gpu_->ForwardCausal(prefix, 0, &gpu_caches[i]);
        cpu_->ForwardCausal(prefix, 0, &cpu_caches[i]);
      }
      trees.push_back(RandomTree(nodes[i], V, rng));
      expected.push_back(VerifyTree(*cpu_, trees[i], contexts[i], &cpu_caches[i]));
      planner::TreeOutputOptions opt;
      opt.position_offset = contexts[i];
      opt.dense_mask = true;
      planner::ComputeTreeOutputs(trees[i], opt, &outs[i]);
      const int64_t s = trees[i].size();
      const torch::Device dev = gpu_->options().device;
      segments.push_back({torch::tensor(trees[i].tokens, torch::kInt32).to(dev),
                          torch::tensor(outs[i].positions, torch::kInt64).to(dev), contexts[i],
                          s > 1 ? TreeMaskBlock(outs[i].mask_dense, s, dev) : torch::Tensor(),
                          &gpu_caches[i]});
    }
    const torch::Tensor packed = gpu_->ForwardBatch(segments);
    ASSERT_TRUE(packed.is_cuda());
    int64_t offset = 0;
    for (size_t i = 0; i < trees.size(); ++i) {
      for (int j = 0; j < trees[i].size(); ++j) {
        EXPECT_LT(RelativeError(packed[offset + j], expected[i][j]), Tolerance(dtype_))
            << arch_ << (arena ? " arena" : " own caches") << " segment " << i << " node " << j;
      }
      offset += trees[i].size();
    }
    EXPECT_EQ(packed.size(0), offset);
  }
}

TEST_P(CudaTransformerTest, ChunkedPrefillAndSingleTokenDecodeMatchCpuFp32) {
  const int V = static_cast<int>(cpu_->config().vocab_size);
  std::mt19937_64 rng(3);
  std::vector<planner::TokenId> seq = RandomTokens(40, V, rng);
  KvCache ref_cache = cpu_->NewCache(40);
  torch::Tensor ref = cpu_->ForwardCausal(seq, 0, &ref_cache);
  // Causal chunks at start_slot 0 and > 0 (the masked path), then single tokens (no mask).
  KvCache cache = gpu_->NewCache(40);
  std::vector<torch::Tensor> rows;
  const std::vector<std::pair<int, int>> chunks = {{0, 17}, {17, 30}};
  for (auto [a, b] : chunks) {
    std::vector<planner::TokenId> part(seq.begin() + a, seq.begin() + b);
    rows.push_back(gpu_->ForwardCausal(part, a, &cache));
  }
  for (int i = 30; i < 40; ++i) rows.push_back(gpu_->ForwardCausal({seq[i]}, i, &cache));
  torch::Tensor got = torch::cat(rows, 0);
  ASSERT_EQ(got.size(0), 40);
  for (int i = 0; i < 40; ++i) {
    EXPECT_LT(RelativeError(got[i], ref[i]), Tolerance(dtype_)) << arch_ << " token " << i;
  }
}

TEST_P(CudaTransformerTest, KvGatherMovesRowsExactlyAndMatchesRecomputation) {
  const int V = static_cast<int>(cpu_->config().vocab_size);
  std::mt19937_64 rng(11);
  const int c = 9, n = 15;
  testing::VerifiedRandomTree verified = testing::VerifyRandomTree(*gpu_, V, c, n, rng);
  const std::vector<planner::TokenId>& prefix = verified.prefix;
  KvCache& cache = verified.cache;
  const testing::TreePath& accepted = verified.accepted;
  const std::vector<int64_t>& src = accepted.slots;
  const std::vector<planner::TokenId>& path = accepted.tokens;
  const int64_t L = static_cast<int64_t>(src.size());
  torch::Tensor idx = torch::tensor(src, torch::kInt64).to(gpu_->options().device);
  std::vector<torch::Tensor> before_k, before_v;
  for (int64_t l = 0; l < cache.num_layers(); ++l) {
    before_k.push_back(cache.k(l).index_select(0, idx).clone());
    before_v.push_back(cache.v(l).index_select(0, idx).clone());
  }
  cache.GatherSlots(src, c);
  for (int64_t l = 0; l < cache.num_layers(); ++l) {
    EXPECT_TRUE(torch::equal(cache.k(l).narrow(0, c, L), before_k[l])) << "layer " << l;
    EXPECT_TRUE(torch::equal(cache.v(l).narrow(0, c, L), before_v[l])) << "layer " << l;
  }
  cache.set_length(c + L);
  const planner::TokenId next = 42 % V;
  torch::Tensor got = gpu_->ForwardCausal({next}, c + L, &cache)[0];
  std::vector<planner::TokenId> seq = prefix;
  seq.insert(seq.end(), path.begin(), path.end());
  seq.push_back(next);
  EXPECT_LT(RelativeError(got, LastLogits(*cpu_, seq)), Tolerance(dtype_)) << arch_;
}

std::string ParamName(
    const ::testing::TestParamInfo<std::tuple<std::string, torch::ScalarType>>& info) {
  std::string name = std::get<0>(info.param) + "_" + DtypeName(std::get<1>(info.param));
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    ArchsAndDtypes, CudaTransformerTest,
    ::testing::Combine(::testing::Values("tiny", "tiny-qwen3", "tiny-neox", "tiny-llama3"),
                       ::testing::Values(torch::kFloat32, torch::kBFloat16, torch::kFloat16)),
    ParamName);

TEST(CudaRandomInitTest, SameSeedSameWeightsOnTheDevice) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch/machine";
  auto config = BuiltinConfig("tiny-qwen3");
  ASSERT_TRUE(config.ok());
  RuntimeOptions options;
  options.device = torch::Device(torch::kCUDA, 0);
  options.dtype = torch::kBFloat16;
  auto a = Transformer::CreateRandom(*config, 5, options);
  auto b = Transformer::CreateRandom(*config, 5, options);
  auto c = Transformer::CreateRandom(*config, 6, options);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const auto& pa = (*a)->NamedParameters();
  const auto& pb = (*b)->NamedParameters();
  const auto& pc = (*c)->NamedParameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(pa[i].second.is_cuda());
    EXPECT_TRUE(torch::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
  EXPECT_FALSE(torch::equal(pa[0].second, pc[0].second));
  // The scale rules hold on the device too: N(0, 1) embeddings, norms around 1.
  torch::Tensor embed = pa[0].second.to(torch::kFloat32);
  EXPECT_NEAR(embed.std().item<double>(), 1.0, 0.05);
}

}  // namespace
}  // namespace specplan::runtime
