// Drafters that feed the planner:
//  * DraftModelDrafter: a small autoregressive LibTorch model with its own KV cache. It drives a
//    planner::TreePolicy (linear chain, fixed tree, DynaTree, ...) through its expand/observe loop,
//    running ONE forward per depth level: every pending node of the level is fed at once with a
//    tree mask over its ancestors in the draft cache. It also produces the autoregressive-chain
//    lattice (top-K at each greedy draft step) as planner::Marginals for best-first planning.
//  * NgramMarginals: a model-free prompt-lookup drafter producing position-wise marginals from the
//    context.
//
// Sequence convention (DESIGN.md "Tree"): `committed` is the whole accepted sequence, prompt
// included, whose last token is the pending root (not yet in the target's cache). The draft cache
// holds a prefix of it; Sync feeds the missing suffix (root included) causally.
#ifndef SPECPLAN_RUNTIME_DRAFTERS_H_
#define SPECPLAN_RUNTIME_DRAFTERS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "runtime/kv_cache.h"
#include "runtime/step_buffers.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

struct DrafterCounters {
  int64_t forwards = 0;     // draft-model forwards (catch-up chunks and levels)
  int64_t fed_tokens = 0;   // tokens run through the draft model
  int64_t reused_rows = 0;  // accepted draft K/V rows gathered into place instead of re-fed
  double seconds = 0;       // wall time inside the draft model
};

class DraftModelDrafter {
 public:
  // `model` is not owned and must outlive the drafter. Rows hold the top `top_k` candidates of
  // softmax(logits / temperature) (temperature > 0). `max_len` bounds the committed sequence
  // plus the nodes fed per step.
  DraftModelDrafter(const Transformer* model, int64_t max_len, int top_k, double temperature = 1.0);

  // Drafts one tree with `policy`. The policy's tree is returned (valid until its next Begin).
  absl::StatusOr<const planner::Tree*> DraftTree(planner::TreePolicy& policy,
                                                 const std::vector<planner::TokenId>& committed);

  // Autoregressive chain of `gamma` greedy draft steps from the root; row d of *out holds the
  // top-k candidates after the depth-d chain prefix (root_token = committed.back()).
  absl::Status DraftChain(const std::vector<planner::TokenId>& committed, int gamma,
                          planner::Marginals* out);

  // After verification: the accepted draft tokens after the root (bonus excluded). Gathers the
  // K/V rows of the accepted nodes this drafter fed into place so they are not fed again.
  void Commit(const std::vector<planner::TokenId>& accepted_tokens);

  // Forgets the cache (new prompt).
  void Reset();
  // Committed tokens the draft cache holds (a prefix of `committed`): the next DraftTree /
  // DraftChain first feeds committed.size() - cached_tokens() tokens, the root included.
  int64_t cached_tokens() const { return cache_.length(); }

  const DrafterCounters& counters() const { return counters_; }
  void ResetCounters() { counters_ = DrafterCounters(); }
  const Transformer& model() const { return *model_; }
  // Wall time of the last single-token draft forward, seconds (for the cost model).
  double last_step_seconds() const { return last_step_s_; }
  // Wall seconds per draft level (forward and candidate rows) of the last DraftTree / DraftChain
  // call, without the catch-up of committed tokens the draft cache had not seen (when the call
  // had to feed more than the root first, its first level is left out: with a single level
  // there is nothing to measure and this is 0). 0 before any call.
  double last_level_seconds() const { return last_level_s_; }

 private:
  struct Fed {
    int64_t slot;    // draft cache slot
    int32_t parent;  // index into fed_ of the parent, -1 = the root
    planner::TokenId token;
  };
  // Feeds committed[cache length ..] causally; stores the root's logits row in root_logits_.
  absl::Status Sync(const std::vector<planner::TokenId>& committed);
  // Runs nodes (tree indices of `tree`, none fed yet) in one forward; logits [m][V] in *logits.
  // The mask covers only the slots after the root (every earlier slot is visible).
  void FeedNodes(const planner::Tree& tree, const std::vector<int32_t>& nodes,
                 torch::Tensor* logits);
  void FillRow(const torch::Tensor& logits_row, planner::NodeDistributions* d, int row);

  const Transformer* model_;
  KvCache cache_;
  int top_k_;
  double temperature_;
  int64_t root_slot_ = 0;             // slot of the root (= committed.size() - 1 after Sync)
  int64_t next_slot_ = 0;             // next free slot for draft nodes this step
  torch::Tensor root_logits_;         // [V]
  StepBuffers step_;                  // per-forward inputs, on the model's device
  std::vector<Fed> fed_;              // nodes fed this step
  std::vector<int32_t> fed_of_node_;  // [tree size] index into fed_, -1 = not fed (root: -1)
  planner::NodeDistributions dists_;
  std::vector<planner::TokenId> row_tokens_;  // FillRow's scratch
  std::vector<float> row_probs_;
  DrafterCounters counters_;
  double last_step_s_ = 0;
  double last_level_s_ = 0;
  int64_t last_sync_tokens_ = 0;  // tokens the last Sync fed (1: the root only)
  double last_sync_s_ = 0;        // its forward's wall seconds
  // Sets last_level_s_ for a call that started at t0 and ran `levels` draft levels.
  void MeasureLevels(double t0, int levels);
};

// The top k of softmax(logits / temperature) of each row of logits [m][V] (or one row [V]), on the
// host: tokens and probs [m][k], each row by descending prob (probs shrunk by 1e-6 relative so
// that a row sums to <= 1 in float).
void SoftmaxTopK(const torch::Tensor& logits, double temperature, int k,
                 std::vector<planner::TokenId>* tokens, std::vector<float>* probs);

struct NgramOptions {
  int max_ngram = 3;     // longest suffix matched first
  int min_ngram = 1;     // shortest suffix tried
  int gamma = 8;         // positions drafted
  int k = 4;             // candidates per position
  int max_matches = 64;  // most recent matches used
};

// Prompt lookup: finds earlier occurrences of the longest suffix of `context` (length max_ngram
// down to min_ngram) and turns the tokens that followed them into position-wise marginals: row d
// holds the k most frequent tokens at offset d + 1 after a match, with prob = count / matches.
// Rows are padded with distinct unused token ids at prob 0. Returns false (and leaves *out
// unspecified) when nothing matches. root_token = context.back().
bool NgramMarginals(const std::vector<planner::TokenId>& context, int64_t vocab,
                    const NgramOptions& options, planner::Marginals* out);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_DRAFTERS_H_
