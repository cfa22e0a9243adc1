#include "planner/policies/eagle2.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::planner {
namespace {

int64_t MaxCandidates(const Eagle2Options& o) {
  const int64_t k = o.top_k;
  return 1 + k + static_cast<int64_t>(o.depth - 1) * k * k;
}

}  // namespace

absl::Status ValidateEagle2Options(const Eagle2Options& o) {
  if (o.top_k < 1 || o.top_k > 256) {
    return absl::InvalidArgumentError(absl::StrCat("top_k = ", o.top_k, ": must be in [1, 256]"));
  }
  if (o.depth < 1 || o.depth > 256) {
    return absl::InvalidArgumentError(absl::StrCat("depth = ", o.depth, ": must be in [1, 256]"));
  }
  if (o.total_tokens < 1 || o.total_tokens > kMaxTreeNodes - 1) {
    return absl::InvalidArgumentError(absl::StrCat("total_tokens = ", o.total_tokens,
                                                   ": must be in [1, ", kMaxTreeNodes - 1, "]"));
  }
  if (MaxCandidates(o) > (int64_t{1} << 22)) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k = ", o.top_k, ", depth = ", o.depth, ": ", MaxCandidates(o),
                     " candidates exceed the limit of ", int64_t{1} << 22));
  }
  return absl::OkStatus();
}

Eagle2Policy::Eagle2Policy(const Eagle2Options& options) : ConfiguredLevelPolicy(options) {
  const int n = static_cast<int>(MaxCandidates(options_));
  tree_.Reserve(n);
  candidates_.Reserve(n);
  kept_.reserve(n);
  order_.reserve(n);
  remap_.reserve(n);
}

std::string Eagle2Policy::Name() const {
  return absl::StrCat("eagle2(top_k=", options_.top_k, ",depth=", options_.depth,
                      ",N=", options_.total_tokens, ")");
}

int Eagle2Policy::SelectBest(int begin, int end, int count) {
  order_.clear();
  for (int i = begin; i < end; ++i) order_.push_back(i);
  const std::vector<double>& rho = tree_.path_probs;
  auto better = [&rho](int32_t a, int32_t b) { return rho[a] != rho[b] ? rho[a] > rho[b] : a < b; };
  const int n = std::min(count, end - begin);
  std::nth_element(order_.begin(), order_.begin() + n, order_.end(), better);
  order_.resize(n);
  std::sort(order_.begin(), order_.end());  // back to index (topological) order
  return n;
}

void Eagle2Policy::OnBegin(std::vector<int32_t>& pending) {
  levels_done_ = 0;
  level_begin_ = 1;
  kept_.clear();
  pending.push_back(0);
}

void Eagle2Policy::OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) {
  level_begin_ = tree_.size();
  const int width = std::min(options_.top_k, dists.k);
  for (int r = 0; r < dists.num_nodes(); ++r) {
    const int32_t u = dists.nodes[r];
    const double rho_u = tree_.path_probs[u];
    for (int j = 0; j < width; ++j) {
      const int32_t token = dists.token(r, j);
      if (token < 0) break;
      tree_.AddNode(u, token, rho_u * static_cast<double>(dists.prob(r, j)));
    }
  }
  CountDrafted(tree_.size() - level_begin_);
  ++levels_done_;
  if (levels_done_ >= options_.depth) return;
  const int n = SelectBest(level_begin_, tree_.size(), options_.top_k);
  next.insert(next.end(), order_.begin(), order_.begin() + n);
}

void Eagle2Policy::OnFinish() {
  // Global rerank over all candidates (root excluded): top-N by (rho desc, index asc).
  const int keep = SelectBest(1, tree_.size(), options_.total_tokens);
  remap_.assign(tree_.size(), -1);
  remap_[0] = 0;
  candidates_.ResetRoot(tree_.tokens[0]);
  kept_.clear();
  kept_.push_back(0);
  for (int i = 0; i < keep; ++i) {
    const int32_t old = order_[i];
    const int32_t parent = remap_[tree_.parents[old]];
    SPECPLAN_CHECK(parent >= 0, "rerank must be prefix-closed");
    remap_[old] = candidates_.AddNode(parent, tree_.tokens[old], tree_.path_probs[old]);
    kept_.push_back(old);
  }
  std::swap(tree_, candidates_);  // tree_ = reranked tree, candidates_ = all candidates
}

}  // namespace specplan::planner
