// Draft heads (runtime/draft_heads.h), their drafters (runtime/heads_drafters.h) and the heads /
// causal strategies (runtime/strategies/heads.h): files round-trip, errors name what is wrong, the
// causal provider's distributions are the documented formula, and both strategies keep greedy
// output identical to AR and the sampled distribution identical to the target's.
#include "runtime/draft_heads.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "costmodel/latency/grid_latency.h"
#include "runtime/heads_drafters.h"
#include "runtime/trace_recorder.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

namespace fs = std::filesystem;
using testing::DecodeAlone;
using testing::TinyModel;

DraftHeadsConfig ConfigFor(const Transformer& target, int64_t heads, int64_t state) {
  DraftHeadsConfig c;
  c.num_heads = heads;
  c.hidden_size = target.config().hidden_size;
  c.vocab_size = target.config().vocab_size;
  c.causal_state = state;
  c.causal_rank = 8;
  return c;
}

// Fresh heads with every tensor drawn at random (CreateRandom starts the residual blocks and W_up
// at zero: the heads would all repeat the target's next-token head and the correction be 0).
std::unique_ptr<DraftHeads> RandomHeads(const Transformer& target, uint64_t seed, int64_t heads = 3,
                                        int64_t state = 16) {
  auto h = DraftHeads::CreateRandom(ConfigFor(target, heads, state), target, seed, false);
  EXPECT_TRUE(h.ok()) << h.status();
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (const auto* group : {&(*h)->parallel_parameters(), &(*h)->causal_parameters()}) {
    for (const auto& [name, t] : *group) t.copy_(torch::randn(t.sizes()) * 0.5);
  }
  return *std::move(h);
}

fs::path TempDir(const std::string& tag) {
  const fs::path dir =
      fs::temp_directory_path() / ("specplan_heads_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

TEST(DraftHeadsTest, SaveLoadRoundTrip) {
  auto target = TinyModel("tiny", 3);
  auto heads = RandomHeads(*target, 4);
  const fs::path dir = TempDir("roundtrip");
  ASSERT_TRUE(heads->Save(dir.string(), torch::kFloat32).ok());
  auto loaded = DraftHeads::Load(dir.string(), *target);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->NumParameters(), heads->NumParameters());
  torch::NoGradGuard no_grad;
  const torch::Tensor hidden = torch::randn({5, target->config().hidden_size});
  const torch::Tensor a = heads->HeadStates(hidden), b = (*loaded)->HeadStates(hidden);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_TRUE(torch::equal(heads->Logits(a), (*loaded)->Logits(b)));
  const torch::Tensor tokens = torch::tensor({1, 7, 30, 2, 9}, torch::kInt64);
  const torch::Tensor s1 = heads->CausalStep({}, tokens), s2 = (*loaded)->CausalStep({}, tokens);
  EXPECT_TRUE(torch::equal(s1, s2));
  EXPECT_TRUE(torch::equal(heads->Correction(a.select(1, 0), s1),
                           (*loaded)->Correction(b.select(1, 0), s2)));
  // Without a causal head there is no causal.safetensors.
  auto parallel_only = RandomHeads(*target, 5, 2, 0);
  const fs::path dir2 = TempDir("parallel_only");
  ASSERT_TRUE(parallel_only->Save(dir2.string(), torch::kBFloat16).ok());
  EXPECT_FALSE(fs::exists(dir2 / "causal.safetensors"));
  auto loaded2 = DraftHeads::Load(dir2.string(), *target);
  ASSERT_TRUE(loaded2.ok()) << loaded2.status();
  EXPECT_FALSE((*loaded2)->has_causal());
  fs::remove_all(dir);
  fs::remove_all(dir2);
}

TEST(DraftHeadsTest, LoadErrorsNameTheProblem) {
  auto target = TinyModel("tiny", 3);
  const fs::path dir = TempDir("errors");
  auto heads = RandomHeads(*target, 4);
  ASSERT_TRUE(heads->Save(dir.string(), torch::kFloat32).ok());
  auto rewrite = [&](const nlohmann::json& j) { std::ofstream(dir / "config.json") << j.dump(); };
  nlohmann::json good = DraftHeadsConfigJson(heads->config());

  nlohmann::json bad = good;
  bad["causal_rank"] = 9;  // the stored W_down is [8][h + s]
  rewrite(bad);
  auto r = DraftHeads::Load(dir.string(), *target);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("causal.down.weight: shape [8, 80], expected [9, 80]"),
            std::string::npos)
      << r.status();

  bad = good;
  bad["hidden_size"] = 32;
  rewrite(bad);
  r = DraftHeads::Load(dir.string(), *target);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hidden_size = 32"), std::string::npos) << r.status();

  bad = good;
  bad["num_heads"] = 0;
  rewrite(bad);
  r = DraftHeads::Load(dir.string(), *target);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("num_heads = 0: must be in [1, 64]"), std::string::npos)
      << r.status();

  rewrite(good);
  fs::remove(dir / "causal.safetensors");
  r = DraftHeads::Load(dir.string(), *target);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("causal.safetensors"), std::string::npos) << r.status();
  EXPECT_FALSE(DraftHeads::Load((dir / "nope").string(), *target).ok());
  fs::remove_all(dir);
}

