// The engine acceptance readers: each format on small inputs written here, detection, pooling,
// TokensPerStep against a hand-computed trace walk, and every refused input.
#include "planner/acceptance/engine_acceptance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace specplan::planner {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kScrape[] =
    "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
    "# TYPE vllm:spec_decode_num_drafts_total counter\n"
    "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 60.0\n"
    "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"m\"} 40.0\n"
    "vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n"
    "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 180.0\n"
    "vllm:spec_decode_num_draft_tokens_total{engine=\"1\",model_name=\"m\"} 120.0\n"
    "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 90.0\n"
    "vllm:spec_decode_num_accepted_tokens_total{engine=\"1\",model_name=\"m\"} 60.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","
    "position=\"0\"} 50.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","
    "position=\"1\"} 30.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","
    "position=\"2\"} 10.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"1\",model_name=\"m\","
    "position=\"0\"} 30.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"1\",model_name=\"m\","
    "position=\"1\"} 20.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"1\",model_name=\"m\","
    "position=\"2\"} 10.0\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0\n";

std::string LogLine(const std::string& mean, int accepted, int drafted, const std::string& rates) {
  return "INFO 08-12 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: " +
         mean + ", Accepted throughput: 12.50 tokens/s, Drafted throughput: 30.00 tokens/s, " +
         "Accepted: " + std::to_string(accepted) + " tokens, Drafted: " + std::to_string(drafted) +
         " tokens, Per-position acceptance rate: " + rates + ", Avg Draft acceptance rate: 50.0%\n";
}

absl::StatusOr<EngineAcceptance> Parse(const std::string& text,
                                       std::optional<AcceptanceFormat> format = std::nullopt,
                                       EngineAcceptanceOptions options = {}) {
  return ParseEngineAcceptance(text, "in.txt", format, options);
}

// A parse's format, draft length and the totals the counter-reporting formats fill.
void ExpectTotals(const EngineAcceptance& a, AcceptanceFormat format, int k_max, int64_t drafts,
                  int64_t draft_tokens, int64_t accepted_tokens) {
  EXPECT_EQ(a.format, format);
  EXPECT_EQ(a.k_max, k_max);
  EXPECT_EQ(a.drafts, drafts);
  EXPECT_EQ(a.draft_tokens, draft_tokens);
  EXPECT_EQ(a.accepted_tokens, accepted_tokens);
}

void ExpectRefused(const std::string& text, const std::string& message,
                   std::optional<AcceptanceFormat> format = std::nullopt,
                   EngineAcceptanceOptions options = {}) {
  auto a = Parse(text, format, options);
  ASSERT_FALSE(a.ok()) << text;
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(a.status().message()), HasSubstr(message));
}

TEST(EngineAcceptanceFormat, NamesRoundTrip) {
  for (AcceptanceFormat f : {AcceptanceFormat::kVllmPrometheus, AcceptanceFormat::kVllmLog,
                             AcceptanceFormat::kVllmRequests, AcceptanceFormat::kSglangLog,
                             AcceptanceFormat::kStepTrace}) {
    auto back = ParseAcceptanceFormat(AcceptanceFormatName(f));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, f);
  }
  EXPECT_STREQ(AcceptanceFormatName(AcceptanceFormat::kVllmPrometheus), "vllm-prometheus");
  EXPECT_STREQ(AcceptanceFormatName(AcceptanceFormat::kStepTrace), "step-trace");
  auto bad = ParseAcceptanceFormat("tgi");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("format: unknown value 'tgi'"));
}

TEST(EngineAcceptancePrometheus, SumsEnginesPerPosition) {
  auto a = Parse(kScrape);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectTotals(*a, AcceptanceFormat::kVllmPrometheus, 3, 100, 300, 150);
  EXPECT_THAT(a->per_position,
              ElementsAre(DoubleNear(0.8, 1e-12), DoubleNear(0.5, 1e-12), DoubleNear(0.2, 1e-12)));
  EXPECT_DOUBLE_EQ(a->mean_acceptance_length, 2.5);
  EXPECT_FALSE(a->has_trace());
  EXPECT_DOUBLE_EQ(a->TokensPerStep(0), 1.0);
  EXPECT_DOUBLE_EQ(a->TokensPerStep(2), 1 + 0.8 + 0.5);
  EXPECT_DOUBLE_EQ(a->TokensPerStep(3), 2.5);
}

