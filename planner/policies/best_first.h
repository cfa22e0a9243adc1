// Best-first draft-tree construction with the hardware-aware budget controller
// (BASTION (docs/references.md) §2.3-2.4, Proposition 2.3/2.4, Algorithm 1).
//
// Lattice: a node at depth d (root: d = 0) has up to k children, the k candidates of row d of the
// marginals, with rho(child) = rho(parent) * q_d(x). Because rho(child) <= rho(parent), popping the
// frontier's largest rho (marginals_frontier.h keeps the frontier as one sorted stream per depth
// and rank; the lazy frontier of a general lattice pushes a popped node's first child and next
// sibling) adds nodes in globally non-increasing rho, so every prefix T_n of the pop order
// maximises Â(T) = sum of rho over T among prefix-closed trees with n draft nodes (Prop. 2.3).
//
// Conventions (the CLI contract follows them):
//   n                  draft nodes, root excluded; the tree has n + 1 nodes and is verified as
//                      s = n + 1 tokens.
//   expected_accepted  Â(n) = 1 + sum of rho over the n draft nodes (the root counts 1: the
//                      pending bonus token is always accepted).
//   cycle_s            C(n) = T_draft + T_aux + T_verify(n + 1, c)   (costmodel::CycleCost)
//   speedup            S(n) = Â'(n) * L_AR / C(n), L_AR = the plain step (CycleCost::PlainSeconds:
//                      T_verify(1, c) plus the drafter cost's plain-step terms) unless overridden,
//                      with Â'(n) = 1 + s (Â(n) - 1) and s = acceptance_scale (1 by default, so Â'
//                      = Â). s is an online calibration of the surrogate: a caller that has seen
//                      the drafter's trees accept s times the tokens Σρ promised (planner::
//                      AcceptanceEstimator::surrogate_scale) prices every node at s ρ. The pop
//                      order does not depend on s; only where the stop rule ends does.
// n = 0 (root only) is part of the curve: S(0) = L_AR / C(0). It is <= 1 when drafting costs time,
// and the controller returns n* = 0 when S(1) < S(0) ("do not draft a tree"; a caller would then
// fall back to a plain AR step). Prop. 2.4's unimodality carries over to n = 0 because Â stays
// concave there (Â(1) - Â(0) = rho(first node) >= every later increment).
//
// Tie-breaking among equal rho: smaller depth first, then smaller parent index, then smaller rank.
// The tree is returned in pop order, so node indices follow non-increasing rho and T_n is the
// first n + 1 entries of the arrays.
#ifndef SPECPLAN_PLANNER_POLICIES_BEST_FIRST_H_
#define SPECPLAN_PLANNER_POLICIES_BEST_FIRST_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/cycle_cost.h"
#include "planner/marginals/frontier_heap.h"
#include "planner/marginals/marginals.h"
#include "planner/marginals/marginals_frontier.h"
#include "planner/tree/tree.h"
#include "util/enum_names.h"

namespace specplan::planner {

// Largest surrogate calibration a planner accepts (BestFirstOptions / BatchPlanOptions::
// acceptance_scale).
inline constexpr double kMaxAcceptanceScale = 64.0;

// The calibrated surrogate Â' = 1 + s (Â - 1): the root counts 1, every draft node s·rho.
inline double CalibratedAccepted(double expected_accepted, double acceptance_scale) {
  return 1.0 + acceptance_scale * (expected_accepted - 1.0);
}

enum class BudgetMode {
  kFixed,       // exactly min(n_max, lattice size) draft nodes; cost optional
  kController,  // stop at the first n with S(n + 1) < S(n) (exact when C is convex, Prop. 2.4)
  kScan,        // evaluate every n in 0..n_max and take the argmax (stepped / measured costs)
};

// The modes' names, as flags and JSON spell them ("controller", "scan", "fixed").
inline constexpr EnumEntry<BudgetMode> kBudgetModeNames[] = {
    {BudgetMode::kController, "controller"},
    {BudgetMode::kScan, "scan"},
    {BudgetMode::kFixed, "fixed"}};

struct BestFirstOptions {
  BudgetMode mode = BudgetMode::kController;
  int n_max = 64;       // draft nodes: the budget in kFixed, the upper end of the search otherwise;
                        // 0 <= n_max < kMaxTreeNodes
  double l_ar_s = 0.0;  // seconds, L_AR; <= 0 means cost->PlainSeconds() = T_verify(1, c) plus
                        // the drafter cost's plain-step terms (0 for a cost class)
  double acceptance_scale = 1.0;  // s of Â' = 1 + s (Â - 1) in S(n); finite, in (0, 64]
  bool validate = true;  // run ValidateMarginals first (about a microsecond at gamma=16, k=8)
};

struct CurvePoint {
  int n = 0;                     // draft nodes
  double expected_accepted = 0;  // Â(n), root included (the surrogate as is, not scaled)
  double cycle_s = 0;            // C(n), seconds
  double speedup = 0;            // S(n) (with Â')
};

// Result of one planning call. Caller-owned and reusable: vectors keep their capacity.
struct BestFirstPlan {
  Tree tree;                       // [n + 1] the selected tree T_{n*}, in pop order
  int n = 0;                       // n*: draft nodes in `tree` (root excluded)
  double expected_accepted = 1.0;  // Â(n*), root included
  double cycle_s = std::numeric_limits<double>::quiet_NaN();  // C(n*), NaN without a cost
  double speedup = std::numeric_limits<double>::quiet_NaN();  // S(n*), NaN without a cost
  double l_ar_s = std::numeric_limits<double>::quiet_NaN();   // L_AR used, seconds
  bool lattice_exhausted = false;  // the frontier ran empty before the budget / stop rule
  // [evaluated n] one point per evaluated n, starting at n = 0, in increasing n. kController:
  // n = 0 .. n* + 1 (the point that decreased) or up to the stop; kScan: 0 .. n_max; kFixed:
  // empty. With a cost in kFixed only the summary fields are filled.
  std::vector<CurvePoint> curve;
};

// Plans best-first trees over marginals. Owns a reusable workspace: after the first call at a given
// n_max (or Reserve), Plan does not allocate, provided the caller reuses the same BestFirstPlan.
// Not thread-safe; use one planner per thread.
class BestFirstPlanner {
 public:
  BestFirstPlanner() = default;
  // Pre-sizes the frontier for budgets up to n_max draft nodes.
  void Reserve(int n_max) { frontier_.Reserve(n_max); }

  // Plans with `options`. `cost` may be null only in BudgetMode::kFixed (then cycle_s/speedup are
  // NaN); it is not retained. Errors: invalid marginals (field named), n_max out of range, missing
  // cost, non-positive L_AR.
  absl::Status Plan(const Marginals& marginals, const BestFirstOptions& options,
                    const costmodel::CycleCost* cost, BestFirstPlan* plan);

  // Fixed budget shorthand: exactly min(budget, lattice size) draft nodes, no cost.
  absl::Status PlanFixed(const Marginals& marginals, int budget, BestFirstPlan* plan);

 private:
  MarginalsFrontier frontier_;
};

// Number of nodes in the marginals lattice, root excluded (sum_{d=1..gamma} k^d), saturated at cap.
int64_t LatticeSize(int gamma, int k, int64_t cap = int64_t{1} << 40);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_BEST_FIRST_H_
