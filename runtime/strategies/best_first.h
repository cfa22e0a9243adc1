// BASTION: the draft model's autoregressive chain of gamma greedy steps gives a top-k lattice
// (planner::Marginals); best-first expansion under the cost-model controller (planner::
// BestFirstPlanner through a planner::PlanBackend) picks the tree size that maximises
// S(n) = Â(n)·L_AR / C(n) with C from a verification-latency model.
//
// With the speculation gate on (StrategyOptions::gate, the default), planner::SpeculationGate
// first decides the chain depth d in {0, ..., gamma} from the measured draft-level seconds, the
// same T_verify and the acceptance observed so far: d = 0 builds a root-only tree without running
// the draft model (a plain AR step; the draft cache catches up on the committed tokens the next
// time it drafts), d > 0 drafts a d-row lattice that the controller plans on as before.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_BEST_FIRST_H_
#define SPECPLAN_RUNTIME_STRATEGIES_BEST_FIRST_H_

#include <memory>
#include <vector>

#include "runtime/strategies/gated_chain.h"

namespace specplan::runtime {

// Made by GatedChainStrategy::Create. options.bestfirst.n_max is capped at options.max_tree_nodes.
class BestFirstStrategy final : public GatedChainStrategy {
 public:
  const char* Name() const override { return StrategyName(Strategy::kBestFirst); }
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override;
  absl::Status Observe(const planner::Tree& tree, const planner::AcceptResult& accept) override;

 private:
  friend class GatedChainStrategy;  // Create
  BestFirstStrategy(const StrategyOptions& options, const StrategyContext& ctx);

  planner::BestFirstOptions planner_options_;
  planner::PlanBackend* backend_;
  planner::BestFirstPlan plan_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_BEST_FIRST_H_