TEST(EngineAcceptancePrometheus, UsesTheLastOfSeveralScrapes) {
  const std::string first =
      "vllm:spec_decode_num_drafts_total{engine=\"0\"} 10\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"0\"} 9\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"1\"} 8\n";
  const std::string second =
      "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
      "vllm:spec_decode_num_drafts_total{engine=\"0\"} 20\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"0\"} 10\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"1\"} 8\n";
  auto a = Parse(first + "\n" + second);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->drafts, 20);
  EXPECT_THAT(a->per_position, ElementsAre(DoubleNear(0.5, 1e-12), DoubleNear(0.4, 1e-12)));
  EXPECT_DOUBLE_EQ(a->mean_acceptance_length, 1.9);  // no accepted counter: 1 + sum of rates
}

TEST(EngineAcceptancePrometheus, RefusesDecreasingCounterRisingRatesAndNaN) {
  ExpectRefused(
      "vllm:spec_decode_num_drafts_total{engine=\"0\"} 20\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"0\"} 10\n"
      "\n"
      "vllm:spec_decode_num_drafts_total{engine=\"0\"} 15\n",
      "in.txt:4:47: vllm:spec_decode_num_drafts_total{engine=\"0\"} = 15 is below 20 on line 1: "
      "a counter must not decrease");
  ExpectRefused(
      "vllm:spec_decode_num_drafts_total 100\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 70\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 80\n",
      "in.txt:3:1: vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} = 80 exceeds "
      "position 0's 70: per-position acceptance must not rise with position");
  ExpectRefused(
      "vllm:spec_decode_num_drafts_total 10\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 11\n",
      "= 11 exceeds vllm:spec_decode_num_drafts_total = 10");
  ExpectRefused("vllm:spec_decode_num_drafts_total NaN\n", "in.txt:1:35:");
  ExpectRefused("vllm:spec_decode_num_drafts_total NaN\n", "must be finite");
  ExpectRefused(
      "vllm:spec_decode_num_drafts_total 0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 0\n",
      "no drafts counted");
  ExpectRefused(
      "vllm:spec_decode_num_drafts_total 5\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 0\n",
      "{position=\"0\"}: missing");
  ExpectRefused("# only comments\nvllm:num_requests_running 1\n", "needs",
                AcceptanceFormat::kVllmPrometheus);
}

TEST(EngineAcceptanceVllmLog, PoolsIntervalsWeightedByDrafts) {
  // Interval 1: 100 drafts of 3, rates .9/.6/.3. Interval 2: 300 drafts, rates .5/.2/.1.
  const std::string log = "INFO 08-12 09:59:50 [loggers.py:1] Engine 000: Avg prompt throughput\n" +
                          LogLine("2.80", 180, 300, "0.900, 0.600, 0.300") +
                          LogLine("1.80", 240, 900, "0.500, 0.200, 0.100") +
                          LogLine("nan", 0, 0, "nan, nan, nan");  // no drafts: skipped
  auto a = Parse(log);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectTotals(*a, AcceptanceFormat::kVllmLog, 3, 400, 1200, 420);
  EXPECT_EQ(a->records, 2);
  EXPECT_THAT(a->per_position, ElementsAre(DoubleNear((0.9 * 100 + 0.5 * 300) / 400, 1e-12),
                                           DoubleNear((0.6 * 100 + 0.2 * 300) / 400, 1e-12),
                                           DoubleNear((0.3 * 100 + 0.1 * 300) / 400, 1e-12)));
  EXPECT_NEAR(a->mean_acceptance_length, (2.8 * 100 + 1.8 * 300) / 400, 1e-12);
}

TEST(EngineAcceptanceVllmLog, RefusesBadLines) {
  ExpectRefused("INFO nothing here\nWARNING still nothing\n", "no 'SpecDecoding metrics:' line",
                AcceptanceFormat::kVllmLog);
  ExpectRefused(LogLine("2.00", 10, 30, "0.500, 0.600, 0.100"),
                "Per-position acceptance rate[1] = 0.6 exceeds position 0's 0.5: per-position "
                "acceptance must not rise with position");
  ExpectRefused(LogLine("2.00", 10, 30, "1.500, 0.600, 0.100"),
                "Per-position acceptance rate[0] = 1.5: must be a rate in [0, 1]");
  ExpectRefused(LogLine("2.00", 10, 30, "nan, 0.600, 0.100"),
                "Per-position acceptance rate[0] = nan: must be a rate in [0, 1]");
  // The column points at the offending rate.
  const std::string line = LogLine("2.00", 10, 30, "0.500, 0.600, 0.100");
  const size_t col = line.find("0.600") + 1;
  ExpectRefused(line, "in.txt:1:" + std::to_string(col) + ": Per-position");
  ExpectRefused(LogLine("2.00", 10, 30, "0.5, 0.4") + LogLine("2.00", 10, 30, "0.5, 0.4, 0.1"),
                "one file must come from one draft length");
}

