// The lattice a provider has revealed (path-conditioned planning), as the best-first engine's
// lazy frontier reads it. An implementation header shared by PathConditionedPlanner and
// BatchPlanner's provider requests: not installed (scripts/public_headers.py).
#ifndef SPECPLAN_PLANNER_POLICIES_PATH_LATTICE_H_
#define SPECPLAN_PLANNER_POLICIES_PATH_LATTICE_H_

#include <cstdint>
#include <vector>

#include "planner/policies/best_first_engine.h"
#include "planner/policies/path_conditioned.h"
#include "planner/tree/token.h"

namespace specplan::planner {

namespace internal {

// The lattice a provider has revealed so far, as LazyFrontier (best_first.h) reads it; handle =
// lattice node id, 0 = the root. Shared by PathConditionedPlanner and PlanBatch's
// path-conditioned requests. Keeps capacity across Reset.
class PathLatticeStore {
 public:
  void Reset(TokenId root_token, int gamma) {
    gamma_ = gamma;
    nodes_.clear();
    nodes_.push_back(Node{root_token, 0, -1, 0});
    dist_.clear();
    child_ids_.clear();
  }
  // Records the provider's reply for handle h: row[0, count), already validated.
  void SetDistribution(int32_t h, const TokenProb* row, int count) {
    Node& n = nodes_[h];
    n.dist_offset = static_cast<int32_t>(dist_.size());
    n.dist_count = count;
    dist_.insert(dist_.end(), row, row + count);
    child_ids_.insert(child_ids_.end(), static_cast<size_t>(count), -1);
  }

  // The Lattice interface of LazyFrontier.
  int NumChildren(int32_t h) const {
    const Node& n = nodes_[h];
    if (n.depth >= gamma_) return 0;
    return n.dist_offset < 0 ? -1 : n.dist_count;
  }
  double ChildProb(int32_t h, int r) const { return dist_[nodes_[h].dist_offset + r].prob; }
  int32_t ChildToken(int32_t h, int r) const { return dist_[nodes_[h].dist_offset + r].token; }
  int32_t Child(int32_t h, int r) {
    const int32_t slot = nodes_[h].dist_offset + r;
    int32_t id = child_ids_[slot];
    if (id < 0) {
      id = static_cast<int32_t>(nodes_.size());
      nodes_.push_back(Node{dist_[slot].token, nodes_[h].depth + 1, -1, 0});
      child_ids_[slot] = id;
    }
    return id;
  }

 private:
  struct Node {
    TokenId token = 0;
    int32_t depth = 0;
    int32_t dist_offset = -1;  // into dist_ / child_ids_; -1 = distribution unknown
    int32_t dist_count = 0;
  };
  int gamma_ = 0;
  std::vector<Node> nodes_;         // lattice nodes discovered so far; 0 = root
  std::vector<TokenProb> dist_;     // concatenated distributions
  std::vector<int32_t> child_ids_;  // parallel to dist_: lattice id of that child, -1 = none yet
};

// Checks a provider's reply to a request of m nodes: dists [m][k] (entries r >= counts[i]
// ignored), counts [m]. Errors name the entry, e.g. "dists[2][1].prob = 1.5: must be in [0, 1]".
absl::Status ValidateDistributions(absl::Span<const TokenProb> dists,
                                   absl::Span<const int32_t> counts, size_t m, int k);

// The nodes a provider is asked for, in request order: `missing` (tree node ids) sorted by
// (depth, node index), written to *nodes, and their lattice handles (handles[v]) to *lattice_ids.
void SortRequestNodes(absl::Span<const int32_t> missing, const Tree& tree,
                      absl::Span<const int32_t> handles, std::vector<int32_t>* nodes,
                      std::vector<int32_t>* lattice_ids);

}  // namespace internal

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_PATH_LATTICE_H_
