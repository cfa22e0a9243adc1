// `specplan whatif --concurrency LIST|recorded` (cli/whatif_concurrency.cc) run as a real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

const std::string kTrace = SourcePath("tests/whatif/data/small.jsonl");
// Pinned to the runtime-measured profile (engine-grade profiles are the default when shipped).
const std::string kBase = "whatif --model qwen3-8b --gpu h100 --engine specplan --t-draft-ms 1 ";

TEST(WhatIfConcurrencyCommand, TableHasEveryStrategyAndTheStopLine) {
  auto r = RunSpecplan(kBase + "--concurrency 1,4,64");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* s :
       {"qwen3-8b on h100", "profile h100-sxm/qwen3-8b-bf16", "248 steps (248 with marginals",
        "batch growth 0.02", "ar", "fixed", "controller", "batch", "speculation ", "tokens/s"}) {
    EXPECT_THAT(r.output, HasSubstr(s));
  }
}

// The bundled trace was recorded from a --batch 4 run (8 prompts x 32 tokens: every pass full):
// `recorded` replays its passes.
TEST(WhatIfConcurrencyCommand, RecordedReplaysTheBundledTracesPasses) {
  auto r = RunSpecplan(kBase + "--concurrency recorded");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("replayed in the 62 recorded passes"));
  EXPECT_THAT(r.output, HasSubstr("  rec  batch"));
  EXPECT_THAT(r.output, HasSubstr("recorded batches (62 passes, mean B = 4.00)"));
  auto j = RunSpecplan(kBase + "--concurrency recorded --json");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  const nlohmann::json report = nlohmann::json::parse(j.output);
  EXPECT_EQ(report.at("interleaving"), "recorded");
  EXPECT_EQ(report.at("recorded").at("passes"), 62);
  EXPECT_EQ(report.at("rows").size(), 4u);
  // A trace without passes, and --plot, are refused by name.
  ExpectRefused({
      {kBase + "--concurrency recorded --trace " + kTrace, "has no \"pass\"", kAnyFailure},
      {kBase + "--concurrency recorded --plot /tmp/never.png",
       "--plot does not apply with --concurrency recorded", kAnyFailure},
  });
}

TEST(WhatIfConcurrencyCommand, BadValuesNameTheFlag) {
  ExpectRefused({
      {kBase + "--concurrency 1,0", "--concurrency: \"0\" must be a positive integer"},
      {kBase + "--concurrency 1,abc", "--concurrency: \"abc\" must be a positive integer"},
      {kBase + "--concurrency 9999", "--concurrency: \"9999\" must be at most 4096"},
      {kBase + "--concurrency 2 --draft-batch-growth -1", "--draft-batch-growth", kAnyFailure},
      {kBase + "--budgets 1,2 --draft-batch-growth 0.1",
       "--draft-batch-growth applies only with --concurrency"},
      {kBase + "--budgets 1,2 --batch-scan", "--batch-scan applies only with --concurrency"},
      {kBase + "--concurrency 2 --strategies best_first",
       "--strategies does not apply with --concurrency"},
  });
}

TEST(WhatIfConcurrencyCommand, JsonParsesAndStopPointMatchesRows) {
  auto r = RunSpecplan(kBase + "--concurrency 256,1,16 --n-max 32 --draft-batch-growth 0.1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["model"], "qwen3-8b");
  EXPECT_EQ(j["options"]["concurrency"], nlohmann::json({1, 16, 256}));
  EXPECT_EQ(j["options"]["n_max"], 32);
  EXPECT_DOUBLE_EQ(j["options"]["drafter"]["batch_growth"].get<double>(), 0.1);
  EXPECT_EQ(j["options"]["batch_mode"], "controller");
  ASSERT_EQ(j["rows"].size(), 12u);
  int first = 0;
  for (size_t i = 0; i < j["rows"].size(); i += 4) {
    const auto& plain = j["rows"][i];
    const auto& planner = j["rows"][i + 3];
    ASSERT_EQ(plain["strategy"], "ar");
    ASSERT_EQ(planner["strategy"], "batch");
    ASSERT_EQ(plain["batch"], planner["batch"]);
    if (first == 0 && !(planner["throughput"].get<double>() > plain["throughput"].get<double>())) {
      first = planner["batch"].get<int>();
    }
  }
  if (first == 0) {
    EXPECT_TRUE(j["stop_paying_batch"].is_null()) << j["stop_paying_batch"];
  } else {
    EXPECT_EQ(j["stop_paying_batch"], first);
  }
}

TEST(WhatIfConcurrencyCommand, BatchScanSelectsTheScanMode) {
  auto r = RunSpecplan(kBase + "--concurrency 1,32 --batch-scan --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["options"]["batch_mode"], "scan");
  r = RunSpecplan(kBase + "--concurrency 1,32 --batch-scan");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("batch planner: scan (argmax of G(N))"));
}

TEST(WhatIfConcurrencyCommand, TraceFlagIsReplayed) {
  auto r = RunSpecplan(kBase + "--trace " + kTrace + " --concurrency 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["trace"]["path"], kTrace);
  EXPECT_EQ(j["trace"]["ring_steps"], 2);
  EXPECT_EQ(j["rows"][0]["steps"], 2);
}

TEST(WhatIfConcurrencyCommand, PlotWritesAPng) {
  const std::string out = ::testing::TempDir() + "/whatif_concurrency.png";
  if (!ExpectPlotWritten(kBase + "--concurrency 1,2,4,8", out))
    GTEST_SKIP() << "built without PLplot";
}

TEST(WhatIfConcurrencyCommand, HelpDocumentsTheFlags) {
  auto r = RunSpecplan("whatif --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--concurrency"));
  EXPECT_THAT(r.output, HasSubstr("--draft-batch-growth"));
  EXPECT_THAT(r.output, HasSubstr("--batch-scan"));
  EXPECT_THAT(r.output, HasSubstr("batch "));
}

}  // namespace
}  // namespace specplan