TEST(EngineAcceptanceVllmRequests, ReadsVllmHistogramsAndCounterForm) {
  // Request 1: 10 steps, histogram [2, 3, 1, 4] over k = 3. Request 2 (SSE-wrapped): 10 steps.
  const std::string text =
      "{\"id\":\"a\",\"metrics\":{\"speculative_decoding\":{\"acceptance_histogram\":[2,3,1,4],"
      "\"num_spec_steps\":10,\"num_draft_tokens\":30,\"num_accepted_draft_tokens\":17,"
      "\"num_spec_tokens\":3}}}\n"
      "data: {\"data\":{\"metrics\":{\"speculative_decoding\":{\"acceptance_histogram\":[10,0,0,0],"
      "\"num_spec_steps\":10,\"num_spec_tokens\":3}}}}\n"
      "data: [DONE]\n";
  auto a = Parse(text);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectTotals(*a, AcceptanceFormat::kVllmRequests, 3, 20, 60, 3 + 2 + 12);
  EXPECT_EQ(a->records, 2);
  // >= 1 accepted: 8 of 20; >= 2: 5; >= 3: 4.
  EXPECT_THAT(a->per_position,
              ElementsAre(DoubleNear(0.4, 1e-12), DoubleNear(0.25, 1e-12), DoubleNear(0.2, 1e-12)));
  EXPECT_NEAR(a->mean_acceptance_length, 1.85, 1e-12);

  auto c = Parse(
      "{\"num_drafts\":10,\"num_draft_tokens\":20,\"num_accepted_tokens_per_pos\":[6,3]}\n"
      "{\"num_drafts\":30,\"num_draft_tokens\":60,\"num_accepted_tokens_per_pos\":[10,5],"
      "\"num_accepted_tokens\":15}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->drafts, 40);
  EXPECT_THAT(c->per_position, ElementsAre(DoubleNear(0.4, 1e-12), DoubleNear(0.2, 1e-12)));
  EXPECT_NEAR(c->mean_acceptance_length, 1.6, 1e-12);
}

TEST(EngineAcceptanceVllmRequests, RefusesBadRequests) {
  ExpectRefused(
      "{\"num_drafts\":10,\"num_draft_tokens\":20,\"num_accepted_tokens_per_pos\":[3,6]}\n",
      "num_accepted_tokens_per_pos[1] = 6 exceeds position 0's 3");
  ExpectRefused("{\"num_drafts\":10,\"num_accepted_tokens_per_pos\":[3,2]}\n",
                "in.txt:1:1: num_draft_tokens: missing");
  ExpectRefused(
      "{\"metrics\":{\"speculative_decoding\":{\"acceptance_histogram\":[2,3],"
      "\"num_spec_steps\":4}}}\n",
      "num_spec_steps = 4 but acceptance_histogram sums to 5");
  ExpectRefused("{\"metrics\":{\"speculative_decoding\":{\"acceptance_histogram\":[2,3,",
                "in.txt:1:", AcceptanceFormat::kVllmRequests);
}

TEST(EngineAcceptanceSglangLog, GeometricModelReproducesTheMean) {
  const std::string log =
      "[2025-01-01 10:00:00] Decode batch. #running-req: 1, #token: 120, token usage: 0.01, "
      "accept len: 2.20, gen throughput (token/s): 150.00, #queue-req: 0\n"
      "[2025-01-01 10:00:01] Prefill batch. #new-seq: 1, #new-token: 80\n"
      "[2025-01-01 10:00:02] Decode batch. #running-req: 1, #token: 160, token usage: 0.01, "
      "accept len: 2.60, accept rate: 0.53, gen throughput (token/s): 170.00, #queue-req: 0\n";
  ExpectRefused(log, "accept len alone does not give the draft length; pass k_max");
  EngineAcceptanceOptions options;
  options.k_max = 3;
  auto a = Parse(log, std::nullopt, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->format, AcceptanceFormat::kSglangLog);
  EXPECT_EQ(a->k_max, 3);
  EXPECT_EQ(a->records, 2);
  EXPECT_DOUBLE_EQ(a->mean_acceptance_length, 2.4);
  ASSERT_EQ(a->per_position.size(), 3u);
  const double r = a->per_position[0];
  EXPECT_NEAR(a->per_position[1], r * r, 1e-12);
  EXPECT_NEAR(a->per_position[2], r * r * r, 1e-12);
  EXPECT_NEAR(a->TokensPerStep(3), 2.4, 1e-9);
  ExpectRefused("Decode batch. accept len: 4.50, x\n", "accept len = 4.5: must be in [1, 4]",
                std::nullopt, options);
  ExpectRefused("nothing\n", "no 'accept len:'", AcceptanceFormat::kSglangLog, options);
}

// Two requests; acc_len[0] is the prefill entry.
constexpr char kTrace[] =
    "{\"id\": \"r1\", \"prompt_token_ids\": [1, 2, 3], \"generated_token_ids\": [5, 6], "
    "\"acc_eagle\": {\"acc_len\": [1, 3, 1, 2, 4, 1, 1]}, "
    "\"acc_ngram\": {\"acc_len\": [1, 1, 1, 1, 1, 1, 1]}}\n"
    "{\"id\": \"r2\", \"prompt_token_ids\": [1], \"generated_token_ids\": [], "
    "\"acc_eagle\": {\"acc_len\": [1, 2, 2, 1]}, \"acc_ngram\": {\"acc_len\": [1, 2, 1, 1]}}\n";

TEST(EngineAcceptanceStepTrace, WalksEachRequestCappedAtK) {
  auto a = Parse(kTrace);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->format, AcceptanceFormat::kStepTrace);
  EXPECT_EQ(a->drafter, "acc_eagle");  // the first acc_* key
  ASSERT_EQ(a->requests.size(), 2u);
  EXPECT_EQ(a->requests[0].id, "r1");
  EXPECT_EQ(a->requests[0].prompt_tokens, 3);
  EXPECT_THAT(a->requests[1].acc_len, ElementsAre(1, 2, 2, 1));
  EXPECT_EQ(a->k_max, 3);  // largest acc_len 4 - 1
  // By hand, k = 3: r1 from 1: emits 3 (->4), 4 (->8): 2 steps, 7 tokens. r2 from 1: 2 (->3),
  // 1 (->4): 2 steps, 3 tokens. 10 tokens / 4 steps.
  EXPECT_DOUBLE_EQ(a->TokensPerStep(3), 10.0 / 4);
  EXPECT_DOUBLE_EQ(a->mean_acceptance_length, 10.0 / 4);
  // k = 1: r1: 2 (->3), 1 (->4), 2 (->6), 1 (->7): 4 steps, 6 tokens. r2: 2 (->3), 1 (->4):
  // 2 steps, 3 tokens. 9 / 6.
  EXPECT_DOUBLE_EQ(a->TokensPerStep(1), 9.0 / 6);
  // k = 2: r1: 3 (->4), 3 (->7): 2 steps, 6. r2: 2 (->3), 1 (->4): 2 steps, 3. 9 / 4.
  EXPECT_DOUBLE_EQ(a->TokensPerStep(2), 9.0 / 4);
  EXPECT_DOUBLE_EQ(a->TokensPerStep(0), 1.0);
  // per_position from the k_max walk: accepted drafts per step 2, 3, 1, 0: >= 1: 3 of 4,
  // >= 2: 2, >= 3: 1.
  EXPECT_THAT(a->per_position, ElementsAre(0.75, 0.5, 0.25));
  EXPECT_EQ(a->drafts, 4);
  EXPECT_EQ(a->accepted_tokens, 6);
  // The rates' independence answer differs from the walk at k < k_max.
  EXPECT_DOUBLE_EQ(1 + 0.75, 1.75);
  EXPECT_NE(a->TokensPerStep(1), 1.75);
}

