// The one vocabulary of decoding strategies: the Strategy type that specplan-bench (runtime/), the
// what-if sweep and the what-if concurrency replay (whatif/) share, and its one table of names.
// Every report, table and JSON field spells a strategy as StrategyName does:
//
//   ar          no speculation: one token per step
//   linear      a draft-model greedy chain (planner/policies/linear_chain.h)
//   fixed       a static tree: the (D, B, tau) draft-model tree (planner/policies/fixed_tree.h) in
//   the
//               runtime and the what-if sweep; the same best-first tree of --n-max nodes for every
//               request in the what-if concurrency replay
//   dynatree    the confidence-aware draft-model tree (planner/policies/dynatree.h)
//   bestfirst   best-first over marginals (planner/policies/best_first.h). The runtime sizes it
//   with the
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
// Earlier releases of the what-if wrote best_first, fixed_tree, no_spec and batch_planner; the
// table lists them after the current names, so they still parse and never print.
//
// Each user runs only some strategies: it keeps its own list of them and parses with
// FindStrategyIn / CheckStrategyIn, whose errors name the field, the value and what it supports.
#ifndef SPECPLAN_PLANNER_STRATEGY_H_
#define SPECPLAN_PLANNER_STRATEGY_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "util/enum_names.h"

namespace specplan::planner {

enum class Strategy {
  kAr,
  kLinear,
  kFixed,
  kDynaTree,
  kBestFirst,
  kController,
  kScan,
  kLookup,
  kMerged,
  kBatch,
  kBestFixed,
  kBestChain,
  kHeads,
  kCausal,
};

inline constexpr EnumEntry<Strategy> kStrategyNames[] = {
    {Strategy::kAr, "ar"},
    {Strategy::kLinear, "linear"},
    {Strategy::kFixed, "fixed"},
    {Strategy::kDynaTree, "dynatree"},
    {Strategy::kBestFirst, "bestfirst"},
    {Strategy::kController, "controller"},
    {Strategy::kScan, "scan"},
    {Strategy::kLookup, "lookup"},
    {Strategy::kMerged, "merged"},
    {Strategy::kBatch, "batch"},
    {Strategy::kBestFixed, "best-fixed"},
    {Strategy::kBestChain, "best-chain"},
    {Strategy::kHeads, "heads"},
    {Strategy::kCausal, "causal"},
    // The spellings of earlier releases (input only).
    {Strategy::kBestFirst, "best_first"},
    {Strategy::kFixed, "fixed_tree"},
    {Strategy::kAr, "no_spec"},
    {Strategy::kBatch, "batch_planner"},
};

// "ar", "linear", ... as in the table above; "?" for a value outside it.
inline const char* StrategyName(Strategy s) { return EnumName(kStrategyNames, s); }

// The names of `strategies`, comma-separated: "ar, linear, fixed".
inline std::string StrategyNames(absl::Span<const Strategy> strategies) {
  std::string out;
  for (Strategy s : strategies) absl::StrAppend(&out, out.empty() ? "" : ", ", StrategyName(s));
  return out;
}

// The strategy `name` spells (any spelling in the table), when it is one of `supported`.
inline std::optional<Strategy> FindStrategyIn(absl::Span<const Strategy> supported,
                                              std::string_view name) {
  for (const EnumEntry<Strategy>& entry : kStrategyNames) {
    if (name != entry.name) continue;
    for (Strategy s : supported) {
      if (s == entry.value) return s;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// InvalidArgument "<field> = \"<name>\": expected <the names of supported>".
inline absl::Status StrategyNotIn(absl::Span<const Strategy> supported, std::string_view field,
                                  std::string_view name) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), " = \"", std::string(name),
                                                 "\": expected ", StrategyNames(supported)));
}

// OK when `s` is one of `supported`; else StrategyNotIn's error for its name.
inline absl::Status CheckStrategyIn(absl::Span<const Strategy> supported, std::string_view field,
                                    Strategy s) {
  for (Strategy t : supported) {
    if (t == s) return absl::OkStatus();
  }
  return StrategyNotIn(supported, field, StrategyName(s));
}

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_STRATEGY_H_
