// Drafters over draft heads (runtime/draft_heads.h), which read the target's own hidden row instead
// of running a draft model:
//  * HeadsDrafter: the parallel heads' gamma x K marginals (planner::Marginals) for best-first
//    planning, from one hidden row (drafter class kParallelBlock).
//  * CausalHeadProvider: path-conditioned child distributions for planner::PathConditionedPlanner:
//    the children of node u at depth d follow softmax(L_{d+1} + dL_{d+1}(path(u))), the parallel
//    head's logits corrected by the causal head over the path root .. u (class kParallelCausal).
#ifndef SPECPLAN_RUNTIME_HEADS_DRAFTERS_H_
#define SPECPLAN_RUNTIME_HEADS_DRAFTERS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/path_conditioned.h"
#include "planner/tree/tree.h"
#include "runtime/draft_heads.h"

namespace specplan::runtime {

class HeadsDrafter {
 public:
  // `heads` is not owned. Rows hold the top `top_k` of softmax(logits / temperature).
  HeadsDrafter(const DraftHeads* heads, int top_k, double temperature = 1.0);

  // Rows d = 0 .. gamma - 1 of *out: head d + 1's candidates below `root` (gamma <= the heads'
  // num_heads). `hidden` is the target's hidden row before the root (DecodeState::target_hidden).
  absl::Status DraftMarginals(const torch::Tensor& hidden, planner::TokenId root, int gamma,
                              planner::Marginals* out);
  // Wall seconds of the last DraftMarginals (heads, LM head, softmax and top-k).
  double last_seconds() const { return last_s_; }

 private:
  const DraftHeads* heads_;
  int top_k_;
  double temperature_;
  double last_s_ = 0;
  std::vector<planner::TokenId> tokens_;
  std::vector<float> probs_;
};

class CausalHeadProvider final : public planner::DistributionProvider {
 public:
  // `heads` must have a causal head (has_causal()); not owned.
  CausalHeadProvider(const DraftHeads* heads, double temperature = 1.0);

  // A new step: heads 1 .. depth's states and base logits from the target's hidden row (children
  // below depth `depth` - 1 are the last ones given; depth <= num_heads).
  void Begin(const torch::Tensor& hidden, int depth);
  // planner::DistributionProvider: nodes at depth >= Begin's depth get no continuation.
  absl::Status Expand(const planner::Tree& tree, absl::Span<const int32_t> nodes, int k,
                      absl::Span<planner::TokenProb> out, absl::Span<int32_t> counts) override;

  int64_t expanded_nodes() const { return expanded_; }  // since construction
  double seconds() const { return seconds_; }           // in Begin and Expand, since construction

 private:
  const DraftHeads* heads_;
  double temperature_;
  int depth_ = 0;         // heads run this step
  torch::Tensor states_;  // [depth][h] head states of this step
  torch::Tensor base_;    // [depth][V] base logits of this step
  int64_t expanded_ = 0;
  double seconds_ = 0;
  std::vector<planner::TokenId> tokens_;
  std::vector<float> probs_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_HEADS_DRAFTERS_H_
