// TraceRecorder: recorded steps validate, match the decoder's iterations and output, and the
// recorded drafter output reproduces what the run's greedy acceptance gave.
#include "runtime/trace_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/decoder.h"
#include "tests/runtime/test_models.h"
#include "whatif/trace.h"

namespace specplan::runtime {
namespace {

using testing::TinyModel;

const std::vector<std::vector<planner::TokenId>>& Prompts() {
  static const auto* p = new std::vector<std::vector<planner::TokenId>>{
      {63, 114, 31, 203, 25, 113, 23, 63, 114, 31, 203, 25},
      {5, 9, 200, 17, 44},
  };
  return *p;
}
constexpr int kNewTokens = 24;

struct DecodeRun {
  std::vector<GenerationResult> results;
  int64_t iterations = 0;
};

DecodeRun Decode(const Transformer& target, const Transformer& draft, const StrategyOptions& o,
                 TraceRecorder* recorder) {
  auto dec = SpeculativeDecoder::Create(&target, &draft, o, 64);
  EXPECT_TRUE(dec.ok()) << dec.status();
  DecodeRun run;
  for (size_t i = 0; i < Prompts().size(); ++i) {
    auto r = (*dec)->Generate(Prompts()[i], kNewTokens);
    EXPECT_TRUE(r.ok()) << r.status();
    if (recorder != nullptr) {
      EXPECT_TRUE(recorder->Record(static_cast<int64_t>(i), Prompts()[i], *r).ok());
    }
    run.results.push_back(*std::move(r));
  }
  run.iterations = (*dec)->counters().iterations();
  return run;
}

// Accepted length of a chain against the target's continuation (greedy: the longest matching
// prefix, capped by the continuation's length).
int ChainAccepted(const std::vector<int32_t>& chain, const std::vector<int32_t>& continuation) {
  int L = 0;
  while (L < static_cast<int>(chain.size()) && L < static_cast<int>(continuation.size()) &&
         chain[L] == continuation[L]) {
    ++L;
  }
  return L;
}

class TraceRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    target_ = TinyModel("tiny", 1);
    draft_ = target_->Truncated(2);  // shares weights: acceptance neither ~0 nor ~1
  }
  std::unique_ptr<Transformer> target_;
  std::unique_ptr<Transformer> draft_;
};

