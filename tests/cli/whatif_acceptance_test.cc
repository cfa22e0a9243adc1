// `specplan whatif --concurrency LIST --acceptance FILE` (cli/whatif_concurrency.cc
// RunChainReplay) run as a real binary over acceptance files written here: the JSON against
// whatif::ReplayChains in-process on the same profile, each mode, the text table, and the
// refused flag combinations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "costmodel/cost_spec.h"
#include "costmodel/step/step_model.h"
#include "planner/acceptance/engine_acceptance.h"
#include "run_command.h"
#include "whatif/chain_replay.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

const std::string kBase = "whatif --model llama-3.1-8b --gpu h100 --engine vllm ";

const char kRatesLog[] =
    "INFO 08-12 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.00, "
    "Accepted throughput: 12.50 tokens/s, Drafted throughput: 30.00 tokens/s, Accepted: 100 "
    "tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.500, 0.300, 0.200, Avg Draft "
    "acceptance rate: 33.3%\n";

std::string Trace() { return WriteTemp("whatif_acceptance_trace.jsonl", kTwoRequestStepTrace); }
std::string Rates() { return WriteTemp("whatif_acceptance_rates.log", kRatesLog); }

nlohmann::json Json(const std::string& args) {
  nlohmann::json j;
  RunJson(kBase + args + " --json", &j);
  return j;
}

