#include "whatif/replay.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::whatif {

namespace {

// Greedy verification of every node of `tree` against `continuation`: m[i] = the draft tokens on
// the path to node i when that whole path matches, else -1; out[i] (when out is not null) = the
// longest match among nodes 0..i. Returns the longest match over the tree.
int MatchPaths(const planner::Tree& tree, absl::Span<const planner::TokenId> continuation,
               std::vector<int32_t>& m, std::vector<int32_t>* out) {
  const int size = tree.size();
  m.resize(static_cast<size_t>(size));
  if (out != nullptr) out->resize(static_cast<size_t>(size));
  if (size == 0) return 0;
  const int cap = static_cast<int>(continuation.size());
  m[0] = 0;
  if (out != nullptr) (*out)[0] = 0;
  int best = 0;
  for (int i = 1; i < size; ++i) {
    const int p = tree.parents[i];
    SPECPLAN_CHECK(p >= 0 && p < i, "tree must be topological");
    const int mp = m[p];
    if (mp >= 0 && mp < cap && tree.tokens[i] == continuation[mp]) {
      m[i] = mp + 1;
      best = std::max(best, mp + 1);
    } else {
      m[i] = -1;
    }
    if (out != nullptr) (*out)[i] = best;
  }
  return best;
}

}  // namespace

int RealizedAcceptedLength(const planner::Tree& tree,
                           absl::Span<const planner::TokenId> continuation,
                           std::vector<int32_t>* matched) {
  std::vector<int32_t> local;
  return MatchPaths(tree, continuation, matched != nullptr ? *matched : local, nullptr);
}

void RealizedAcceptedLengthPerPrefix(const planner::Tree& tree,
                                     absl::Span<const planner::TokenId> continuation,
                                     std::vector<int32_t>* matched, std::vector<int32_t>* out) {
  SPECPLAN_CHECK(matched != nullptr && out != nullptr);
  MatchPaths(tree, continuation, *matched, out);
}

void RecordedDrafter::Reset(const RecordedNodes& nodes) {
  nodes_ = &nodes;
  const int m = nodes.size();
  // Counting sort of the non-root nodes by parent; within a parent, index order.
  child_begin_.assign(static_cast<size_t>(m) + 1, 0);
  for (int i = 1; i < m; ++i) ++child_begin_[nodes.parents[i] + 1];
  for (int i = 0; i < m; ++i) child_begin_[i + 1] += child_begin_[i];
  children_.resize(m > 0 ? static_cast<size_t>(m - 1) : 0);
  // map_ doubles as the fill cursor per parent while building.
  map_.assign(child_begin_.begin(), child_begin_.end() - (m > 0 ? 1 : 0));
  for (int i = 1; i < m; ++i) children_[map_[nodes.parents[i]]++] = i;
  map_.clear();
}

int RecordedDrafter::ChildOf(int recorded_node, planner::TokenId token) const {
  for (int e = child_begin_[recorded_node]; e < child_begin_[recorded_node + 1]; ++e) {
    const int c = children_[e];
    if (nodes_->tokens[c] == token) return c;
  }
  return -1;
}

absl::Status RecordedDrafter::Fill(const planner::Tree& tree, planner::NodeDistributions& dists) {
  if (nodes_ == nullptr) return absl::FailedPreconditionError("RecordedDrafter: Reset not called");
  const RecordedNodes& rec = *nodes_;
  if (tree.size() == 0 || tree.tokens[0] != rec.tokens[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay: the policy's root token ", tree.size() ? tree.tokens[0] : -1,
                     " differs from the recorded root ", rec.tokens[0]));
  }
  if (map_.empty()) map_.push_back(0);  // the roots correspond
  for (int i = static_cast<int>(map_.size()); i < tree.size(); ++i) {
    const int rp = map_[tree.parents[i]];
    map_.push_back(rp < 0 ? -1 : ChildOf(rp, tree.tokens[i]));
  }
  dists.ResizeRows(rec.k);
  for (int row = 0; row < dists.num_nodes(); ++row) {
    const int u = dists.nodes[row];
    if (u < 0 || u >= tree.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("replay: pending node ", u, " is not in the tree (size ", tree.size(), ")"));
    }
    const int r = map_[u];
    if (r < 0 || !rec.Expanded(r)) continue;  // all padding: cannot be expanded
    const size_t off = static_cast<size_t>(r) * rec.k;
    std::copy(rec.dist_tokens.begin() + off, rec.dist_tokens.begin() + off + rec.k,
              dists.tokens.begin() + static_cast<size_t>(row) * rec.k);
    std::copy(rec.dist_probs.begin() + off, rec.dist_probs.begin() + off + rec.k,
              dists.probs.begin() + static_cast<size_t>(row) * rec.k);
  }
  return absl::OkStatus();
}

}  // namespace specplan::whatif
