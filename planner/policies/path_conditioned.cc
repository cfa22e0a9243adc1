#include "planner/policies/path_conditioned.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/path_lattice.h"
#include "util/check.h"

namespace specplan::planner {

struct PathConditionedPlanner::Engine {
  internal::BudgetSpec spec;
  internal::PathLatticeStore lattice;
  internal::EngineWorkspace ws;
};

PathConditionedPlanner::PathConditionedPlanner() : engine_(std::make_unique<Engine>()) {}
PathConditionedPlanner::~PathConditionedPlanner() = default;
PathConditionedPlanner::PathConditionedPlanner(PathConditionedPlanner&&) noexcept = default;
PathConditionedPlanner& PathConditionedPlanner::operator=(PathConditionedPlanner&&) noexcept =
    default;

namespace internal {

absl::Status ValidateDistributions(absl::Span<const TokenProb> dists,
                                   absl::Span<const int32_t> counts, size_t m, int k) {
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
  return absl::OkStatus();
}

void SortRequestNodes(absl::Span<const int32_t> missing, const Tree& tree,
                      absl::Span<const int32_t> handles, std::vector<int32_t>* nodes,
                      std::vector<int32_t>* lattice_ids) {
  nodes->assign(missing.begin(), missing.end());
  const auto& depths = tree.depths;
  std::sort(nodes->begin(), nodes->end(), [&](int32_t a, int32_t b) {
    return depths[a] != depths[b] ? depths[a] < depths[b] : a < b;
  });
  lattice_ids->clear();
  for (int32_t v : *nodes) lattice_ids->push_back(handles[v]);
}

}  // namespace internal

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
  absl::Status st = internal::MakeBudgetSpec(options.budget, cost, &engine_->spec);
  if (!st.ok()) return st;
  options_ = options;
  root_token_ = root_token;
  started_ = true;
  done_ = false;
  num_requests_ = 0;
  num_expanded_ = 0;
  engine_->lattice.Reset(root_token, options.gamma);
  engine_->ws.Reserve(options.budget.n_max);
  work_.tree.Reserve(options.budget.n_max + 1);
  work_.curve.reserve(options.budget.n_max + 2);
  RunRound();
  return absl::OkStatus();
}

void PathConditionedPlanner::RunRound() {
  internal::ExpandBestFirst(engine_->lattice, root_token_, /*root_handle=*/0, engine_->spec,
                            &engine_->ws, &work_);
  internal::SortRequestNodes(engine_->ws.missing, work_.tree, engine_->ws.handles, &request_nodes_,
                             &request_handles_);
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
  if (absl::Status st = internal::ValidateDistributions(dists, counts, m, k); !st.ok()) return st;
  for (size_t i = 0; i < m; ++i) {
    engine_->lattice.SetDistribution(request_handles_[i], dists.data() + i * k, counts[i]);
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
  *plan = work_;  // copy-assignment reuses plan's buffers
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
