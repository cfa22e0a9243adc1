// DynaTree policy: confidence-aware adaptive drafting for autoregressive drafters
// (DynaTree (docs/references.md) §3.3 "Adaptive Tree Drafting" and Appendix B, Algorithm 1
// DRAFTTREE).
//
// Rules (each cites the paper; the implementation comments cite the same places):
//  * Dynamic Tree Breadth (§3.3 eq. B(u); Alg. 1 line 27): an expanded node u with local confidence
//    c(u) = max_v q_D(v | u) (= top-1 prob of its row) gets its top-B(u) candidates as children:
//      B(u) = B_min if c(u) >= tau_h;  B_mid if tau_l <= c(u) < tau_h;  B_max if c(u) < tau_l.
//  * Dynamic Tree Depth (§3.3 expandability condition; Alg. 1 lines 17-25): u is expandable iff
//      d(u) < D_max  AND  p(u) >= rho_stop  AND  (d(u) < D_0  OR  p(u) > rho_deep),
//    with p(u) = rho(u) the cumulative path probability (Tree::path_probs).
//  * Adaptive Pruning (§3.3 "p(u) < tau => prune u"; Alg. 1 lines 14-16): see PruneMode.
//  * Node budget N_max (§3.3; Alg. 1 lines 12 and 28): children are added in BFS (FIFO) order until
//    the tree holds N_max draft nodes; remaining frontier nodes stay leaves.
//  * History adaptation (§3.3 "Historical adjustment"; Alg. 1 line 7 ADJUST(tau_l, tau_h, D_0)):
//    sliding-window mean a_bar of the last W per-step acceptance statistics, then proportional
//    control around a*:  D_0 <- clip(D_0 + eta_D (a_bar - a*), 1, D_max - 1),
//    tau_h <- clip(tau_h - eta_h (a_bar - a*), 0, 1), and, by "the same principle" (the paper lists
//    tau_l in ADJUST but gives no formula), tau_l <- clip(tau_l - eta_l (a_bar - a*), 0, tau_h).
//    N_max, D_max, rho_stop, rho_deep and tau are not adapted (Alg. 1 line 7 adjusts only those
//    three).
//
// Level-by-level execution is exactly Algorithm 1: its FIFO frontier pops every depth-d node before
// any depth-(d+1) node and the gates depend only on the node itself, so batching one depth level
// per drafter forward yields the same tree, in BFS order (§3.4 serialization).
//
// Our convention differs from Alg. 1 line 10 in one respect: the paper's root u_0 is the drafter's
// top-1 token (itself verified); ours is the pending bonus token from the previous verification
// (DESIGN.md "Tree"), which is already correct, with depth 0 and p = 1. N_max counts draft nodes
// (root excluded), i.e. everything the verifier checks.
#ifndef SPECPLAN_PLANNER_POLICIES_DYNATREE_H_
#define SPECPLAN_PLANNER_POLICIES_DYNATREE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/policies/policy.h"