// The provider's children of node u are the top-k of softmax(L_{d+1} + dL_{d+1}) with the GRU run
// over path(u), root first; nodes at the last head's depth get none.
TEST(HeadsDraftersTest, CausalProviderMatchesTheFormula) {
  auto target = TinyModel("tiny", 8);
  auto heads = RandomHeads(*target, 9, 3, 16);
  const torch::Tensor hidden = torch::randn({target->config().hidden_size});
  CausalHeadProvider provider(heads.get());
  provider.Begin(hidden, 3);
  planner::Tree tree;
  tree.ResetRoot(5);
  tree.AddNode(0, 11, 1.0);  // node 1, depth 1
  tree.AddNode(1, 17, 1.0);  // node 2, depth 2
  tree.AddNode(2, 23, 1.0);  // node 3, depth 3: no children (3 heads)
  const int k = 4;
  const std::vector<int32_t> nodes = {0, 2, 3};
  std::vector<planner::TokenProb> out(nodes.size() * k);
  std::vector<int32_t> counts(nodes.size());
  ASSERT_TRUE(provider.Expand(tree, nodes, k, absl::MakeSpan(out), absl::MakeSpan(counts)).ok());
  EXPECT_EQ(counts[0], k);
  EXPECT_EQ(counts[1], k);
  EXPECT_EQ(counts[2], 0);

  torch::NoGradGuard no_grad;
  const torch::Tensor states = heads->HeadStates(hidden.reshape({1, -1})).squeeze(0);
  auto expect_row = [&](int row, const std::vector<int64_t>& path, int depth) {
    torch::Tensor s;
    for (int64_t t : path) s = heads->CausalStep(s, torch::tensor({t}, torch::kInt64));
    const torch::Tensor h = states.narrow(0, depth, 1);
    const torch::Tensor logits = heads->Logits(h) + heads->Correction(h, s);
    const torch::Tensor p = torch::softmax(logits.to(torch::kFloat64), -1).squeeze(0);
    auto [vals, idx] = p.topk(k);
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(out[row * k + j].token, idx[j].item<int64_t>()) << "row " << row << " rank " << j;
      EXPECT_NEAR(out[row * k + j].prob, vals[j].item<double>(), 1e-5);
    }
  };
  expect_row(0, {5}, 0);          // the root's children: head 1, GRU over (root)
  expect_row(1, {5, 11, 17}, 2);  // node 2's children: head 3, GRU over (root, 11, 17)
  // The parallel drafter's rows are the uncorrected heads.
  HeadsDrafter drafter(heads.get(), k);
  planner::Marginals m;
  ASSERT_TRUE(drafter.DraftMarginals(hidden, 5, 3, &m).ok());
  ASSERT_TRUE(planner::ValidateMarginals(m).ok());
  const torch::Tensor p1 = torch::softmax(heads->Logits(states).to(torch::kFloat64), -1);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(m.token(d, 0), p1[d].argmax().item<int64_t>());
  }
  EXPECT_FALSE(drafter.DraftMarginals(hidden, 5, 4, &m).ok());  // only 3 heads
}

class HeadsGreedyTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

// Greedy output equals AR's, with the gate off (every step drafts) and on (steps it skips and
// steps it drafts alternate).
TEST_P(HeadsGreedyTest, EqualsArTokens) {
  const Strategy strategy = *ParseStrategy(std::get<0>(GetParam()));
  const bool gate = std::get<1>(GetParam());
  const costmodel::GridLatency latency({1, 4096}, {1e-3, 1e-3 + 4095 * 1e-4},
                                       costmodel::GridSource::kMeasured);
  for (uint64_t seed : {41u, 42u}) {
    auto target = TinyModel("tiny", seed);
    auto heads = RandomHeads(*target, seed + 100, 4, 16);
    StrategyOptions o = StrategyOptions::Defaults(strategy);
    o.heads = heads.get();
    o.latency = &latency;
    o.gate.enabled = gate;
    o.gate_draft_level_s = 1e-5;
    o.gate.probe_interval = 3;
    o.gate.max_probe_interval = 6;
    o.bestfirst.mode = planner::BudgetMode::kFixed;  // a tree every drafted step
    o.bestfirst.n_max = 12;
    int64_t drafted = 0;
    for (const auto& prompt : testing::RandomPrompts(3, seed, 3, 10, 3)) {
      DecodeCounters counters;
      const auto spec = DecodeAlone(*target, nullptr, o, prompt, 24, &counters);
      EXPECT_EQ(spec,
                DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr), prompt, 24))
          << StrategyName(strategy) << " gate " << gate << " seed " << seed;
      drafted += counters.drafted();
    }
    EXPECT_GT(drafted, 0) << StrategyName(strategy);
  }
}

// merged with the heads' tree as B: the draft model's DynaTree tree and the heads' best-first tree
// under one root keep AR's tokens.
TEST(HeadsStrategyTest, MergedWithHeadsEqualsAr) {
  auto target = TinyModel("tiny", 51);
  auto draft = target->Truncated(1);
  auto heads = RandomHeads(*target, 52, 4, 16);
  const costmodel::GridLatency latency({1, 4096}, {1e-3, 1e-3 + 4095 * 1e-4},
                                       costmodel::GridSource::kMeasured);
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kMerged);
  o.merged_b = MergedB::kHeads;
  o.latency = &latency;
  auto missing = SpeculativeDecoder::Create(target.get(), draft.get(), o, 64);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("strategy merged: needs draft heads"),
            std::string::npos)
      << missing.status();
  o.heads = heads.get();
  for (const auto& prompt : testing::RandomPrompts(3, 51, 3, 10, 3)) {
    DecodeCounters counters;
    EXPECT_EQ(DecodeAlone(*target, draft.get(), o, prompt, 24, &counters),
              DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr), prompt, 24));
    EXPECT_GT(counters.drafted(), 0);
  }
}

// A trace recorded with heads' marginals: each step's rows are the heads' on the target's hidden
// row of the token before the root (min(gamma, heads) rows); the nodes still come from the draft.
TEST(HeadsStrategyTest, TraceRecordsTheHeadsMarginals) {
  auto target = TinyModel("tiny", 61);
  auto draft = target->Truncated(1);
  auto heads = RandomHeads(*target, 62, 3, 16);
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kAr);
  auto dec = SpeculativeDecoder::Create(target.get(), nullptr, o, 64);
  ASSERT_TRUE(dec.ok());
  const std::vector<planner::TokenId> prompt = {3, 1, 4, 1, 5};
  auto r = (*dec)->Generate(prompt, 6);
  ASSERT_TRUE(r.ok());
  TraceRecorderOptions ro;
  ro.gamma = 5;
  ro.heads = heads.get();
  auto rec = TraceRecorder::Create(draft.get(), o.sampling, 64, ro);
  ASSERT_TRUE(rec.ok()) << rec.status();
  ASSERT_TRUE((*rec)->Record(0, prompt, *r).ok());
  ASSERT_EQ((*rec)->steps().size(), r->steps.size());
  std::vector<planner::TokenId> all = prompt;
  all.insert(all.end(), r->tokens.begin(), r->tokens.end());
  torch::Tensor hidden;
  {
    KvCache cache = target->NewCache(static_cast<int64_t>(all.size()));
    const torch::Tensor ids = torch::tensor(std::vector<int64_t>(all.begin(), all.end()));
    const ForwardSegment seg{ids, torch::arange(0, ids.size(0), torch::kInt64), 0, torch::Tensor(),
                             &cache};
    target->ForwardBatch(absl::MakeConstSpan(&seg, 1), &hidden);
  }
  HeadsDrafter drafter(heads.get(), ro.top_k);
  for (const whatif::TraceStep& step : (*rec)->steps()) {
    planner::Marginals want;
    ASSERT_TRUE(drafter.DraftMarginals(hidden[step.c - 1], step.root, 3, &want).ok());
    ASSERT_TRUE(step.marginals.has_value());
    ASSERT_TRUE(step.nodes.has_value());
    EXPECT_EQ(step.marginals->gamma, 3);
    EXPECT_EQ(step.marginals->tokens, want.tokens) << "c " << step.c;
    EXPECT_GT(step.nodes->size(), 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, HeadsGreedyTest,
                         ::testing::Combine(::testing::Values("heads", "causal"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) ? "_gated" : "_always");
                         });

