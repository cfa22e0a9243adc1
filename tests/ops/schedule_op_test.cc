// ops/schedule_op.h: the validator names field and value; schedules built for real from the
// bundled trace on the bundled profiles, and from acceptance rates.
#include "ops/schedule_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "costmodel/step/step_model.h"
#include "tests/ops/refusal_cases.h"
#include "whatif/trace.h"

namespace specplan::ops {
namespace {

using testing::ExpectRefusals;
using ::testing::HasSubstr;
using testing::RefusalCase;

ScheduleRequest TinySchedule() {
  ScheduleRequest req;
  req.replay.cost.model = "qwen3-8b";
  req.replay.cost.gpu = "h100";
  req.replay.trace = whatif::BundledTracePath("tiny.jsonl");
  req.replay.batch_sizes = {1, 16};
  req.replay.n_max = 8;
  return req;
}

TEST(ScheduleOp, ValidatorNamesFieldAndValue) {
  const std::vector<RefusalCase<ScheduleRequest>> refusals = {
      {[](ScheduleRequest& r) {
         r.replay.batch_sizes = {2, 4};
       },
       "batch_sizes = 2,4: must start at 1"},
      {[](ScheduleRequest& r) {
         r.format = whatif::ScheduleFormat::kSglang;
         r.min_draft_len = 1;
       },
       "min_draft_len = 1: applies to format vllm"},
      {[](ScheduleRequest& r) {
         r.format = whatif::ScheduleFormat::kTrtllm;
         r.context_grid = {0, 1024};
       },
       "context_grid = 0,1024: applies to format vllm"},
      {[](ScheduleRequest& r) { r.acceptance = planner::EngineAcceptance{}; },
       "trace and acceptance: give one"},
  };
  ExpectRefusals(TinySchedule(), refusals);
  EXPECT_TRUE(Validate(TinySchedule()).ok());
}

TEST(ScheduleOp, BuildsFromTheBundledTraceWithTheFormatsEngine) {
  auto r = Schedule(TinySchedule());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->schedule.points.size(), 2u);
  EXPECT_EQ(r->source.engine, "vllm");  // --format vllm: vLLM's kernels price the passes
  const nlohmann::json j = nlohmann::json::parse(Render(*r));
  EXPECT_TRUE(j.contains("speculative_config"));
  EXPECT_THAT(Summary(*r), HasSubstr("best single static setting"));
}

TEST(ScheduleOp, ContextGridAddsTheAxis) {
  ScheduleRequest req = TinySchedule();
  req.context_grid = {0, 4096};
  auto r = Schedule(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->by_context.rows.size(), 2u);
  EXPECT_THAT(Summary(*r), HasSubstr("at context +4096 tokens: B 1 K "));
  req.context_grid = {512};
  EXPECT_THAT(Schedule(req).status().message(), HasSubstr("context_grid: "));
}

TEST(ScheduleOp, ChainsFromAcceptanceRates) {
  ScheduleRequest req = TinySchedule();
  req.replay.trace.clear();
  req.replay.cost.model = "llama-3.1-8b";
  planner::EngineAcceptance a;
  a.source = "rates";
  a.per_position = {0.8, 0.6, 0.4};
  a.k_max = 3;
  a.mean_acceptance_length = 2.8;
  req.acceptance = a;
  auto r = Schedule(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source.trace_path, "rates");
  EXPECT_LE(r->schedule.max_setting, 3);
  EXPECT_FALSE(r->schedule.step_note.empty());
}

// --format sglang with a drafter the step model prices level by level (eagle3, the default): each
// tree setting pays SGLang's drafting for its own (num_steps, eagle_topk), the step model's at
// topk beams per forward and num_steps levels, at the trace's mean context.
TEST(ScheduleOp, SglangTreesPaySglangsDraftingOnTheStepModel) {
  ScheduleRequest req = TinySchedule();
  req.format = whatif::ScheduleFormat::kSglang;
  auto r = Schedule(req);
  ASSERT_TRUE(r.ok()) << r.status();
  const whatif::Schedule& s = r->schedule;
  ASSERT_TRUE(s.sglang_drafting);
  auto trace = whatif::LoadTrace(req.replay.trace);
  ASSERT_TRUE(trace.ok());
  const int64_t c = whatif::DraftShapeOf(*trace).mean_context;
  CostRequest cost = req.replay.cost;
  cost.engine = "sglang";
  auto resolved = cost.Resolve(0);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const std::vector<int>& budgets = s.report.best_fixed_settings.sizes;
  ASSERT_EQ(s.sglang_draft_s.size(), budgets.size());
  bool wide = false;
  for (size_t k = 0; k < budgets.size(); ++k) {
    auto t = whatif::SglangTreeFor(*trace, budgets[k]);
    ASSERT_TRUE(t.ok());
    CostRequest beams = cost;
    beams.topk = t->eagle_topk;
    auto step = beams.Step(*resolved->resolved, 0);
    ASSERT_TRUE(step.ok()) << step.status();
    const double want = costmodel::PlannerTermsFor(*step, t->num_steps, c).drafter.DraftSeconds();
    EXPECT_NEAR(s.sglang_draft_s[k], want, 1e-12 * want) << "n " << budgets[k];
    wide = wide || t->eagle_topk > 1;
    if (k > 0) {
      EXPECT_GE(s.sglang_draft_s[k], s.sglang_draft_s[k - 1]) << "n " << budgets[k];
    }
  }
  EXPECT_TRUE(wide);  // some setting drafts beams
  // A drafter priced by hand keeps the one drafting cost for every setting.
  req.replay.cost.drafter = "parallel";
  req.replay.t_draft_ms = 1;
  auto flat = Schedule(req);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_FALSE(flat->schedule.sglang_drafting);
}

}  // namespace
}  // namespace specplan::ops
