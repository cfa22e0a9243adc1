// Which decoding strategy runs and with what settings: the names the bench and tests use, and the
// options a SpeculativeDecoder (runtime/decoder.h) and its DraftStrategy (draft_strategy.h) read.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_STRATEGY_OPTIONS_H_
#define SPECPLAN_RUNTIME_STRATEGIES_STRATEGY_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "costmodel/latency/latency_model.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/batch/plan_backend.h"
#include "planner/policies/best_first.h"
#include "planner/policies/dynatree.h"
#include "planner/policies/fixed_tree.h"
#include "planner/policies/linear_chain.h"
#include "planner/strategy.h"
#include "planner/tree/merge.h"
#include "runtime/draft_heads.h"
#include "runtime/drafters.h"

namespace specplan::runtime {

// The strategies the runtime runs (planner/strategy.h), one object each (draft_strategy.h): kAr
// in ar.h; kLinear, kFixed and kDynaTree in draft_tree.h; kBestFirst in best_first.h; kLookup in
// lookup.h; kMerged in merged.h; kBatch in batch.h; kHeads and kCausal in heads.h.
//   kAr         plain autoregressive decoding (root-only trees)
//   kLinear     draft-model greedy chain of K tokens (planner::LinearChainPolicy)
//   kFixed      draft-model static tree (D, B, tau) (planner::FixedTreePolicy)
//   kDynaTree   draft-model confidence-aware tree (planner::DynaTreePolicy)
//   kBestFirst  AR-chain lattice + best-first with the cost-model controller (BASTION)
//   kLookup     prompt-lookup n-gram marginals + best-first with a fixed budget (no draft model)
//   kMerged     DynaTree draft-model tree + n-gram tree merged (planner::MergeTrees), one verify
//   kBatch      AR-chain lattice per sequence; one global batch planner sizes every sequence's
//               tree of a batch (planner::BatchPlanner; runtime/strategies/batch.h)
//   kHeads      parallel draft heads' marginals + best-first with the cost-model controller
//   kCausal     causal-correction head + path-conditioned best-first with the controller
using Strategy = planner::Strategy;
using planner::StrategyName;
inline constexpr Strategy kRuntimeStrategies[] = {
    Strategy::kAr,        Strategy::kLinear, Strategy::kFixed,  Strategy::kDynaTree,
    Strategy::kBestFirst, Strategy::kLookup, Strategy::kMerged, Strategy::kBatch,
    Strategy::kHeads,     Strategy::kCausal};

// One of kRuntimeStrategies by name ("ar", "linear", ..., "causal", or an earlier release's
// spelling); else InvalidArgument "strategy = \"x\": expected ar, linear, ...".
absl::StatusOr<Strategy> ParseStrategy(const std::string& name);
bool StrategyNeedsDraft(Strategy s);  // a draft model (ctx.draft)
// Draft heads on the target (StrategyOptions::heads): heads, causal, and merged with
// merged_b = kHeads (StrategyNeedsHeads(options)).
bool StrategyNeedsHeads(Strategy s);
struct StrategyOptions;
bool StrategyNeedsHeads(const StrategyOptions& options);

enum class KvUpdate {
  kGather,   // index_select the accepted rows into place (default)
  kRebuild,  // roll back to c and re-forward the accepted path (baseline)
};

// kMerged's second tree (runtime/strategies/merged.h).
enum class MergedB {
  kLookup,  // the prompt-lookup n-gram tree (default)
  kHeads,   // best-first over the parallel draft heads' marginals (needs StrategyOptions::heads)
};

struct SamplingOptions {
  bool greedy = true;        // false: sample with temperature / top_k / top_p
  float temperature = 1.0f;  // > 0 when !greedy
  int top_k = 0;             // 0 = all
  float top_p = 1.0f;
  uint64_t seed = 0;  // RNG seed of one Generate call (same seed => same output)
};

struct StrategyOptions {
  Strategy strategy = Strategy::kAr;
  KvUpdate kv_update = KvUpdate::kGather;
  SamplingOptions sampling;
  int draft_top_k = 4;                 // candidates per draft-model row (>= the policies' breadth)
  planner::LinearChainOptions linear;  // default K = 8 replaced by 6 in Defaults()
  planner::FixedTreeOptions fixed;
  planner::DynaTreeOptions dynatree;
  // Best-first (BASTION): AR-chain lattice depth gamma, controller over C(n).
  int bestfirst_gamma = 6;
  planner::BestFirstOptions bestfirst;
  // kHeads / kCausal: depths drafted below the root, capped at the heads' num_heads (<= 0: all);
  // rows of draft_top_k candidates; bestfirst.mode / n_max size the tree as for kBestFirst.
  int heads_gamma = 0;
  // kBatch: bestfirst.n_max caps each sequence's tree; bestfirst.mode picks the batch planner's
  // stopping rule (kController: the first decrease of the batch goodput; kScan: its argmax;
  // kFixed: batch_budget nodes over the batch).
  int batch_budget = 0;  // kFixed only: total draft nodes over the batch (0 = bestfirst.n_max x B)
  // kBatch: the draft-model step time the batch planner prices, in seconds; < 0: the drafter's
  // last measured step (the default). A fixed value makes plans reproducible (tests).
  double batch_draft_step_s = -1;
  // The speculation gate (planner/acceptance/speculation_gate.h) of bestfirst and dynatree: before
  // drafting, from the measured draft-level time, T_verify and the online acceptance estimate, it
  // decides whether this step drafts at all (both) and how deep (bestfirst: the chain depth, <=
  // gamma). gate.enabled = false: always draft (the behaviour before the gate; exactness tests).
  planner::SpeculationGateOptions gate;
  // Seconds of one draft level the gate prices; < 0: measured every drafted step (the default).
  // A fixed value makes the gate's decisions reproducible (tests).
  double gate_draft_level_s = -1;
  // The verification-latency model for the controller; not owned. Null: the best-first strategy
  // measures one on the target when it is created (MeasureVerifyLatency).
  const costmodel::LatencyModel* latency = nullptr;
  // Where best-first / lookup / merged plans come from; not owned, must outlive the decoder. Null:
  // an in-process planner::InProcessPlanBackend (the default). A remote backend (client/client.h
  // RemotePlanBackend, `--planner HOST:PORT`) gives the same plans, so the same tokens.
  planner::PlanBackend* plan_backend = nullptr;
  // Draft heads on the target (kHeads, kCausal); not owned, must outlive the decoder.
  const DraftHeads* heads = nullptr;
  NgramOptions ngram;
  int lookup_budget = 16;  // draft nodes of the n-gram tree (kLookup) and of kMerged's B tree
  MergedB merged_b = MergedB::kLookup;
  planner::MergeOptions merge;  // kMerged (dedup on, n_max budget)
  int max_tree_nodes = 128;     // hard cap on s - 1; sizes the caches

  // Small-tree defaults suitable for tiny models and CPU runs.
  static StrategyOptions Defaults(Strategy strategy);
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_STRATEGY_OPTIONS_H_