TEST_F(TraceRecorderTest, LinearRunRecordsEveryIterationConsistently) {
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kLinear);
  TraceRecorderOptions ro;
  ro.gamma = o.linear.k;  // the run's chain and the recorded lattice have the same depth
  ro.top_k = o.draft_top_k;
  auto rec = TraceRecorder::Create(draft_.get(), o.sampling, 64, ro);
  ASSERT_TRUE(rec.ok()) << rec.status();
  const DecodeRun run = Decode(*target_, *draft_, o, rec->get());
  const DecodeRun ar = Decode(*target_, *draft_, StrategyOptions::Defaults(Strategy::kAr), nullptr);

  const auto& steps = (*rec)->steps();
  ASSERT_EQ(static_cast<int64_t>(steps.size()), run.iterations);
  whatif::TraceHeader header;
  header.vocab = target_->config().vocab_size;
  size_t at = 0;
  int total_accepted = 0;
  for (size_t p = 0; p < Prompts().size(); ++p) {
    const GenerationResult& r = run.results[p];
    EXPECT_EQ(r.tokens, ar.results[p].tokens) << "prompt " << p;
    ASSERT_EQ(static_cast<int64_t>(r.steps.size()), r.iterations);
    for (const IterationLog& log : r.steps) {
      ASSERT_LT(at, steps.size());
      const whatif::TraceStep& s = steps[at++];
      SCOPED_TRACE(::testing::Message() << "prompt " << p << " c " << s.c);
      EXPECT_TRUE(whatif::ValidateTraceStep(s, header).ok());
      EXPECT_EQ(s.prompt, static_cast<int64_t>(p));
      EXPECT_EQ(s.c, log.c);
      EXPECT_EQ(s.root, log.root);
      EXPECT_GE(s.draft_s, 0.0);
      // The continuation is the output after the root.
      const int64_t root_at = s.c - static_cast<int64_t>(Prompts()[p].size());
      ASSERT_GE(root_at, 0);
      EXPECT_EQ(r.tokens[root_at], s.root);
      const size_t want_len =
          std::min<size_t>(ro.gamma + 1, r.tokens.size() - static_cast<size_t>(root_at) - 1);
      ASSERT_EQ(s.continuation.size(), want_len);
      for (size_t j = 0; j < want_len; ++j) {
        EXPECT_EQ(s.continuation[j], r.tokens[root_at + 1 + j]) << j;
      }
      // The lattice's greedy chain accepts what the run's greedy acceptance accepted for its own
      // (identical) greedy chain, up to the end of the output.
      ASSERT_TRUE(s.marginals.has_value());
      ASSERT_EQ(s.marginals->gamma, ro.gamma);
      std::vector<int32_t> chain;
      for (int d = 0; d < s.marginals->gamma; ++d) chain.push_back(s.marginals->token(d, 0));
      const int L = ChainAccepted(chain, s.continuation);
      EXPECT_EQ(L, std::min<int>(log.accepted, static_cast<int>(s.continuation.size())));
      total_accepted += log.accepted;

      // The recorded tree holds the same greedy chain, expanded down to depth gamma - 1.
      ASSERT_TRUE(s.nodes.has_value());
      const whatif::RecordedNodes& n = *s.nodes;
      EXPECT_LE(n.size(), ro.max_nodes);
      int node = 0;
      for (int d = 0; d < ro.gamma; ++d) {
        ASSERT_TRUE(n.Expanded(node)) << "depth " << d;
        const int32_t top = n.dist_tokens[static_cast<size_t>(node) * n.k];
        EXPECT_EQ(top, chain[d]) << "depth " << d;
        EXPECT_NEAR(n.dist_probs[static_cast<size_t>(node) * n.k], s.marginals->prob(d, 0), 1e-4);
        if (d + 1 < ro.gamma) {
          node = n.Child(node, top);
          ASSERT_GE(node, 0) << "greedy chain node at depth " << d + 1 << " not recorded";
        }
      }
      // FixedTreePolicy(D = 4, B = 2, tau = 0) replays exactly: every node of the full top-2 tree
      // above depth 4 is recorded and expanded.
      std::vector<int> frontier = {0};
      for (int d = 0; d < ro.fixed_depth; ++d) {
        std::vector<int> next;
        for (int u : frontier) {
          ASSERT_TRUE(n.Expanded(u)) << "fixed-tree node " << u << " at depth " << d;
          if (d + 1 == ro.fixed_depth) continue;
          for (int j = 0; j < ro.fixed_branch; ++j) {
            const int child = n.Child(u, n.dist_tokens[static_cast<size_t>(u) * n.k + j]);
            ASSERT_GE(child, 0);
            next.push_back(child);
          }
        }
        frontier = next;
      }
      // Depth of every recorded node <= gamma - 1, so candidates reach depth gamma.
      std::vector<int> depth(n.size(), 0);
      for (int i = 1; i < n.size(); ++i) {
        depth[i] = depth[n.parents[i]] + 1;
        EXPECT_LT(depth[i], ro.gamma);
      }
    }
  }
  EXPECT_EQ(at, steps.size());
  // The pair is useful for testing only if something was accepted.
  EXPECT_GT(total_accepted, 0);
}

TEST_F(TraceRecorderTest, RecordingDoesNotChangeTheOutput) {
  const StrategyOptions o = StrategyOptions::Defaults(Strategy::kDynaTree);
  auto rec = TraceRecorder::Create(draft_.get(), o.sampling, 64, TraceRecorderOptions());
  ASSERT_TRUE(rec.ok()) << rec.status();
  const DecodeRun with = Decode(*target_, *draft_, o, rec->get());
  const DecodeRun without = Decode(*target_, *draft_, o, nullptr);
  const DecodeRun ar = Decode(*target_, *draft_, StrategyOptions::Defaults(Strategy::kAr), nullptr);
  EXPECT_EQ(with.iterations, without.iterations);
  EXPECT_EQ(static_cast<int64_t>((*rec)->steps().size()), with.iterations);
  for (size_t p = 0; p < Prompts().size(); ++p) {
    EXPECT_EQ(with.results[p].tokens, without.results[p].tokens);
    EXPECT_EQ(with.results[p].tokens, ar.results[p].tokens);
  }
}

TEST_F(TraceRecorderTest, SavedTraceLoadsBack) {
  const StrategyOptions o = StrategyOptions::Defaults(Strategy::kAr);
  TraceRecorderOptions ro;
  ro.max_nodes = 20;
  auto rec = TraceRecorder::Create(draft_.get(), o.sampling, 64, ro);
  ASSERT_TRUE(rec.ok()) << rec.status();
  Decode(*target_, *draft_, o, rec->get());
  // AR: one iteration per token after the first.
  ASSERT_EQ((*rec)->steps().size(), Prompts().size() * (kNewTokens - 1));
  whatif::TraceHeader h;
  h.target = "t";
  h.draft = "d";
  const whatif::Trace trace = (*rec)->MakeTrace(h);
  EXPECT_EQ(trace.header.vocab, target_->config().vocab_size);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("specplan_trace_rec_" + std::to_string(::getpid()) + ".jsonl"))
                               .string();
  ASSERT_TRUE(whatif::SaveTrace(trace, path).ok());
  auto loaded = whatif::LoadTrace(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->steps.size(), trace.steps.size());
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    EXPECT_EQ(loaded->steps[i].continuation, trace.steps[i].continuation);
    EXPECT_EQ(loaded->steps[i].nodes->parents, trace.steps[i].nodes->parents);
    EXPECT_LE(loaded->steps[i].nodes->size(), 20);
    EXPECT_EQ(loaded->steps[i].marginals->tokens, trace.steps[i].marginals->tokens);
  }
}

