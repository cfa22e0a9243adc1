// Speculative decoding strategies over a LibTorch target (and draft), with counters.
//
// One iteration (DESIGN.md "Tree"): the committed sequence ends with the pending root token; a
// strategy builds a draft tree rooted at it (planner policies / best-first / merge), the target
// verifies all s = n + 1 nodes in ONE forward (positions c + depth, ancestor mask), acceptance
// (planner::AcceptGreedy / planner::AcceptSampling) picks the path and the bonus token, and the
// accepted path's K/V rows are gathered into place (or, with KvUpdate::kRebuild, the path is
// re-forwarded: dynatree.txt §3.5's rollback-and-rebuild baseline).
//
// Greedy mode emits exactly the target's greedy tokens for every strategy; sampling mode uses
// recursive rejection sampling with point-mass drafts (planner::DraftMode::kPointMass), which
// preserves the target's sampling distribution for any deterministically chosen candidates.
#ifndef SPECPLAN_RUNTIME_DECODER_H_
#define SPECPLAN_RUNTIME_DECODER_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/latency_model.h"
#include "planner/acceptance.h"
#include "planner/best_first.h"
#include "planner/dynatree.h"
#include "planner/fixed_tree.h"
#include "planner/linear_chain.h"
#include "planner/merge.h"
#include "planner/plan_backend.h"
#include "runtime/drafters.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

enum class Strategy {
  kAr,         // plain autoregressive decoding (root-only trees)
  kLinear,     // draft-model greedy chain of K tokens (planner::LinearChainPolicy)
  kFixed,      // draft-model static tree (D, B, tau) (planner::FixedTreePolicy)
  kDynaTree,   // draft-model confidence-aware tree (planner::DynaTreePolicy)
  kBestFirst,  // AR-chain lattice + best-first with the cost-model controller (BASTION)
  kLookup,     // prompt-lookup n-gram marginals + best-first with a fixed budget (no draft model)
  kMerged,     // DynaTree draft-model tree + n-gram tree merged (planner::MergeTrees), one verify
};

// "ar", "linear", "fixed", "dynatree", "bestfirst", "lookup", "merged".
absl::StatusOr<Strategy> ParseStrategy(const std::string& name);
const char* StrategyName(Strategy s);
bool StrategyNeedsDraft(Strategy s);

enum class KvUpdate {
  kGather,   // index_select the accepted rows into place (default)
  kRebuild,  // roll back to c and re-forward the accepted path (baseline)
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
  // The verification-latency model for the controller; not owned. Null: the decoder measures one
  // on the target at Create (MeasureVerifyLatency).
  const costmodel::LatencyModel* latency = nullptr;
  // Where best-first / lookup / merged plans come from; not owned, must outlive the decoder. Null:
  // an in-process planner::InProcessPlanBackend (the default). A remote backend (service/client.h
  // RemotePlanBackend, `--planner HOST:PORT`) gives the same plans, so the same tokens.
  planner::PlanBackend* plan_backend = nullptr;
  NgramOptions ngram;
  int lookup_budget = 16;       // draft nodes of the n-gram tree (kLookup, and kMerged's B tree)
  planner::MergeOptions merge;  // kMerged (dedup on, n_max budget)
  int max_tree_nodes = 128;     // hard cap on s - 1; sizes the caches

  // Small-tree defaults suitable for tiny models and CPU runs.
  static StrategyOptions Defaults(Strategy strategy);
};

// Counters accumulated over Generate calls (llama.cpp-style strategy state).
struct DecodeCounters {
  int64_t prompts = 0;
  int64_t new_tokens = 0;       // emitted tokens (after truncation to max_new_tokens)
  int64_t iterations = 0;       // verification passes after prefill
  int64_t drafted = 0;          // draft nodes verified (sum of n)
  int64_t accepted = 0;         // accepted draft tokens (bonus excluded)
  int64_t target_forwards = 0;  // prefill + verification + rebuild passes
  int64_t verified_tokens = 0;  // sum of s over verification passes
  double prefill_s = 0;         // sum of time to first token
  double draft_s = 0;           // drafting + planning
  double verify_s = 0;          // target verification forwards
  double update_s = 0;          // acceptance + KV update + bookkeeping
  double total_s = 0;           // wall time of Generate calls
  planner::AcceptanceStats acceptance;

