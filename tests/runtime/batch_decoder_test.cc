// The batch runtime: one ragged pass over many sequences' trees (Transformer::ForwardBatch) gives
// each sequence the logits it gets alone; batch decoding with continuous arrivals keeps every
// sequence's greedy output equal to AR's (many seeds, batch sizes 1, 2, 3, 8, three draft pairs,
// per-request and global-batch strategies); a sequence in a batch emits exactly what it emits
// alone (greedy and sampling); per-sequence KV compaction equals recomputation; sampling keeps the
// target distribution with mixed prompts and tree sizes; the batch planner's trees shrink as the
// batch grows on a cost that grows with the batch's tokens, with passes that verify drafting
// requests beside undrafted ones (n_i = 0), still emitting AR's tokens.
#include "runtime/batch_decoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "costmodel/latency/grid_latency.h"
#include "runtime/decoder.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

using testing::DecodeAlone;
using testing::RandomTokens;
using testing::RandomTree;
using testing::TinyModel;

// Prompts of 2..13 tokens, every other one repeated twice more.
std::vector<std::vector<planner::TokenId>> Prompts(int count, uint64_t seed) {
  return testing::RandomPrompts(count, seed, 2, 12, 2);
}

std::vector<std::vector<planner::TokenId>> Batched(
    const Transformer& target, const Transformer* draft, const StrategyOptions& options,
    int max_batch, const std::vector<std::vector<planner::TokenId>>& prompts, int new_tokens,
    BatchCounters* counters = nullptr, std::vector<BatchStepLog>* logs = nullptr) {
  auto dec = BatchDecoder::Create(&target, draft, options, max_batch, 256);
  EXPECT_TRUE(dec.ok()) << dec.status();
  auto out = (*dec)->Run(prompts, new_tokens, {}, [&](const BatchStepLog& log) {
    if (logs) logs->push_back(log);
  });
  EXPECT_TRUE(out.ok()) << out.status();
  std::vector<std::vector<planner::TokenId>> tokens;
  for (const GenerationResult& r : *out) {
    EXPECT_EQ(static_cast<int>(r.tokens.size()), new_tokens);
    tokens.push_back(r.tokens);
  }
  if (counters) *counters = (*dec)->counters();
  return tokens;
}

// A batched pass's segments: cached contexts, tree sizes (nodes beyond the root; -1: a causal
// segment of 4 tokens, as a prefill chunk) and where each segment's cache lives: -1 a cache of its
// own, else that row of one arena (KvCache::Batch).
struct BatchCase {
  std::string name;
  std::vector<int64_t> contexts;
  std::vector<int> nodes;
  std::vector<int> rows;
  std::vector<int64_t> runs;  // the attention groups' sizes (ArenaRuns)
  friend void PrintTo(const BatchCase& c, std::ostream* os) { *os << c.name; }
};

class ForwardBatchTest : public ::testing::TestWithParam<BatchCase> {};

