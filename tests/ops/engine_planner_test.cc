// specplan::Planner (include/specplan/specplan.h), the installed engine API: its step and its plans
// are the operations' (what `specplan estimate` and `specplan plan` print), over one cost resolved
// at Create; bad configs are refused naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "ops/estimate.h"
#include "ops/plan_batch.h"
#include "ops/plan_tree.h"
#include "specplan/specplan.h"

namespace specplan {
namespace {

using ::testing::HasSubstr;

planner::Marginals Confident(int gamma, int k) {
  planner::Marginals m;
  m.root_token = 1;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    for (int j = 0; j < k; ++j) {
      m.tokens.push_back(100 * d + j);
      m.probs.push_back(j == 0 ? 0.8f : 0.15f / static_cast<float>(k));
    }
  }
  return m;
}

PlannerConfig H100Qwen() {
  PlannerConfig c;
  c.gpu = "h100";
  c.model = "qwen3-8b";
  c.engine = "sglang";
  c.drafter = "eagle3";
  return c;
}

ops::CostRequest SameCost() {
  ops::CostRequest r;
  r.gpu = "h100";
  r.model = "qwen3-8b";
  r.engine = "sglang";
  r.drafter = "eagle3";
  return r;
}

TEST(EnginePlanner, StepIsTheEstimateOperations) {
  auto planner = Planner::Create(H100Qwen());
  ASSERT_TRUE(planner.ok()) << planner.status();
  EXPECT_EQ(planner->profile_id(), "h100-sxm/qwen3-8b-bf16@sglang");
  EXPECT_EQ(planner->draft_priced_by(), "kernel tables");
  for (const auto& [b, s, c] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 4, 1024}, {16, 3, 512}, {64, 1, 2048}}) {
    ops::EstimateRequest req;
    req.cost = SameCost();
    req.b = b;
    req.s = s;
    req.c = c;
    auto want = ops::Estimate(req);
    ASSERT_TRUE(want.ok()) << want.status();
    auto step = planner->Step(b, s, c);
    ASSERT_TRUE(step.ok()) << step.status();
    EXPECT_DOUBLE_EQ(step->step_s(), want->step->step_s()) << b << " " << s << " " << c;
    EXPECT_DOUBLE_EQ(step->draft_s, want->step->draft_s);
    EXPECT_EQ(step->draft_forwards, want->step->draft_forwards);
    auto plain = planner->PlainStep(b, c);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_DOUBLE_EQ(plain->step_s(), want->ar_step->step_s());
    EXPECT_EQ(plain->draft_s, 0);
  }
  // The operation's checks: a bad shape names the field.
  EXPECT_THAT(planner->Step(0, 4, 1024).status().message(), HasSubstr("b = 0"));
  EXPECT_THAT(planner->Step(1, 4, -1).status().message(), HasSubstr("c = -1"));
}

TEST(EnginePlanner, PlansAreThePlanOperationsAndReuseTheCallersBuffers) {
  auto planner = Planner::Create(H100Qwen());
  ASSERT_TRUE(planner.ok()) << planner.status();
  const planner::Marginals m = Confident(6, 3);
  planner::BestFirstOptions options;
  options.n_max = 32;
  TreePlan got;
  for (int64_t c : {0, 1024, 4096}) {  // the same object, call after call
    ASSERT_TRUE(planner->PlanTree(m, c, options, &got).ok());
    ops::PlanTreeRequest req;
    req.marginals = &m;
    req.c = c;
    req.options = options;
    req.cost = SameCost();
    auto want = ops::PlanTree(req);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(got.plan.n, want->plan.n) << c;
    EXPECT_EQ(got.plan.tree.parents, want->plan.tree.parents);
    EXPECT_DOUBLE_EQ(got.plan.cycle_s, want->plan.cycle_s);
    EXPECT_DOUBLE_EQ(got.plan.speedup, want->plan.speedup);
    ASSERT_FALSE(got.outputs.positions.empty());
    EXPECT_EQ(got.outputs.positions[0], c);  // absolute positions
  }
  const planner::Marginals m2 = Confident(4, 2);
  const std::vector<planner::BatchRequest> batch = {{&m, 1024}, {&m2, 300}};
  planner::BatchPlanOptions bo;
  bo.n_max = 24;
  BatchTreePlan bp;
  ASSERT_TRUE(planner->PlanBatch(batch, bo, &bp).ok());
  ops::PlanBatchRequest req;
  req.requests = batch;
  req.options = bo;
  req.cost = SameCost();
  auto want = ops::PlanBatch(req);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(bp.plan.n_total, want->plan.n_total);
  EXPECT_DOUBLE_EQ(bp.plan.goodput, want->plan.goodput);
  ASSERT_EQ(bp.outputs.size(), 2u);
  EXPECT_EQ(bp.outputs[1].positions[0], 300);
}

TEST(EnginePlanner, RefusesUnpricedDraftersAndNamesTheField) {
  for (const char* d : {"", "ar", "parallel", "causal"}) {
    PlannerConfig c = H100Qwen();
    c.drafter = d;
    auto p = Planner::Create(c);
    ASSERT_FALSE(p.ok()) << d;
    EXPECT_THAT(p.status().message(), HasSubstr(std::string("drafter = '") + d + "'"));
  }
  PlannerConfig c = H100Qwen();
  c.engine = "foo";
  EXPECT_THAT(Planner::Create(c).status().message(), HasSubstr("foo"));
  c = H100Qwen();
  c.host_step_ms = -2;
  EXPECT_THAT(Planner::Create(c).status().message(), HasSubstr("host_step_ms = -2"));
  c = H100Qwen();
  c.host_file = "/nonexistent/host.json";
  EXPECT_THAT(Planner::Create(c).status().message(), HasSubstr("host_file = '/nonexistent"));
}

}  // namespace
}  // namespace specplan
