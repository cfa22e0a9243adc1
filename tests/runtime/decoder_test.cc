// Every strategy's greedy output equals the target's greedy AR output (draft != target, draft =
// target, partially shared draft); gather == rebuild; sampling is reproducible and preserves the
// target's distribution on a tiny vocabulary.
#include "runtime/decoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "costmodel/latency/grid_latency.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

using testing::DecodeAlone;
using testing::ReferenceGreedy;
using testing::TinyModel;

// Prompts of 3..12 tokens, every other one repeated 3 more times (n-gram matches).
std::vector<std::vector<planner::TokenId>> Prompts(int count, uint64_t seed) {
  return testing::RandomPrompts(count, seed, 3, 10, 3);
}

TEST(DecoderTest, ArEqualsFullRecomputation) {
  auto target = TinyModel("tiny", 21);
  for (const auto& prompt : Prompts(3, 1)) {
    EXPECT_EQ(DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr), prompt, 12),
              ReferenceGreedy(*target, prompt, 12));
  }
}

class GreedyExactTest : public testing::StrategyAndDraftTest {};

TEST_P(GreedyExactTest, EqualsArTokens) {
  const Strategy strategy = ParamStrategy();
  const testing::DraftKind& kind = ParamDraftKind();
  for (uint64_t seed : {31u, 32u}) {
    const auto [target, draft] = ParamModels(seed);
    const int new_tokens = 20;
    int64_t accepted = 0, drafted = 0, iterations = 0;
    for (const auto& prompt : Prompts(4, seed)) {
      std::vector<planner::TokenId> ar = DecodeAlone(
          *target, nullptr, StrategyOptions::Defaults(Strategy::kAr), prompt, new_tokens);
      DecodeCounters counters;
      std::vector<planner::TokenId> spec =
          DecodeAlone(*target, draft.get(), UngatedOptions(), prompt, new_tokens, &counters);
      EXPECT_EQ(spec, ar) << RunName(seed);
      accepted += counters.accepted();
      drafted += counters.drafted();
      iterations += counters.iterations();
    }
    if (strategy != Strategy::kLookup) {
      EXPECT_GT(drafted, 0);
      if (std::string(kind.name) == "same") {
        std::printf("%s same-draft: %.2f accepted per iteration\n", StrategyName(strategy),
                    static_cast<double>(accepted) / iterations);
        // A draft identical to the target: its top-1 chain is the target's greedy chain, so what
        // is drafted along it is accepted. How much is drafted is the planner's choice over this
        // tiny random model's flat marginals and its measured CPU latency (0.8-2.4 accepted per
        // iteration, varying with the machine's load, since issue 52 prices drafting by depth),
        // so the count per iteration is not pinned: some tokens must be accepted.
        EXPECT_GT(accepted, 0) << StrategyName(strategy);
      }
      if (std::string(kind.name) == "first_layer") {
        EXPECT_GT(accepted, 0) << StrategyName(strategy);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, GreedyExactTest,
                         testing::WithEveryDraftKind({"linear", "fixed", "dynatree", "bestfirst",
                                                      "lookup", "merged"}),
                         testing::StrategyAndDraftName);

// The speculation gate on, with a fixed draft-level time and a given T_verify so its decisions are
// reproducible: steps it leaves undrafted (no draft forward) and steps it drafts alternate within
// one sequence, the draft cache catches up across the skipped steps, and the output is AR's.
TEST(DecoderTest, GatedStepsEqualArTokens) {
  // T_verify = 1 ms + 0.1 ms per token: a depth-1 step pays only when alpha > ~0.1.
  const costmodel::GridLatency latency({1, 4096}, {1e-3, 1e-3 + 4095 * 1e-4},
                                       costmodel::GridSource::kMeasured);
  for (Strategy s : {Strategy::kBestFirst, Strategy::kDynaTree}) {
    for (int kind = 0; kind < 3; ++kind) {
      const testing::DraftKind& dk = testing::kDraftKinds[kind];
      auto target = TinyModel("tiny", 61);
      auto draft = dk.make(*target);
      StrategyOptions o = StrategyOptions::Defaults(s);
      o.latency = &latency;
      o.gate_draft_level_s = 1e-5;
      o.gate.probe_interval = 3;
      o.gate.max_probe_interval = 6;
      auto dec = SpeculativeDecoder::Create(target.get(), draft.get(), o, 256);
      ASSERT_TRUE(dec.ok()) << dec.status();
      int64_t drafted_steps = 0;
      for (const auto& prompt : Prompts(3, 61)) {
        auto out = (*dec)->Generate(prompt, 40);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ(out->tokens, DecodeAlone(*target, nullptr,
                                           StrategyOptions::Defaults(Strategy::kAr), prompt, 40))
            << StrategyName(s) << " draft " << dk.name;
      }
      const planner::GateStats* g = (*dec)->strategy().gate_stats();
      ASSERT_NE(g, nullptr);
      drafted_steps = g->decisions - g->undrafted;
      EXPECT_EQ(g->decisions, (*dec)->counters().iterations());
      EXPECT_GT(drafted_steps, 0) << StrategyName(s) << " draft " << dk.name;
      if (std::string(dk.name) == "independent") {
        // A random draft is never accepted: after the prior wears off, only probes draft.
        EXPECT_GT(g->undrafted, drafted_steps) << StrategyName(s);
        EXPECT_GT(g->probes, 0) << StrategyName(s);
      }
      if (std::string(dk.name) == "same") {
        // Always accepted and nearly free to draft: every step drafts.
        EXPECT_EQ(g->undrafted, 0) << StrategyName(s);
      }
    }
  }
  // Switched off, the strategy has no gate.
  auto target = TinyModel("tiny", 61);
  auto draft = target->Truncated(1);
  StrategyOptions off = StrategyOptions::Defaults(Strategy::kBestFirst);
  off.gate.enabled = false;
  off.latency = &latency;
  auto dec = SpeculativeDecoder::Create(target.get(), draft.get(), off, 64);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ((*dec)->strategy().gate_stats(), nullptr);
}

TEST(DecoderTest, LookupAcceptsOnRepetitiveText) {
  auto target = TinyModel("tiny", 5);
  // Greedy decoding of a random model falls into a loop quickly; prompt lookup then drafts it.
  std::vector<planner::TokenId> prompt = {1, 2, 3};
  DecodeCounters counters;
  std::vector<planner::TokenId> spec = DecodeAlone(
      *target, nullptr, StrategyOptions::Defaults(Strategy::kLookup), prompt, 60, &counters);
  EXPECT_EQ(spec,
            DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr), prompt, 60));
  EXPECT_LT(counters.iterations(), 59);
}

TEST(DecoderTest, RebuildEqualsGather) {
  auto target = TinyModel("tiny", 8);
  auto draft = target->Truncated(2);
  for (Strategy s : {Strategy::kLinear, Strategy::kDynaTree}) {
    StrategyOptions gather = StrategyOptions::Defaults(s);
    StrategyOptions rebuild = gather;
    rebuild.kv_update = KvUpdate::kRebuild;
    for (const auto& prompt : Prompts(2, 4)) {
      DecodeCounters cg, cr;
      auto a = DecodeAlone(*target, draft.get(), gather, prompt, 16, &cg);
      auto b = DecodeAlone(*target, draft.get(), rebuild, prompt, 16, &cr);
      EXPECT_EQ(a, b);
      EXPECT_EQ(cr.target_forwards, cg.target_forwards + cg.iterations());
    }
  }
}

TEST(DecoderTest, CountersAreConsistent) {
  auto target = TinyModel("tiny", 12);
  auto draft = target->Truncated(2);
  DecodeCounters c;
  DecodeAlone(*target, draft.get(), StrategyOptions::Defaults(Strategy::kDynaTree), {5, 6, 7, 8},
              30, &c);
  EXPECT_EQ(c.prompts, 1);
  EXPECT_EQ(c.new_tokens, 30);
  // Every iteration commits accepted + 1 tokens; the first token comes from prefill.
  EXPECT_GE(1 + c.accepted() + c.iterations(), 30);
  EXPECT_LT(1 + c.accepted() + c.iterations(), 30 + 7);  // the last step overshoots by <= d_max
  EXPECT_EQ(c.acceptance.steps, c.iterations());
  EXPECT_EQ(c.acceptance.accepted_tokens, c.accepted());
  EXPECT_EQ(c.target_forwards, 1 + c.iterations());
  EXPECT_GT(c.total_s, 0);
}

TEST(DecoderTest, RejectsBadInputs) {
  auto target = TinyModel("tiny", 1);
  EXPECT_FALSE(SpeculativeDecoder::Create(target.get(), nullptr,
                                          StrategyOptions::Defaults(Strategy::kLinear), 64)
                   .ok());
  auto other_vocab = BuiltinConfig("tiny");
  other_vocab->vocab_size = 128;
  auto draft = Transformer::CreateRandom(*other_vocab, 1, RuntimeOptions());
  auto bad = SpeculativeDecoder::Create(target.get(), draft->get(),
                                        StrategyOptions::Defaults(Strategy::kLinear), 64);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("vocab_size"), std::string::npos);
  auto dec = SpeculativeDecoder::Create(target.get(), nullptr,
                                        StrategyOptions::Defaults(Strategy::kAr), 64);
  ASSERT_TRUE(dec.ok());
  auto r = (*dec)->Generate({1, 300}, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("prompt[1] = 300"), std::string::npos);
  EXPECT_FALSE((*dec)->Generate({1, 2}, 100).ok());  // exceeds max_context
  EXPECT_FALSE(ParseStrategy("beam").ok());
}

