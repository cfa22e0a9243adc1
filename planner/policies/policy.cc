#include "planner/policies/policy.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "planner/tree/tree.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::planner {

void NodeDistributions::ResizeRows(int32_t row_len) {
  k = row_len;
  tokens.assign(nodes.size() * static_cast<size_t>(row_len), -1);
  probs.assign(nodes.size() * static_cast<size_t>(row_len), 0.0f);
}

absl::Status ValidateNodeDistributions(const NodeDistributions& d,
                                       const std::vector<int32_t>& expected_nodes) {
  if (d.k < 1 || d.k > kMaxCandidatesPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("k = ", d.k, ": must be in [1, ", kMaxCandidatesPerNode, "]"));
  }
  if (d.nodes.size() != expected_nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("nodes: length ", d.nodes.size(),
                                                   " does not match the ", expected_nodes.size(),
                                                   " pending expansions"));
  }
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    if (d.nodes[i] != expected_nodes[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "nodes[", i, "] = ", d.nodes[i], ": expected pending node ", expected_nodes[i]));
    }
  }
  const size_t want = d.nodes.size() * static_cast<size_t>(d.k);
  if (d.tokens.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("tokens: length ", d.tokens.size(),
                                                   " does not match nodes (", d.nodes.size(),
                                                   ") x k (", d.k, ") = ", want));
  }
  if (d.probs.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("probs: length ", d.probs.size(),
                                                   " does not match nodes (", d.nodes.size(),
                                                   ") x k (", d.k, ") = ", want));
  }
  for (int r = 0; r < d.num_nodes(); ++r) {
    double sum = 0.0;
    bool padding = false;
    for (int j = 0; j < d.k; ++j) {
      const int32_t t = d.token(r, j);
      const float p = d.prob(r, j);
      if (!(p >= 0.0f && p <= 1.0f)) {
        return absl::InvalidArgumentError(
            absl::StrCat("probs[", r, "][", j, "] = ", p, ": must be in [0, 1]"));
      }
      if (t < -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("tokens[", r, "][", j, "] = ", t, ": must be >= 0 (or -1 for padding)"));
      }
      if (t == -1) {
        padding = true;
        if (p != 0.0f) {
          return absl::InvalidArgumentError(absl::StrCat("probs[", r, "][", j, "] = ", p,
                                                         ": padding (tokens[", r, "][", j,
                                                         "] = -1) must have probability 0"));
        }
      } else if (padding) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokens[", r, "][", j, "] = ", t, ": follows padding (padding must be trailing)"));
      }
      if (j > 0 && p > d.prob(r, j - 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "probs[", r, "][", j, "] = ", p, ": exceeds probs[", r, "][", j - 1,
            "] = ", d.prob(r, j - 1), " (rows must be sorted by descending probability)"));
      }
      sum += p;
    }
    if (sum > 1.0 + kProbSumTolerance) {
      return absl::InvalidArgumentError(
          absl::StrCat("probs[", r, "]: row sums to ", sum, ", must be <= 1"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const Tree*> RunPolicy(TreePolicy& policy, TokenId root_token,
                                      const DrafterFn& drafter, NodeDistributions* workspace) {
  NodeDistributions local;
  NodeDistributions& d = workspace != nullptr ? *workspace : local;
  policy.Begin(root_token);
  while (!policy.PendingExpansions().empty()) {
    const std::vector<int32_t>& pending = policy.PendingExpansions();
    d.nodes.assign(pending.begin(), pending.end());
    d.k = 0;
    d.tokens.clear();
    d.probs.clear();
    SPECPLAN_RETURN_IF_ERROR(drafter(policy.tree(), d));
    SPECPLAN_RETURN_IF_ERROR(policy.Provide(d));
  }
  return &policy.tree();
}

void LevelPolicyBase::Begin(TokenId root_token) {
  SPECPLAN_CHECK(root_token >= 0, "root token ids must be >= 0");
  tree_.ResetRoot(root_token);
  pending_.clear();
  step_forwards_ = 0;
  step_drafted_ = 0;
  phase_ = Phase::kDrafting;
  OnBegin(pending_);
  if (pending_.empty()) Finish();
}

absl::Status LevelPolicyBase::Provide(const NodeDistributions& dists) {
  if (phase_ != Phase::kDrafting) {
    return absl::FailedPreconditionError(
        "Provide: no expansions are pending (call Begin; the tree may be final)");
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateNodeDistributions(dists, pending_));
  ++stats_.forwards;
  ++step_forwards_;
  stats_.expansions += static_cast<int64_t>(pending_.size());
  next_pending_.clear();
  OnLevel(dists, next_pending_);
  pending_.swap(next_pending_);
  if (pending_.empty()) Finish();
  return absl::OkStatus();
}

absl::Status LevelPolicyBase::ObserveAcceptance(int accepted_length) {
  if (phase_ != Phase::kFinal) {
    return absl::FailedPreconditionError(
        phase_ == Phase::kObserved
            ? "ObserveAcceptance: already observed for this step"
            : "ObserveAcceptance: the step's tree is not final (call Begin and Provide first)");
  }
  if (accepted_length < 0 || accepted_length > stats_.last_depth) {
    return absl::InvalidArgumentError(absl::StrCat("accepted_length = ", accepted_length,
                                                   ": must be in [0, ", stats_.last_depth,
                                                   "] (depth of the final tree)"));
  }
  phase_ = Phase::kObserved;
  ++stats_.observed_steps;
  stats_.accepted += accepted_length;
  stats_.last_accepted = accepted_length;
  OnAcceptance(accepted_length);
  return absl::OkStatus();
}

void LevelPolicyBase::Finish() {
  OnFinish();
  int32_t depth = 0;
  for (int32_t d : tree_.depths) depth = d > depth ? d : depth;
  ++stats_.steps;
  stats_.drafted_nodes += step_drafted_;
  stats_.tree_nodes += tree_.num_draft();
  stats_.last_tree_nodes = tree_.num_draft();
  stats_.last_depth = depth;
  stats_.last_forwards = step_forwards_;
  step_drafted_ = 0;
  phase_ = Phase::kFinal;
}

}  // namespace specplan::planner
