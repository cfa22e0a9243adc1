// Chains replayed over the user's acceptance on the engine's whole step (whatif/chain_replay.h):
// a two-request step trace written here, on the bare H100 Llama-3.1-8B roofline with vLLM's host
// time and the EAGLE-3 head's roofline. Each mode against a walk done by hand in this file, and
// the refused options.
#include "whatif/chain_replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "planner/acceptance/engine_acceptance.h"
#include "util/check.h"

namespace specplan::whatif {
namespace {

using costmodel::StepBreakdown;
using costmodel::StepModel;
using planner::EngineAcceptance;
using ::testing::HasSubstr;

// Request a: prompt 10, output positions 1..6; request b: prompt 20, positions 1..3.
// acc_len[0] is the prefill step. k_max = 4 - 1 = 3.
constexpr char kTrace[] =
    "{\"id\": \"a\", \"prompt_tokens\": 10, \"acc_len\": [1, 3, 1, 2, 4, 1, 1]}\n"
    "{\"id\": \"b\", \"prompt_tokens\": 20, \"acc_len\": [1, 2, 2, 1]}\n";

// A vLLM interval: 100 drafts of 3, per-position 0.5, 0.3, 0.2 (rates only, no trace).
constexpr char kRatesLog[] =
    "INFO 08-12 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.00, "
    "Accepted throughput: 12.50 tokens/s, Drafted throughput: 30.00 tokens/s, Accepted: 100 "
    "tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.500, 0.300, 0.200, Avg Draft "
    "acceptance rate: 33.3%\n";

EngineAcceptance Parse(const std::string& text) {
  auto a = planner::ParseEngineAcceptance(text, "in.jsonl");
  SPECPLAN_CHECK(a.ok(), "the inline acceptance");
  return *std::move(a);
}

const costmodel::RooflineLatency& Roofline() {
  static const auto* r = new costmodel::RooflineLatency(*costmodel::ResolveModel("llama-3.1-8b"),
                                                        *costmodel::ResolveGpu("h100"));
  return *r;
}

StepModel Step(const costmodel::StepOptions& o = {}) {
  auto m = StepModel::Create(&Roofline(), Roofline().model(), Roofline().gpu(), nullptr, "vllm", o);
  SPECPLAN_CHECK(m.ok(), "StepModel::Create");
  return *std::move(m);
}

ChainReplayReport Replay(const EngineAcceptance& a, const StepModel& m,
                         const ChainReplayOptions& o) {
  auto r = ReplayChains(a, m, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ChainReplayReport{};
}

const ChainReplayRow& Row(const ChainReplayReport& r, int batch, int k) {
  for (const ChainReplayRow& x : r.rows) {
    if (x.batch == batch && x.k == k) return x;
  }
  ADD_FAILURE() << "no row B = " << batch << ", K = " << k;
  static const ChainReplayRow none;
  return none;
}

// The walk of the trace above, by hand: the contexts (prompt + output position) at which each
// request's speculative steps start when drafting chains of K.
struct HandRequest {
  int64_t prompt;
  int outputs;                         // positions 1..outputs
  std::vector<int64_t> step_contexts;  // where each step starts
};
std::vector<HandRequest> HandWalk(int k) {
  switch (k) {
    case 1:  // a: 1 -> 3 -> 5 -> 6 -> 7 (emits 2, 2, 1, 1); b: 1 -> 3 -> 4 (2, 1)
      return {{10, 6, {11, 13, 15, 16}}, {20, 3, {21, 23}}};
    case 2:  // a: 1 -> 4 -> 7 (3, 3); b: 1 -> 3 -> 4 (2, 1)
    case 3:  // a: 1 -> 4 -> 8 (3, 4); b: the same
      return {{10, 6, {11, 14}}, {20, 3, {21, 23}}};
    default:
      SPECPLAN_CHECK(false, "no hand walk");
      return {};
  }
}

// SpecDecode-Bench's mean (scripts/vis_speedup.py): each request's throughput averaged over the
// requests, speculative over plain.
TEST(ReplayChains, CopiesSpeedupIsTheRatioOfTheMeanPerRequestThroughputs) {
  const EngineAcceptance a = Parse(kTrace);
  ASSERT_EQ(a.k_max, 3);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {1, 8, 64};
  o.chain_lengths = {0, 1, 2, 3};
  const ChainReplayReport r = Replay(a, m, o);
  EXPECT_EQ(r.mode, "trace, copies");
  EXPECT_EQ(r.requests, 2);
  ASSERT_EQ(r.rows.size(), 12u);
  for (int b : o.batch_sizes) {
    for (int k : {1, 2, 3}) {
      SCOPED_TRACE(testing::Message() << "B = " << b << ", K = " << k);
      double sd_rates = 0, ar_rates = 0, sd_total = 0, ar_total = 0, steps = 0, tokens = 0;
      StepBreakdown terms;
      for (const HandRequest& q : HandWalk(k)) {
        double ar = 0, sd = 0;
        for (int i = 1; i <= q.outputs; ++i) ar += m.ArStep(b, q.prompt + i).step_s();
        for (int64_t c : q.step_contexts) {
          const StepBreakdown x = m.Step(b, k + 1, c);
          sd += x.step_s();
          terms.verify_s += x.verify_s;
          terms.draft_s += x.draft_s;
          terms.draft_forwards += x.draft_forwards;
        }
        sd_rates += q.outputs / sd;
        ar_rates += q.outputs / ar;
        sd_total += sd;
        ar_total += ar;
        steps += static_cast<double>(q.step_contexts.size());
        tokens += q.outputs;
      }
      const ChainReplayRow& row = Row(r, b, k);
      EXPECT_NEAR(row.speedup, sd_rates / ar_rates, 1e-12);
      EXPECT_EQ(row.steps, steps);
      EXPECT_DOUBLE_EQ(row.tokens_per_step, tokens / steps);
      EXPECT_NEAR(row.throughput, b * tokens / sd_total, 1e-9 * row.throughput);
      EXPECT_NEAR(row.ar_throughput, b * tokens / ar_total, 1e-9 * row.ar_throughput);
      EXPECT_NEAR(row.time.verify_s, terms.verify_s, 1e-15);
      EXPECT_NEAR(row.time.draft_s, terms.draft_s, 1e-15);
      EXPECT_EQ(row.time.draft_forwards, terms.draft_forwards);
      EXPECT_NEAR(row.time.step_s(), sd_total, 1e-15);
    }
    // K = 0 is plain decoding.
    const ChainReplayRow& plain = Row(r, b, 0);
    EXPECT_EQ(plain.speedup, 1.0);
    EXPECT_EQ(plain.tokens_per_step, 1.0);
    EXPECT_EQ(plain.steps, 9);
    EXPECT_EQ(plain.time.draft_s, 0);
  }
  // At B = 1 the chains pay for themselves on this trace.
  EXPECT_GT(Row(r, 1, 2).speedup, 1.0);
}

TEST(ReplayChains, MixedAtBatchOneIsThePooledWalk) {
  const EngineAcceptance a = Parse(kTrace);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {1};
  o.chain_lengths = {0, 1, 2, 3};
  o.batching = ChainBatching::kMixed;
  const ChainReplayReport r = Replay(a, m, o);
  EXPECT_EQ(r.mode, "trace, mixed");
  EXPECT_EQ(Row(r, 1, 0).speedup, 1.0);
  for (int k : {1, 2, 3}) {
    SCOPED_TRACE(k);
    // One request after the other: the pooled time over the pooled plain time.
    double sd = 0, ar = 0, steps = 0;
    for (const HandRequest& q : HandWalk(k)) {
      for (int i = 1; i <= q.outputs; ++i) ar += m.ArStep(1, q.prompt + i).step_s();
      for (int64_t c : q.step_contexts) sd += m.Step(1, k + 1, c).step_s();
      steps += static_cast<double>(q.step_contexts.size());
    }
    const ChainReplayRow& row = Row(r, 1, k);
    EXPECT_NEAR(row.speedup, ar / sd, 1e-12);
    EXPECT_EQ(row.steps, steps);
    EXPECT_DOUBLE_EQ(row.tokens_per_step, 9 / steps);
    EXPECT_NEAR(row.throughput, 9 / sd, 1e-9 * row.throughput);
    // The same as the copies mode's pooled throughputs at B = 1.
    ChainReplayOptions copies = o;
    copies.batching = ChainBatching::kCopies;
    const ChainReplayReport copies_report = Replay(a, m, copies);  // Row refers into it
    const ChainReplayRow& c = Row(copies_report, 1, k);
    EXPECT_NEAR(row.throughput / row.ar_throughput, c.throughput / c.ar_throughput, 1e-12);
  }
}

TEST(ReplayChains, MixedKeepsBRequestsInFlight) {
  const EngineAcceptance a = Parse(kTrace);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {2};
  o.chain_lengths = {0, 2};
  o.batching = ChainBatching::kMixed;
  const ChainReplayReport r = Replay(a, m, o);
  // K = 2: slots (a, b) step together at (11, 21) and (14, 23); b ends first (2 steps) and its
  // slot takes a again, but the replay ends when both requests have finished: 2 steps.
  const ChainReplayRow& row = Row(r, 2, 2);
  EXPECT_EQ(row.steps, 2);
  costmodel::BatchShape first, second;
  first.Add(3, 11);
  first.Add(3, 21);
  second.Add(3, 14);
  second.Add(3, 23);
  const double sd = m.Step(first).step_s() + m.Step(second).step_s();
  EXPECT_NEAR(row.time.step_s(), sd, 1e-15);
  EXPECT_NEAR(row.throughput, 9 / sd, 1e-9 * row.throughput);
  EXPECT_DOUBLE_EQ(row.tokens_per_step, 9.0 / (2 * 2));
  EXPECT_EQ(Row(r, 2, 0).speedup, 1.0);
}

TEST(ReplayChains, RatesModeIsTokensPerStepTimesPlainOverStep) {
  const EngineAcceptance a = Parse(kRatesLog);
  ASSERT_FALSE(a.has_trace());
  ASSERT_EQ(a.k_max, 3);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {1, 16, 128};
  o.context = 2048;
  const ChainReplayReport r = Replay(a, m, o);  // default chains 0 .. min(k_max, 8)
  EXPECT_EQ(r.mode, "rates");
  EXPECT_EQ(r.requests, 0);
  EXPECT_EQ(r.context, 2048);
  ASSERT_EQ(r.rows.size(), 3u * 4u);
  ASSERT_EQ(r.best_k.size(), 3u);
  for (size_t bi = 0; bi < o.batch_sizes.size(); ++bi) {
    const int b = o.batch_sizes[bi];
    const double ar = m.ArStep(b, 2048).step_s();
    int best = 0;
    double best_tp = -1;
    for (int k = 0; k <= 3; ++k) {
      SCOPED_TRACE(testing::Message() << "B = " << b << ", K = " << k);
      const ChainReplayRow& row = Row(r, b, k);
      const double step = k == 0 ? ar : m.Step(b, k + 1, 2048).step_s();
      EXPECT_DOUBLE_EQ(row.tokens_per_step, a.TokensPerStep(k));
      EXPECT_NEAR(row.speedup, a.TokensPerStep(k) * ar / step, 1e-12);
      EXPECT_EQ(row.steps, 1);
      EXPECT_NEAR(row.throughput, b * a.TokensPerStep(k) / step, 1e-9 * row.throughput);
      EXPECT_NEAR(row.ar_throughput, b / ar, 1e-9 * row.ar_throughput);
      if (row.throughput > best_tp) {
        best_tp = row.throughput;
        best = k;
      }
    }
    EXPECT_EQ(Row(r, b, 0).speedup, 1.0);
    EXPECT_EQ(r.best_k[bi], best);
  }
  EXPECT_DOUBLE_EQ(a.TokensPerStep(3), 2.0);  // 1 + 0.5 + 0.3 + 0.2
}

TEST(ReplayChains, IndependentReadsATracesPerPositionRates) {
  // The trace's k_max walk: 4 steps accepting 2, 3, 1, 0 drafts -> per position 3/4, 2/4, 1/4.
  const EngineAcceptance a = Parse(kTrace);
  ASSERT_EQ(a.per_position.size(), 3u);
  EXPECT_DOUBLE_EQ(a.per_position[0], 0.75);
  EXPECT_DOUBLE_EQ(a.per_position[1], 0.5);
  EXPECT_DOUBLE_EQ(a.per_position[2], 0.25);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {4};
  o.independent = true;
  o.batching = ChainBatching::kMixed;  // ignored under independence
  o.context = 512;
  const ChainReplayReport r = Replay(a, m, o);
  EXPECT_EQ(r.mode, "rates");
  const double ar = m.ArStep(4, 512).step_s();
  // Under independence E[tokens per step] = 1 + sum_{i<K} per_position[i] (chain_replay.h), not
  // the trace's own walk capped at K (1.5 tokens per step at K = 1 here).
  for (const auto& [k, expected] :
       std::vector<std::pair<int, double>>{{1, 1.75}, {2, 2.25}, {3, 2.5}}) {
    SCOPED_TRACE(k);
    const ChainReplayRow& row = Row(r, 4, k);
    EXPECT_DOUBLE_EQ(row.tokens_per_step, expected);
    EXPECT_NEAR(row.speedup, expected * ar / m.Step(4, k + 1, 512).step_s(), 1e-12);
  }
  EXPECT_DOUBLE_EQ(a.TokensPerStep(1), 1.5);  // the walk, which copies mode replays
}

TEST(ReplayChains, MaxRequestsReplaysTheFirstOnly) {
  const EngineAcceptance a = Parse(kTrace);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {1};
  o.chain_lengths = {2};
  o.max_requests = 1;
  const ChainReplayReport r = Replay(a, m, o);
  EXPECT_EQ(r.requests, 1);
  double ar = 0, sd = 0;
  for (int i = 1; i <= 6; ++i) ar += m.ArStep(1, 10 + i).step_s();
  for (int64_t c : {11, 14}) sd += m.Step(1, 3, c).step_s();
  EXPECT_NEAR(Row(r, 1, 2).speedup, ar / sd, 1e-12);
  EXPECT_EQ(Row(r, 1, 2).steps, 2);
}

void ExpectRefused(const EngineAcceptance& a, const StepModel& m, const ChainReplayOptions& o,
                   const std::string& message) {
  auto r = ReplayChains(a, m, o);
  ASSERT_FALSE(r.ok()) << message;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(message));
}

TEST(ReplayChains, RefusesWhatItCannotReplayNamingTheField) {
  const EngineAcceptance trace = Parse(kTrace);
  const EngineAcceptance rates = Parse(kRatesLog);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {};
  ExpectRefused(trace, m, o, "batch_sizes: empty");
  o.batch_sizes = {8, 4};
  ExpectRefused(trace, m, o, "batch_sizes: 4 must be in [1, 4096] and ascending");
  o.batch_sizes = {0};
  ExpectRefused(trace, m, o, "batch_sizes: 0");
  o.batch_sizes = {4097};
  ExpectRefused(trace, m, o, "batch_sizes: 4097");

  o.batch_sizes = {1};
  o.chain_lengths = {1, 4};
  ExpectRefused(trace, m, o,
                "chain_lengths: K = 4 must be in [0, 3] (in.jsonl gives acceptance "
                "up to position 3)");
  o.chain_lengths = {-1};
  ExpectRefused(trace, m, o, "chain_lengths: K = -1");

  o.chain_lengths = {};
  o.batching = ChainBatching::kMixed;
  ExpectRefused(rates, m, o, "batching = mixed: in.jsonl holds rates, not a per-step trace");

  o.batching = ChainBatching::kCopies;
  o.context = -1;
  ExpectRefused(rates, m, o, "context = -1: must be >= 0");

  costmodel::StepOptions none;
  none.drafter = "";
  o.context = 1024;
  ExpectRefused(trace, Step(none), o, "drafter: none; a chain needs a drafter to price");
  o.chain_lengths = {0};  // plain decoding alone needs no drafter
  EXPECT_TRUE(ReplayChains(trace, Step(none), o).ok());

  EngineAcceptance empty = trace;
  for (auto& q : empty.requests) q.acc_len = {1};
  o.chain_lengths = {1};
  ExpectRefused(empty, m, o, "in.jsonl: no request has an output to replay");
}

TEST(ChainBatching, NamesRoundTrip) {
  for (ChainBatching b : {ChainBatching::kCopies, ChainBatching::kMixed}) {
    auto back = ParseChainBatching(ChainBatchingName(b));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, b);
  }
  auto bad = ParseChainBatching("pooled");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("batching"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("pooled"));
}

TEST(ChainReplayReport, JsonAndTableCarryEveryRow) {
  ChainReplayOptions o;
  o.batch_sizes = {1, 8};
  o.chain_lengths = {0, 2};
  const ChainReplayReport r = Replay(Parse(kTrace), Step(), o);
  const nlohmann::json j = ChainReplayToJson(r);
  EXPECT_EQ(j["mode"], "trace, copies");
  EXPECT_EQ(j["requests"], 2);
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][1]["batch"], 1);
  EXPECT_EQ(j["rows"][1]["k"], 2);
  EXPECT_EQ(j["rows"][1]["speedup"], r.rows[1].speedup);
  EXPECT_EQ(j["rows"][1]["time_s"]["step_s"], r.rows[1].time.step_s());
  EXPECT_EQ(j["best_k"], nlohmann::json(r.best_k));
  const std::string table = FormatChainReplay(r);
  EXPECT_THAT(table, HasSubstr("chains replayed (trace, copies, 2 requests)"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 4);
}

