// Replaying a recorded decoding step: the accepted length any draft tree would have realised
// against the target's recorded greedy continuation, and a drafter that answers a TreePolicy's
// expansion requests from the step's recorded per-node distributions (trace.h "nodes").
#ifndef SPECPLAN_WHATIF_REPLAY_H_
#define SPECPLAN_WHATIF_REPLAY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "whatif/trace.h"

namespace specplan::whatif {

// Greedy verification against a recorded continuation: the length of the longest root-to-node
// path of `tree` whose draft tokens (root excluded) equal continuation[0..L), capped at
// continuation.size(). The root (pending bonus token) is always accepted and is not counted, so
// the step emits L + 1 tokens. `matched` is scratch ([tree.size()], reused; may be null). The tree
// must be topological (parents[i] < i), as every planner::Tree is.
int RealizedAcceptedLength(const planner::Tree& tree,
                           absl::Span<const planner::TokenId> continuation,
                           std::vector<int32_t>* matched = nullptr);

// Same for every prefix of the node order: out[n] = accepted length of the tree made of nodes
// 0..n (n draft nodes). Meaningful when every prefix is itself a tree (best-first pop order).
// out: [tree.size()], resized (keeps capacity).
void RealizedAcceptedLengthPerPrefix(const planner::Tree& tree,
                                     absl::Span<const planner::TokenId> continuation,
                                     std::vector<int32_t>* matched, std::vector<int32_t>* out);

// Answers a policy's expansion requests from one step's recorded nodes: a policy node whose token
// path is a recorded node with a distribution gets that node's row; every other node (path not
// recorded, or recorded but never expanded) gets an all-padding row, so the policy cannot expand
// it. Reusable across steps without allocating once its buffers have grown. Not thread-safe.
class RecordedDrafter {
 public:
  // Starts a step. `nodes` must satisfy ValidateTraceStep and outlive the step's Fill calls.
  void Reset(const RecordedNodes& nodes);

  // planner::DrafterFn contract: on entry dists.nodes holds the pending indices into `tree` (the
  // tree of the policy being replayed, grown only by appending since the last Reset); sets k to
  // the recorded row length and fills one row per pending node.
  absl::Status Fill(const planner::Tree& tree, planner::NodeDistributions& dists);

  // Recorded node behind policy node `u` (after a Fill that covered it), or -1.
  int RecordedIndex(int u) const { return u < static_cast<int>(map_.size()) ? map_[u] : -1; }

 private:
  int ChildOf(int recorded_node, planner::TokenId token) const;

  const RecordedNodes* nodes_ = nullptr;
  std::vector<int32_t> child_begin_;  // [m + 1] CSR offsets of each recorded node's children
  std::vector<int32_t> children_;     // [m - 1] recorded child indices grouped by parent
  std::vector<int32_t> map_;          // [policy tree size] recorded node per policy node, or -1
};

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_REPLAY_H_