  double tokens_per_iteration() const {  // committed tokens per verification (accepted + bonus)
    return iterations == 0 ? 0.0 : static_cast<double>(accepted + iterations) / iterations;
  }
  double acceptance_rate() const {  // accepted / drafted
    return drafted == 0 ? 0.0 : static_cast<double>(accepted) / static_cast<double>(drafted);
  }
  double mean_accepted_length() const {  // mean committed draft path length per iteration
    return iterations == 0 ? 0.0 : static_cast<double>(accepted) / iterations;
  }
};

// One verification iteration of a Generate call (step boundaries, e.g. for trace recording).
struct IterationLog {
  int64_t c = 0;         // tokens in the target cache before the step (= prompt + emitted - 1)
  int32_t root = 0;      // the pending root token verified first (= tokens[c - prompt size])
  int32_t accepted = 0;  // accepted draft tokens (bonus excluded); the step emits accepted + 1
  double draft_s = 0;    // drafting + planning seconds of the step
};

struct GenerationResult {
  std::vector<int64_t> tokens;  // [max_new_tokens] generated tokens (prompt excluded)
  double ttft_s = 0;            // prefill + first token
  double total_s = 0;
  int64_t iterations = 0;
  std::vector<IterationLog> steps;  // [iterations] in order
};

class SpeculativeDecoder {
 public:
  // `target` (and `draft`, required when StrategyNeedsDraft) are not owned and must outlive the
  // decoder; their vocabularies must match. `max_context` bounds prompt + new tokens.
  static absl::StatusOr<std::unique_ptr<SpeculativeDecoder>> Create(const Transformer* target,
                                                                    const Transformer* draft,
                                                                    const StrategyOptions& options,
                                                                    int64_t max_context);

  // Generates exactly max_new_tokens tokens after `prompt` (ids in [0, V), non-empty).
  absl::StatusOr<GenerationResult> Generate(const std::vector<int64_t>& prompt, int max_new_tokens);

  const DecodeCounters& counters() const { return counters_; }
  const DrafterCounters* drafter_counters() const {
    return drafter_ ? &drafter_->counters() : nullptr;
  }
  const StrategyOptions& options() const { return options_; }
  // Target KV-cache bytes + draft KV-cache bytes (preallocated).
  int64_t cache_bytes() const;

 private:
  SpeculativeDecoder() = default;
  // Builds the tree for the current step into tree_ (root = committed.back()).
  absl::Status BuildTree(const std::vector<int64_t>& committed, int64_t c);
  int64_t SelectToken(const torch::Tensor& logits_row, std::mt19937_64& rng);

  const Transformer* target_ = nullptr;
  const Transformer* draft_ = nullptr;
  StrategyOptions options_;
  int64_t max_context_ = 0;
  KvCache cache_;
  std::unique_ptr<DraftModelDrafter> drafter_;
  std::unique_ptr<planner::TreePolicy> policy_;
  std::unique_ptr<costmodel::LatencyModel> owned_latency_;
  const costmodel::LatencyModel* latency_ = nullptr;
  std::unique_ptr<planner::InProcessPlanBackend> owned_backend_;
  planner::PlanBackend* backend_ = nullptr;  // options_.plan_backend or owned_backend_
  planner::BestFirstPlan plan_;
  planner::Marginals marginals_;
  planner::MergedTree merged_;
  planner::Tree tree_;
  planner::Tree ngram_tree_;
  int policy_tree_depth_ = -1;  // depth of the policy's tree this step (-1: no policy step)
  planner::GreedyAcceptWorkspace greedy_ws_;
  planner::SampleAcceptWorkspace sample_ws_;
  planner::AcceptResult accept_;
  std::vector<float> probs_;
  std::vector<int32_t> order_;
  DecodeCounters counters_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_DECODER_H_