TEST(EngineAcceptanceStepTrace, DrafterKeyPlainFormAndKMax) {
  EngineAcceptanceOptions ngram;
  ngram.drafter = "ngram";
  auto n = Parse(kTrace, std::nullopt, ngram);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->drafter, "acc_ngram");
  EXPECT_EQ(n->k_max, 1);
  // r1: six steps of 1; r2: 2 (->3), 1: 2 steps, 3 tokens. 9 / 8.
  EXPECT_DOUBLE_EQ(n->TokensPerStep(1), 9.0 / 8);

  auto p = Parse("{\"id\": 7, \"prompt_tokens\": 12, \"acc_len\": [1, 3, 1, 2, 4, 1, 1]}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->drafter, "");
  EXPECT_EQ(p->requests[0].id, "7");
  EXPECT_EQ(p->requests[0].prompt_tokens, 12);
  EXPECT_DOUBLE_EQ(p->TokensPerStep(3), 7.0 / 2);

  EngineAcceptanceOptions k2;
  k2.k_max = 2;
  auto c = Parse(kTrace, std::nullopt, k2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->k_max, 2);
  EXPECT_DOUBLE_EQ(c->mean_acceptance_length, 9.0 / 4);

  auto stated = Parse("{\"prompt_tokens\": 1, \"k_max\": 2, \"acc_len\": [1, 3, 2]}\n");
  ASSERT_TRUE(stated.ok()) << stated.status();
  EXPECT_EQ(stated->k_max, 2);
  ExpectRefused("{\"prompt_tokens\": 1, \"k_max\": 2, \"acc_len\": [1, 4, 2]}\n",
                "acc_len[1] = 4 exceeds k_max + 1 = 3");
}

