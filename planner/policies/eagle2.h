// EAGLE-2-style policy for autoregressive drafters: grow a candidate tree by expanding, at every
// level, the best `top_k` newest nodes by path score, then rerank all candidates and keep the
// global top-N by path score as the verified tree (Li et al., "EAGLE-2: Faster Inference of
// Language Models with Dynamic Draft Trees", 2024; not one of our seeds).
//
//   level 0:      expand the root: its top_k candidates become depth-1 nodes;
//   level l >= 1: among the nodes created at level l - 1, expand the top_k with the highest rho
//                 (ties: lower index first); each gets its top_k candidates as children;
//   after `depth` levels (or when a level creates nothing): keep the N = total_tokens candidates
//   with the highest rho (ties: lower index first) and reindex them into a topological Tree.
//
// The kept set is prefix-closed: rho(child) = rho(parent) * q <= rho(parent) (exactly, in floating
// point, since q <= 1) and a parent has a lower index than its children, so a parent always ranks
// above its children. At most 1 + top_k + (depth - 1) * top_k^2 candidates, `depth` forwards.
#ifndef SPECPLAN_PLANNER_POLICIES_EAGLE2_H_
#define SPECPLAN_PLANNER_POLICIES_EAGLE2_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/policies/policy.h"

namespace specplan::planner {

struct Eagle2Options {
  int32_t top_k = 10;         // frontier nodes expanded per level AND children per expansion
  int32_t depth = 6;          // draft levels (drafter forwards); the tree is at most this deep
  int32_t total_tokens = 60;  // N: draft nodes kept after the rerank (root excluded)
};

// InvalidArgument naming the field: top_k in [1, 256], depth in [1, 256], total_tokens in
// [1, kMaxTreeNodes - 1], and the candidate count 1 + top_k + (depth - 1) top_k^2 <= 1 << 22.
absl::Status ValidateEagle2Options(const Eagle2Options& options);

class Eagle2Policy final
    : public ConfiguredLevelPolicy<Eagle2Policy, Eagle2Options, ValidateEagle2Options> {
 public:
  std::string Name() const override;

  // While drafting, tree() is the candidate tree and pending indices refer to it. When the tree is
  // final, tree() is the reranked tree and these describe the rerank:
  //   candidates(): the full candidate tree of the step (valid until the next Begin);
  //   kept(): [tree().size()] candidate index of each final node (kept()[0] = 0), ascending.
  const Tree& candidates() const { return candidates_; }
  const std::vector<int32_t>& kept() const { return kept_; }

 private:
  friend ConfiguredLevelPolicy;
  explicit Eagle2Policy(const Eagle2Options& options);
  void OnBegin(std::vector<int32_t>& pending) override;
  void OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) override;
  void OnFinish() override;

  // Writes into order_ the indices in [begin, end) sorted so the first `count` are the best by
  // (rho desc, index asc); returns min(count, end - begin).
  int SelectBest(int begin, int end, int count);

  int32_t levels_done_ = 0;
  int32_t level_begin_ = 1;  // first candidate index created by the current level
  Tree candidates_;          // after OnFinish: the candidate tree (swapped with tree_)
  std::vector<int32_t> kept_;
  std::vector<int32_t> order_;  // scratch
  std::vector<int32_t> remap_;  // scratch: candidate index -> final index (-1 = dropped)
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_EAGLE2_H_
