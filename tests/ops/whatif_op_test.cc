// ops/whatif_op.h: validators name field and value; the sweep, the replay under concurrency and
// the chains run for real on the bundled traces and the bundled H100 profiles; the JSON forms carry
// the source.
#include "ops/whatif_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/ops/refusal_cases.h"
#include "whatif/trace.h"

namespace specplan::ops {
namespace {

using testing::ExpectRefusals;
using ::testing::HasSubstr;
using testing::RefusalCase;

std::string TinyTrace() { return whatif::BundledTracePath("tiny.jsonl"); }

WhatIfRequest TinySweep() {
  WhatIfRequest req;
  req.cost.model = "qwen3-8b";
  req.cost.gpu = "h100";
  req.trace = TinyTrace();
  req.budgets = {1, 4, 16};
  return req;
}

TEST(WhatIfOp, ValidatorNamesFieldAndValue) {
  const std::vector<RefusalCase<WhatIfRequest>> refusals = {
      {[](WhatIfRequest& r) {
         r.budgets = {4, 0};
       },
       "budgets[1] = 0: must be in [1, 8191]"},
      {[](WhatIfRequest& r) { r.n_max = -1; }, "n_max = -1"},
      {[](WhatIfRequest& r) { r.t_draft_ms = -2; }, "t_draft_ms = -2"},
      {[](WhatIfRequest& r) { r.strategies.clear(); }, "strategies: empty"},
      {[](WhatIfRequest& r) { r.cost.drafter = "nosuch"; }, "drafter = 'nosuch'"},
  };
  ExpectRefusals(TinySweep(), refusals);
  EXPECT_TRUE(Validate(TinySweep()).ok());
}

TEST(WhatIfOp, SweepsTheBundledTraceOnTheBundledProfile) {
  auto r = WhatIf(TinySweep());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source.trace_path, TinyTrace());
  EXPECT_EQ(r->source.model, "qwen3-8b");
  EXPECT_FALSE(r->source.profile.empty());
  EXPECT_FALSE(r->report.rows.empty());
  EXPECT_TRUE(r->report.oracle.found);
  EXPECT_GT(r->report.oracle.speedup, 0);
  // The drafter architecture (eagle3 by default) priced its step: a drafting cost was set.
  EXPECT_GT(r->report.drafter.DraftSeconds(), 0);
  const nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["trace"]["path"], TinyTrace());
  EXPECT_EQ(j["model"], "qwen3-8b");
  EXPECT_EQ(j["options"]["budgets"], nlohmann::json({1, 4, 16}));
  EXPECT_EQ(j["rows"].size(), r->report.rows.size());
  EXPECT_TRUE(j.contains("engine_version"));
}

TEST(WhatIfOp, ErrorsNameTheTraceAndTheCost) {
  WhatIfRequest req = TinySweep();
  req.trace = "/nonexistent/trace.jsonl";
  auto r = WhatIf(req);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("trace /nonexistent/trace.jsonl"));
  req = TinySweep();
  req.cost.engine = "foo";
  EXPECT_THAT(WhatIf(req).status().message(), HasSubstr("engine = 'foo'"));
}

TEST(WhatIfOp, ConcurrencyReplaysAndNamesFields) {
  WhatIfConcurrencyRequest req;
  req.cost.model = "qwen3-8b";
  req.cost.gpu = "h100";
  req.trace = TinyTrace();
  req.batch_sizes = {1, 8};
  req.n_max = 16;
  req.best_fixed = true;
  auto r = WhatIfConcurrency(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.batch_sizes, (std::vector<int>{1, 8}));
  // Four named rows and best-fixed per batch size.
  EXPECT_EQ(r->report.rows.size(), 10u);
  EXPECT_NE(whatif::FindConcurrencyRow(r->report, 8, whatif::Strategy::kBatch), nullptr);
  const nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["options"]["concurrency"], nlohmann::json({1, 8}));
  EXPECT_EQ(j["model"], "qwen3-8b");
  EXPECT_EQ(j["best_fixed_budgets"].size(), 2u);

  req.batch_sizes = {0};
  EXPECT_THAT(Validate(req).message(), HasSubstr("batch_sizes[0] = 0: must be in [1, 4096]"));
  req.batch_sizes = {1};
  req.draft_batch_growth = -1;
  EXPECT_THAT(Validate(req).message(), HasSubstr("draft_batch_growth = -1"));
}

TEST(WhatIfOp, ConcurrencyGrowthGivenStands) {
  WhatIfConcurrencyRequest req;
  req.cost.model = "qwen3-8b";
  req.cost.gpu = "h100";
  req.trace = TinyTrace();
  req.batch_sizes = {1};
  req.n_max = 8;
  req.draft_batch_growth = 0.25;
  auto given = WhatIfConcurrency(req);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_DOUBLE_EQ(given->report.drafter.batch_growth, 0.25);
  req.cost.drafter = "parallel";
  req.draft_batch_growth.reset();
  auto cls = WhatIfConcurrency(req);
  ASSERT_TRUE(cls.ok()) << cls.status();
  EXPECT_DOUBLE_EQ(cls->report.drafter.batch_growth, whatif::kDefaultDraftBatchGrowth);
}

TEST(WhatIfOp, ChainsOverRatesOnTheStep) {
  WhatIfChainsRequest req;
  req.cost.model = "llama-3.1-8b";
  req.cost.gpu = "h100";
  req.cost.engine = "vllm";
  req.acceptance.source = "by hand";
  req.acceptance.per_position = {0.8, 0.6, 0.4};
  req.acceptance.k_max = 3;
  req.acceptance.mean_acceptance_length = 2.8;
  req.replay.batch_sizes = {1, 16};
  auto r = WhatIfChains(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.mode, "rates");
  EXPECT_EQ(r->drafter, "eagle3");
  EXPECT_FALSE(r->draft_priced_by.empty());
  const nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["drafter"], "eagle3");
  EXPECT_EQ(j["trace"]["path"], "by hand");
  EXPECT_TRUE(j.contains("host"));
  EXPECT_THAT(ChainsTable(*r), HasSubstr("drafter eagle3 (draft priced by "));

  req.replay.context = -1;
  EXPECT_THAT(Validate(req).message(), HasSubstr("context = -1"));
}

}  // namespace
}  // namespace specplan::ops
