#include "train/lm_training.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runtime/model_config.h"
#include "tests/train/counting_corpus.h"

namespace specplan::train {
namespace {

using planner::TokenId;
using ::testing::HasSubstr;

// A 2-layer, 32-token llama small enough to train in a test (tiny's 4 query and 2 KV heads, of
// 8 dimensions).
runtime::ModelConfig ToyConfig() {
  runtime::ModelConfig c = *runtime::BuiltinConfig("tiny");
  c.name = "toy";
  c.vocab_size = 32;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_layers = 2;
  c.head_dim = 8;
  return c;
}

// The counting language over the toy vocabulary.
std::vector<TokenId> ToyCorpus(int64_t n, uint64_t seed) { return CountingCorpus(n, seed, 32); }

LmTrainOptions FewSteps() {
  LmTrainOptions o;
  o.steps = 60;
  o.batch = 8;
  o.seq_len = 32;
  o.lr = 1e-2;
  o.warmup = 5;
  o.weight_decay = 0.0;
  return o;
}

TEST(LmTraining, TheLossGoesDownAndHeldOutLossFollows) {
  auto model = runtime::Transformer::CreateTrainable(ToyConfig(), 3, {});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<TokenId> train = ToyCorpus(20000, 1), heldout = ToyCorpus(2000, 2);
  auto before = HeldoutLoss(**model, heldout, 32);
  ASSERT_TRUE(before.ok()) << before.status();
  std::vector<LmTrainStep> seen;
  LmTrainOptions o = FewSteps();
  o.eval_every = 20;
  o.on_step = [&](const LmTrainStep& s) { seen.push_back(s); };
  auto r = TrainLanguageModel(model->get(), train, heldout, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->losses.size(), 60u);
  ASSERT_EQ(seen.size(), 60u);
  // Counting is learnable: from about ln 32 = 3.47 nats to well under half of it.
  EXPECT_GT(r->losses.front(), 2.5);
  EXPECT_LT(r->heldout_loss, 0.5 * *before) << "before " << *before;
  EXPECT_DOUBLE_EQ(seen.back().heldout_loss, r->heldout_loss);
  EXPECT_GT(seen[19].heldout_loss, 0);  // evaluated at step 20
  EXPECT_EQ(seen[18].heldout_loss, -1);
  EXPECT_NEAR(seen[4].lr, 1e-2, 1e-12);      // the end of the warm-up
  EXPECT_NEAR(seen.back().lr, 1e-3, 1e-12);  // cosine down to lr x min_lr_fraction
  // Evaluating again gives the same loss (to float32 rounding of the reductions).
  auto again = HeldoutLoss(**model, heldout, 32);
  ASSERT_TRUE(again.ok());
  EXPECT_NEAR(*again, r->heldout_loss, 1e-6);
}

TEST(LmTraining, SameSeedSameRun) {
  const std::vector<TokenId> train = ToyCorpus(5000, 1), heldout = ToyCorpus(500, 2);
  LmTrainOptions o = FewSteps();
  o.steps = 5;
  std::vector<double> runs[2];
  for (auto& losses : runs) {
    auto model = runtime::Transformer::CreateTrainable(ToyConfig(), 3, {});
    ASSERT_TRUE(model.ok());
    auto r = TrainLanguageModel(model->get(), train, heldout, o);
    ASSERT_TRUE(r.ok()) << r.status();
    losses = r->losses;
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// The training forward is the inference forward: the same logits as Forward over a KV cache.
TEST(LmTraining, TrainForwardMatchesTheCachedForward) {
  for (const char* name : {"tiny", "tiny-qwen3", "tiny-neox"}) {
    auto model = runtime::Transformer::CreateTrainable(*runtime::BuiltinConfig(name), 5, {});
    ASSERT_TRUE(model.ok()) << model.status();
    const std::vector<TokenId> tokens = {3, 17, 101, 9, 250, 42, 7};
    torch::Tensor ids = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()))
                            .view({1, 7})
                            .repeat({2, 1});
    torch::Tensor hidden;
    torch::Tensor train_logits;
    {
      torch::NoGradGuard no_grad;
      train_logits = (*model)->TrainForward(ids, &hidden);
    }
    ASSERT_EQ(train_logits.sizes(), (std::vector<int64_t>{2, 7, 256}));
    EXPECT_EQ(hidden.sizes(), (std::vector<int64_t>{2, 7, (*model)->config().hidden_size}));
    runtime::KvCache cache = (*model)->NewCache(16);
    torch::Tensor cached = (*model)->ForwardCausal(tokens, 0, &cache);
    EXPECT_LT((train_logits[1] - cached).abs().max().item<double>(), 1e-4) << name;
  }
}

TEST(LmTraining, EveryParameterGetsAGradient) {
  auto model = runtime::Transformer::CreateTrainable(*runtime::BuiltinConfig("tiny-qwen3"), 5, {});
  ASSERT_TRUE(model.ok());
  torch::Tensor ids = torch::randint(0, 256, {2, 9}, torch::kInt64);
  torch::Tensor logits = (*model)->TrainForward(ids);
  logits.logsumexp(-1).mean().backward();
  for (const auto& [name, t] : (*model)->NamedParameters()) {
    ASSERT_TRUE(t.grad().defined()) << name;
    EXPECT_GT(t.grad().abs().sum().item<double>(), 0) << name;
  }
}

TEST(LmTraining, BadInputIsNamed) {
  auto model = runtime::Transformer::CreateTrainable(ToyConfig(), 3, {});
  ASSERT_TRUE(model.ok());
  const std::vector<TokenId> corpus = ToyCorpus(500, 1);
  LmTrainOptions o = FewSteps();
  o.seq_len = 0;
  EXPECT_THAT(TrainLanguageModel(model->get(), corpus, corpus, o).status().message(),
              HasSubstr("seq_len = 0: must be >= 1"));
  o = FewSteps();
  o.lr = -1;
  EXPECT_THAT(ValidateLmTrainOptions(o).message(), HasSubstr("lr = -1"));
  o = FewSteps();
  EXPECT_THAT(TrainLanguageModel(model->get(), {corpus.data(), 10}, corpus, o).status().message(),
              HasSubstr("train: 10 tokens, fewer than seq_len + 1 = 33"));
  std::vector<TokenId> bad = corpus;
  bad[7] = 32;
  EXPECT_THAT(TrainLanguageModel(model->get(), corpus, bad, o).status().message(),
              HasSubstr("heldout[7] = 32: outside the vocabulary [0, 32)"));
  // A model with inference-only weights cannot be trained.
  auto frozen = runtime::Transformer::CreateRandom(ToyConfig(), 3, {});
  ASSERT_TRUE(frozen.ok());
  EXPECT_THAT(TrainLanguageModel(frozen->get(), corpus, corpus, o).status().message(),
              HasSubstr("does not take gradients"));
}

}  // namespace
}  // namespace specplan::train
