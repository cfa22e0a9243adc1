// Path-conditioned best-first planning (DESIGN.md "Path-conditioned drafters", Domino
// (docs/references.md)): the children of node u follow q(. | path(u)), known only after a draft
// model has run on path(u). The engine is the one in best_first.h; the lattice is discovered on
// demand.
//
// Exactness: a node's children may enter the frontier only once the node is in the tree and its
// distribution is known. Each round re-runs best-first over everything known so far; a node that
// the run pops and then needs to expand (push its first child) but whose distribution is missing
// is recorded. If a run records nothing, its pop order is the true best-first order (every popped
// node had its real children in the frontier), so T_n is optimal for the surrogate exactly as in
// Prop. 2.3 (rho(child) <= rho(u)), and the budget rule (fixed / controller / scan) is applied to
// it. Otherwise the recorded nodes form the next request.
//
// Batching rule: one request = every node popped by the latest run whose distribution is missing,
// sorted by (depth, node index). Since a node can only be popped after its parent, the first run
// asks for the root, the next for depth-1 nodes, and so on: in fixed and scan modes each request
// is one depth level (one draft forward per level, at most gamma requests of at most n_max nodes
// each; the level-d request is the depth-d part of the best n_max nodes of the depth <= d
// sub-lattice, a superset of the final tree's depth-d nodes, so the total expanded may exceed
// n_max). In controller mode runs stop at the first decrease, so far fewer nodes are requested,
// but a request may occasionally mix depths or a level may take two requests.
//
// Node ids in a request index the request's `tree` (valid until the next Provide/Begin); path(u)
// is read from tree.parents / tree.tokens.
#ifndef SPECPLAN_PLANNER_POLICIES_PATH_CONDITIONED_H_
#define SPECPLAN_PLANNER_POLICIES_PATH_CONDITIONED_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "costmodel/cycle_cost.h"
#include "planner/policies/best_first.h"
#include "planner/tree/token.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

struct TokenProb {
  TokenId token = 0;  // token id >= 0
  float prob = 0.0f;  // q(token | path), in [0, 1]
};

// Source of per-node draft distributions (a draft model, a remote engine, a test fake).
class DistributionProvider {
 public:
  virtual ~DistributionProvider() = default;
  // For each nodes[i] write the top-k continuations of path(nodes[i]) into out[i * k + r]
  // (r < counts[i] <= k), sorted by descending prob, tokens distinct, probs summing to <= 1.
  // counts[i] = 0 means no continuation. out has nodes.size() * k entries, counts nodes.size().
  virtual absl::Status Expand(const Tree& tree, absl::Span<const int32_t> nodes, int k,
                              absl::Span<TokenProb> out, absl::Span<int32_t> counts) = 0;
};

struct PathConditionedOptions {
  BestFirstOptions budget;  // mode, n_max, l_ar_s (validate is ignored)
  int gamma = 16;           // maximum depth of the tree, 1..kMaxMarginalsGamma
  int k = 8;                // continuations per node asked from the provider, 1..kMaxMarginalsK
};

struct PathRequest {
  const Tree* tree = nullptr;       // current best-first tree (every popped node)
  absl::Span<const int32_t> nodes;  // [m] node ids of `tree` whose distributions are needed
  int k = 0;                        // entries per node in the reply
};

// Step-loop planner:
//   planner.Begin(root_token, options, &cost);
//   while (!planner.done()) {
//     const PathRequest& req = planner.NextRequest();
//     ... compute top-k distributions for req.nodes ...
//     planner.Provide(dists /* [m][k] */, counts /* [m] */);
//   }
//   planner.Finish(&plan);
// or planner.Run(root_token, options, &cost, provider, &plan). Reusable: workspace keeps capacity.
class PathConditionedPlanner {
 public:
  PathConditionedPlanner();
  ~PathConditionedPlanner();
  PathConditionedPlanner(PathConditionedPlanner&&) noexcept;
  PathConditionedPlanner& operator=(PathConditionedPlanner&&) noexcept;

  // Starts a plan. `cost` must outlive the plan (until Finish); it may be null only in kFixed.
  absl::Status Begin(TokenId root_token, const PathConditionedOptions& options,
                     const costmodel::CycleCost* cost);
  bool done() const { return done_; }
  // The pending request; nodes is empty when done().
  const PathRequest& NextRequest() const { return request_; }
  // Answers the pending request: dists [m][k] (entries r >= counts[i] ignored), counts [m].
  // Errors name the entry, e.g. "dists[2][1].prob = 1.5: must be in [0, 1]"; the request stays
  // pending after an error.
  absl::Status Provide(absl::Span<const TokenProb> dists, absl::Span<const int32_t> counts);
  // Copies the final plan (requires done()).
  absl::Status Finish(BestFirstPlan* plan);
  // Drives the loop with `provider`.
  absl::Status Run(TokenId root_token, const PathConditionedOptions& options,
                   const costmodel::CycleCost* cost, DistributionProvider& provider,
                   BestFirstPlan* plan);

  int num_requests() const { return num_requests_; }  // requests answered so far
  int num_expanded() const { return num_expanded_; }  // distributions received so far

 private:
  void RunRound();

  // The budget, the lattice the provider has revealed and the frontier's workspace
  // (best_first_engine.h, path_lattice.h: implementation headers, not installed).
  struct Engine;

  PathConditionedOptions options_;
  std::unique_ptr<Engine> engine_;
  TokenId root_token_ = 0;
  bool started_ = false;
  bool done_ = false;
  int num_requests_ = 0;
  int num_expanded_ = 0;

  BestFirstPlan work_;                    // latest run (all popped nodes)
  std::vector<int32_t> request_nodes_;    // tree node ids
  std::vector<int32_t> request_handles_;  // their lattice ids
  PathRequest request_;
  std::vector<TokenProb> reply_;  // Run() buffers
  std::vector<int32_t> reply_counts_;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_PATH_CONDITIONED_H_
