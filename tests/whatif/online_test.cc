// The online replay (whatif/online.h) on streams small enough to work out by hand: fixed step and
// prefill costs through the pricer seam, constant arrivals at a rate, a token budget.
#include "whatif/online.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace specplan::whatif {
namespace {

using ::testing::HasSubstr;

// Every step costs step_s, plus per_prefill_token_s per prefill token it carries.
class FixedPricer : public OnlineStepPricer {
 public:
  FixedPricer(double step_s, double per_prefill_token_s)
      : step_s_(step_s), per_prefill_(per_prefill_token_s) {}
  double StepSeconds(const costmodel::BatchShape& decode, const costmodel::BatchShape& prefill,
                     int k) const override {
    (void)decode;
    (void)k;
    return step_s_ + per_prefill_ * prefill.totals().tokens;
  }

 private:
  double step_s_, per_prefill_;
};

OnlineRequest Req(int64_t prompt, int64_t output, int source) {
  OnlineRequest r;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  r.source = source;
  return r;
}

planner::AcceptanceTraceRequest Trace(std::vector<int32_t> acc) {
  planner::AcceptanceTraceRequest t;
  t.prompt_tokens = 4;
  t.acc_len = std::move(acc);
  return t;
}

EngineLimits Limits(int max_running, int64_t budget) {
  EngineLimits l;
  l.scheduler = SchedulerKind::kMixed;
  l.max_running = max_running;
  l.token_budget = budget;
  l.chunked_prefill = true;
  l.kv_cache_tokens = 1 << 20;
  return l;
}

// The two-request stream of the hand-worked tests below: A (prompt 4, output 5, trace 0) and B
// (prompt 4, output 3, trace 1), arriving evenly at 50 requests/s (B at 20 ms), at most 4 running
// and a budget of 6 tokens per step, for the settings `chains`.
std::vector<OnlineRequest> TwoRequests() { return {Req(4, 5, 0), Req(4, 3, 1)}; }
OnlineOptions TwoRequestOptions(std::vector<int> chains) {
  OnlineOptions o;
  o.chain_lengths = std::move(chains);
  o.limits = Limits(4, 6);
  o.arrivals.rates = {50};
  o.arrivals.constant = true;
  return o;
}

// Two requests, 50 requests/s (B arrives at 20 ms), chains of K = 2, a budget of 6 tokens per
// step, steps of 10 ms + 1 ms per prefill token.
//   A: prompt 4, output 5, acc_len [1, 3, 1, 2, 1];  B: prompt 4, output 3, acc_len [1, 2, 1].
//   step 1  0 - 14 ms   prefill A (4)                  A's first token at 14
//   step 2 14 - 24      A verifies 3, emits 3 (g = 4)  (B not yet arrived)
//   step 3 24 - 37      A verifies 3 (budget 6 -> 3), emits acc_len[4] = 1: A done at 37;
//                       B admitted, chunk of 3 of its 4 prompt tokens
//   step 4 37 - 48      B's last prompt token          B's first token at 48
//   step 5 48 - 58      B verifies 3, emits min(2, 3 - 1) = 2: B done at 58
// TTFT A 14, B 28; TPOT A (37 - 14) / 4 = 5.75, B (58 - 48) / 2 = 5; E2E A 37, B 38;
// ITL A {10, 13}, B {10}; throughput 8 tokens / 58 ms.
TEST(OnlineTest, HandWorkedStreamWithTokenBudget) {
  OnlineWorkload w;
  w.traces = {Trace({1, 3, 1, 2, 1}), Trace({1, 2, 1})};
  const std::vector<OnlineRequest> reqs = TwoRequests();
  OnlineOptions o = TwoRequestOptions({2});
  const FixedPricer pricer(0.010, 0.001);
  auto r = RunOnline(reqs, w, pricer, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 1u);
  const OnlineRow& x = r->rows[0];
  EXPECT_EQ(x.requests, 2);
  EXPECT_EQ(x.steps, 5);
  EXPECT_NEAR(x.duration_s, 0.058, 1e-12);
  EXPECT_NEAR(x.throughput, 8 / 0.058, 1e-9);
  EXPECT_NEAR(x.request_throughput, 2 / 0.058, 1e-9);
  // Nearest rank over two samples: p50 the smaller, p90 and p99 the larger.
  EXPECT_NEAR(x.ttft.p50, 0.014, 1e-12);
  EXPECT_NEAR(x.ttft.p99, 0.028, 1e-12);
  EXPECT_NEAR(x.ttft.mean, 0.021, 1e-12);
  EXPECT_NEAR(x.tpot.p50, 0.005, 1e-12);
  EXPECT_NEAR(x.tpot.p90, 0.00575, 1e-12);
  EXPECT_NEAR(x.e2e.p50, 0.037, 1e-12);
  EXPECT_NEAR(x.e2e.p99, 0.038, 1e-12);
  EXPECT_EQ(x.itl.count, 3);
  EXPECT_NEAR(x.itl.mean, 0.011, 1e-12);
  EXPECT_NEAR(x.itl.p99, 0.013, 1e-12);
  // Decode request-steps: A 3 + 1, B 2: 6 tokens over 3 request-steps.
  EXPECT_NEAR(x.tokens_per_step, 2.0, 1e-12);
  EXPECT_EQ(x.preemptions, 0);
}

// SLOs on the stream above (TTFT A 14 ms, B 28 ms; TPOT A 5.75 ms, B 5 ms): a TTFT limit of 20 ms
// leaves A (5 tokens), a TPOT limit of 5.5 ms leaves B (3 tokens), both leave none; goodput is
// their tokens over the run's 58 ms.
TEST(OnlineTest, GoodputCountsTheRequestsThatMeetTheSlos) {
  OnlineWorkload w;
  w.traces = {Trace({1, 3, 1, 2, 1}), Trace({1, 2, 1})};
  const std::vector<OnlineRequest> reqs = TwoRequests();
  OnlineOptions o = TwoRequestOptions({2});
  const FixedPricer pricer(0.010, 0.001);
  struct Case {
    double ttft_s, tpot_s;
    int64_t met;
    double tokens;
  };
  for (const Case& c :
       {Case{0, 0, 2, 8}, Case{0.020, 0, 1, 5}, Case{0, 0.0055, 1, 3}, Case{0.020, 0.0055, 0, 0}}) {
    SCOPED_TRACE(testing::Message() << "TTFT <= " << c.ttft_s << ", TPOT <= " << c.tpot_s);
    o.slo.ttft_s = c.ttft_s;
    o.slo.tpot_s = c.tpot_s;
    auto r = RunOnline(reqs, w, pricer, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->rows[0].slo_met, c.met);
    EXPECT_NEAR(r->rows[0].goodput, c.tokens / 0.058, 1e-9);
  }
  o.slo.tpot_s = -1;
  auto bad = RunOnline(reqs, w, pricer, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("slo.tpot_s = -1: must be >= 0"));
}

// Per load, the best setting is the one with the highest goodput: with a TTFT limit only plain
// decoding meets (its B waits less: 18 ms against 28), so K = 0 wins though K = 2 is as fast.
TEST(OnlineTest, BestSettingPerLoadIsTheHighestGoodput) {
  OnlineWorkload w;
  w.traces = {Trace({1, 3, 1, 2, 1}), Trace({1, 2, 1})};
  const std::vector<OnlineRequest> reqs = TwoRequests();
  OnlineOptions o = TwoRequestOptions({0, 2});
  o.slo.ttft_s = 0.020;
  auto r = RunOnline(reqs, w, FixedPricer(0.010, 0.001), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->best_k.size(), 1u);
  EXPECT_EQ(r->rows[0].slo_met, 2);
  EXPECT_EQ(r->rows[1].slo_met, 1);
  EXPECT_EQ(r->best_k[0], 0);
  EXPECT_THAT(FormatOnlineTable(*r),
              HasSubstr("50/s: best K = 0 (highest goodput under the SLOs)"));
}

// RankSettings over rows merged from several replays (as SGLang's plain and speculative rows are,
// under their own running limits): per load, the highest goodput, the smaller K on ties.
TEST(OnlineTest, RankSettingsPerLoadOverMergedRows) {
  OnlineReport r;
  auto row = [](double rate, int k, double goodput) {
    OnlineRow x;
    x.rate = rate;
    x.k = k;
    x.goodput = goodput;
    return x;
  };
  r.rows = {row(8, 0, 100), row(8, 3, 120), row(32, 0, 500), row(32, 2, 500), row(32, 3, 400)};
  r.best_k = {0, 0};  // stale: from one of the replays
  RankSettings(&r);
  EXPECT_THAT(r.best_k, ::testing::ElementsAre(3, 0));
}

// The same stream with plain decoding: every decode step emits one token, so with the budget of 6
// A takes 1 token and B's whole prompt (4) fits beside it.
//   step 1  0 - 14  prefill A;  2 14 - 24  A g = 2
//   step 3 24 - 38  A g = 3, B's prompt                 B's first token at 38
//   step 4 38 - 48  A g = 4, B g = 2
//   step 5 48 - 58  A g = 5 done, B g = 3 done
TEST(OnlineTest, HandWorkedStreamPlainDecoding) {
  OnlineWorkload w;
  w.traces = {Trace({1, 3, 1, 2, 1}), Trace({1, 2, 1})};
  const std::vector<OnlineRequest> reqs = TwoRequests();
  OnlineOptions o = TwoRequestOptions({0});
  auto r = RunOnline(reqs, w, FixedPricer(0.010, 0.001), o);
  ASSERT_TRUE(r.ok()) << r.status();
  const OnlineRow& x = r->rows[0];
  EXPECT_EQ(x.steps, 5);
  EXPECT_NEAR(x.duration_s, 0.058, 1e-12);
  EXPECT_NEAR(x.ttft.p50, 0.014, 1e-12);  // A
  EXPECT_NEAR(x.ttft.p99, 0.018, 1e-12);  // B: 38 - 20
  EXPECT_NEAR(x.tpot.p90, (0.058 - 0.014) / 4, 1e-12);
  EXPECT_NEAR(x.tokens_per_step, 1.0, 1e-12);
}

// The stream of HandWorkedStreamWithTokenBudget with chains of 2, where the traces' drafter (an
// n-gram matcher, AcceptanceTraceRequest::draft_room) finds no match anywhere: every decode step
// verifies one token, so with the budget of 6 the run is the plain one step for step (B's whole
// prompt fits beside A in step 3: TTFT 18 ms).
TEST(OnlineTest, PositionsWithoutADraftVerifyOneToken) {
  OnlineWorkload w;
  w.traces = {Trace({1, 1, 1, 1, 1}), Trace({1, 1, 1})};
  w.traces[0].draft_room.assign(5, 0);
  w.traces[1].draft_room.assign(3, 0);
  w.trace_k_max = 2;
  const std::vector<OnlineRequest> reqs = TwoRequests();
  OnlineOptions o = TwoRequestOptions({2});
  auto r = RunOnline(reqs, w, FixedPricer(0.010, 0.001), o);
  ASSERT_TRUE(r.ok()) << r.status();
  const OnlineRow& x = r->rows[0];
  EXPECT_EQ(x.steps, 5);
  EXPECT_NEAR(x.duration_s, 0.058, 1e-12);
  EXPECT_NEAR(x.ttft.p99, 0.018, 1e-12);
  EXPECT_NEAR(x.tokens_per_step, 1.0, 1e-12);
}

// Three requests arriving 1 ms apart (1000/s), prompt 2, output 3, plain decoding, steps of
// 10 ms + 1 ms per prefill token. With one running request at a time each waits for the one
// before: A 0-12 prefill, 22, 32 done; B admitted at 32: first token 44 (TTFT 43), done 64;
// C admitted at 64: first token 76 (TTFT 74), done 96. With three running: A prefill 0-12;
// step 12-26 A decodes, B and C prefill (4 tokens); 26-36 all decode (A done); 36-46 B, C done.
TEST(OnlineTest, RunningRequestLimitQueues) {
  OnlineWorkload w;
  w.rates = {0.5};
  const std::vector<OnlineRequest> reqs = {Req(2, 3, -1), Req(2, 3, -1), Req(2, 3, -1)};
  OnlineOptions o;
  o.chain_lengths = {0};
  o.arrivals.rates = {1000};
  o.arrivals.constant = true;
  const FixedPricer pricer(0.010, 0.001);

  o.limits = Limits(1, 64);
  auto one = RunOnline(reqs, w, pricer, o);
  ASSERT_TRUE(one.ok()) << one.status();
  const OnlineRow& a = one->rows[0];
  EXPECT_EQ(a.steps, 9);
  EXPECT_NEAR(a.duration_s, 0.096, 1e-12);
  EXPECT_NEAR(a.ttft.p50, 0.043, 1e-12);
  EXPECT_NEAR(a.ttft.p99, 0.074, 1e-12);
  EXPECT_NEAR(a.e2e.p99, 0.094, 1e-12);
  EXPECT_NEAR(a.mean_running, 1.0, 1e-12);

  o.limits = Limits(3, 64);
  auto three = RunOnline(reqs, w, pricer, o);
  ASSERT_TRUE(three.ok()) << three.status();
  const OnlineRow& b = three->rows[0];
  EXPECT_EQ(b.steps, 4);
  EXPECT_NEAR(b.duration_s, 0.046, 1e-12);
  EXPECT_NEAR(b.ttft.p50, 0.024, 1e-12);  // C: 26 - 2
  EXPECT_NEAR(b.ttft.p99, 0.025, 1e-12);  // B: 26 - 1
  EXPECT_NEAR(b.e2e.p99, 0.045, 1e-12);   // B: 46 - 1
}

// A KV cache that holds one request's prompt + output but not two decoding ones: the most
// recently admitted request is preempted and re-prefilled, and every request still finishes.
TEST(OnlineTest, KvCacheShortfallPreemptsAndRecomputes) {
  OnlineWorkload w;
  w.rates = {0.5};
  const std::vector<OnlineRequest> reqs = {Req(4, 6, -1), Req(4, 6, -1)};
  OnlineOptions o;
  o.chain_lengths = {0};
  o.arrivals.in_flight = 2;
  o.limits = Limits(8, 64);
  o.limits.kv_cache_tokens = 13;  // each needs 10; both prefilled (8) fit, both decoding do not
  auto r = RunOnline(reqs, w, FixedPricer(0.010, 0.001), o);
  ASSERT_TRUE(r.ok()) << r.status();
  const OnlineRow& x = r->rows[0];
  EXPECT_EQ(x.requests, 2);
  EXPECT_GE(x.preemptions, 1);
  EXPECT_EQ(x.output_tokens, 12);
  // With room for both, nothing is preempted.
  o.limits.kv_cache_tokens = 64;
  auto roomy = RunOnline(reqs, w, FixedPricer(0.010, 0.001), o);
  ASSERT_TRUE(roomy.ok());
  EXPECT_EQ(roomy->rows[0].preemptions, 0);
  EXPECT_LT(roomy->rows[0].duration_s, x.duration_s);
}

// SGLang's scheduler: a step prefills or decodes, never both.
TEST(OnlineTest, SeparateSchedulerDoesNotMixPrefillWithDecode) {
  OnlineWorkload w;
  w.traces = {Trace({1, 3, 1, 2, 1}), Trace({1, 2, 1})};
  const std::vector<OnlineRequest> reqs = {Req(4, 5, 0), Req(4, 3, 1)};
  OnlineOptions o;
  o.chain_lengths = {2};
  o.limits = Limits(4, 6);
  o.limits.scheduler = SchedulerKind::kSeparate;
  o.arrivals.rates = {50};
  o.arrivals.constant = true;
  // 0-14 prefill A; 14-24 A g4; 24-38 prefill B (arrived at 20); 38-48 A done, B g = 3 done.
  auto r = RunOnline(reqs, w, FixedPricer(0.010, 0.001), o);
  ASSERT_TRUE(r.ok()) << r.status();
  const OnlineRow& x = r->rows[0];
  EXPECT_EQ(x.steps, 4);
  EXPECT_NEAR(x.duration_s, 0.048, 1e-12);
  EXPECT_NEAR(x.ttft.p99, 0.018, 1e-12);  // B: 38 - 20
  EXPECT_NEAR(x.e2e.p99, 0.048, 1e-12);   // A: 48 - 0
}

TEST(OnlineTest, BadInputNamesFieldAndValue) {
  OnlineWorkload w;
  w.rates = {0.5};
  const std::vector<OnlineRequest> reqs = {Req(100, 20, -1)};
  OnlineOptions o;
  o.chain_lengths = {0, 1};
  o.limits = Limits(4, 64);
  const FixedPricer pricer(0.01, 0);

  o.arrivals.rates = {1, 0};
  auto r = RunOnline(reqs, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("rates[1] = 0: must be > 0"));
  o.arrivals.rates = {-2};
  r = RunOnline(reqs, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("rates[0] = -2"));

  o.arrivals.rates = {1};
  o.limits.kv_cache_tokens = 100;
  r = RunOnline(reqs, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("kv_cache_tokens = 100: request 0 needs 121 tokens"));
  o.limits = Limits(0, 64);
  r = RunOnline(reqs, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("max_running = 0"));
  o.limits = Limits(4, 64);
  o.limits.chunked_prefill = false;
  r = RunOnline(reqs, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("token_budget = 64: without chunked"));

  o.limits = Limits(4, 64);
  std::vector<OnlineRequest> no_prompt = {Req(0, 20, -1)};
  r = RunOnline(no_prompt, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("requests[0].prompt_tokens = 0"));

  o.chain_lengths = {2};
  r = RunOnline(reqs, w, pricer, o);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("K = 2 must be in [0, 1]"));
}