TEST(HeadsStrategyTest, NeedsHeads) {
  auto target = TinyModel("tiny", 3);
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kCausal);
  auto dec = SpeculativeDecoder::Create(target.get(), nullptr, o, 64);
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("needs draft heads"), std::string::npos) << dec.status();
  auto parallel_only = RandomHeads(*target, 5, 2, 0);
  o.heads = parallel_only.get();
  dec = SpeculativeDecoder::Create(target.get(), nullptr, o, 64);
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("no causal head"), std::string::npos) << dec.status();
  auto other = TinyModel("tiny", 4);
  auto heads = RandomHeads(*other, 5);
  o.heads = heads.get();
  dec = SpeculativeDecoder::Create(target.get(), nullptr, o, 64);
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("another target"), std::string::npos) << dec.status();
}

class HeadsSamplingTest : public ::testing::TestWithParam<std::string> {};

// On an 8-token vocabulary the distribution of the second generated token (the first one decided
// by speculative acceptance over a heads-drafted tree) matches the exact target marginal.
TEST_P(HeadsSamplingTest, MatchesTargetDistribution) {
  auto target = testing::EightTokenModel();
  auto heads = RandomHeads(*target, 12, 3, 8);
  const std::vector<planner::TokenId> prompt = {1, 5, 2};
  const std::vector<double> exact = testing::ExactSecondTokenMarginal(*target, prompt);
  const costmodel::GridLatency latency({1, 4096}, {1e-3, 1e-3 + 4095 * 1e-4},
                                       costmodel::GridSource::kMeasured);
  StrategyOptions o = StrategyOptions::Defaults(*ParseStrategy(GetParam()));
  o.heads = heads.get();
  o.latency = &latency;
  o.gate.enabled = false;
  o.sampling.greedy = false;
  o.sampling.temperature = 1.0f;
  o.draft_top_k = 3;
  o.bestfirst.mode = planner::BudgetMode::kFixed;
  o.bestfirst.n_max = 6;
  const int n = 3000;
  std::vector<double> freq(8, 0.0);
  auto d = *SpeculativeDecoder::Create(target.get(), nullptr, o, 32);
  for (int i = 0; i < n; ++i) {
    o.sampling.seed = 1000 + i;
    d = *SpeculativeDecoder::Create(target.get(), nullptr, o, 32);
    auto r = d->Generate(prompt, 2);
    ASSERT_TRUE(r.ok());
    freq[r->tokens[1]] += 1.0 / n;
  }
  EXPECT_GT(d->counters().drafted(), 0);
  double tv = 0;
  for (int t = 0; t < 8; ++t) tv += 0.5 * std::abs(freq[t] - exact[t]);
  EXPECT_LT(tv, 0.04) << "TV distance between " << GetParam() << " and exact target marginals";
}

INSTANTIATE_TEST_SUITE_P(Strategies, HeadsSamplingTest, ::testing::Values("heads", "causal"));

}  // namespace
}  // namespace specplan::runtime
