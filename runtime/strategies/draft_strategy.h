// The interface every decoding strategy implements (llama.cpp's common_speculative is the model):
// per step the shared decode loop (runtime/decoder.cc) asks the strategy for a draft tree rooted at
// the pending token, verifies it in one target pass, accepts, compacts the KV cache, and tells the
// strategy what was accepted. Everything strategy-specific (draft model, policy, planner backend,
// n-gram lookup, merge bookkeeping) lives behind this interface, one strategy per file here:
//   ar.h          root-only trees (plain autoregressive decoding)
//   draft_tree.h  a draft model driving a planner::TreePolicy (linear, fixed, dynatree)
//   best_first.h  draft-model AR-chain lattice + best-first with the cost-model controller
//   lookup.h      prompt-lookup n-gram marginals + fixed-budget best-first (no draft model)
//   merged.h      dynatree tree and n-gram tree merged under one root
//   batch.h       draft-model AR-chain lattice; a global batch planner sizes every sequence's tree
//   heads.h       draft heads on the target's hidden row: parallel marginals + best-first, or the
//                 causal head + path-conditioned best-first
// and gated_chain.h, the gated draft-model chain lattice that best_first.h and batch.h share.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_DRAFT_STRATEGY_H_
#define SPECPLAN_RUNTIME_STRATEGIES_DRAFT_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/acceptance/acceptance.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/batch/plan_backend.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "runtime/drafters.h"
#include "runtime/strategies/strategy_options.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

// What a strategy sees of the decode at the start of a step.
struct DecodeState {
  // The whole accepted sequence, prompt included; back() is the pending root (accepted, not yet
  // in the target's KV cache).
  const std::vector<planner::TokenId>& committed;
  int64_t c = 0;  // tokens in the target's KV cache (= committed.size() - 1)
  // The target's final-norm hidden state [h] of the last cached token (the row that predicted the
  // root), on the target's device: what draft heads read (runtime/draft_heads.h). Defined only for
  // strategies whose NeedsTargetHidden() is true.
  torch::Tensor target_hidden;
};

// What the factory hands a strategy; pointers are not owned and outlive the strategy.
struct StrategyContext {
  const Transformer* target = nullptr;      // non-null
  const Transformer* draft = nullptr;       // non-null when StrategyNeedsDraft(options.strategy)
  int64_t max_len = 0;                      // target cache slots (committed tokens + one tree)
  planner::PlanBackend* backend = nullptr;  // non-null: where best-first plans and merges go
  // T_verify(s, c) of the target, the one verify-latency model of every strategy made in this
  // context (the controllers' C(n), the speculation gates): options.latency when given, else
  // measured on the target once by MakeStrategyContext. Null in a context made by hand; the
  // factory then takes options.latency (StrategyNeedsLatency: one of the two must be given).
  const costmodel::LatencyModel* latency = nullptr;
  // Seconds of one forward of s tokens of the draft model over 64 cached tokens (kind "measured",
  // extrapolated above its grid), measured once by MakeStrategyContext when a gated strategy runs
  // a draft model on measured draft times: the gate's first draft-level estimate (s = 1) and the
  // price of the draft cache's catch-up chunk before a probe (ProbeSeconds). Null: not measured
  // (SeedDraftLevel then times one forward itself; ProbeSeconds prices a catch-up token as a
  // draft level).
  const costmodel::LatencyModel* draft_latency = nullptr;
};

// True when options.strategy prices steps with T_verify: bestfirst, batch, heads, causal,
// dynatree with its speculation gate on, and merged with a heads tree.
bool StrategyNeedsLatency(const StrategyOptions& options);

// Gives a speculation gate its first draft-level seconds, unless the gate is off or
// options.gate_draft_level_s fixes them: ctx.draft_latency at s = 1, or, when the context has
// none, one single-token forward of ctx.draft measured now (MeasureSingleTokenSeconds).
absl::Status SeedDraftLevel(const StrategyOptions& options, const StrategyContext& ctx,
                            planner::SpeculationGate* gate);

// The seconds a probe of `depth` draft levels would add now to the plain AR step it replaces:
// the draft cache's catch-up of `catch_up` committed tokens it has not seen beyond the root
// (draft_latency, when non-null, at catch_up + 1 tokens less one; else catch_up x level_s),
// `depth` draft levels of level_s seconds, and verifying 1 + round(width x depth) tokens over c
// instead of 1 (verify). A gated strategy reports it to its gate before every decision
// (SpeculationGate::ObserveProbeSeconds), so that every probe, the first included, waits until
// its cost is at most SpeculationGateOptions::probe_budget of the AR time since the last one.
double ProbeSeconds(const costmodel::LatencyModel& verify,
                    const costmodel::LatencyModel* draft_latency, int64_t c, int64_t catch_up,
                    int depth, double level_s, double width);

class DraftStrategy {
 public:
  virtual ~DraftStrategy() = default;

  // The strategy's name as ParseStrategy reads it ("ar", "linear", ..., "merged").
  virtual const char* Name() const = 0;
  // True when BuildTree reads DecodeState::target_hidden (the verify pass then keeps that row).
  virtual bool NeedsTargetHidden() const { return false; }
  // A new prompt starts (Generate): forget per-sequence state such as a draft KV cache.
  virtual void Reset() {}
  // Builds this step's draft tree into *tree: root = state.committed.back(), at most
  // options.max_tree_nodes draft nodes (the decoder checks). *tree is caller-owned and reused.
  virtual absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) = 0;
  // After verification of the tree last built: `accept` is the acceptance on `tree` (accepted
  // nodes root first, accepted_length draft tokens). Feeds draft caches and adaptive policies.
  virtual absl::Status Observe(const planner::Tree& /*tree*/,
                               const planner::AcceptResult& /*accept*/) {
    return absl::OkStatus();
  }

  // Counters of the planner policy behind the strategy (null when there is none).
  virtual const planner::PolicyStats* policy_stats() const { return nullptr; }
  // The policy's identifier with its parameters, e.g. "linear_chain(K=6)" ("" when none).
  virtual std::string PolicyName() const { return ""; }
  // Counters of the strategy's draft model (null when it has none).
  virtual const DrafterCounters* drafter_counters() const { return nullptr; }
  // Counters of the strategy's speculation gate (null when it has none or it is switched off).
  virtual const planner::GateStats* gate_stats() const { return nullptr; }
};

// The accepted draft tokens of `accept` on `tree`, root and bonus excluded, into *out.
inline void AcceptedTokens(const planner::Tree& tree, const planner::AcceptResult& accept,
                           std::vector<planner::TokenId>* out) {
  out->clear();
  for (int k = 1; k <= accept.accepted_length; ++k) {
    out->push_back(tree.tokens[accept.accepted_nodes[k]]);
  }
}

// The strategy named by options.strategy. InvalidArgument when a draft model is needed and
// ctx.draft is null, or when the strategy's planner options are invalid.
absl::StatusOr<std::unique_ptr<DraftStrategy>> CreateDraftStrategy(const StrategyOptions& options,
                                                                   const StrategyContext& ctx);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_DRAFT_STRATEGY_H_
