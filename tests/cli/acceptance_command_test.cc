// `specplan acceptance`: each format through the built binary, --json, stdin, and refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

// Two requests of a per-step trace (acc_len[0] is the prefill entry).
constexpr char kTrace[] =
    "{\"id\": \"r1\", \"prompt_token_ids\": [1, 2, 3], \"acc_eagle\": {\"acc_len\": [1, 3, 1, 2, "
    "4, "
    "1, 1]}, \"acc_ngram\": {\"acc_len\": [1, 1, 1, 1, 1, 1, 1]}}\n"
    "{\"id\": \"r2\", \"prompt_token_ids\": [1], \"acc_eagle\": {\"acc_len\": [1, 2, 2, 1]}, "
    "\"acc_ngram\": {\"acc_len\": [1, 2, 1, 1]}}\n";

constexpr char kScrape[] =
    "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
    "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 100.0\n"
    "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 200.0\n"
    "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 110.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","
    "position=\"0\"} 70.0\n"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","
    "position=\"1\"} 40.0\n";

TEST(AcceptanceCommand, TraceTextShowsTokensPerStep) {
  const std::string path = WriteTemp("acc_trace.jsonl", kTrace);
  const CommandResult r = ExpectRun("acceptance " + path + " --drafter eagle", 0, "step-trace");
  EXPECT_THAT(r.output, HasSubstr("k_max: 3"));
  EXPECT_THAT(r.output, HasSubstr("drafter: acc_eagle"));
  EXPECT_THAT(r.output, HasSubstr("k=1  1.5000"));  // 9 tokens / 6 steps, by hand
  EXPECT_THAT(r.output, HasSubstr("k=2  2.2500"));
  EXPECT_THAT(r.output, HasSubstr("k=3  2.5000"));
  EXPECT_THAT(r.output, HasSubstr("mean acceptance length: 2.5000"));
}

TEST(AcceptanceCommand, JsonHasTheContractFieldsAndTokensPerStep) {
  const std::string path = WriteTemp("acc_trace2.jsonl", kTrace);
  nlohmann::json j;
  RunJson("acceptance " + path + " --json", &j);
  for (const char* key :
       {"format", "source", "per_position", "mean_acceptance_length", "k_max", "drafts",
        "draft_tokens", "accepted_tokens", "requests", "steps", "tokens_per_step"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["format"], "step-trace");
  ASSERT_EQ(j["tokens_per_step"].size(), 4u);
  EXPECT_DOUBLE_EQ(j["tokens_per_step"][0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["tokens_per_step"][3].get<double>(), 2.5);
  EXPECT_EQ(j["requests"], 2);
}

// Reads `path` with `acceptance <path><flags> --json`, checks the format it was read as and
// returns the JSON.
nlohmann::json ReadAs(const std::string& format, const std::string& path,
                      const std::string& flags = "") {
  nlohmann::json j;
  RunJson("acceptance " + path + flags + " --json", &j);
  EXPECT_EQ(j["format"], format) << path;
  return j;
}

TEST(AcceptanceCommand, ReadsEveryFormat) {
  const nlohmann::json scrape = ReadAs("vllm-prometheus", WriteTemp("acc_metrics.txt", kScrape));
  EXPECT_DOUBLE_EQ(scrape["per_position"][1].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(scrape["tokens_per_step"][2].get<double>(), 2.1);

  const nlohmann::json log = ReadAs(
      "vllm-log",
      WriteTemp(
          "acc_vllm.log",
          "INFO 08-12 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.10, "
          "Accepted throughput: 5.00 tokens/s, Drafted throughput: 10.00 tokens/s, Accepted: 110 "
          "tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.700, 0.400, Avg Draft "
          "acceptance rate: 55.0%\n"),
      " --format vllm-log");
  EXPECT_EQ(log["drafts"], 100);

  const nlohmann::json requests = ReadAs(
      "vllm-requests",
      WriteTemp("acc_requests.jsonl",
                "{\"metrics\": {\"speculative_decoding\": {\"acceptance_histogram\": [3, 1, 6], "
                "\"num_spec_steps\": 10, \"num_spec_tokens\": 2}}}\n"));
  EXPECT_DOUBLE_EQ(requests["per_position"][0].get<double>(), 0.7);

  const std::string sglang =
      WriteTemp("acc_sglang.log",
                "[2025-01-01 10:00:00] Decode batch. #running-req: 1, #token: 99, token usage: "
                "0.01, accept len: 2.00, gen throughput (token/s): 90.00, #queue-req: 0\n");
  const nlohmann::json sglang_json = ReadAs("sglang-log", sglang, " --k-max 2");
  EXPECT_NEAR(sglang_json["tokens_per_step"][2].get<double>(), 2.0, 1e-9);
  ExpectRun("acceptance " + sglang + " --k-max 2", 0, "geometric model");
}

TEST(AcceptanceCommand, ReadsStdin) {
  const std::string path = WriteTemp("acc_stdin.txt", kScrape);
  const CommandResult r = RunBinary("cat " + path + " | " + SpecplanBinary(), "acceptance -");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("source: <stdin>"));
}

TEST(AcceptanceCommand, RefusesBadInput) {
  const std::string cut = WriteTemp("acc_cut.jsonl", "{\"prompt_tokens\": 1, \"acc_len\": [1, 2");
  const std::string zero =
      WriteTemp("acc_zero.jsonl", "{\"prompt_tokens\": 1, \"acc_len\": [1, 0]}\n");
  const std::string rising =
      WriteTemp("acc_rising.txt",
                "vllm:spec_decode_num_drafts_total 100\n"
                "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 70\n"
                "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 80\n");
  const std::string plain = WriteTemp("acc_plain.log", "INFO nothing to see\n");
  ExpectRefused({
      {"acceptance " + cut + " --format step-trace",
       cut + ":1:38: not valid JSON: syntax error while parsing array - unexpected end of input", 1,
       ""},
      {"acceptance " + cut, cut + ":1:38: not valid JSON", 1, ""},  // detected, then refused
      {"acceptance " + zero, "acc_len[1] = 0: must be an integer >= 1", 1, ""},
      {"acceptance " + rising, "per-position acceptance must not rise with position", 1, ""},
      {"acceptance " + plain + " --format vllm-log", "no 'SpecDecoding metrics:' line", 1, ""},
      {"acceptance " + plain, "cannot tell the acceptance format", 1, ""},
      {"acceptance " + plain + " --format tgi", "--format: unknown value 'tgi'", 1, ""},
      {"acceptance /nonexistent/acc.txt", "/nonexistent/acc.txt: no such file", 1, ""},
  });
}

}  // namespace
}  // namespace specplan