TEST(SamplingTest, SameSeedReproducible) {
  auto target = TinyModel("tiny", 14);
  auto draft = target->Truncated(2);
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kDynaTree);
  o.sampling.greedy = false;
  o.sampling.temperature = 0.8f;
  o.sampling.seed = 77;
  auto a = DecodeAlone(*target, draft.get(), o, {1, 2, 3}, 24);
  auto b = DecodeAlone(*target, draft.get(), o, {1, 2, 3}, 24);
  EXPECT_EQ(a, b);
  o.sampling.seed = 78;
  EXPECT_NE(a, DecodeAlone(*target, draft.get(), o, {1, 2, 3}, 24));
}

// On an 8-token vocabulary the distribution of the second generated token (the first one decided
// by speculative acceptance) matches the exact target marginal sum_t1 p(t1) p(t2 | t1).
TEST(SamplingTest, SpeculativeMatchesTargetDistribution) {
  auto target = testing::EightTokenModel();
  auto draft = target->Truncated(1);
  const std::vector<planner::TokenId> prompt = {1, 5, 2};
  const float temperature = 1.0f;
  const std::vector<double> exact = testing::ExactSecondTokenMarginal(*target, prompt);
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kFixed);
  o.sampling.greedy = false;
  o.sampling.temperature = temperature;
  o.draft_top_k = 3;
  o.fixed.depth = 2;
  o.fixed.branch = 3;
  const int n = 3000;
  std::vector<double> freq(8, 0.0);
  for (int i = 0; i < n; ++i) {
    o.sampling.seed = 1000 + i;
    auto d = *SpeculativeDecoder::Create(target.get(), draft.get(), o, 32);
    auto r = d->Generate(prompt, 2);
    ASSERT_TRUE(r.ok());
    freq[r->tokens[1]] += 1.0 / n;
  }
  double tv = 0;
  for (int t = 0; t < 8; ++t) tv += 0.5 * std::abs(freq[t] - exact[t]);
  // Sampling noise: E[TV] ~ 0.5 * sum sqrt(p(1-p)/n) <~ 0.03 at n = 3000.
  EXPECT_LT(tv, 0.04) << "TV distance between speculative and exact target marginals";
}

}  // namespace
}  // namespace specplan::runtime