TEST(OnlineTest, RatesDrawsAreSeededAndMatchTheRates) {
  // One long request, chains of 1 at rate 0.75: tokens per step ~ 1.75.
  OnlineWorkload w;
  w.rates = {0.75};
  w.seed = 7;
  const std::vector<OnlineRequest> reqs = {Req(1, 20001, -1)};
  OnlineOptions o;
  o.chain_lengths = {1};
  o.limits = Limits(4, 64);
  o.limits.kv_cache_tokens = 1 << 20;
  o.arrivals.in_flight = 1;
  auto r = RunOnline(reqs, w, FixedPricer(0.01, 0), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->rows[0].tokens_per_step, 1.75, 0.02);
  auto again = RunOnline(reqs, w, FixedPricer(0.01, 0), o);
  EXPECT_EQ(again->rows[0].steps, r->rows[0].steps);
  const nlohmann::json j = OnlineReportToJson(*r);
  EXPECT_EQ(j["rows"][0]["k"], 1);
  EXPECT_EQ(j["limits"]["scheduler"], "mixed");
}

TEST(OnlineTest, EngineDefaultsAreTheEnginesOwn) {
  const double h100 = 80e9;
  EngineLimits v = DefaultEngineLimits("vllm", h100, true);
  EXPECT_EQ(v.max_running, 1024);
  EXPECT_EQ(v.token_budget, 8192);
  EXPECT_EQ(v.scheduler, SchedulerKind::kMixed);
  EngineLimits small = DefaultEngineLimits("vllm", 24e9, true);
  EXPECT_EQ(small.max_running, 256);
  EXPECT_EQ(small.token_budget, 2048);
  EngineLimits s = DefaultEngineLimits("sglang", h100, true);
  EXPECT_EQ(s.max_running, 48);
  EXPECT_EQ(s.token_budget, 8192);
  EXPECT_EQ(s.scheduler, SchedulerKind::kSeparate);
}

}  // namespace
}  // namespace specplan::whatif

