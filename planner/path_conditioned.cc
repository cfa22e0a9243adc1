#include "planner/path_conditioned.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "planner/marginals.h"
#include "util/check.h"

namespace specplan::planner {

// The discovered lattice as seen by the best-first engine; handle = lattice node id.
struct PathLattice {
  PathConditionedPlanner* p;
  int NumChildren(int32_t h) const {
    const auto& n = p->nodes_[h];
    if (n.depth >= p->options_.gamma) return 0;
    return n.dist_offset < 0 ? -1 : n.dist_count;
  }
  double ChildProb(int32_t h, int r) const { return p->dist_[p->nodes_[h].dist_offset + r].prob; }
  int32_t ChildToken(int32_t h, int r) const {
    return p->dist_[p->nodes_[h].dist_offset + r].token;
  }
  int32_t Child(int32_t h, int r) {
    const int32_t slot = p->nodes_[h].dist_offset + r;
    int32_t id = p->child_ids_[slot];
    if (id < 0) {
      id = static_cast<int32_t>(p->nodes_.size());
      PathConditionedPlanner::LatticeNode n;
      n.token = p->dist_[slot].token;
      n.depth = p->nodes_[h].depth + 1;
      p->nodes_.push_back(n);
      p->child_ids_[slot] = id;
    }
    return id;
  }
};

absl::Status PathConditionedPlanner::Begin(TokenId root_token,
                                           const PathConditionedOptions& options,
                                           const costmodel::CycleCost* cost) {
  if (root_token < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("root_token = ", root_token, ": token ids must be >= 0"));
  }
  if (options.gamma < 1 || options.gamma > kMaxMarginalsGamma) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma = ", options.gamma, ": must be in [1, ", kMaxMarginalsGamma, "]"));
  }
  if (options.k < 1 || options.k > kMaxMarginalsK) {
    return absl::InvalidArgumentError(
        absl::StrCat("k = ", options.k, ": must be in [1, ", kMaxMarginalsK, "]"));
  }
  absl::Status st = internal::MakeBudgetSpec(options.budget, cost, &spec_);
  if (!st.ok()) return st;
  options_ = options;
  root_token_ = root_token;
  started_ = true;
  done_ = false;
  num_requests_ = 0;
  num_expanded_ = 0;
  nodes_.clear();
  nodes_.push_back(LatticeNode{root_token, 0, -1, 0});
  dist_.clear();
  child_ids_.clear();
  ws_.Reserve(options.budget.n_max);
  work_.tree.Reserve(options.budget.n_max + 1);
  work_.curve.reserve(options.budget.n_max + 2);
  RunRound();
  return absl::OkStatus();
}

void PathConditionedPlanner::RunRound() {
  PathLattice lattice{this};
  internal::ExpandBestFirst(lattice, root_token_, /*root_handle=*/0, spec_, &ws_, &work_);
  request_nodes_.assign(ws_.missing.begin(), ws_.missing.end());
  const auto& depths = work_.tree.depths;
  std::sort(request_nodes_.begin(), request_nodes_.end(), [&](int32_t a, int32_t b) {
    return depths[a] != depths[b] ? depths[a] < depths[b] : a < b;
  });
  request_handles_.clear();
  for (int32_t v : request_nodes_) request_handles_.push_back(ws_.handles[v]);
  done_ = request_nodes_.empty();
  request_.tree = &work_.tree;
  request_.nodes = absl::MakeConstSpan(request_nodes_);
  request_.k = options_.k;
}

