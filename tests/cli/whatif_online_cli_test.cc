// `specplan whatif --online` through the built binary: a trace and rates, JSON, the engine's
// limits as flags, and refusals that name the flag and value and print nothing else.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

constexpr char kCost[] = " --model llama-3.1-8b --gpu h100 --engine vllm";

constexpr char kVllmLog[] =
    "INFO 08-12 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.85, "
    "Accepted throughput: 5.00 tokens/s, Drafted throughput: 10.00 tokens/s, Accepted: 1850 "
    "tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.800, 0.600, 0.450, Avg Draft "
    "acceptance rate: 61.7%\n";

TEST(WhatIfOnlineCli, TraceReplayJsonHasEveryLoadAndSetting) {
  const std::string trace = WriteTemp("online_trace.jsonl", kTwoRequestStepTrace);
  nlohmann::json j;
  RunJson(std::string("whatif --online") + kCost + " --acceptance " + trace +
              " --rates 1,4 --num-prompts 20 --chains 0,2 --json",
          &j);
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["requests_from"], "trace");
  EXPECT_EQ(j["scheduler_engine"], "vllm");
  EXPECT_EQ(j["limits"]["max_running"], 1024);  // vLLM's default on an 80 GB GPU
  EXPECT_EQ(j["limits"]["token_budget"], 8192);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_EQ(row["requests"], 20);
    EXPECT_GT(row["throughput"].get<double>(), 0);
    EXPECT_GT(row["ttft"]["p50_ms"].get<double>(), 0);
    EXPECT_LE(row["ttft"]["p50_ms"].get<double>(), row["ttft"]["p99_ms"].get<double>());
  }
  // Chains of 2 emit more tokens per step than plain decoding.
  EXPECT_GT(j["rows"][1]["tokens_per_step"].get<double>(),
            j["rows"][0]["tokens_per_step"].get<double>());
}

TEST(WhatIfOnlineCli, RatesWithLengthsAndEngineLimits) {
  const std::string log = WriteTemp("online_vllm.log", kVllmLog);
  const CommandResult r =
      ExpectRun(std::string("whatif --online") + kCost + " --acceptance " + log +
                    " --prompt-tokens 100:200 --output-tokens 50 --num-prompts 50"
                    " --max-concurrency 8 --max-num-seqs 4 --max-num-batched-tokens 512"
                    " --kv-cache-tokens 100000 --chains 0,3",
                0, "online replay: 50 requests per load");
  EXPECT_THAT(r.output, HasSubstr("token budget 512"));
  EXPECT_THAT(r.output, HasSubstr("KV cache 100000 tokens"));
  EXPECT_THAT(r.output, HasSubstr("     N=8   3       4"));
}

// SLOs give each row its goodput and each load its best setting; --plot draws the curves.
TEST(WhatIfOnlineCli, SlosGoodputAndPlot) {
  const std::string log = WriteTemp("online_vllm3.log", kVllmLog);
  const std::string base = std::string("whatif --online") + kCost + " --acceptance " + log +
                           " --prompt-tokens 256 --output-tokens 128 --num-prompts 100" +
                           " --rates 4,64 --chains 0,3 --slo-tpot-ms 10";
  nlohmann::json j;
  RunJson(base + " --json", &j);
  EXPECT_DOUBLE_EQ(j["slo"]["tpot_s"].get<double>(), 0.010);
  ASSERT_EQ(j["best_k"].size(), 2u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_LE(row["goodput"].get<double>(), row["throughput"].get<double>() * (1 + 1e-12));
    EXPECT_LE(row["slo_met"].get<int64_t>(), row["requests"].get<int64_t>());
  }
  // At 4 requests/s every request meets a 10 ms TPOT; chains of 3 are the best setting there.
  EXPECT_EQ(j["rows"][0]["slo_met"], 100);
  EXPECT_EQ(j["best_k"][0], 3);
  const std::string png = ::testing::TempDir() + "/online_plot.png";
  if (!ExpectPlotWritten(base, png)) GTEST_SKIP() << "built without PLplot";
}

// The engine's limits apply to --concurrency --prefill too (the copies are served by the same
// engine model): one running request at a time serves the 8 copies one after another, which
// changes the speedup; without --prefill (or --online) they are refused.
TEST(WhatIfOnlineCli, EngineLimitsApplyWithPrefill) {
  const std::string trace = WriteTemp("prefill_trace.jsonl", kTwoRequestStepTrace);
  const std::string base = std::string("whatif") + kCost + " --acceptance " + trace +
                           " --concurrency 8 --chains 2 --batching copies --prefill --json";
  nlohmann::json defaults, one;
  RunJson(base, &defaults);
  RunJson(base + " --max-num-seqs 1", &one);
  ASSERT_EQ(defaults["rows"].size(), one["rows"].size());
  const double a = defaults["rows"].back()["speedup"].get<double>();
  const double b = one["rows"].back()["speedup"].get<double>();
  EXPECT_NE(a, b);
  ExpectRefused({
      Refused(std::string("whatif") + kCost + " --acceptance " + trace +
                  " --concurrency 8 --max-num-seqs 1",
              "--max-num-seqs applies only with --online or --prefill"),
      Refused(base + " --max-num-batched-tokens 0", "--max-num-batched-tokens 0: must be in"),
  });
}

TEST(WhatIfOnlineCli, BadInputNamesTheFlagAndWritesNothing) {
  const std::string trace = WriteTemp("online_trace2.jsonl", kTwoRequestStepTrace);
  const std::string no_prompt = WriteTemp(
      "online_noprompt.jsonl", "{\"id\": \"z\", \"prompt_tokens\": 0, \"acc_len\": [1, 2, 1]}\n");
  const std::string log = WriteTemp("online_vllm2.log", kVllmLog);
  const std::string base = std::string("whatif --online") + kCost + " --acceptance ";
  ExpectRefused({
      Refused(base + trace + " --rates 1,0", "--rates [1] = 0: must be > 0 requests/s"),
      Refused(base + trace + " --rates -3", "--rates [0] = -3"),
      Refused(base + trace + " --rates x", "--rates \"x\" is not a number"),
      Refused(base + no_prompt + " --rates 1",
              "--acceptance: request 'z' of " + no_prompt + " has prompt_tokens = 0"),
      Refused(base + trace + " --rates 1 --kv-cache-tokens 12",
              "--kv-cache-tokens 12: request 0 needs"),
      Refused(base + trace + " --rates 1 --no-enable-chunked-prefill --max-num-batched-tokens 8",
              "--max-num-batched-tokens 8: without chunked prefill"),
      Refused(base + trace + " --rates 1 --chains 0,5", "--chains: K = 5 must be in [0, 3]"),
      Refused(base + log + " --rates 1", "--prompt-tokens: not given"),
      Refused(base + trace, "needs one of --rates LIST"),
      Refused(std::string("whatif --online") + kCost + " --rates 1", "needs --acceptance"),
      Refused(std::string("whatif") + kCost + " --rates 1", "--rates applies only with --online"),
      Refused(std::string("whatif") + kCost + " --slo-ttft-ms 100",
              "--slo-ttft-ms applies only with --online"),
  });
  // CLI11 refuses a NaN limit while parsing (its exit code for a validation error).
  ExpectRun(base + trace + " --rates 1 --slo-tpot-ms nan", 105,
            "--slo-tpot-ms: value = nan: must be in [0, 10000] (ms)");
  // Refused: nothing on stdout but the one error line.
  const CommandResult r = RunSpecplan(base + trace + " --rates 0 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.find('{'), std::string::npos) << r.output;
}

}  // namespace
}  // namespace specplan