TEST_F(TraceRecorderTest, SamplingIsRefused) {
  SamplingOptions s;
  s.greedy = false;
  s.temperature = 0.8f;
  auto rec = TraceRecorder::Create(draft_.get(), s, 64, TraceRecorderOptions());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(rec.status().message().find("greedy"), std::string::npos) << rec.status();
}

TEST_F(TraceRecorderTest, BadOptionsNameTheField) {
  TraceRecorderOptions ro;
  ro.fixed_depth = 9;
  auto rec = TraceRecorder::Create(draft_.get(), SamplingOptions(), 64, ro);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("fixed_depth = 9"), std::string::npos) << rec.status();
  ro = TraceRecorderOptions();
  ro.gamma = 0;
  EXPECT_NE(ro.Validate().message().find("gamma = 0"), std::string::npos);
}

TEST_F(TraceRecorderTest, InconsistentStepLogIsRejected) {
  const StrategyOptions o = StrategyOptions::Defaults(Strategy::kAr);
  auto dec = SpeculativeDecoder::Create(target_.get(), nullptr, o, 64);
  ASSERT_TRUE(dec.ok());
  auto r = (*dec)->Generate(Prompts()[1], 6);
  ASSERT_TRUE(r.ok());
  auto rec = TraceRecorder::Create(draft_.get(), o.sampling, 64, TraceRecorderOptions());
  ASSERT_TRUE(rec.ok());
  GenerationResult bad = *r;
  bad.steps[1].c += 1;
  absl::Status st = (*rec)->Record(0, Prompts()[1], bad);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("steps[1].c"), std::string::npos) << st;
  bad = *r;
  bad.steps[0].root = (bad.steps[0].root + 1) % 256;
  st = (*rec)->Record(0, Prompts()[1], bad);
  EXPECT_NE(st.message().find("steps[0].root"), std::string::npos) << st;
  EXPECT_TRUE((*rec)->steps().empty());  // nothing recorded from a bad result
  EXPECT_TRUE((*rec)->Record(0, Prompts()[1], *r).ok());
  EXPECT_EQ((*rec)->steps().size(), 5u);
}

// Both bundled traces: the trained family's (the default) and the tiny random pair's.
class BundledTraceTest
    : public ::testing::TestWithParam<std::tuple<const char*, const char*, int>> {};

TEST_P(BundledTraceTest, LoadsAndHasBothDrafterOutputs) {
  const auto [file, target, vocab] = GetParam();
  auto trace = whatif::LoadTrace(whatif::BundledTracePath(file));
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->header.target, target);
  EXPECT_EQ(trace->header.vocab, vocab);
  EXPECT_NE(trace->header.source.find("--record-trace"), std::string::npos);
  ASSERT_GT(trace->steps.size(), 20u);
  std::set<int64_t> prompts;
  int accepted = 0, chain_slots = 0;
  for (size_t i = 0; i < trace->steps.size(); ++i) {
    const whatif::TraceStep& s = trace->steps[i];
    EXPECT_TRUE(s.marginals.has_value()) << i;
    EXPECT_TRUE(s.nodes.has_value()) << i;
    prompts.insert(s.prompt);
    if (i > 0 && trace->steps[i - 1].prompt == s.prompt) {
      EXPECT_GT(s.c, trace->steps[i - 1].c) << i;
    }
    std::vector<int32_t> chain;
    for (int d = 0; d < s.marginals->gamma; ++d) chain.push_back(s.marginals->token(d, 0));
    accepted += ChainAccepted(chain, s.continuation);
    chain_slots += std::min<int>(s.marginals->gamma, static_cast<int>(s.continuation.size()));
  }
  EXPECT_GE(prompts.size(), 2u);
  // A useful profile: the greedy chain is accepted sometimes, but not always.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, chain_slots);
}

INSTANTIATE_TEST_SUITE_P(Traces, BundledTraceTest,
                         ::testing::Values(std::make_tuple("family.jsonl", "models/target", 4096),
                                           std::make_tuple("tiny.jsonl", "random:tiny", 256)),
                         [](const auto& info) {
                           return std::get<0>(info.param)[0] == 'f' ? "Family" : "Tiny";
                         });

}  // namespace
}  // namespace specplan::runtime