namespace specplan::planner {

// How the pruning threshold tau acts. The paper states it two ways; both agree that a node with
// p(u) < tau is never expanded (and since p is non-increasing along paths it is always a leaf).
enum class DynaTreePruneMode {
  // §3.3: "p(u) < tau => prune u" for leaves: such a candidate never enters the tree and does not
  // consume N_max. Default.
  kRemoveLeaf,
  // Alg. 1 literally: the child is added (consuming N_max) and skipped when popped (lines 14-16),
  // so it stays in the verified tree as a leaf.
  kKeepAsLeaf,
};

// The per-step acceptance statistic a_r in [0, 1] fed to the window (§3.3 "Historical adjustment").
enum class DynaTreeAcceptanceStatistic {
  // a_r = L / D_T with D_T the depth of the step's tree: the fraction of the drafted path length
  // that was committed. For a chain this is exactly "the fraction of drafted tokens committed",
  // and it is the acceptance the paper reports for trees (Table 3: e.g. Linear K=8, l_bar = 7.05
  // -> 88.2%). Default.
  kPathFraction,
  // a_r = L / n with n the number of draft nodes: the §3.3 wording read literally for a tree
  // (small for wide trees; pair it with a lower target a*).
  kNodeFraction,
};

// Hyper-parameters. "App. A" = value the paper reports; "ours" = the paper gives no value (it tunes
// rho_stop/rho_deep on held-out data, §3.3) and this is our default. Validation enforces the
// paper's ranges (§3.3: 1 <= B_min <= B_mid <= B_max, 0 < tau_l < tau_h < 1, 1 <= D_0 < D_max,
// 0 < rho_stop < rho_deep < 1, tau in (0, 1), a* in (0, 1)).
struct DynaTreeOptions {
  // Dynamic Tree Breadth.
  int32_t b_min = 1;   // children when c(u) >= tau_h (App. A: (B_min, B_max) = (1, 3))
  int32_t b_mid = 2;   // children when tau_l <= c(u) < tau_h (ours: not reported; between 1 and 3)
  int32_t b_max = 3;   // children when c(u) < tau_l (App. A)
  double tau_h = 0.9;  // high-confidence threshold (App. A); adapted online
  double tau_l = 0.4;  // low-confidence threshold (App. A); adapted online
  // Dynamic Tree Depth.
  int32_t d0 = 5;          // D_0 base depth: below it only rho_stop gates (App. A); adapted online
  int32_t d_max = 8;       // D_max hard maximum depth (App. A: 8 on WikiText-2, 9 on PG-19)
  double rho_stop = 0.05;  // early stopping: no expansion when p(u) < rho_stop (ours)
  double rho_deep = 0.3;   // deep expansion at d(u) >= D_0 only when p(u) > rho_deep (ours)
  // Adaptive Pruning.
  double tau = 0.01;  // pruning threshold on p(u) (ours; the fixed-tree baseline uses 0.1)
  DynaTreePruneMode prune_mode = DynaTreePruneMode::kRemoveLeaf;
  int32_t n_max = 256;  // node budget N_max, draft nodes (App. A budget of the tree baselines)
  // History adaptation.
  bool history_adaptation = true;  // off = the "Dynamic Tree Breadth & Depth" ablation (Table 4)
  int32_t window = 10;             // W: steps in the sliding window (ours)
  double target_acceptance = 0.7;  // a* (ours)
  double eta_d = 0.5;              // eta_D: step size on D_0 per unit of (a_bar - a*) (ours)
  double eta_h = 0.05;             // eta_h: step size on tau_h (ours)
  double eta_l = 0.05;             // eta_l: step size on tau_l (ours; see header comment)
  DynaTreeAcceptanceStatistic statistic = DynaTreeAcceptanceStatistic::kPathFraction;
};

// InvalidArgument naming the offending field and value, e.g. "tau_l = 0.95: must be in (0, tau_h
// = 0.9)". Also bounds: b_max <= kMaxCandidatesPerNode, d_max and n_max <= kMaxTreeNodes - 1,
// window in [1, 1 << 20], eta_* >= 0 and finite.
absl::Status ValidateDynaTreeOptions(const DynaTreeOptions& options);

// The adapted parameters (start at the options' values).
struct DynaTreeState {
  double d0 = 0;            // D_0 as a real number (proportional control moves it continuously)
  int32_t d0_used = 0;      // integer D_0 the depth gate uses: round(d0), clipped to [1, D_max - 1]
  double tau_h = 0;         // current high-confidence threshold
  double tau_l = 0;         // current low-confidence threshold, <= tau_h
  int32_t window_fill = 0;  // statistics in the window (< W: no adjustment yet)
  double window_mean = 0;   // a_bar over the window when full, else over what it holds
  int64_t adjustments = 0;  // ADJUST steps applied
};

// What the rules did in the last step (for tests and traces).
struct DynaTreeStepTrace {
  int32_t expanded = 0;     // nodes whose distribution was requested (passed all gates)
  int32_t breadth_min = 0;  // expanded nodes that chose B_min / B_mid / B_max
  int32_t breadth_mid = 0;
  int32_t breadth_max = 0;
  int32_t pruned = 0;              // candidates with p < tau dropped (kRemoveLeaf) or kept as
                                   // never-expanded leaves (kKeepAsLeaf)
  int32_t stopped_depth_max = 0;   // leaves stopped by d(u) >= D_max
  int32_t stopped_rho_stop = 0;    // leaves stopped by p(u) < rho_stop
  int32_t stopped_depth_gate = 0;  // leaves stopped by d(u) >= D_0 and p(u) <= rho_deep
  bool budget_hit = false;         // N_max reached
};

class DynaTreePolicy final
    : public ConfiguredLevelPolicy<DynaTreePolicy, DynaTreeOptions, ValidateDynaTreeOptions> {
 public:
  std::string Name() const override;
  const DynaTreeState& state() const { return state_; }
  const DynaTreeStepTrace& last_trace() const { return trace_; }
  // Forgets the window and restores the options' D_0, tau_h, tau_l.
  void ResetHistory();

 private:
  friend ConfiguredLevelPolicy;
  explicit DynaTreePolicy(const DynaTreeOptions& options);
  void OnBegin(std::vector<int32_t>& pending) override;
  void OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) override;
  void OnAcceptance(int accepted_length) override;

  // Gate of Alg. 1 lines 14-25 for node u; counts the stop reason in trace_.
  bool Expandable(int32_t u);

  DynaTreeState state_;
  DynaTreeStepTrace trace_;
  std::vector<double> window_;  // [W] ring buffer of a_r
  int32_t window_next_ = 0;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_DYNATREE_H_
