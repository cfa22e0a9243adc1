// What-if analysis: replay a recorded trace (trace.h) under many tree-building strategies and
// budgets, without running any model, and estimate what each would have bought on a GPU.
//
// For every step and strategy the sweep builds the tree the planner would have built from the
// step's drafter output, computes the accepted length it would have realised against the target's
// recorded greedy continuation (replay.h), and prices the step with the cycle cost at the step's
// context length (costmodel/cycle_cost.h):
// clang-format off
//   C_i(n)   = T_draft + T_aux + T_verify(n + 1, c_i)               seconds, n = draft nodes
//   T_AR(c)  = T_verify(1, c)                                       seconds, one plain AR step
//              (the planner's L_AR, best_first.h; a root-only step without drafting cost)
//   step speedup     = (1 + L_i) * T_AR(c_i) / C_i(n_i)
//   speedup (a row)  = sum_i (1 + L_i) * T_AR(c_i) / sum_i C_i(n_i)   tokens per second over AR
// clang-format on
// where L_i is the realised accepted draft length (root/bonus excluded).
//
// Strategies (names as in the CLI's --strategies):
// clang-format off
//   bestfirst    BestFirstPlanner in fixed mode, one row per budget (needs "marginals"). All
//                budgets come from one plan at the largest budget: every prefix of the
//                best-first pop order is the fixed-budget tree of that size (best_first.h,
//                Prop. 2.3).
//   controller   BestFirstPlanner in controller mode (first decrease of S(n)), n_max draft nodes.
//   scan         BestFirstPlanner in scan mode (argmax of S(n) over n = 0..n_max).
//   dynatree     DynaTreePolicy with N_max = budget, one row per budget (needs "nodes").
//   fixed        FixedTreePolicy (D, B, tau) with max_nodes = budget, one row per budget.
//   linear       LinearChainPolicy with K = budget, one row per budget.
// clang-format on
// Policies are replayed over the step's recorded nodes through the TreePolicy expand/observe loop
// (replay.h RecordedDrafter) and observe the realised length, so history-adaptive policies adapt
// along the trace (one policy object per row, steps in trace order). Steps lacking the data a
// strategy needs are skipped for it and counted (WhatIfRow::steps_skipped).
//
// Drafting time: marginals strategies pay options.drafter.DraftSeconds() with gamma = the step's
// marginals gamma (a parallel drafter drafts the whole lattice once); policy strategies pay
// options.policy_forward_s per drafter forward (one per tree level the policy requested).
#ifndef SPECPLAN_WHATIF_SWEEP_H_
#define SPECPLAN_WHATIF_SWEEP_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "planner/policies/dynatree.h"
#include "planner/policies/fixed_tree.h"
#include "planner/strategy.h"
#include "whatif/replay_basis.h"
#include "whatif/statistics.h"
#include "whatif/trace.h"

