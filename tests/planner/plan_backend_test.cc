// InProcessPlanBackend (planner/batch/plan_backend.h) must give exactly what the direct planner
// calls give: BestFirstPlanner::Plan with a CycleCost built from the PlanCost, and MergeTrees.
#include "planner/batch/plan_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "planner/policies/best_first.h"
#include "planner/tree/merge.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

using testing::BudgetOptions;
using testing::DrawPlanCost;
using testing::ExpectSameMerge;
using testing::ExpectSamePlan;
using testing::RandomWeightedTree;
using testing::SmoothLatency;
using testing::SteppedLatency;

Marginals Random(std::mt19937& rng, int gamma, int k) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return testing::RandomMarginalsWith(
      rng, 3, gamma, k, [&] { return u(rng) * u(rng); },
      [&](int d) {
        std::vector<int32_t> t(k);
        for (int r = 0; r < k; ++r) t[r] = 10 + 10 * d + r;
        return t;
      });
}

TEST(InProcessPlanBackend, BestFirstEqualsDirectPlannerForRandomMarginalsAndCosts) {
  std::mt19937 rng(20240611);
  const SteppedLatency stepped;
  const SmoothLatency smooth;
  InProcessPlanBackend backend;  // one backend across calls: workspace reuse must not leak state
  backend.Reserve(16);
  BestFirstPlan got;
  int controller_stops = 0, scans = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Marginals m =
        Random(rng, 1 + static_cast<int>(rng() % 8), 1 + static_cast<int>(rng() % 5));
    BestFirstOptions options;
    options.mode = static_cast<BudgetMode>(rng() % 3);
    options.n_max = static_cast<int>(rng() % 48);
    options.l_ar_s = rng() % 4 == 0 ? 2.5e-3 : 0.0;
    PlanCost cost;
    cost.latency = rng() % 2 ? static_cast<const costmodel::LatencyModel*>(&stepped) : &smooth;
    DrawPlanCost(rng, m.gamma, 1e-5, 2e-6, 2000, &cost);
    const bool with_cost = options.mode != BudgetMode::kFixed || rng() % 2 == 0;

    BestFirstPlanner direct;
    BestFirstPlan want;
    const costmodel::CycleCost cycle(cost.latency, cost.drafter, cost.t_aux_s, cost.context);
    ASSERT_TRUE(direct.Plan(m, options, with_cost ? &cycle : nullptr, &want).ok());
    ASSERT_TRUE(backend.PlanBestFirst(m, options, with_cost ? &cost : nullptr, &got).ok());
    ExpectSamePlan(want, got);
    if (options.mode == BudgetMode::kController && want.n < options.n_max) ++controller_stops;
    if (options.mode == BudgetMode::kScan) ++scans;
  }
  // The grid exercised what it claims to: early controller stops and full scans.
  EXPECT_GT(controller_stops, 10);
  EXPECT_GT(scans, 10);
}

TEST(InProcessPlanBackend, FixedWithoutCostEqualsPlanFixed) {
  std::mt19937 rng(7);
  InProcessPlanBackend backend;
  BestFirstPlanner direct;
  BestFirstPlan want, got;
  for (int trial = 0; trial < 50; ++trial) {
    const Marginals m =
        Random(rng, 1 + static_cast<int>(rng() % 6), 1 + static_cast<int>(rng() % 4));
    const int budget = static_cast<int>(rng() % 40);
    ASSERT_TRUE(direct.PlanFixed(m, budget, &want).ok());
    const BestFirstOptions options = BudgetOptions(BudgetMode::kFixed, budget);
    ASSERT_TRUE(backend.PlanBestFirst(m, options, nullptr, &got).ok());
    ExpectSamePlan(want, got);
    EXPECT_TRUE(std::isnan(got.cycle_s));
  }
}

TEST(InProcessPlanBackend, ErrorsAreThePlannersErrors) {
  std::mt19937 rng(3);
  Marginals m = Random(rng, 3, 2);
  m.probs[3] = 1.5f;  // row 1, rank 1
  InProcessPlanBackend backend;
  BestFirstPlan plan;
  BestFirstOptions options = BudgetOptions(BudgetMode::kFixed, 4);
  const absl::Status got = backend.PlanBestFirst(m, options, nullptr, &plan);
  BestFirstPlanner direct;
  const absl::Status want = direct.Plan(m, options, nullptr, &plan);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got, want);
  EXPECT_NE(std::string(got.message()).find("probs[1][1]"), std::string::npos) << got;

  // Controller mode without a cost is an error, not a crash.
  const Marginals ok = Random(rng, 3, 2);
  options.mode = BudgetMode::kController;
  EXPECT_EQ(backend.PlanBestFirst(ok, options, nullptr, &plan).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(InProcessPlanBackend, MergeEqualsMergeTrees) {
  std::mt19937 rng(11);
  InProcessPlanBackend backend;
  MergedTree got;
  for (int trial = 0; trial < 200; ++trial) {
    const int vocab = 2 + static_cast<int>(rng() % 4);
    const Tree a = RandomWeightedTree(rng, static_cast<int>(rng() % 30), vocab, 1);
    const Tree b = RandomWeightedTree(rng, static_cast<int>(rng() % 30), vocab, 1);
    MergeOptions options;
    options.dedup = rng() % 2 == 0;
    options.n_max = rng() % 2 ? -1 : static_cast<int>(rng() % 40);
    auto want = MergeTrees(a, b, options);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(backend.Merge(a, b, options, &got).ok());
    ExpectSameMerge(*want, got);
  }
  // Different roots: the merge's own error.
  Tree a = RandomWeightedTree(rng, 3, 4, 1), b = RandomWeightedTree(rng, 3, 4, 2);
  EXPECT_EQ(backend.Merge(a, b, {}, &got).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend.Name(), "in-process");
}

}  // namespace
}  // namespace specplan::planner
