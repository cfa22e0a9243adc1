// Shared by the planner tests, above all those that compare two ways of planning
// (tests/planner/plan_backend_test.cc: in-process backend vs direct planner calls;
// tests/service/remote_backend_test.cc: remote vs in-process): latency models that make the budget
// modes differ, drafter costs and budget options, random weighted trees, and exact tree, plan and
// merge comparisons.
#ifndef SPECPLAN_TESTS_PLANNER_PLAN_TEST_UTIL_H_
#define SPECPLAN_TESTS_PLANNER_PLAN_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "planner/batch/plan_backend.h"
#include "planner/policies/best_first.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"

namespace specplan::planner::testing {

// A stepped, context-dependent verify cost (tiles of 8 tokens), so that kController and kScan
// pick different budgets on some inputs.
class SteppedLatency : public costmodel::LatencyModel {
 public:
  double VerifySeconds(int64_t s, int64_t c) const override {
    return 1e-3 * (1.0 + static_cast<double>((s + 7) / 8)) + 2e-7 * static_cast<double>(c);
  }
  std::string Kind() const override { return "stepped"; }
};

// Smooth and convex: the controller's first-decrease rule is exact.
class SmoothLatency : public costmodel::LatencyModel {
 public:
  double VerifySeconds(int64_t s, int64_t c) const override {
    return 2e-3 + 4e-5 * static_cast<double>(s) + 1e-7 * static_cast<double>(s) * s +
           1e-8 * static_cast<double>(c);
  }
  std::string Kind() const override { return "smooth"; }
};

// A drafter cost of class kParallelBlock whose draft forward takes `seconds` (the rest at the
// defaults).
inline costmodel::DrafterCost ParallelDrafter(double seconds) {
  costmodel::DrafterCost d;
  d.cls = costmodel::DrafterClass::kParallelBlock;
  d.t_net_s = seconds;
  return d;
}

// Best-first options in `mode` with budget n_max (the rest at the defaults).
inline BestFirstOptions BudgetOptions(BudgetMode mode, int n_max) {
  BestFirstOptions o;
  o.mode = mode;
  o.n_max = n_max;
  return o;
}

// Equal bit for bit, NaN equal to NaN.
inline bool SameDouble(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Two trees equal node for node (path probabilities exactly).
inline void ExpectSameTree(const Tree& want, const Tree& got) {
  EXPECT_EQ(want.tokens, got.tokens);
  EXPECT_EQ(want.parents, got.parents);
  EXPECT_EQ(want.depths, got.depths);
  EXPECT_EQ(want.path_probs, got.path_probs);
}

// Every field of two plans equal (doubles exactly).
inline void ExpectSamePlan(const BestFirstPlan& want, const BestFirstPlan& got) {
  ExpectSameTree(want.tree, got.tree);
  EXPECT_EQ(want.n, got.n);
  EXPECT_EQ(want.expected_accepted, got.expected_accepted);
  EXPECT_TRUE(SameDouble(want.cycle_s, got.cycle_s)) << want.cycle_s << " vs " << got.cycle_s;
  EXPECT_TRUE(SameDouble(want.speedup, got.speedup)) << want.speedup << " vs " << got.speedup;
  EXPECT_TRUE(SameDouble(want.l_ar_s, got.l_ar_s)) << want.l_ar_s << " vs " << got.l_ar_s;
  EXPECT_EQ(want.lattice_exhausted, got.lattice_exhausted);
  ASSERT_EQ(want.curve.size(), got.curve.size());
  for (size_t i = 0; i < want.curve.size(); ++i) {
    EXPECT_EQ(want.curve[i].n, got.curve[i].n);
    EXPECT_EQ(want.curve[i].expected_accepted, got.curve[i].expected_accepted);
    EXPECT_EQ(want.curve[i].cycle_s, got.curve[i].cycle_s);
    EXPECT_EQ(want.curve[i].speedup, got.curve[i].speedup);
  }
}

// Every field of two merges equal.
inline void ExpectSameMerge(const MergedTree& want, const MergedTree& got) {
  ExpectSameTree(want.tree, got.tree);
  EXPECT_EQ(want.phi_a, got.phi_a);
  EXPECT_EQ(want.phi_b, got.phi_b);
  EXPECT_EQ(want.source, got.source);
}

// Random tree with n draft nodes: parents uniform over earlier nodes, tokens in [0, vocab), path
// probabilities products of random edge probabilities.
template <typename Rng>
Tree RandomWeightedTree(Rng& rng, int n, int vocab, int32_t root) {
  std::uniform_real_distribution<double> u(0.05, 1.0);
  Tree t;
  t.ResetRoot(root);
  for (int i = 1; i <= n; ++i) {
    const int parent = static_cast<int>(rng() % i);
    t.AddNode(parent, static_cast<int32_t>(rng() % vocab), t.path_probs[parent] * u(rng));
  }
  return t;
}

// Draws the random parts of a plan cost from `rng`, in this order: the drafter class, its net time
// (0 to 0.9 ms), the per-cycle aux time (0 to 20 us) and the context (below max_context); the
// drafter's gamma and head and light times are the given ones.
template <typename Rng>
void DrawPlanCost(Rng& rng, int gamma, double t_head_s, double t_light_s, uint64_t max_context,
                  PlanCost* cost) {
  cost->drafter.cls = static_cast<costmodel::DrafterClass>(rng() % 3);
  cost->drafter.gamma = gamma;
  cost->drafter.t_net_s = 1e-4 * static_cast<double>(rng() % 10);
  cost->drafter.t_head_s = t_head_s;
  cost->drafter.t_light_s = t_light_s;
  cost->t_aux_s = 1e-5 * static_cast<double>(rng() % 3);
  cost->context = static_cast<int64_t>(rng() % max_context);
}

}  // namespace specplan::planner::testing

#endif  // SPECPLAN_TESTS_PLANNER_PLAN_TEST_UTIL_H_
