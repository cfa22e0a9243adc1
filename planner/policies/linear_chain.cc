#include "planner/policies/linear_chain.h"

#include "absl/strings/str_cat.h"

namespace specplan::planner {

absl::Status ValidateLinearChainOptions(const LinearChainOptions& options) {
  if (options.k < 1 || options.k > kMaxTreeNodes - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("k = ", options.k, ": must be in [1, ", kMaxTreeNodes - 1, "]"));
  }
  return absl::OkStatus();
}

LinearChainPolicy::LinearChainPolicy(const LinearChainOptions& options)
    : ConfiguredLevelPolicy(options) {
  tree_.Reserve(options_.k + 1);
}

std::string LinearChainPolicy::Name() const {
  return absl::StrCat("linear_chain(K=", options_.k, ")");
}

void LinearChainPolicy::OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) {
  // Exactly one pending node: the current chain tip.
  const int32_t tip = dists.nodes[0];
  const int32_t token = dists.token(0, 0);
  if (token < 0) return;  // no candidate: the chain ends here
  const int child = tree_.AddNode(tip, token, tree_.path_probs[tip] * dists.prob(0, 0));
  CountDrafted(1);
  if (tree_.depths[child] < options_.k) next.push_back(child);
}

}  // namespace specplan::planner