// Each segment's rows and cache writes equal its lone pass, whether it attends alone or in a
// group of consecutive arena rows (one call per layer, padded to the group's longest tree and
// context).
TEST_P(ForwardBatchTest, EqualsEachSegmentAlone) {
  const BatchCase& bc = GetParam();
  auto model = TinyModel("tiny", 7);
  std::mt19937_64 rng(3);
  const int64_t V = model->config().vocab_size;
  const size_t n = bc.contexts.size();
  std::vector<KvCache> arena = KvCache::Batch(model->config(), 8, 40, torch::kFloat32, torch::kCPU);
  std::vector<KvCache> own, alone_caches;
  std::vector<KvCache*> batch_caches;
  for (size_t i = 0; i < n; ++i) {
    own.push_back(model->NewCache(40));
    alone_caches.push_back(model->NewCache(40));
  }
  for (size_t i = 0; i < n; ++i)
    batch_caches.push_back(bc.rows[i] < 0 ? &own[i] : &arena[bc.rows[i]]);
  std::vector<planner::Tree> trees(n);
  std::vector<planner::TreeOutputs> outs(n);
  std::vector<ForwardSegment> segments;
  std::vector<torch::Tensor> expected;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < n; ++i) {
    const int64_t c = bc.contexts[i];
    const std::vector<planner::TokenId> prefix =
        RandomTokens(static_cast<int>(c), static_cast<int>(V), rng);
    if (c > 0) {
      model->ForwardCausal(prefix, 0, batch_caches[i]);
      model->ForwardCausal(prefix, 0, &alone_caches[i]);
    }
    if (bc.nodes[i] < 0) {  // causal chunk of 4 tokens
      const std::vector<planner::TokenId> chunk = RandomTokens(4, static_cast<int>(V), rng);
      expected.push_back(model->ForwardCausal(chunk, c, &alone_caches[i]));
      segments.push_back({torch::tensor(chunk, torch::kInt32),
                          torch::arange(c, c + 4, torch::kInt64), c, torch::Tensor(),
                          batch_caches[i]});
      sizes.push_back(4);
      continue;
    }
    trees[i] = RandomTree(bc.nodes[i], static_cast<int>(V), rng);
    expected.push_back(testing::VerifyTree(*model, trees[i], c, &alone_caches[i]));
    planner::TreeOutputOptions opt;
    opt.position_offset = c;
    opt.dense_mask = true;
    planner::ComputeTreeOutputs(trees[i], opt, &outs[i]);
    const int64_t s = trees[i].size();
    segments.push_back({torch::tensor(trees[i].tokens, torch::kInt32),
                        torch::tensor(outs[i].positions, torch::kInt64), c,
                        s > 1 ? TreeMaskBlock(outs[i].mask_dense, s, torch::kCPU) : torch::Tensor(),
                        batch_caches[i]});
    sizes.push_back(s);
  }
  EXPECT_EQ(ArenaRuns(std::vector<const KvCache*>(batch_caches.begin(), batch_caches.end())),
            bc.runs);
  const torch::Tensor packed = model->ForwardBatch(segments);
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = sizes[i], T = bc.contexts[i] + s;
    EXPECT_TRUE(torch::allclose(packed.narrow(0, offset, s), expected[i], 1e-4, 1e-5))
        << "segment " << i;
    // Each segment wrote its own cache (its arena row), as the lone pass did.
    for (int64_t l = 0; l < model->config().num_layers; ++l) {
      EXPECT_TRUE(torch::allclose(batch_caches[i]->k(l).narrow(0, 0, T),
                                  alone_caches[i].k(l).narrow(0, 0, T), 1e-4, 1e-5))
          << "segment " << i << " layer " << l;
      EXPECT_TRUE(torch::allclose(batch_caches[i]->v(l).narrow(0, 0, T),
                                  alone_caches[i].v(l).narrow(0, 0, T), 1e-4, 1e-5))
          << "segment " << i << " layer " << l;
    }
    offset += s;
  }
  EXPECT_EQ(packed.size(0), offset);
  // Arena rows no segment used are untouched.
  for (int r = 0; r < 8; ++r) {
    if (std::find(bc.rows.begin(), bc.rows.end(), r) != bc.rows.end()) continue;
    for (int64_t l = 0; l < model->config().num_layers; ++l) {
      EXPECT_EQ(arena[r].k(l).abs().sum().item<float>(), 0.0f) << "row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ForwardBatchTest,
    ::testing::Values(
        // Caches of their own: attention per segment.
        BatchCase{"Own", {5, 0, 11}, {6, 0, 9}, {-1, -1, -1}, {1, 1, 1}},
        // One arena, rows in order: one group (ragged trees and contexts, a causal chunk).
        BatchCase{"OneGroup", {5, 0, 11, 3, 7}, {6, 0, 9, -1, 12}, {0, 1, 2, 3, 4}, {5}},
        // Groups broken by a lone cache, a gap in the rows and rows out of order.
        BatchCase{"Mixed",
                  {5, 2, 11, 3, 7, 1, 4},
                  {6, 0, 9, 2, 12, 3, -1},
                  {2, 3, -1, 0, 1, 5, 4},
                  {2, 1, 2, 1, 1}},
        // Equal trees over unequal contexts (no query padding, masked slots).
        BatchCase{"EqualTrees", {5, 13, 8}, {4, 4, 4}, {1, 2, 3}, {3}},
        // Equal trees over equal contexts from row 2 (slots and masks built on the device).
        BatchCase{"UniformTrees", {7, 7, 7}, {5, 5, 5}, {2, 3, 4}, {3}},
        // Single tokens over equal contexts: every row sees every slot (no mask at all).
        BatchCase{"DecodeEqualContexts", {6, 6, 6, 6}, {0, 0, 0, 0}, {4, 5, 6, 7}, {4}}),
    [](const ::testing::TestParamInfo<BatchCase>& info) { return info.param.name; });

class BatchGreedyTest : public testing::StrategyAndDraftTest {};

// Every prompt's output equals its AR output, for batch sizes 1, 2, 3 and 8 over 7 prompts of
// different lengths (so sequences finish at different steps and newcomers join).
TEST_P(BatchGreedyTest, EqualsArPerPrompt) {
  const Strategy strategy = ParamStrategy();
  for (uint64_t seed : {41u, 42u}) {
    const auto [target, draft] = ParamModels(seed);
    const int new_tokens = 14;
    const auto prompts = Prompts(7, seed);
    std::vector<std::vector<planner::TokenId>> ar;
    for (const auto& p : prompts) {
      ar.push_back(
          DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr), p, new_tokens));
    }
    const StrategyOptions o = UngatedOptions();
    for (int b : {1, 2, 3, 8}) {
      BatchCounters counters;
      const auto out = Batched(*target, draft.get(), o, b, prompts, new_tokens, &counters);
      for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(out[i], ar[i]) << RunName(seed) << " batch " << b << " prompt " << i;
      }
      EXPECT_LE(counters.mean_batch(), b);
      EXPECT_EQ(counters.decode.prompts, 7);
      if (strategy != Strategy::kBatch && strategy != Strategy::kAr) {
        EXPECT_GT(counters.draft_nodes(), 0);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, BatchGreedyTest,
                         testing::WithEveryDraftKind({"ar", "fixed", "dynatree", "bestfirst",
                                                      "batch", "merged"}),
                         testing::StrategyAndDraftName);

// A latency that grows with the pass's tokens: 1 ms plus 0.1 ms per token.
costmodel::GridLatency LinearLatency() {
  return costmodel::GridLatency({1, 4096}, {1e-3, 1e-3 + 4095 * 1e-4},
                                costmodel::GridSource::kMeasured);
}

// With a per-request strategy, a sequence decoded in a batch emits exactly the tokens it emits
// alone with the same seed (prompt i is seeded sampling.seed + i), in greedy and sampling mode.
// Left out: dynatree and merged, whose policy adapts across prompts (a slot's policy carries what
// it learnt from the slot's earlier prompts, as a SpeculativeDecoder's does across Generate
// calls), and bestfirst, whose controller prices the drafting time it measured this step (its
// trees vary with the machine's timing alone or not).
TEST(BatchDecoderTest, SequenceEmitsWhatItEmitsAlone) {
  auto target = TinyModel("tiny", 51);
  auto draft = target->Truncated(1);
  const auto latency = LinearLatency();
  const auto prompts = Prompts(5, 51);
  for (const char* name : {"linear", "fixed", "lookup"}) {
    for (bool greedy : {true, false}) {
      StrategyOptions o = StrategyOptions::Defaults(*ParseStrategy(name));
      o.sampling.greedy = greedy;
      o.sampling.temperature = 0.8f;
      o.sampling.seed = 9;
      o.latency = &latency;  // the same controller costs alone and in the batch
      for (int bb : {1, 3}) {
        const auto out = Batched(*target, draft.get(), o, bb, prompts, 12);
        for (size_t i = 0; i < prompts.size(); ++i) {
          StrategyOptions alone = o;
          alone.sampling.seed = o.sampling.seed + i;
          EXPECT_EQ(out[i], DecodeAlone(*target, draft.get(), alone, prompts[i], 12))
              << name << (greedy ? " greedy" : " sampling") << " prompt " << i << " B " << bb;
        }
      }
    }
  }
}

// Arrivals: with 2 slots and 5 prompts, a newcomer is verified beside a sequence that started
// before it, no pass holds more than 2 sequences, and every prompt is verified until it is done.
TEST(BatchDecoderTest, FinishedSequenceFreesItsSlotForANewcomer) {
  auto target = TinyModel("tiny", 52);
  auto draft = target->Truncated(1);
  auto prompts = Prompts(5, 52);
  std::vector<BatchStepLog> logs;
  BatchCounters counters;
  const auto out = Batched(*target, draft.get(), StrategyOptions::Defaults(Strategy::kDynaTree), 2,
                           prompts, 10, &counters, &logs);
  bool interleaved = false;
  int max_prompt_seen = -1;
  for (const BatchStepLog& log : logs) {
    EXPECT_LE(log.prompts.size(), 2u);
    for (int p : log.prompts) {
      // A prompt beside a later one that joined after it started.
      if (p < max_prompt_seen) interleaved = true;
      max_prompt_seen = std::max(max_prompt_seen, p);
    }
  }
  EXPECT_TRUE(interleaved);
  EXPECT_EQ(max_prompt_seen, 4);
  int64_t logged = 0;
  for (const BatchStepLog& log : logs) logged += static_cast<int64_t>(log.prompts.size());
  EXPECT_EQ(counters.request_steps(), logged);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(out[i], DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr),
                                  prompts[i], 10));
  }
}

