// Draft tree in flat arrays:
//   node 0 is the root = the pending bonus token (accepted, not yet in the target's KV cache);
//   parents[0] = -1 and parents[i] < i (topological order); depth(root) = 0.
// A tree with n draft nodes has size() = n + 1 and is verified as s = n + 1 tokens.
#ifndef SPECPLAN_PLANNER_TREE_TREE_H_
#define SPECPLAN_PLANNER_TREE_TREE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "planner/tree/token.h"

namespace specplan::planner {

// Documented limit on tree size (root included) accepted from outside callers.
inline constexpr int kMaxTreeNodes = 8192;

struct Tree {
  std::vector<TokenId> tokens;     // [size] token id per node; tokens[0] is the root token
  std::vector<int32_t> parents;    // [size] parent index; parents[0] = -1
  std::vector<int32_t> depths;     // [size] depth; depths[0] = 0
  std::vector<double> path_probs;  // [size] rho(i) = product of draft probs on the path; rho(0) = 1

  int size() const { return static_cast<int>(tokens.size()); }
  int num_draft() const { return size() - 1; }
  // The deepest node among the first `nodes` nodes (every node when nodes < 0; 0 for the root
  // alone). In best-first order the first n + 1 nodes are the tree of n draft nodes, so
  // max_depth(n + 1) is that prefix's depth.
  int max_depth(int nodes = -1) const {
    const size_t n =
        nodes < 0 ? depths.size() : std::min(depths.size(), static_cast<size_t>(nodes));
    int depth = 0;
    for (size_t i = 0; i < n; ++i) depth = std::max<int>(depth, depths[i]);
    return depth;
  }
  // The planners' surrogate Â = 1 + Σ rho over the draft nodes (the root counts 1), summed from
  // the root in node order, as the planners accumulate it.
  double expected_accepted() const {
    double a = 1.0;
    for (size_t i = 1; i < path_probs.size(); ++i) a += path_probs[i];
    return a;
  }

  // Empties the tree but keeps capacity (no allocation on reuse).
  void Clear() {
    tokens.clear();
    parents.clear();
    depths.clear();
    path_probs.clear();
  }
  void Reserve(int n) {
    tokens.reserve(n);
    parents.reserve(n);
    depths.reserve(n);
    path_probs.reserve(n);
  }
  // Starts a tree holding only the root.
  void ResetRoot(TokenId root_token) {
    Clear();
    tokens.push_back(root_token);
    parents.push_back(-1);
    depths.push_back(0);
    path_probs.push_back(1.0);
  }
  // Sets every array to n nodes: cuts a tree to its first n nodes, or adds zero nodes that the
  // caller then writes by index (the planners grow trees this way, then cut them to size).
  void Resize(int n) {
    tokens.resize(n);
    parents.resize(n);
    depths.resize(n);
    path_probs.resize(n);
  }
  // Appends a child of `parent` (which must already exist); returns its index.
  int AddNode(int parent, TokenId token, double path_prob) {
    tokens.push_back(token);
    parents.push_back(parent);
    depths.push_back(depths[parent] + 1);
    path_probs.push_back(path_prob);
    return size() - 1;
  }
};

// Checks the conventions above (sizes agree, root, topological parents, depths consistent, path
// probabilities in [0, 1] when present, size <= kMaxTreeNodes). The error names the field, index
// and value, e.g. "parents[5] = 7: must be < 5 (topological order)".
absl::Status ValidateTree(const Tree& tree);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_TREE_H_