absl::Status PathConditionedPlanner::Provide(absl::Span<const TokenProb> dists,
                                             absl::Span<const int32_t> counts) {
  SPECPLAN_CHECK(started_, "Begin must be called first");
  if (done_) return absl::FailedPreconditionError("Provide: no request is pending (done)");
  const size_t m = request_nodes_.size();
  const int k = options_.k;
  if (counts.size() != m) {
    return absl::InvalidArgumentError(
        absl::StrCat("counts: ", counts.size(), " entries, expected ", m, " (one per node)"));
  }
  if (dists.size() != m * k) {
    return absl::InvalidArgumentError(
        absl::StrCat("dists: ", dists.size(), " entries, expected ", m * k, " (nodes * k)"));
  }
  for (size_t i = 0; i < m; ++i) {
    if (counts[i] < 0 || counts[i] > k) {
      return absl::InvalidArgumentError(
          absl::StrCat("counts[", i, "] = ", counts[i], ": must be in [0, ", k, "]"));
    }
    double sum = 0;
    for (int r = 0; r < counts[i]; ++r) {
      const TokenProb& e = dists[i * k + r];
      if (e.token < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("dists[", i, "][", r, "].token = ", e.token, ": token ids must be >= 0"));
      }
      if (!(e.prob >= 0.0f && e.prob <= 1.0f)) {
        return absl::InvalidArgumentError(
            absl::StrCat("dists[", i, "][", r, "].prob = ", std::isnan(e.prob) ? "nan" : "",
                         std::isnan(e.prob) ? "" : absl::StrCat(e.prob), ": must be in [0, 1]"));
      }
      if (r > 0 && e.prob > dists[i * k + r - 1].prob) {
        return absl::InvalidArgumentError(
            absl::StrCat("dists[", i, "][", r, "].prob = ", e.prob,
                         ": greater than the previous entry (sort by descending prob)"));
      }
      for (int r2 = 0; r2 < r; ++r2) {
        if (dists[i * k + r2].token == e.token) {
          return absl::InvalidArgumentError(
              absl::StrCat("dists[", i, "][", r, "].token = ", e.token, ": repeats entry ", r2));
        }
      }
      sum += e.prob;
    }
    if (sum > 1.0 + kMarginalsRowSumTolerance) {
      return absl::InvalidArgumentError(
          absl::StrCat("dists[", i, "]: probs sum to ", sum, ", must be <= 1"));
    }
  }
  for (size_t i = 0; i < m; ++i) {
    LatticeNode& n = nodes_[request_handles_[i]];
    n.dist_offset = static_cast<int32_t>(dist_.size());
    n.dist_count = counts[i];
    for (int r = 0; r < counts[i]; ++r) {
      dist_.push_back(dists[i * k + r]);
      child_ids_.push_back(-1);
    }
  }
  ++num_requests_;
  num_expanded_ += static_cast<int>(m);
  RunRound();
  return absl::OkStatus();
}

absl::Status PathConditionedPlanner::Finish(BestFirstPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  if (!started_ || !done_) {
    return absl::FailedPreconditionError("Finish: requests are still pending");
  }
  internal::TruncateToSelected(&work_);
  plan->tree.tokens.assign(work_.tree.tokens.begin(), work_.tree.tokens.end());
  plan->tree.parents.assign(work_.tree.parents.begin(), work_.tree.parents.end());
  plan->tree.depths.assign(work_.tree.depths.begin(), work_.tree.depths.end());
  plan->tree.path_probs.assign(work_.tree.path_probs.begin(), work_.tree.path_probs.end());
  plan->curve.assign(work_.curve.begin(), work_.curve.end());
  plan->n = work_.n;
  plan->expected_accepted = work_.expected_accepted;
  plan->cycle_s = work_.cycle_s;
  plan->speedup = work_.speedup;
  plan->l_ar_s = work_.l_ar_s;
  plan->lattice_exhausted = work_.lattice_exhausted;
  started_ = false;
  return absl::OkStatus();
}

absl::Status PathConditionedPlanner::Run(TokenId root_token, const PathConditionedOptions& options,
                                         const costmodel::CycleCost* cost,
                                         DistributionProvider& provider, BestFirstPlan* plan) {
  absl::Status st = Begin(root_token, options, cost);
  if (!st.ok()) return st;
  while (!done()) {
    const PathRequest& req = NextRequest();
    const size_t m = req.nodes.size();
    reply_.assign(m * req.k, TokenProb{});
    reply_counts_.assign(m, 0);
    st = provider.Expand(*req.tree, req.nodes, req.k, absl::MakeSpan(reply_),
                         absl::MakeSpan(reply_counts_));
    if (!st.ok()) return st;
    st = Provide(reply_, reply_counts_);
    if (!st.ok()) return st;
  }
  return Finish(plan);
}

}  // namespace specplan::planner