// SpecDecode-Bench's request filter: requests whose output reached max_tokens are dropped before
// max_requests keeps the first N.
TEST(ReplayChains, DropAtOutputFiltersBeforeMaxRequests) {
  const EngineAcceptance a = Parse(kTrace);  // a: 7 output positions, b: 4
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {1};
  o.chain_lengths = {0, 2};
  o.drop_at_output = 7;
  EXPECT_EQ(Replay(a, m, o).requests, 1);  // b only
  o.drop_at_output = 0;
  o.max_requests = 1;
  EXPECT_EQ(Replay(a, m, o).requests, 1);  // a only
  const double a_only = Row(Replay(a, m, o), 1, 2).speedup;
  o.drop_at_output = 7;
  EXPECT_NE(Row(Replay(a, m, o), 1, 2).speedup, a_only);  // b, not a
}

// With the prefill counted, each request's time includes its prompt's pass, which speculation
// does not shorten: the speedup falls below the decode-only one, and K = 0 stays exactly 1.
TEST(ReplayChains, PrefillLowersTheCopiesSpeedup) {
  const EngineAcceptance a = Parse(kTrace);
  const StepModel m = Step();
  ChainReplayOptions o;
  o.batch_sizes = {1, 16};
  o.chain_lengths = {0, 2};
  const ChainReplayReport decode_only = Replay(a, m, o);
  const StepModelPricer pricer(&m);
  o.prefill = &pricer;
  o.prefill_limits.max_running = 64;
  o.prefill_limits.token_budget = 8192;
  o.prefill_limits.kv_cache_tokens = 1 << 20;
  o.prefill_plain_limits = o.prefill_limits;
  const ChainReplayReport whole = Replay(a, m, o);
  for (int b : {1, 16}) {
    EXPECT_DOUBLE_EQ(Row(whole, b, 0).speedup, 1.0);
    EXPECT_LT(Row(whole, b, 2).speedup, Row(decode_only, b, 2).speedup) << b;
    EXPECT_GT(Row(whole, b, 2).speedup, 1.0) << b;
    EXPECT_DOUBLE_EQ(Row(whole, b, 2).tokens_per_step, Row(decode_only, b, 2).tokens_per_step);
  }
}