TEST(EngineAcceptanceStepTrace, RefusesBadTraces) {
  // Truncated JSON on line 2: the column is where the text ends.
  const std::string good = "{\"prompt_tokens\": 1, \"acc_len\": [1, 2]}\n";
  const std::string cut = "{\"prompt_tokens\": 1, \"acc_len\": [1, 2";
  ExpectRefused(good + cut, "in.txt:2:" + std::to_string(cut.size() + 1) + ": not valid JSON",
                AcceptanceFormat::kStepTrace);
  ExpectRefused("{\"prompt_tokens\": 1, \"acc_len\": [1, 0, 2]}\n",
                "in.txt:1:22: acc_len[1] = 0: must be an integer >= 1");
  ExpectRefused("{\"prompt_tokens\": 1, \"acc_len\": [1, NaN]}\n", "not valid JSON",
                AcceptanceFormat::kStepTrace);
  ExpectRefused("{\"prompt_tokens\": 1, \"acc_len\": [1, 2.5]}\n", "acc_len[1] = 2.5");
  ExpectRefused("{\"acc_len\": [1, 2]}\n", "in.txt:1:1: prompt_tokens: missing");
  ExpectRefused(
      "{\"prompt_tokens\": 1, \"acc_eagle\": {\"acc_len\": [1, 2]}}\n"
      "{\"prompt_tokens\": 1, \"acc_ngram\": {\"acc_len\": [1, 2]}}\n",
      "in.txt:2:1: acc_eagle: missing (this line's drafters: acc_ngram)");
  EngineAcceptanceOptions medusa;
  medusa.drafter = "medusa";
  ExpectRefused(kTrace, "acc_medusa: missing", std::nullopt, medusa);
  ExpectRefused("{\"prompt_tokens\": 1, \"acc_len\": [1]}\n", "no decoding steps");
}

TEST(EngineAcceptanceDetect, SaysWhatWasTried) {
  ExpectRefused("hello\nworld\n", "cannot tell the acceptance format: tried step-trace");
  EngineAcceptanceOptions eagle;
  eagle.drafter = "eagle";
  ExpectRefused(kScrape, "only a step-trace names drafters", std::nullopt, eagle);
  EngineAcceptanceOptions k5;
  k5.k_max = 5;
  ExpectRefused(kScrape, "k_max = 5 but the source gives 3 draft positions", std::nullopt, k5);
}

TEST(EngineAcceptanceJson, HasTheContractFields) {
  auto a = Parse(kTrace);
  ASSERT_TRUE(a.ok());
  const nlohmann::json j = EngineAcceptanceToJson(*a);
  for (const char* key : {"format", "source", "per_position", "mean_acceptance_length", "k_max",
                          "drafts", "draft_tokens", "accepted_tokens", "requests", "steps"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["format"], "step-trace");
  EXPECT_EQ(j["requests"], 2);
  EXPECT_EQ(j["steps"], 4);
  auto p = Parse(kScrape);
  ASSERT_TRUE(p.ok());
  const nlohmann::json jp = EngineAcceptanceToJson(*p);
  EXPECT_FALSE(jp.contains("steps"));
  EXPECT_EQ(jp["k_max"], 3);
}

}  // namespace
}  // namespace specplan::planner