namespace specplan::whatif {
namespace {

// Two copies of A (prompt 4, output 5, acc_len [1, 3, 1, 2, 1]) arriving together, K = 2, a budget
// of 6 tokens, steps of 10 ms + 1 ms per prefill token:
//   0 - 16   copy 1's prompt (4) and 2 of copy 2's        copy 1's first token
//   16 - 28  copy 1 verifies 3 (g = 4); copy 2's last 2    copy 2's first token
//   28 - 38  copy 1 emits 1: done; copy 2 emits 3 (g = 4)
//   38 - 48  copy 2 emits 1: done
TEST(OnlineTest, CopiesSecondsCountsThePrefill) {
  planner::AcceptanceTraceRequest a;
  a.prompt_tokens = 4;
  a.acc_len = {1, 3, 1, 2, 1};
  EngineLimits l;
  l.max_running = 8;
  l.token_budget = 6;
  l.kv_cache_tokens = 1000;
  class Fixed : public OnlineStepPricer {
   public:
    double StepSeconds(const costmodel::BatchShape&, const costmodel::BatchShape& prefill,
                       int) const override {
      return 0.010 + 0.001 * prefill.totals().tokens;
    }
  } pricer;
  auto t = CopiesSeconds(a, 2, 2, pricer, l);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(*t, 0.048, 1e-12);
}

}  // namespace
}  // namespace specplan::whatif
