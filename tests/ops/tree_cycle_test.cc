// The cycle a plan prices is the step of the tree it returns (DESIGN.md "Cycle cost", issue 52):
// an EAGLE-3 chain of depth d costs what the step model prices for `estimate --drafter eagle3
// --draft-steps d --s d+1` at the same b and c; N = 0 is the plain step; and plan-batch shrinks
// its trees as the batch grows without switching speculation off at B = 8.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "ops/cost_request.h"
#include "ops/plan_batch.h"
#include "ops/plan_tree.h"

namespace specplan::ops {
namespace {

CostRequest H100Qwen3Eagle3() {
  CostRequest c;
  c.model = "qwen3-8b";
  c.gpu = "h100";
  c.engine = "sglang";
  c.drafter = "eagle3";
  return c;
}

// gamma positions x k candidates: rank r of every position has probability p q^r (rows sorted,
// sums below 1).
planner::Marginals Confident(int gamma, int k, float p, float q) {
  planner::Marginals m;
  m.root_token = 1;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    float x = p;
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(100 * d + r + 2);
      m.probs.push_back(x);
      x *= q;
    }
  }
  return m;
}

TEST(TreeCycle, Eagle3ChainsCostTheStepModelsStep) {
  const CostRequest request = H100Qwen3Eagle3();
  auto resolved = request.Resolve(0);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const CostView view = resolved->View();
  ASSERT_NE(view.step, nullptr);
  ASSERT_TRUE(view.step->DraftsByLevel());
  for (int64_t c : {0, 1024, 4096}) {
    const CycleTerms terms = PriceCycle(view, /*gamma=*/8, c);
    ASSERT_TRUE(terms.drafter.depth_stepped());
    const costmodel::CycleCost cycle(view.latency, terms.drafter, terms.t_aux_s, c);
    for (int d = 1; d <= 4; ++d) {
      SCOPED_TRACE(::testing::Message() << "c = " << c << ", d = " << d);
      // `specplan estimate --drafter eagle3 --draft-steps d --s d+1 --b 1 --c c`.
      CostRequest chain = request;
      chain.draft_steps = d;
      auto step = chain.Step(*resolved->resolved, 0);
      ASSERT_TRUE(step.ok()) << step.status();
      const double want = step->Step(1, d + 1, c).step_s();
      EXPECT_NEAR(cycle.TreeSeconds(d, d), want, 1e-12 * want);
      EXPECT_NEAR(view.step->TreeStep(1, d, d, c, 8).step_s(), want, 1e-12 * want);

      // The planner's cycle for the chain it returns (one candidate per position: a chain).
      const planner::Marginals m = Confident(8, 1, 0.9f, 0.5f);
      PlanTreeRequest req;
      req.marginals = &m;
      req.c = c;
      req.options.mode = planner::BudgetMode::kFixed;
      req.options.n_max = d;
      PlanTreeResult result;
      planner::BestFirstPlanner planner;
      ASSERT_TRUE(PlanTreeInto(req, &view, &planner, &result).ok());
      EXPECT_EQ(result.plan.n, d);
      EXPECT_NEAR(result.plan.cycle_s, want, 1e-12 * want);
    }
    // A deeper tree pays more drafting: one forward per level.
    EXPECT_LT(cycle.TreeSeconds(8, 2), cycle.TreeSeconds(8, 5));
    // No tree: the plain step.
    EXPECT_DOUBLE_EQ(cycle.TreeSeconds(0, 0), view.step->ArStep(1, c).step_s());
  }
}

TEST(TreeCycle, NoTreeIsThePlainStepInPlanAndPlanBatch) {
  const CostRequest request = H100Qwen3Eagle3();
  auto resolved = request.Resolve(0);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const CostView view = resolved->View();
  const planner::Marginals m = Confident(8, 4, 0.6f, 0.25f);
  {
    PlanTreeRequest req;
    req.marginals = &m;
    req.c = 1024;
    req.options.n_max = 64;
    PlanTreeResult result;
    planner::BestFirstPlanner planner;
    ASSERT_TRUE(PlanTreeInto(req, &view, &planner, &result).ok());
    ASSERT_FALSE(result.plan.curve.empty());
    EXPECT_DOUBLE_EQ(result.plan.curve[0].cycle_s, view.step->ArStep(1, 1024).step_s());
    EXPECT_DOUBLE_EQ(result.plan.curve[0].speedup, 1.0);
    const nlohmann::json j = ToJson(req, result);
    EXPECT_EQ(j["search"], "first decrease per depth cap");
    EXPECT_EQ(j["curve"][0]["cycle_s"], result.plan.l_ar_s);
  }
  for (int B : {1, 8, 64}) {
    SCOPED_TRACE(::testing::Message() << "B = " << B);
    PlanBatchRequest req;
    for (int i = 0; i < B; ++i) req.requests.push_back({&m, 1024});
    req.options.n_max = 256 * B;
    PlanBatchResult result;
    planner::BatchPlanner planner;
    ASSERT_TRUE(PlanBatchInto(req, &view, &planner, &result).ok());
    ASSERT_FALSE(result.plan.curve.empty());
    // N = 0 drafts nothing: its goodput is plain decoding's.
    EXPECT_DOUBLE_EQ(result.plan.curve[0].goodput, result.plan.ar_goodput);
    EXPECT_DOUBLE_EQ(result.plan.curve[0].cycle_s, B / result.plan.ar_goodput);
  }
}

TEST(TreeCycle, PlanBatchTreesShrinkWithTheBatchAndStillDraftAtEight) {
  const CostRequest request = H100Qwen3Eagle3();
  auto resolved = request.Resolve(0);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const CostView view = resolved->View();
  // Confident marginals: the first candidate at 0.65 of every position, each further one 0.3 of
  // the one before (rows sum to 0.93).
  const planner::Marginals m = Confident(16, 8, 0.65f, 0.3f);
  std::vector<double> mean_nodes;
  for (int B : {1, 8, 64}) {
    SCOPED_TRACE(::testing::Message() << "B = " << B);
    PlanBatchRequest req;
    for (int i = 0; i < B; ++i) req.requests.push_back({&m, 1024});
    req.options.n_max = 256 * B;
    PlanBatchResult result;
    planner::BatchPlanner planner;
    ASSERT_TRUE(PlanBatchInto(req, &view, &planner, &result).ok());
    EXPECT_EQ(result.plan.search, planner::PlanSearch::kFirstDecreasePerDepth);
    mean_nodes.push_back(static_cast<double>(result.plan.n_total) / B);
    if (result.plan.n_total > 0) EXPECT_GT(result.plan.goodput, result.plan.ar_goodput);
  }
  EXPECT_GT(mean_nodes[0], mean_nodes[1]);
  EXPECT_GT(mean_nodes[1], mean_nodes[2]);
  EXPECT_GT(mean_nodes[1], 0);
}

}  // namespace
}  // namespace specplan::ops
