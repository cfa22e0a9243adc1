// Tree policies for autoregressive (path-conditioned) drafters: the shared expand/observe
// interface.
//
// A policy builds one draft tree per decoding step, level by level. It never calls a model itself:
// the caller (a LibTorch draft model in runtime/, or a remote engine over a gRPC stream) drives it:
//
//   policy.Begin(root_token);                      // root = pending bonus token (DESIGN.md "Tree")
//   while (!policy.PendingExpansions().empty()) {  // one draft-model forward per depth level
//     fill `dists` with q(. | path(u)) for every pending node u (top-k, descending prob);
//     SPECPLAN_RETURN_IF_ERROR(policy.Provide(dists));
//   }
//   verify policy.tree() with the target; SPECPLAN_RETURN_IF_ERROR(policy.ObserveAcceptance(L));
//
// RunPolicy() below is that loop for an in-process drafter callback.
//
// Conventions: node indices are indices into the tree under construction (tree()); they stay valid
// for the whole step except where a policy documents a final rewrite (Eagle2Policy reindexes its
// tree once, when it becomes final). Path probability rho(i) = product of the draft probabilities
// on the root-to-i path (rho(root) = 1), stored in Tree::path_probs.
//
// Threading: a policy object is single-threaded; use one per request.
#ifndef SPECPLAN_PLANNER_POLICIES_POLICY_H_
#define SPECPLAN_PLANNER_POLICIES_POLICY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/tree/token.h"
#include "planner/tree/tree.h"
#include "util/status_macros.h"

namespace specplan::planner {

// Documented limit on the row length k accepted in NodeDistributions.
inline constexpr int32_t kMaxCandidatesPerNode = 4096;
// Slack allowed on a row's probability sum (float softmax + top-k rounding).
inline constexpr double kProbSumTolerance = 1e-3;

// The drafter's answer for one level: the top-k next-token distribution of each pending node.
// Plain struct, row-major, so it maps 1:1 onto a wire message.
struct NodeDistributions {
  int32_t k = 0;               // candidates per node (row length), in [1, kMaxCandidatesPerNode]
  std::vector<int32_t> nodes;  // [num_nodes] tree indices; must equal PendingExpansions(), in order
  std::vector<TokenId> tokens;  // [num_nodes][k] candidate token ids, >= 0; -1 = padding (trailing)
  std::vector<float> probs;     // [num_nodes][k] q(token | path(node)); each row non-increasing,
                                // in [0, 1], summing to <= 1 (+kProbSumTolerance); padding has 0

  int num_nodes() const { return static_cast<int>(nodes.size()); }
  // Sizes tokens/probs to nodes.size() rows of k, filled with padding (-1, 0). Keeps capacity.
  void ResizeRows(int32_t row_len);
  TokenId token(int row, int j) const { return tokens[static_cast<size_t>(row) * k + j]; }
  float prob(int row, int j) const { return probs[static_cast<size_t>(row) * k + j]; }
  void Set(int row, int j, TokenId tok, float p) {
    tokens[static_cast<size_t>(row) * k + j] = tok;
    probs[static_cast<size_t>(row) * k + j] = p;
  }
};

// Checks `dists` against the pending list `expected_nodes` (shapes, ranges, sorted rows, trailing
// padding, row sums). The error names the field, index and value, e.g.
// "probs[3][1] = 1.2: must be in [0, 1]". Tokens within a row are not checked for duplicates.
absl::Status ValidateNodeDistributions(const NodeDistributions& d,
                                       const std::vector<int32_t>& expected_nodes);

// Per-policy counters, accumulated over steps (llama.cpp-style strategy state). Benchmarks and
// traces read the same struct. A step is "finished" when its tree becomes final.
struct PolicyStats {
  int64_t steps = 0;           // finished steps (trees that became final)
  int64_t forwards = 0;        // accepted Provide() calls = drafter forwards (one per depth level)
  int64_t expansions = 0;      // node rows requested over those forwards (sum of |pending|)
  int64_t drafted_nodes = 0;   // nodes created from drafter output, incl. ones a rerank dropped
  int64_t tree_nodes = 0;      // draft nodes in the final trees (root excluded) = verified - steps
  int64_t observed_steps = 0;  // ObserveAcceptance() calls
  int64_t accepted = 0;        // sum of accepted draft lengths (root and bonus excluded)
  // Last finished step.
  int32_t last_tree_nodes = 0;  // draft nodes in the last final tree
  int32_t last_depth = 0;       // max depth of the last final tree (0 = root only)
  int32_t last_forwards = 0;    // drafter forwards of the last step
  int32_t last_accepted = 0;    // accepted length of the last observed step

  // Mean accepted draft length per observed step (0 when none).
  double mean_accepted() const {
    return observed_steps == 0 ? 0.0 : static_cast<double>(accepted) / observed_steps;
  }
};

class TreePolicy {
 public:
  virtual ~TreePolicy() = default;