// The replay in-process on the profile the command named, its drafting tabulated as the command's.
whatif::ChainReplayReport InProcess(const nlohmann::json& j, const std::string& acceptance_path,
                                    const whatif::ChainReplayOptions& o) {
  costmodel::CostSpec spec;
  spec.model = "llama-3.1-8b";
  spec.gpu = "h100";
  spec.engine = "vllm";
  spec.calib_dir = SourcePath("calib");
  auto resolved = costmodel::ResolveCost(spec);
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->profile_id, j["profile"].get<std::string>());
  auto model = costmodel::StepModel::Create(resolved->model.get(), resolved->model_spec,
                                            resolved->gpu_spec, &resolved->drafters, "vllm", {});
  EXPECT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->TabulateDraft());  // as the operation does for a replay (ops/whatif_op.cc)
  auto a = planner::LoadEngineAcceptance(acceptance_path);
  EXPECT_TRUE(a.ok()) << a.status();
  auto r = whatif::ReplayChains(*a, *model, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

void ExpectRowsMatch(const nlohmann::json& j, const whatif::ChainReplayReport& want) {
  ASSERT_EQ(j["rows"].size(), want.rows.size()) << j.dump();
  for (size_t i = 0; i < want.rows.size(); ++i) {
    SCOPED_TRACE(i);
    const nlohmann::json& row = j["rows"][i];
    EXPECT_EQ(row["batch"], want.rows[i].batch);
    EXPECT_EQ(row["k"], want.rows[i].k);
    EXPECT_EQ(row["speedup"].get<double>(), want.rows[i].speedup);
    EXPECT_EQ(row["tokens_per_step"].get<double>(), want.rows[i].tokens_per_step);
    EXPECT_EQ(row["throughput"].get<double>(), want.rows[i].throughput);
    EXPECT_EQ(row["steps"].get<double>(), want.rows[i].steps);
    EXPECT_EQ(row["time_s"]["step_s"].get<double>(), want.rows[i].time.step_s());
  }
  EXPECT_EQ(j["best_k"], nlohmann::json(want.best_k));
}

TEST(WhatIfAcceptance, CopiesJsonParsesAndIsTheReplayInProcess) {
  const std::string trace = Trace();
  const nlohmann::json j = Json("--concurrency 1,8 --acceptance " + trace + " --chains 1,3");
  EXPECT_EQ(j["mode"], "trace, copies");
  EXPECT_EQ(j["requests"], 2);
  EXPECT_EQ(j["drafter"], "eagle3");
  EXPECT_EQ(j["draft_priced_by"], "kernel tables");
  EXPECT_EQ(j["engine"], "vllm");
  EXPECT_EQ(j["model"], "llama-3.1-8b");
  EXPECT_EQ(j["acceptance"]["k_max"], 3);
  EXPECT_EQ(j["acceptance"]["format"], "step-trace");
  EXPECT_EQ(j["host"]["step_s"], 1.207e-3);
  ASSERT_EQ(j["rows"].size(), 4u);
  for (const nlohmann::json& row : j["rows"]) {
    EXPECT_GT(row["speedup"].get<double>(), 0);
    EXPECT_GT(row["throughput"].get<double>(), 0);
    EXPECT_TRUE(row["time_s"]["verify_s"].is_number());
  }
  whatif::ChainReplayOptions o;
  o.batch_sizes = {1, 8};
  o.chain_lengths = {1, 3};
  ExpectRowsMatch(j, InProcess(j, trace, o));
}

TEST(WhatIfAcceptance, MixedAndRatesModes) {
  const std::string trace = Trace();
  const nlohmann::json mixed =
      Json("--concurrency 1,8 --acceptance " + trace + " --batching mixed");
  EXPECT_EQ(mixed["mode"], "trace, mixed");
  whatif::ChainReplayOptions o;
  o.batch_sizes = {1, 8};  // K = 0 .. k_max = 3 by default
  o.batching = whatif::ChainBatching::kMixed;
  ExpectRowsMatch(mixed, InProcess(mixed, trace, o));
  EXPECT_EQ(mixed["rows"][0]["speedup"], 1.0);  // K = 0

  const std::string rates = Rates();
  const nlohmann::json r = Json("--concurrency 1,64 --acceptance " + rates + " --context 2048");
  EXPECT_EQ(r["mode"], "rates");
  EXPECT_EQ(r["context"], 2048);
  EXPECT_EQ(r["rows"].size(), 2u * 4u);  // K = 0 .. k_max = 3 by default
  whatif::ChainReplayOptions ro;
  ro.batch_sizes = {1, 64};
  ro.context = 2048;
  ExpectRowsMatch(r, InProcess(r, rates, ro));

  // --independent reads the trace's per-position rates: 1 + 0.75 at K = 1.
  const nlohmann::json ind =
      Json("--concurrency 4 --acceptance " + trace + " --chains 1 --independent");
  EXPECT_EQ(ind["mode"], "rates");
  EXPECT_DOUBLE_EQ(ind["rows"][0]["tokens_per_step"].get<double>(), 1.75);
}

TEST(WhatIfAcceptance, TableNamesTheDrafterAndTheMode) {
  const std::string trace = Trace();
  ExpectSucceeds({
      {kBase + "--concurrency 1,8 --acceptance " + trace + " --chains 1,3",
       "chains replayed (trace, copies, 2 requests)"},
      {kBase + "--concurrency 1,8 --acceptance " + trace,
       "drafter eagle3 (draft priced by kernel tables)"},
      {kBase + "--concurrency 1 --acceptance " + trace + " --batching mixed",
       "chains replayed (trace, mixed, 2 requests)"},
      {kBase + "--concurrency 1 --acceptance " + Rates(), "chains replayed (rates, c = 1024)"},
  });
}

TEST(WhatIfAcceptance, BadFlagsAreRefusedByName) {
  const std::string trace = Trace();
  const std::string rates = Rates();
  ExpectRefused({
      Refused(kBase + "--concurrency 1,8 --acceptance " + trace + " --batching pooled",
              "--batching: unknown value 'pooled' (known: copies, mixed)"),
      Refused(kBase + "--concurrency 1,8 --acceptance " + trace + " --chains 4",
              "K = 4 must be in [0, 3]"),
      Refused(kBase + "--concurrency 1,8 --acceptance " + rates + " --batching mixed",
              "batching = mixed: " + rates + " holds rates, not a per-step trace"),
      Refused(kBase + "--acceptance " + trace, "--acceptance needs --concurrency LIST"),
      Refused(kBase + "--concurrency recorded --acceptance " + trace,
              "--acceptance needs --concurrency LIST"),
      Refused(kBase + "--concurrency 1 --batching mixed",
              "--batching applies only with --acceptance"),
      Refused(kBase + "--concurrency 1 --chains 1,2", "--chains applies only with --acceptance"),
      Refused(kBase + "--concurrency 1 --independent",
              "--independent applies only with --acceptance"),
      Refused(kBase + "--concurrency 1 --acceptance " + ::testing::TempDir() + "/no-such.jsonl",
              "--acceptance"),
      Refused(kBase + "--concurrency 1 --acceptance " + trace + " --drafter parallel --chains 1",
              "a chain needs a drafter to price"),
      Refused(kBase + "--concurrency 1 --acceptance " + trace + " --drafter medusa",
              "--drafter medusa: unknown"),
  });
}

}  // namespace
}  // namespace specplan
