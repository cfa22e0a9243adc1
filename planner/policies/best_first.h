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

namespace internal {

struct EngineWorkspace {
  // [<= 2 n_max + 1] keys of the lazy frontier's entries: child `rank` of tree node `parent` at
  // `depth` with score scale * rho, then the FrontierTie of depth, request, parent and rank
  // (depth <= kMaxMarginalsGamma, rank < kMaxMarginalsK and parent < kMaxTreeNodes fit it).
  FrontierHeap heap;
  std::vector<int32_t> handles;  // [tree size] lattice handle per tree node
  std::vector<int32_t> missing;  // tree nodes whose children were needed but are unknown

  void Reserve(int n_max) {
    heap.reserve(2 * static_cast<size_t>(n_max) + 2);
    handles.reserve(static_cast<size_t>(n_max) + 2);
    missing.reserve(static_cast<size_t>(n_max) + 2);
  }
};

struct BudgetSpec {
  BudgetMode mode = BudgetMode::kFixed;
  int n_max = 0;
  const costmodel::CycleCost* cost = nullptr;  // required unless kFixed
  double l_ar_s = 0;                           // resolved L_AR (> 0 when cost is set)
  double acceptance_scale = 1.0;               // s of Â' = 1 + s (Â - 1)
};

// The lazy frontier over a general lattice (path-conditioned planning): on pop, push the popped
// node's next sibling and its first child. `Lattice` provides:
//   int NumChildren(int32_t h)            // children of handle h; -1 = unknown (not yet provided)
//   double ChildProb(int32_t h, int r)    // q of child r, non-increasing in r
//   int32_t ChildToken(int32_t h, int r)
//   int32_t Child(int32_t h, int r)       // handle of child r (may create it)
// Nodes whose children are needed (to push the first child) but unknown are appended to
// ws->missing and treated as leaves; ws->handles holds the lattice handle of every tree node.
// Keys are scale * rho with `request` in the tie-breaker (PlanBatch; 1 and 0 for one request).
template <class Lattice>
class LazyFrontier {
 public:
  LazyFrontier(Lattice& lat, const Tree& tree, EngineWorkspace* ws, double scale = 1.0,
               uint32_t request = 0)
      : lat_(lat), tree_(tree), ws_(ws), scale_(scale), request_(request) {}

  // Starts at the root (node 0 of the tree, lattice handle root_handle).
  void Start(int32_t root_handle, bool expand_root) {
    ws_->handles.clear();
    ws_->handles.push_back(root_handle);
    ws_->heap.clear();
    ws_->missing.clear();
    if (expand_root) PushFirstChild(0, 1.0);
  }
  bool empty() const { return ws_->heap.empty(); }
  const FrontierKey& top() const { return ws_->heap.top(); }
  FrontierCandidate Pop() {
    const uint64_t tie = ws_->heap.pop().tie();
    const int32_t parent = TieParent(tie);
    const int rank = TieRank(tie);
    const int32_t ph = ws_->handles[parent];
    // rho as the key was made (below), without the scale.
    const double rho = tree_.path_probs[parent] * lat_.ChildProb(ph, rank);
    return {parent, TieDepth(tie), rank, rho, lat_.ChildToken(ph, rank)};
  }
  void Added(int32_t /*node*/, const FrontierCandidate& c) {
    ws_->handles.push_back(lat_.Child(ws_->handles[c.parent], c.rank));
  }
  // Next sibling (same parent, next rank), then the first child of the new node.
  void Expand(int32_t node, const FrontierCandidate& c) {
    const int32_t ph = ws_->handles[c.parent];
    if (c.rank + 1 < lat_.NumChildren(ph)) {
      Push(tree_.path_probs[c.parent] * lat_.ChildProb(ph, c.rank + 1), c.parent, c.depth,
           c.rank + 1);
    }
    PushFirstChild(node, c.rho);
  }

 private:
  void PushFirstChild(int32_t node, double rho) {
    const int32_t h = ws_->handles[node];
    const int nc = lat_.NumChildren(h);
    if (nc < 0) {
      ws_->missing.push_back(node);
      return;
    }
    if (nc == 0) return;
    Push(rho * lat_.ChildProb(h, 0), node, tree_.depths[node] + 1, 0);
  }
  void Push(double rho, int32_t parent, int depth, int rank) {
    ws_->heap.push(FrontierKey::Make(scale_ * rho, FrontierTie(depth, request_, parent, rank)));
  }

