#include "planner/policies/fixed_tree.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace specplan::planner {

absl::Status ValidateFixedTreeOptions(const FixedTreeOptions& options) {
  if (options.depth < 1 || options.depth > kMaxTreeNodes - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("depth = ", options.depth, ": must be in [1, ", kMaxTreeNodes - 1, "]"));
  }
  if (options.branch < 1 || options.branch > kMaxCandidatesPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("branch = ", options.branch, ": must be in [1, ", kMaxCandidatesPerNode, "]"));
  }
  if (!(options.tau >= 0.0 && options.tau <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("tau = ", options.tau, ": must be in [0, 1]"));
  }
  if (options.max_nodes < 1 || options.max_nodes > kMaxTreeNodes - 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_nodes = ", options.max_nodes,
                                                   ": must be in [1, ", kMaxTreeNodes - 1, "]"));
  }
  return absl::OkStatus();
}

FixedTreePolicy::FixedTreePolicy(const FixedTreeOptions& options) : ConfiguredLevelPolicy(options) {
  tree_.Reserve(options_.max_nodes + 1);
}

std::string FixedTreePolicy::Name() const {
  return absl::StrCat("fixed(D=", options_.depth, ",B=", options_.branch, ",tau=", options_.tau,
                      ",N=", options_.max_nodes, ")");
}

void FixedTreePolicy::OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) {
  const int width = std::min(options_.branch, dists.k);
  for (int r = 0; r < dists.num_nodes() && tree_.num_draft() < options_.max_nodes; ++r) {
    const int32_t u = dists.nodes[r];
    for (int j = 0; j < width; ++j) {
      if (tree_.num_draft() >= options_.max_nodes) break;  // budget: later nodes stay leaves
      const int32_t token = dists.token(r, j);
      const float p = dists.prob(r, j);
      // Rows are sorted, so the first padding / sub-tau candidate ends the row.
      if (token < 0 || static_cast<double>(p) < options_.tau) break;
      const int child = tree_.AddNode(u, token, tree_.path_probs[u] * p);
      CountDrafted(1);
      if (tree_.depths[child] < options_.depth) next.push_back(child);
    }
  }
  if (tree_.num_draft() >= options_.max_nodes) next.clear();
}

}  // namespace specplan::planner
