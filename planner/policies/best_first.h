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
// n = 0 (root only) is part of the curve: no tree is drafted, so C(0) = L_AR (the plain step) and
// S(0) = 1 (DESIGN.md "Cycle cost"). The cost steps from n = 0 to n = 1 by the drafting, so the
// controller's first-decrease stop runs over n >= 1 and its n* is then compared with n = 0: n* = 0
// ("do not draft a tree"; the caller runs a plain AR step) unless S(n*) > 1.
//
// The search (BestFirstPlan::search). With a depth-flat cost (a block drafter, ngram, a cost
// class: CycleCost::depth_stepped() false) one run: the controller's first decrease is exact when
// C(n) is convex over n >= 1 (Prop. 2.4: Â is concave); the scan is exact for any C. With a
// depth-stepped cost (a drafter that drafts level by level pays one forward per level, so C steps
// at each new depth) the cost-aware modes run best-first once per depth cap d = 1..gamma, the
// lattice cut at depth d and every prefix priced at depth d, and take the best over d and n. That
// is exact: the best tree of n nodes and depth <= d is the capped run's prefix T_n^(d) (the cut
// lattice is a lattice, Prop. 2.3), and pricing it at depth d over-prices only a shallower tree,
// which the run of its own depth prices exactly (T_draft is non-decreasing in d). Within a cap the
// cost is C(n) + a constant, so the controller's first decrease stays exact per cap for a convex
// verify cost, and the scan for any. The chosen tree is then priced at its own depth.
// tests/planner/best_first_depth_test.cc checks both against every prefix-closed tree of small
// lattices.
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

// How a plan's n* was searched (BestFirstPlan::search; see the top of this file).
enum class PlanSearch {
  kFixed,                  // a fixed budget: no search
  kFirstDecrease,          // the controller over one run (exact for a convex, depth-flat cost)
  kScan,                   // argmax over every n of one run (exact for any depth-flat cost)
  kFirstDecreasePerDepth,  // the controller per depth cap d = 1..gamma, argmax over d
  kScanPerDepth,           // the scan per depth cap d = 1..gamma, argmax over d
};
inline constexpr EnumEntry<PlanSearch> kPlanSearchNames[] = {
    {PlanSearch::kFixed, "fixed"},
    {PlanSearch::kFirstDecrease, "first decrease"},
    {PlanSearch::kScan, "scan"},
    {PlanSearch::kFirstDecreasePerDepth, "first decrease per depth cap"},
    {PlanSearch::kScanPerDepth, "scan per depth cap"}};

// The search a cost-aware plan in `mode` runs (see the top of this file): per depth cap when the
// cost steps with the depth (depth_stepped) and the lattice is deeper than one level.
inline PlanSearch SearchFor(BudgetMode mode, bool depth_stepped, int gamma) {
  if (mode == BudgetMode::kFixed) return PlanSearch::kFixed;
  const bool scan = mode == BudgetMode::kScan;
  if (depth_stepped && gamma > 1) {
    return scan ? PlanSearch::kScanPerDepth : PlanSearch::kFirstDecreasePerDepth;
  }
  return scan ? PlanSearch::kScan : PlanSearch::kFirstDecrease;
}

// One depth cap's best (PlanSearch::k*PerDepth).
struct DepthCapPoint {
  int depth_cap = 0;   // d: the lattice cut at depth d
  int n = 0;           // its n*
  double speedup = 0;  // S(n*) with the drafting priced at depth d
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
  // empty. With a cost in kFixed only the summary fields are filled. Per depth cap: the curve of
  // the chosen cap's run, its drafting priced at that cap (the summary fields at the tree's own
  // depth, which may be shallower).
  std::vector<CurvePoint> curve;
  PlanSearch search = PlanSearch::kFixed;
  int depth_cap = -1;                     // the chosen cap (per depth cap); -1: one uncapped run
  std::vector<DepthCapPoint> depth_caps;  // [gamma] per depth cap: each cap's best; else empty
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
  // The search per depth cap: the best cap's run so far, kept while the next caps run (swapped
  // with the caller's plan, so that the best cap is not run a second time), and the caps' points.
  BestFirstPlan spare_;
  std::vector<DepthCapPoint> depth_caps_;
};

// Number of nodes in the marginals lattice, root excluded (sum_{d=1..gamma} k^d), saturated at cap.
int64_t LatticeSize(int gamma, int k, int64_t cap = int64_t{1} << 40);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_BEST_FIRST_H_
