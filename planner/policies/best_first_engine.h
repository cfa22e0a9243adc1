// The best-first engine behind BestFirstPlanner, PathConditionedPlanner and BatchPlanner's
// provider requests: the lazy frontier over a revealed lattice, the budget, the loop that pops
// and prices. An implementation header: not installed (scripts/public_headers.py), not for
// engines; the planners in best_first.h, path_conditioned.h and batch/batch_plan.h are.
#ifndef SPECPLAN_PLANNER_POLICIES_BEST_FIRST_ENGINE_H_
#define SPECPLAN_PLANNER_POLICIES_BEST_FIRST_ENGINE_H_

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
#include "planner/policies/best_first.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

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
  // The depth each prefix's drafting is priced at: -1 = its tree's own depth; >= 0 = this depth
  // (a run capped at that depth, BestFirstPlanner's exact search on a depth-stepped cost).
  int price_depth = -1;
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
  // n = 0 drafts nothing: the plain step, C(0) = L_AR and S(0) = 1 (DESIGN.md "Cycle cost").
  double best_s = 1.0;
  int best_n = 0;
  int run_n = 0;  // kController: the last n before the first decrease, from n = 1 on
  double prev_s = -std::numeric_limits<double>::infinity();
  int depth = 0;  // the tree's depth so far
  if (evaluate) plan->curve.push_back({0, 1.0, spec.l_ar_s, 1.0});

  // The tree grows by index into arrays sized ahead (doubling, at most n_max nodes past the
  // start) and is cut to the popped nodes below: four appends per pop cost about as much as the
  // pop itself.
  const int start = tree.size();
  int32_t built = start;  // nodes written
  int n = 0;
  while (n < spec.n_max) {
    if (frontier.empty()) {
      plan->lattice_exhausted = true;
      break;
    }
    const FrontierCandidate e = frontier.Pop();
    if (built == tree.size()) tree.Resize(std::min(std::max(2 * built, 64), start + spec.n_max));
    const int32_t node = built++;
    tree.tokens[node] = e.token;
    tree.parents[node] = e.parent;
    tree.depths[node] = tree.depths[e.parent] + 1;
    tree.path_probs[node] = e.rho;
    frontier.Added(node, e);
    ++n;
    a_hat += e.rho;
    if (evaluate) {
      depth = std::max(depth, tree.depths[node]);
      const double c = spec.cost->TreeSeconds(n, spec.price_depth >= 0 ? spec.price_depth : depth);
      const double s = CalibratedAccepted(a_hat, spec.acceptance_scale) * spec.l_ar_s / c;
      plan->curve.push_back({n, a_hat, c, s});
      if (spec.mode == BudgetMode::kController) {
        // First decrease over n >= 1 (n = 0 pays no drafting, so the cost steps from n = 0 to 1
        // and the comparison with n = 0 comes after the stop): n - 1 is the answer.
        if (s < prev_s) break;
        prev_s = s;
        run_n = n;
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
  tree.Resize(built);
  if (evaluate && spec.mode == BudgetMode::kController && run_n > 0 &&
      plan->curve[static_cast<size_t>(run_n)].speedup > best_s) {
    best_n = run_n;
  }

  plan->n = best_n;
  if (evaluate) {
    const CurvePoint& p = plan->curve[best_n];
    plan->expected_accepted = p.expected_accepted;
    plan->cycle_s = p.cycle_s;
    plan->speedup = p.speedup;
  } else {
    // A fixed budget takes every pop (best_n = n), and a_hat summed them from 1 in the same
    // order as Tree::expected_accepted would: the same double, without a second pass.
    const double a = a_hat;
    plan->expected_accepted = a;
    if (spec.cost != nullptr) {
      plan->cycle_s = best_n == 0 ? spec.l_ar_s : spec.cost->TreeSeconds(best_n, tree.max_depth());
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
inline void TruncateToSelected(BestFirstPlan* plan) { plan->tree.Resize(plan->n + 1); }

// Checks options against the cost and resolves L_AR into *spec.
absl::Status MakeBudgetSpec(const BestFirstOptions& options, const costmodel::CycleCost* cost,
                            BudgetSpec* spec);

}  // namespace internal

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_BEST_FIRST_ENGINE_H_