// An n-gram trace read with vLLM's matcher (planner/acceptance/prompt_lookup.h): a step where the
// matcher finds nothing drafts nothing and is priced as a plain step; one where it has room for
// fewer tokens than K verifies only those. Request r: prompt 1 2 3 1 2, output 3 9 9 8, matched
// with prompt_lookup_min = max = 2.
constexpr char kNgramTrace[] =
    "{\"id\": \"r\", \"prompt_token_ids\": [1, 2, 3, 1, 2], \"generated_token_ids\": [3, 9, 9, 8], "
    "\"acc_ngram\": {\"acc_len\": [1, 2, 1, 1]}}\n";

TEST(ReplayChains, StepsWithoutAMatchDraftNothing) {
  planner::EngineAcceptanceOptions opt;
  opt.k_max = 3;  // the draft length the trace was recorded with
  opt.prompt_lookup = planner::PromptLookup{2, 2};
  auto parsed = planner::ParseEngineAcceptance(kNgramTrace, "in.jsonl", std::nullopt, opt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const EngineAcceptance& a = *parsed;
  ASSERT_EQ(a.requests.size(), 1u);
  // By hand. Position 0 (context 1 2 3 1 2): the suffix (1 2) first occurred at indices 0..1, so
  // the proposal starts at index 2: room 5 - 2 = 3. Position 1 (context + 3): (2 3) first ends at
  // index 2: room 6 - 3 = 3. Position 2 (+ 9): (3 9) never occurred: 0. Position 3 (+ 9): (9 9)
  // neither: 0.
  EXPECT_THAT(a.requests[0].draft_room, ::testing::ElementsAre(3, 3, 0, 0));
  EXPECT_EQ(a.positions, 3);
  EXPECT_EQ(a.unmatched_positions, 2);
  costmodel::StepOptions ngram;
  ngram.drafter = "ngram";
  const StepModel m = Step(ngram);
  ChainReplayOptions o;
  o.batch_sizes = {4};
  o.chain_lengths = {0, 3};
  const ChainReplayReport r = Replay(a, m, o);
  // K = 3: position 1 verifies 4 and emits 2 (-> 3); position 3 drafts nothing: a plain step.
  const double sd = m.Step(4, 4, 5 + 1).step_s() + m.ArStep(4, 5 + 3).step_s();
  double ar = 0;
  for (int i = 1; i <= 3; ++i) ar += m.ArStep(4, 5 + i).step_s();
  const ChainReplayRow& row = Row(r, 4, 3);
  EXPECT_EQ(row.steps, 2);
  EXPECT_NEAR(row.speedup, ar / sd, 1e-12);
  // Without the matcher both steps verify K + 1.
  opt.prompt_lookup.reset();
  const EngineAcceptance plain =
      *planner::ParseEngineAcceptance(kNgramTrace, "in.jsonl", std::nullopt, opt);
  const double every = m.Step(4, 4, 5 + 1).step_s() + m.Step(4, 4, 5 + 3).step_s();
  EXPECT_NEAR(Row(Replay(plain, m, o), 4, 3).speedup, ar / every, 1e-12);
  // Mixed batching verifies each slot's own drafts.
  o.batching = ChainBatching::kMixed;
  o.batch_sizes = {1};
  EXPECT_NEAR(Row(Replay(a, m, o), 1, 3).throughput,
              3 / (m.Step(1, 4, 5 + 1).step_s() + m.ArStep(1, 5 + 3).step_s()), 1e-9);
}

}  // namespace
}  // namespace specplan::whatif