namespace specplan::whatif {

// "No value" in reports (no step used, undefined correlation); null in JSON.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The sweep's strategies (planner/strategy.h), in this order: bestfirst, controller, scan,
// dynatree, fixed, linear. ParseStrategy also takes the names earlier releases wrote (best_first,
// fixed_tree); for any other name: "'x': unknown strategy (known: bestfirst, ...)".
using Strategy = planner::Strategy;
using planner::StrategyName;
absl::StatusOr<Strategy> ParseStrategy(std::string_view name);
// Every strategy, in the order above.
std::vector<Strategy> AllStrategies();
// True for the strategies that produce one row per budget (all but controller and scan).
bool SweepsBudgets(Strategy s);

// Comma-separated lists, e.g. "1,2,4,8" / "bestfirst,controller". Errors name the bad item:
// "'x': not an integer", "'0': budget must be in [1, 8191] draft nodes", "'foo': unknown strategy
// (known: ...)", duplicates. Budgets come back sorted ascending.
absl::StatusOr<std::vector<int>> ParseBudgetList(std::string_view text);
absl::StatusOr<std::vector<Strategy>> ParseStrategyList(std::string_view text);

struct WhatIfOptions {
  std::vector<int> budgets = {1, 2, 4, 8, 16, 32, 64, 128};  // draft nodes, each in [1, 8191]
  std::vector<Strategy> strategies = AllStrategies();
  int n_max = 0;  // controller / scan search n = 0..n_max; <= 0 means max(budgets)
  // Marginals strategies' drafter (gamma is replaced by each step's marginals gamma).
  costmodel::DrafterCost drafter;
  double policy_forward_s = 0;  // seconds per drafter forward (tree level) for policy strategies
  double t_aux_s = 0;           // seconds, tree construction / sampling overhead per cycle
  // controller / scan calibrate the surrogate online: a planner::AcceptanceEstimator sees each
  // step's (Â, realised L) in trace order and the next plan takes its surrogate_scale s as the
  // acceptance_scale (a node is worth s·ρ; best_first.h). The row's params end in the final s.
  bool calibrate = false;
  // Policy parameters; n_max (DynaTree) and max_nodes (fixed tree) are replaced by the budget.
  planner::DynaTreeOptions dynatree;
  planner::FixedTreeOptions fixed_tree;
  bool validate_trace = true;  // ValidateTraceStep on every step first (for traces built in code)
  bool per_step = false;       // keep WhatIfRow::per_step
  // Called after each row with (rows done, rows total); may be empty.
  std::function<void(int, int)> progress;
};

// One step of one row (options.per_step).
struct StepResult {
  int64_t step = 0;               // index into Trace::steps
  int n = 0;                      // draft nodes in the tree
  int accepted = 0;               // realised accepted draft length L
  double predicted_accepted = 0;  // Â - 1: surrogate for L (sum of rho over the draft nodes)
  double cycle_s = 0;             // C(n), seconds
  double t_ar_s = 0;              // T_AR(c), seconds
  double speedup = 0;             // (1 + L) * T_AR / C
};

// One (strategy, budget). Averages are over the steps used; NaN when none was used.
struct WhatIfRow {
  Strategy strategy = Strategy::kBestFirst;
  int budget = 0;      // the budget swept, or n_max for controller / scan
  std::string params;  // e.g. "dynatree(...)": the policy's Name(), or "bestfirst(fixed, n=8)"
  int64_t steps_used = 0;
  int64_t steps_skipped = 0;                  // steps without the data the strategy needs
  double accepted_per_step = kNaN;            // mean L (root/bonus excluded)
  double predicted_accepted_per_step = kNaN;  // mean Â - 1
  double mean_tree_size = kNaN;               // mean draft nodes n
  double cycle_s = kNaN;                      // mean C_i(n_i), seconds
  double t_ar_s = kNaN;                       // mean T_AR(c_i), seconds
  double speedup = kNaN;                      // sum (1 + L_i) T_AR(c_i) / sum C_i(n_i)
  double predicted_speedup =
      kNaN;               // sum Â_i T_AR(c_i) / sum C_i(n_i) (what the surrogate promised)
  double pearson = kNaN;  // Pearson(Â_i - 1, L_i) over the steps used
  std::vector<StepResult> per_step;  // [steps_used] when options.per_step
};

// The best fixed best-first budget in hindsight (highest row speedup; ties: smaller budget).
struct OracleSummary {
  bool found = false;
  int budget = 0;
  double speedup = kNaN;
  double accepted_per_step = kNaN;
};

// The controller's (or scan's) result relative to the oracle (BASTION (docs/references.md) Fig. 4).
struct ControllerSummary {
  bool found = false;
  double speedup = kNaN;
  double accepted_per_step = kNaN;
  double mean_tree_size = kNaN;   // mean realised budget (Fig. 4's green stars)
  double ratio_to_oracle = kNaN;  // speedup / oracle speedup
};

// How well the path-score surrogate predicts realised acceptance (BASTION (docs/references.md) App.
// H.1).
struct SurrogateQuality {
  int64_t steps = 0;  // steps with marginals
  // H.1's setting: the drafter's top-1 chain over the gamma positions, Â = sum_k prod_{j<=k}
  // q_j(x_j) (root omitted) against that chain's realised accepted length.
  double chain_pearson = kNaN;
  double chain_spearman = kNaN;
  double chain_predicted_mean = kNaN;
  double chain_accepted_mean = kNaN;
  // The controller's trees: Â - 1 against L (NaN when controller is not among the strategies).
  double controller_pearson = kNaN;
  double controller_spearman = kNaN;
};

// The basis (replay_basis.h): the trace's models, the latency model, and the options used
// (resolved: n_max is never <= 0 here).
struct WhatIfReport : ReplayBasis {
  // What was analysed.
  int64_t vocab = 0;
  int64_t steps = 0;
  int64_t steps_with_marginals = 0;
  int64_t steps_with_nodes = 0;
  int64_t prompts = 0;  // distinct prompt indices
  // The options used besides the basis's.
  std::vector<int> budgets;
  std::vector<Strategy> strategies;
  double policy_forward_s = 0;
  // Results: rows in strategy order, budgets ascending within a strategy.
  std::vector<WhatIfRow> rows;
  OracleSummary oracle;
  ControllerSummary controller;
  ControllerSummary scan;
  SurrogateQuality surrogate;
};

// Runs the sweep. InvalidArgument naming the field for bad options (empty or out-of-range budgets,
// no strategies, invalid policy options, negative times) or, with validate_trace, the first bad
// step ("step 3: nodes.parents[2] = 5: ..."); for a trace without steps.
absl::StatusOr<WhatIfReport> RunWhatIf(const Trace& trace, const costmodel::LatencyModel& latency,
                                       const WhatIfOptions& options);

// JSON form (README "What-if analysis" lists the fields); NaN becomes null. (sweep_render.cc)
nlohmann::json WhatIfReportToJson(const WhatIfReport& report);
// Human-readable table with the oracle, controller and surrogate lines ('\n'-terminated).
std::string FormatWhatIfTable(const WhatIfReport& report);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_SWEEP_H_
