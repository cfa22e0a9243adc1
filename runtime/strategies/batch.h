// Strategy `batch`: every sequence drafts the draft model's autoregressive-chain lattice (as
// bestfirst does), and ONE global batch planner (planner::BatchPlanner, planner/batch/batch_plan.h)
// sizes all the sequences' trees of a batch at once: one budget grown from one frontier, stopping
// where the batch goodput Σ Â_i / C_batch(N) peaks, with n_i = 0 ("do not speculate this
// sequence this step") and N = 0 (a plain decoding step) when drafting does not pay.
//
// The batch decoder (runtime/batch_decoder.h) drafts each sequence's lattice (DraftMarginals),
// plans the batch with a BatchStepPlanner and hands each sequence its tree. Decoded alone
// (SpeculativeDecoder), BuildTree plans a batch of one, which is best-first with the same stopping
// rule node for node.
//
// The speculation gate (planner/acceptance/speculation_gate.h), unless options.gate.enabled is
// false, decides before drafting whether the step drafts at all and how deep: alone with Decide, in
// a batch with one gate for the whole batch (DecideBatch, shared through ShareGate), fed by every
// sequence's acceptance. A step it keeps undrafted is a plain decoding step for every sequence, and
// the draft model does not run. The batch planner prices nodes with the gate's calibrated surrogate
// (AcceptanceEstimator::surrogate_scale).
#ifndef SPECPLAN_RUNTIME_STRATEGIES_BATCH_H_
#define SPECPLAN_RUNTIME_STRATEGIES_BATCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cycle_cost.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/batch/batch_plan.h"
#include "runtime/strategies/gated_chain.h"

namespace specplan::runtime {

// Plans one decoding step of a batch from its sequences' lattices.
class BatchStepPlanner {
 public:
  // `latency` prices a ragged verification pass; `backend` plans (in-process, or a
  // specplan-server's PlanBatch RPC). Neither is owned; both must outlive the planner.
  // options.bestfirst.n_max caps each sequence's tree (at most options.max_tree_nodes);
  // options.bestfirst.mode picks the stopping rule; options.batch_budget is kFixed's total.
  BatchStepPlanner(const StrategyOptions& options, const costmodel::LatencyModel* latency,
                   planner::PlanBackend* backend);

  // One request per sequence: (marginals[i], contexts[i]). `drafter` is one sequence's drafting
  // cost; the runtime drafts the sequences one after another, so the batch pays B times it.
  absl::Status Plan(absl::Span<const planner::Marginals* const> marginals,
                    absl::Span<const int64_t> contexts, const costmodel::DrafterCost& drafter,
                    planner::BatchPlan* plan);
  // The surrogate calibration the next plans use (BatchPlanOptions::acceptance_scale).
  void set_acceptance_scale(double s) { options_.acceptance_scale = s; }

 private:
  int cap_;
  planner::BatchPlanOptions options_;
  int batch_budget_;
  const costmodel::LatencyModel* latency_;
  planner::PlanBackend* backend_;
  std::vector<planner::BatchRequest> requests_;
};

// Made by GatedChainStrategy::Create.
class BatchStrategy final : public GatedChainStrategy {
 public:
  const char* Name() const override { return StrategyName(Strategy::kBatch); }
  // A batch of one: the gate, DraftMarginals, then the batch planner over this sequence alone.
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override;
  // Feeds the gate (when enabled and this step drafted) and the drafter's cache.
  absl::Status Observe(const planner::Tree& tree, const planner::AcceptResult& accept) override;
  // gate_stats(): in a batch every member shares one gate, so every member reports it.

  // This step does not draft (the gate said so): Observe then leaves the drafter alone.
  void SkipDraft() { drafted_ = false; }
  // A batch decoder's one gate for all its members (not owned; must outlive the strategy).
  void ShareGate(planner::SpeculationGate* gate) { gate_ = gate; }
  // One sequence's drafting cost (autoregressive, gamma steps of the last measured step time, or
  // of StrategyOptions::batch_draft_step_s when that is >= 0).
  costmodel::DrafterCost drafter_cost() const;

 private:
  friend class GatedChainStrategy;  // Create
  BatchStrategy(const StrategyOptions& options, const StrategyContext& ctx);

  double fixed_step_s_;                        // StrategyOptions::batch_draft_step_s
  std::unique_ptr<BatchStepPlanner> planner_;  // the batch of one
  planner::BatchPlan plan_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_BATCH_H_