// After batch steps, every sequence's compacted cache holds exactly what a fresh causal pass over
// its committed tokens computes.
TEST(BatchDecoderTest, PerSequenceKvCompactionEqualsRecomputation) {
  auto target = TinyModel("tiny", 53);
  auto draft = target->Truncated(1);
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kFixed);
  auto backend = std::make_unique<planner::InProcessPlanBackend>();
  StrategyContext ctx{target.get(), draft.get(), 128, backend.get()};
  std::vector<std::unique_ptr<DecodeSequence>> seqs;
  std::vector<DecodeSequence*> ptrs;
  const auto prompts = Prompts(3, 53);
  for (int i = 0; i < 3; ++i) {
    seqs.push_back(std::make_unique<DecodeSequence>(target.get(), *CreateDraftStrategy(o, ctx), o,
                                                    target->NewCache(128)));
    seqs.back()->Start(prompts[i], 40, 0);
    ptrs.push_back(seqs.back().get());
  }
  PrefillTogether(*target, ptrs);
  DecodeCounters counters;
  for (int step = 0; step < 4; ++step) {
    for (DecodeSequence* q : ptrs) ASSERT_TRUE(q->Draft().ok());
    ASSERT_TRUE(VerifyTogether(*target, ptrs, true, &counters).ok());
  }
  EXPECT_GT(counters.accepted(), 0);
  for (DecodeSequence* q : ptrs) {
    const int64_t c = q->c();
    const std::vector<planner::TokenId> seq(q->committed().begin(), q->committed().begin() + c);
    KvCache fresh = target->NewCache(c);
    target->ForwardCausal(seq, 0, &fresh);
    for (int64_t l = 0; l < target->config().num_layers; ++l) {
      EXPECT_TRUE(torch::allclose(q->cache().k(l).narrow(0, 0, c), fresh.k(l), 1e-4, 1e-5));
      EXPECT_TRUE(torch::allclose(q->cache().v(l).narrow(0, 0, c), fresh.v(l), 1e-4, 1e-5));
    }
  }
}

