#include "runtime/heads_drafters.h"

#include <torch/torch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/drafters.h"
#include "util/check.h"
#include "util/clock.h"

namespace specplan::runtime {

HeadsDrafter::HeadsDrafter(const DraftHeads* heads, int top_k, double temperature)
    : heads_(heads), top_k_(top_k), temperature_(temperature) {}

absl::Status HeadsDrafter::DraftMarginals(const torch::Tensor& hidden, planner::TokenId root,
                                          int gamma, planner::Marginals* out) {
  if (!hidden.defined()) return absl::InternalError("heads drafter: no target hidden row");
  if (gamma < 1 || gamma > heads_->num_heads()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma = ", gamma, ": must be in [1, ", heads_->num_heads(), "] (heads)"));
  }
  const double t0 = NowSeconds();
  c10::InferenceMode guard;
  const torch::Tensor states = heads_->HeadStates(hidden.reshape({1, -1})).squeeze(0);
  SoftmaxTopK(heads_->Logits(states.narrow(0, 0, gamma)), temperature_, top_k_, &tokens_, &probs_);
  out->root_token = root;
  out->gamma = gamma;
  out->k = top_k_;
  out->tokens = tokens_;
  out->probs = probs_;
  last_s_ = NowSeconds() - t0;
  return absl::OkStatus();
}

CausalHeadProvider::CausalHeadProvider(const DraftHeads* heads, double temperature)
    : heads_(heads), temperature_(temperature) {
  SPECPLAN_CHECK(heads->has_causal());
}

void CausalHeadProvider::Begin(const torch::Tensor& hidden, int depth) {
  SPECPLAN_CHECK(depth >= 1 && depth <= heads_->num_heads());
  const double t0 = NowSeconds();
  c10::InferenceMode guard;
  depth_ = depth;
  states_ = heads_->HeadStates(hidden.reshape({1, -1})).squeeze(0).narrow(0, 0, depth);
  base_ = heads_->Logits(states_);
  seconds_ += NowSeconds() - t0;
}

absl::Status CausalHeadProvider::Expand(const planner::Tree& tree, absl::Span<const int32_t> nodes,
                                        int k, absl::Span<planner::TokenProb> out,
                                        absl::Span<int32_t> counts) {
  if (!states_.defined()) return absl::InternalError("causal head: Expand before Begin");
  const double t0 = NowSeconds();
  c10::InferenceMode guard;
  const int64_t gamma = depth_;
  // The nodes that get children (depth < gamma) and their paths root .. u, padded to the longest.
  std::vector<int64_t> rows;   // index into nodes
  std::vector<int64_t> depth;  // of each such node
  std::vector<std::vector<int64_t>> paths;
  for (size_t i = 0; i < nodes.size(); ++i) {
    counts[i] = 0;
    std::vector<int64_t> path;
    for (int32_t v = nodes[i]; v >= 0; v = tree.parents[v]) path.push_back(tree.tokens[v]);
    std::reverse(path.begin(), path.end());
    const int64_t d = static_cast<int64_t>(path.size()) - 1;
    if (d >= gamma) continue;
    rows.push_back(static_cast<int64_t>(i));
    depth.push_back(d);
    paths.push_back(std::move(path));
  }
  if (!rows.empty()) {
    const int64_t m = static_cast<int64_t>(rows.size());
    const int64_t longest = *std::max_element(depth.begin(), depth.end()) + 1;
    std::vector<int64_t> ids(static_cast<size_t>(longest * m), 0);  // [longest][m], 0-padded
    for (int64_t r = 0; r < m; ++r) {
      for (size_t j = 0; j < paths[r].size(); ++j) ids[j * m + r] = paths[r][j];
    }
    const torch::Tensor tok =
        torch::from_blob(ids.data(), {longest, m}, torch::kInt64).to(states_.device());
    // Step j reads token j of every path; a node keeps the state after its own last token.
    torch::Tensor state;
    std::vector<torch::Tensor> kept(static_cast<size_t>(m));
    for (int64_t j = 0; j < longest; ++j) {
      state = heads_->CausalStep(state, tok[j]);
      for (int64_t r = 0; r < m; ++r) {
        if (depth[r] == j) kept[r] = state[r];
      }
    }
    const torch::Tensor s = torch::stack(kept);
    const torch::Tensor idx = torch::tensor(depth, torch::kInt64).to(states_.device());
    const torch::Tensor h = states_.index_select(0, idx);
    const torch::Tensor logits = base_.index_select(0, idx) + heads_->Correction(h, s);
    const int kk = std::min<int>(k, static_cast<int>(logits.size(-1)));
    SoftmaxTopK(logits, temperature_, kk, &tokens_, &probs_);
    for (int64_t r = 0; r < m; ++r) {
      const size_t i = static_cast<size_t>(rows[r]);
      counts[i] = kk;
      for (int j = 0; j < kk; ++j) {
        out[i * k + j] = planner::TokenProb{tokens_[r * kk + j], probs_[r * kk + j]};
      }
    }
  }
  expanded_ += static_cast<int64_t>(nodes.size());
  seconds_ += NowSeconds() - t0;
  return absl::OkStatus();
}

}  // namespace specplan::runtime
