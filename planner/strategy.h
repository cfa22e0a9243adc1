// The one vocabulary of decoding-strategy names. specplan-bench (runtime/), the what-if replays
// (whatif/) and every report, table and JSON field spell a strategy the same way:
//
//   ar          no speculation: one token per step
//   linear      a draft-model greedy chain (planner/policies/linear_chain.h)
//   fixed       a static tree: the (D, B, tau) draft-model tree (planner/policies/fixed_tree.h) in the
//               runtime and the what-if sweep; the same best-first tree of --n-max nodes for every
//               request in the what-if concurrency replay
//   dynatree    the confidence-aware draft-model tree (planner/policies/dynatree.h)
//   bestfirst   best-first over marginals (planner/policies/best_first.h). The runtime sizes it with the
//               controller; the what-if sweep gives one row per fixed budget and names the
//               budget-choosing modes `controller` and `scan`
//   controller  best-first sized by the controller's stopping rule (BASTION (docs/references.md))
//   scan        best-first sized by the argmax of the estimated speedup curve
//   lookup      prompt-lookup n-gram marginals, best-first (runtime)
//   merged      a draft-model tree merged with an n-gram tree (runtime)
//   batch       the global batch planner, one budget over a batch (planner/batch/batch_plan.h)
//   best-fixed  the what-if concurrency replay's best static budget per batch size, chosen in
//               hindsight (whatif/concurrency.h)
//   best-chain  the same for a top-1 chain: the best static draft length K per batch size
//               (whatif/concurrency.h)
//   heads       best-first over the parallel draft heads' marginals (runtime)
//   causal      path-conditioned best-first over the causal-correction head (runtime;
//               planner/policies/path_conditioned.h)
//
// Earlier releases of the what-if wrote best_first, fixed_tree, no_spec and batch_planner;
// CanonicalStrategyName still accepts those on input.
#ifndef SPECPLAN_PLANNER_STRATEGY_NAMES_H_
#define SPECPLAN_PLANNER_STRATEGY_NAMES_H_

#include <string_view>

namespace specplan::planner::strategy_names {

inline constexpr char kAr[] = "ar";
inline constexpr char kLinear[] = "linear";
inline constexpr char kFixed[] = "fixed";
inline constexpr char kDynaTree[] = "dynatree";
inline constexpr char kBestFirst[] = "bestfirst";
inline constexpr char kController[] = "controller";
inline constexpr char kScan[] = "scan";
inline constexpr char kLookup[] = "lookup";
inline constexpr char kMerged[] = "merged";
inline constexpr char kBatch[] = "batch";
inline constexpr char kBestFixed[] = "best-fixed";
inline constexpr char kBestChain[] = "best-chain";
inline constexpr char kHeads[] = "heads";
inline constexpr char kCausal[] = "causal";

// `name`, or the current spelling of a name earlier releases used (best_first -> bestfirst,
// fixed_tree -> fixed, no_spec -> ar, batch_planner -> batch).
inline std::string_view CanonicalStrategyName(std::string_view name) {
  if (name == "best_first") return kBestFirst;
  if (name == "fixed_tree") return kFixed;
  if (name == "no_spec") return kAr;
  if (name == "batch_planner") return kBatch;
  return name;
}

}  // namespace specplan::planner::strategy_names

#endif  // SPECPLAN_PLANNER_STRATEGY_NAMES_H_