// On an 8-token vocabulary, the second token of a prompt decoded with the batch planner (beside
// prompts of other lengths whose trees differ, some drafting nothing) follows the exact target
// marginal sum_t1 p(t1) p(t2 | t1).
TEST(BatchDecoderTest, SamplingMatchesTargetDistribution) {
  auto target = testing::EightTokenModel();
  auto draft = target->Truncated(1);
  const std::vector<planner::TokenId> prompt = {1, 5, 2};
  const std::vector<double> exact = testing::ExactSecondTokenMarginal(*target, prompt);
  const auto latency = LinearLatency();
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kBatch);
  o.sampling.greedy = false;
  o.sampling.temperature = 1.0f;
  o.draft_top_k = 3;
  o.latency = &latency;
  o.gate_draft_level_s = 1e-9;  // the gate lets every step draft (nothing to probe)
  // Per run: the prompt twice, beside two prompts of other lengths.
  const std::vector<std::vector<planner::TokenId>> batch = {prompt, {3}, prompt, {4, 4, 6, 0, 7}};
  const int runs = 1500;
  std::vector<double> freq(8, 0.0);
  int64_t undrafted = 0;
  for (int r = 0; r < runs; ++r) {
    o.sampling.seed = 10000 + 4 * r;
    auto dec = *BatchDecoder::Create(target.get(), draft.get(), o, 4, 32);
    auto out = dec->Run(batch, 2);
    ASSERT_TRUE(out.ok()) << out.status();
    freq[(*out)[0].tokens[1]] += 0.5 / runs;
    freq[(*out)[2].tokens[1]] += 0.5 / runs;
    undrafted += dec->counters().undrafted_steps;
  }
  double tv = 0;
  for (int t = 0; t < 8; ++t) tv += 0.5 * std::abs(freq[t] - exact[t]);
  EXPECT_LT(tv, 0.04) << "TV distance between batch-speculative and exact target marginals";
  std::printf("undrafted request-steps: %lld\n", static_cast<long long>(undrafted));
}