  // Starts a new decoding step with a tree holding only the root (`root_token` >= 0, the pending
  // bonus token). Abandons any unfinished step. May finish immediately (no pending expansions).
  virtual void Begin(TokenId root_token) = 0;
  // Nodes whose top-k distributions the drafter must supply next, in the order rows are expected.
  // Empty => the tree is final (or Begin was not called). One call = one draft forward (a level).
  virtual const std::vector<int32_t>& PendingExpansions() const = 0;
  // The drafter's answer for PendingExpansions(). Validated first (ValidateNodeDistributions);
  // on error nothing changes and the same expansions stay pending. FailedPrecondition when nothing
  // is pending.
  virtual absl::Status Provide(const NodeDistributions& dists) = 0;
  // The tree under construction; the final tree once PendingExpansions() is empty. Valid until the
  // next Begin(); the reference stays valid for the policy's lifetime.
  virtual const Tree& tree() const = 0;
  // After verification of the final tree: accepted draft length (root and bonus excluded), in
  // [0, depth of the final tree]. Feeds history-adaptive policies. Once per finished step;
  // FailedPrecondition otherwise, InvalidArgument for an out-of-range length.
  virtual absl::Status ObserveAcceptance(int accepted_length) = 0;
  // Short identifier with the main parameters, e.g. "linear_chain(K=8)".
  virtual std::string Name() const = 0;
  virtual const PolicyStats& stats() const = 0;
  virtual void ResetStats() = 0;
};

// In-process drafter: on entry dists.nodes holds the pending node indices into `tree` (k = 0,
// tokens/probs empty); it must set k and fill tokens/probs (e.g. via ResizeRows + Set).
using DrafterFn = std::function<absl::Status(const Tree& tree, NodeDistributions& dists)>;

// Runs one step: Begin, then drafter/Provide until the tree is final. Returns &policy.tree().
// `workspace` (optional) is reused across calls so the loop does not allocate after warm-up.
// Errors from the drafter or from Provide are returned as is (the step is left unfinished).
absl::StatusOr<const Tree*> RunPolicy(TreePolicy& policy, TokenId root_token,
                                      const DrafterFn& drafter,
                                      NodeDistributions* workspace = nullptr);

// Shared bookkeeping for level-by-level policies: the Begin/Provide/Observe state machine,
// validation and counters. Subclasses implement the three hooks.
//
// Step lifecycle: Begin() -> kDrafting (OnBegin fills the first level) -> Provide() per level
// (validated, then OnLevel) -> kFinal once nothing is pending (OnFinish, counters updated) ->
// ObserveAcceptance() -> kObserved. Begin() is allowed in any phase and starts a new step.
class LevelPolicyBase : public TreePolicy {
 public:
  // TreePolicy contract. A negative `root_token` is a programmer error (SPECPLAN_CHECK).
  void Begin(TokenId root_token) final;
  const std::vector<int32_t>& PendingExpansions() const final { return pending_; }
  absl::Status Provide(const NodeDistributions& dists) final;
  const Tree& tree() const final { return tree_; }
  absl::Status ObserveAcceptance(int accepted_length) final;
  const PolicyStats& stats() const final { return stats_; }
  void ResetStats() final { stats_ = PolicyStats(); }

 protected:
  // tree_ holds only the root; push the first level's expansions into `pending` (ascending index
  // order is conventional). Leaving it empty finishes the step with a root-only tree.
  virtual void OnBegin(std::vector<int32_t>& pending) = 0;
  // `dists` is validated and matches the current pending list row for row. Grow tree_ and push the
  // next level's expansions into `next` (empty => final).
  virtual void OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) = 0;
  // Called once when the tree becomes final, before counters are updated (e.g. a rerank that
  // rewrites tree_). Must leave a valid tree in tree_.
  virtual void OnFinish() {}
  virtual void OnAcceptance(int /*accepted_length*/) {}

  // Counts nodes created from drafter output this step (PolicyStats::drafted_nodes).
  void CountDrafted(int n) { step_drafted_ += n; }

  Tree tree_;

 private:
  enum class Phase {
    kIdle,      // no step begun yet
    kDrafting,  // expansions pending
    kFinal,     // tree final, acceptance not yet observed
    kObserved,  // ObserveAcceptance() done for this step
  };

  // Runs OnFinish(), records the finished step in stats_ (steps, drafted/tree nodes, last_*) and
  // enters kFinal.
  void Finish();

  Phase phase_ = Phase::kIdle;
  std::vector<int32_t> pending_;
  std::vector<int32_t> next_pending_;
  PolicyStats stats_;
  int32_t step_forwards_ = 0;
  int64_t step_drafted_ = 0;
};

// A level policy configured by one options struct: Create() checks the options with `Validate`
// (InvalidArgument naming the field) and builds the policy, options() returns them, and the first
// level expands the root unless the policy overrides OnBegin. `Policy` (the derived class) keeps
// its constructor private and names this base a friend:
//
//   class FixedTreePolicy final
//       : public ConfiguredLevelPolicy<FixedTreePolicy, FixedTreeOptions, ValidateFixedTreeOptions>
//       {
//     friend ConfiguredLevelPolicy;
//     explicit FixedTreePolicy(const FixedTreeOptions& options);  // reserves tree_
//     ...
template <typename Policy, typename Options, absl::Status (*Validate)(const Options&)>
class ConfiguredLevelPolicy : public LevelPolicyBase {
 public:
  static absl::StatusOr<std::unique_ptr<Policy>> Create(const Options& options) {
    SPECPLAN_RETURN_IF_ERROR(Validate(options));
    return std::unique_ptr<Policy>(new Policy(options));
  }

  const Options& options() const { return options_; }

 protected:
  explicit ConfiguredLevelPolicy(const Options& options) : options_(options) {}
  void OnBegin(std::vector<int32_t>& pending) override { pending.push_back(0); }

  Options options_;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_POLICY_H_