  Lattice& lat_;
  const Tree& tree_;
  EngineWorkspace* ws_;
  double scale_;
  uint32_t request_;
};

// The best-first engine, shared by marginals (MarginalsFrontier) and path-conditioned planning
// (LazyFrontier). plan->tree holds only its root and `frontier` has been started on it. A
// `Frontier` provides empty(), Pop() -> FrontierCandidate (largest key first), Added(node, c)
// after every pop, and Expand(node, c) to let the new node's children in. Fills plan->tree with
// every popped node (pop order; call TruncateToSelected to keep T_{n*}), the summary fields for n*
// and the curve.
template <class Frontier>
void RunBestFirst(Frontier& frontier, const BudgetSpec& spec, BestFirstPlan* plan) {
  Tree& tree = plan->tree;
  plan->curve.clear();
  plan->lattice_exhausted = false;
  plan->l_ar_s = spec.cost ? spec.l_ar_s : std::numeric_limits<double>::quiet_NaN();
  const bool evaluate = spec.cost != nullptr && spec.mode != BudgetMode::kFixed;

  double a_hat = 1.0;
  double best_s = -std::numeric_limits<double>::infinity();
  int best_n = 0;
  double prev_s = 0;
  if (evaluate) {
    const double c0 = spec.cost->Seconds(0);
    prev_s = best_s = spec.l_ar_s / c0;
    plan->curve.push_back({0, 1.0, c0, prev_s});
  }

  int n = 0;
  while (n < spec.n_max) {
    if (frontier.empty()) {
      plan->lattice_exhausted = true;
      break;
    }
    const FrontierCandidate e = frontier.Pop();
    const int32_t node = tree.AddNode(e.parent, e.token, e.rho);
    frontier.Added(node, e);
    ++n;
    a_hat += e.rho;
    if (evaluate) {
      const double c = spec.cost->Seconds(n);
      const double s = CalibratedAccepted(a_hat, spec.acceptance_scale) * spec.l_ar_s / c;
      plan->curve.push_back({n, a_hat, c, s});
      if (spec.mode == BudgetMode::kController) {
        if (s < prev_s) break;  // first decrease: n - 1 is the answer
        prev_s = s;
        best_n = n;
      } else if (s > best_s) {
        best_s = s;
        best_n = n;
      }
    } else {
      best_n = n;
    }
    if (n == spec.n_max) break;
    frontier.Expand(node, e);
  }

  plan->n = best_n;
  if (evaluate) {
    const CurvePoint& p = plan->curve[best_n];
    plan->expected_accepted = p.expected_accepted;
    plan->cycle_s = p.cycle_s;
    plan->speedup = p.speedup;
  } else {
    double a = 1.0;
    for (int i = 1; i <= best_n; ++i) a += tree.path_probs[i];
    plan->expected_accepted = a;
    if (spec.cost != nullptr) {
      plan->cycle_s = spec.cost->Seconds(best_n);
      plan->speedup = CalibratedAccepted(a, spec.acceptance_scale) * spec.l_ar_s / plan->cycle_s;
    } else {
      plan->cycle_s = plan->speedup = std::numeric_limits<double>::quiet_NaN();
    }
  }
}

// Best-first over a general lattice with the lazy frontier (see LazyFrontier).
template <class Lattice>
void ExpandBestFirst(Lattice& lat, TokenId root_token, int32_t root_handle, const BudgetSpec& spec,
                     EngineWorkspace* ws, BestFirstPlan* plan) {
  plan->tree.ResetRoot(root_token);
  LazyFrontier<Lattice> frontier(lat, plan->tree, ws);
  frontier.Start(root_handle, spec.n_max > 0);
  RunBestFirst(frontier, spec, plan);
}

// Cuts plan->tree to T_{n*}, the first plan->n + 1 nodes of the pop order (ExpandBestFirst leaves
// every popped node in the tree so that callers can still refer to them).
inline void TruncateToSelected(BestFirstPlan* plan) {
  const size_t keep = static_cast<size_t>(plan->n) + 1;
  Tree& tree = plan->tree;
  tree.tokens.resize(keep);
  tree.parents.resize(keep);
  tree.depths.resize(keep);
  tree.path_probs.resize(keep);
}

// Checks options against the cost and resolves L_AR into *spec.
absl::Status MakeBudgetSpec(const BestFirstOptions& options, const costmodel::CycleCost* cost,
                            BudgetSpec* spec);

}  // namespace internal

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