// The batch planner on a cost that grows with the pass's tokens: the per-request trees shrink as
// the batch grows (the fixed 1 ms is shared by more requests, so a node costs relatively more).
TEST(BatchDecoderTest, BatchPlannerTreesShrinkAsTheBatchGrows) {
  auto target = TinyModel("tiny", 54);
  auto draft = target->Truncated(target->config().num_layers);  // accepts every greedy chain
  const auto latency = LinearLatency();
  StrategyOptions o = StrategyOptions::Defaults(Strategy::kBatch);
  o.latency = &latency;
  o.batch_draft_step_s = 0;     // reproducible plans: drafting priced free,
  o.gate_draft_level_s = 1e-9;  // by the gate too
  const auto prompts = Prompts(8, 54);
  BatchCounters one, eight;
  std::vector<BatchStepLog> logs;
  Batched(*target, draft.get(), o, 1, prompts, 16, &one);
  const auto out = Batched(*target, draft.get(), o, 8, prompts, 16, &eight, &logs);
  // Some passes verify a drafting request beside one the planner left undrafted (n_i = 0), and
  // the outputs are still AR's.
  int mixed = 0;
  for (const BatchStepLog& log : logs) {
    const auto [lo, hi] = std::minmax_element(log.n.begin(), log.n.end());
    mixed += *lo == 0 && *hi > 0 ? 1 : 0;
  }
  std::printf("passes mixing n_i = 0 and n_i > 0: %d of %zu\n", mixed, logs.size());
  EXPECT_GT(mixed, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(out[i], DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr),
                                  prompts[i], 16));
  }
  EXPECT_GT(one.mean_tree_size(), 0.0);
  EXPECT_LT(eight.mean_tree_size(), one.mean_tree_size());
  std::printf("mean tree size: B = 1 %.2f, B = 8 %.2f\n", one.mean_tree_size(),
              eight.mean_tree_size());
}

// The batch's one speculation gate: a draft level priced at 50 ms (far above the 1 ms pass) keeps
// every step but its probes plain, with the draft model idle; priced free, every step drafts (and
// the batch planner then decides what to verify). Either way the outputs are AR's.
TEST(BatchDecoderTest, BatchGateKeepsDraftingThatCannotPayOff) {
  auto target = TinyModel("tiny", 55);
  auto draft = target->Truncated(target->config().num_layers);
  const auto latency = LinearLatency();
  const auto prompts = Prompts(8, 55);
  for (double level_s : {5e-2, 1e-9}) {
    StrategyOptions o = StrategyOptions::Defaults(Strategy::kBatch);
    o.latency = &latency;
    o.gate_draft_level_s = level_s;
    o.gate.probe_interval = 8;
    auto dec = BatchDecoder::Create(target.get(), draft.get(), o, 4, 256);
    ASSERT_TRUE(dec.ok()) << dec.status();
    auto out = (*dec)->Run(prompts, 24);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(
          (*out)[i].tokens,
          DecodeAlone(*target, nullptr, StrategyOptions::Defaults(Strategy::kAr), prompts[i], 24))
          << "prompt " << i;
    }
    const BatchCounters& c = (*dec)->counters();
    const auto drafter = (*dec)->drafter_counters();
    ASSERT_TRUE(drafter.has_value());
    if (level_s > 1e-3) {
      EXPECT_GT(c.undrafted_fraction(), 0.7) << level_s;
      EXPECT_LT(drafter->forwards, c.request_steps() / 2);  // only the probes drafted
    } else {
      EXPECT_GE(drafter->forwards, c.request_steps());  // every request-step drafted
    }
  }
}

TEST(BatchDecoderTest, RejectsBadInputs) {
  auto target = TinyModel("tiny", 1);
  auto bad =
      BatchDecoder::Create(target.get(), nullptr, StrategyOptions::Defaults(Strategy::kAr), 0, 64);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("max_batch = 0"), std::string::npos);
  EXPECT_FALSE(BatchDecoder::Create(target.get(), nullptr,
                                    StrategyOptions::Defaults(Strategy::kBatch), 2, 64)
                   .ok());  // needs a draft model
  auto dec =
      *BatchDecoder::Create(target.get(), nullptr, StrategyOptions::Defaults(Strategy::kAr), 2, 64);
  auto r = dec->Run({{1, 2}, {1, 300}}, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("prompts[1]: prompt[1] = 300"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace specplan::runtime
