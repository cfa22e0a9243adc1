// PlanBatch: one tree budget across the B requests an engine verifies together in one ragged pass.
//
// Each request i brings its drafter's marginals or a path-conditioned provider (exactly one), its
// context length c_i, an optional cap n_max_i and a weight w_i > 0. The planner grows every
// request's tree from one global frontier and prices each candidate batch with the batch cycle cost
// (costmodel::BatchCycleCost):
//   C(N) = T_draft(B, d) + T_aux + T_verify({(n_i + 1, c_i)}),   N = Σ n_i, d the deepest tree.
//
// Order (the rule). A node of request i with path score ρ has priority  w_i ρ / κ_i.
//   - Fixed budget (BudgetMode::kFixed): κ_i = 1. Popping in non-increasing w_i ρ adds, for every
//     N, the N nodes that maximise Σ_i w_i Â_i over all prefix-closed allocations with N nodes in
//     all (each request's ρ is non-increasing along its own pop order, so the per-request gains are
//     concave and the greedy merge of the B sorted streams is optimal; checked against brute force
//     in tests/planner/batch_plan_test.cc).
//   - Cost-aware modes (kController, kScan): κ_i is request i's relative price of a draft token,
//     κ_i = Δ_i / mean_j Δ_j with Δ_i = T_verify(s_i = 1 + q, others 1) − T_verify(all 1), q = 16,
//     the cost of a 16-node tree for request i in the undrafted batch. The attention term grows
//     with c_i, so a long-context request's nodes must buy more expected tokens per unit of cost.
//     When some Δ_i is not > 0 (a cost flat in s, e.g. a measured table), or all Δ_i are equal
//     (equal contexts, B = 1), κ_i = 1 and the order is the fixed-budget order.
//   Ties: priority, then smaller depth, then smaller request index, then smaller parent index, then
//   smaller rank, so that with B = 1 the pop order is BestFirstPlanner's node for node.
//
// Objectives, over the prefixes N = 0..N_max of that order (Â_i = 1 + Σ ρ over request i's nodes;
// the root, the pending bonus token, always counts 1; every objective below uses the calibrated
// Â'_i = 1 + s (Â_i − 1), s = BatchPlanOptions::acceptance_scale, 1 by default, as in
// best_first.h; the order does not depend on s, and the expected_accepted fields stay Â):
//   kGoodput       maximise the weighted goodput  G(N) = Σ_i w_i Â_i(N) / C(N).
//                  kController stops at the first N with G(N + 1) < G(N); kScan takes the argmax.
//   kLatencyBound  maximise G(N) subject to C(N) / Â_i(N) <= X for every request (X = expected
//                  seconds per accepted token, an engine's per-request SLO), scanning every N.
//                  If no N meets the bound, the N with the smallest max_i C(N) / Â_i(N) is taken
//                  and `bound_met` is false.
// N = 0 drafts nothing: C(0) is the plain step (DESIGN.md "Cycle cost"), so G(0) is plain
// decoding's goodput and the controller's first-decrease stop runs over N >= 1 (the drafting makes
// the cost step from N = 0 to 1). A drafter that drafts level by level (a depth-stepped
// costmodel::BatchCycleCost: every request drafts the batch's deepest tree's levels together) is
// searched exactly as in best_first.h: one run per depth cap d = 1..gamma, every lattice cut at d
// and the drafting priced at d, and the best over d (marginals requests only; with a provider
// request one run prices each prefix at its batch's own depth). Then the off switch: in the
// cost-aware modes the chosen plan must beat plain decoding, which drafts nothing and verifies
// every root alone in T_AR = T_verify(all 1) (weighted goodput Σ w_i / T_AR; for kLatencyBound
// plain decoding is one more candidate, with T_AR per token for every request). Otherwise N* = 0
// and `speculation_pays` is false. n_i = 0 means "do not speculate request i this step"; N* = 0
// means no request drafts and the engine runs a plain decoding step.
//
// Path-conditioned requests (BatchRequest::provider; path_conditioned.h). Their nodes are priced
// and ordered by the same rule: a node's path score is ρ(u) = Π q(x_j | path to x_j) along its
// path (ρ(child) <= ρ(parent) still holds), its priority w_i ρ / κ_i with κ_i from the cost as
// above (the price depends on c_i only, not on the drafter), and ties break the same way (with
// B = 1 the order is PathConditionedPlanner's node for node). Their lattices are discovered in
// rounds, as in PathConditionedPlanner: each round runs the whole batch as above over the
// distributions known so far, a provider request's node whose distribution is unknown counting
// as a leaf. After a round, every provider request whose merged pops (or root) needed an unknown
// distribution gets one DistributionProvider::Expand call for exactly those nodes, sorted by
// (depth, node index), and the batch runs again; the first round that needs nothing is exact
// (every merged pop and every head the merge compared are the true ones) and is the plan. A
// batch without providers runs one round. Rounds are counted in BatchPlan::provider_rounds.
// Providers are in-process callbacks: the PlanBatch RPC and `specplan plan-batch` carry
// marginals only, and client::PlannerClient::PlanBatch (client/client.h) requires marginals in
// every request.
#ifndef SPECPLAN_PLANNER_BATCH_BATCH_PLAN_H_
#define SPECPLAN_PLANNER_BATCH_BATCH_PLAN_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/batch_shape.h"
#include "planner/marginals/frontier_heap.h"
#include "planner/marginals/marginals.h"
#include "planner/marginals/marginals_frontier.h"
#include "planner/policies/best_first.h"
#include "planner/policies/path_conditioned.h"  // TokenProb, DistributionProvider
#include "planner/tree/token.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

// Documented limits on a batch accepted from outside callers.
inline constexpr int kMaxBatchRequests = 4096;
inline constexpr int kMaxBatchNodes = 1 << 20;  // total draft nodes over the batch

// Exactly one of `marginals` and `provider` must be given.
struct BatchRequest {
  const Marginals* marginals = nullptr;  // the drafter's marginals; not retained
  int64_t c = 0;                         // tokens already in this request's KV cache, >= 0
  int n_max = -1;                        // cap on this request's draft nodes; -1 = none
  double weight = 1.0;                   // w_i, finite and > 0
  // A path-conditioned drafter instead of marginals: asked for q(. | path(u)) during Plan (see
  // above), not retained. The fields below are read only with a provider.
  DistributionProvider* provider = nullptr;
  TokenId root_token = 0;  // the root, the pending bonus token, >= 0
  int gamma = 16;          // maximum depth of the tree, 1..kMaxMarginalsGamma
  int k = 8;               // continuations asked per node, 1..kMaxMarginalsK
};

enum class BatchObjective { kGoodput, kLatencyBound };

struct BatchPlanOptions {
  BudgetMode mode = BudgetMode::kController;
  int n_max = 256;  // total draft nodes over the batch: the budget in kFixed, the search's upper
                    // end otherwise; 0 <= n_max <= kMaxBatchNodes
  BatchObjective objective = BatchObjective::kGoodput;
  double max_seconds_per_token = 0;  // X for kLatencyBound, > 0
  double acceptance_scale = 1.0;     // s of Â' = 1 + s (Â - 1); finite, in (0, 64]
  bool validate = true;              // validate every request's marginals first (a provider's
                                     // replies are always checked)
};

struct BatchCurvePoint {
  int n = 0;                     // N, draft nodes over the batch
  double expected_accepted = 0;  // Σ_i Â_i(N)
  double weighted_accepted = 0;  // Σ_i w_i Â'_i(N)
  double cycle_s = 0;            // C(N), seconds
  double goodput = 0;            // Σ_i Â'_i(N) / C(N), tokens per second
};

// Result of one PlanBatch call. Caller-owned and reusable: vectors keep their capacity.
struct BatchPlan {
  std::vector<Tree> trees;                // [B] T_{n_i} in the request's own pop order
  std::vector<int> n;                     // [B] n_i draft nodes; 0 = do not speculate
  std::vector<double> expected_accepted;  // [B] Â_i, root included
  int n_total = 0;                        // N* = Σ n_i
  double weighted_accepted = 0;           // Σ w_i Â'_i at N*
  double cycle_s = std::numeric_limits<double>::quiet_NaN();     // C(N*), NaN without a cost
  double goodput = std::numeric_limits<double>::quiet_NaN();     // Σ Â'_i / C(N*), tokens/s
  double ar_goodput = std::numeric_limits<double>::quiet_NaN();  // B / T_AR, tokens/s
  bool speculation_pays = true;    // false: N* = 0, a plain decoding step (the off switch, or
                                   // the goodput fell from N = 0 on); always true in kFixed
  bool bound_met = true;           // kLatencyBound: some N met the bound
  bool lattice_exhausted = false;  // every request's frontier ran empty (or hit its cap) first
  std::vector<double> price;       // [B] κ_i used in the order
  int provider_rounds = 1;         // runs of the batch merge (1 without providers)
  PlanSearch search = PlanSearch::kFixed;  // how N* was searched (best_first.h)
  int depth_cap = -1;                      // per depth cap: the chosen cap d; -1: one uncapped run
  // One point per evaluated N from 0, in increasing N (kController: up to the point that
  // decreased; kScan and kLatencyBound: 0..N_max or the exhausted lattice; kFixed: empty).
  std::vector<BatchCurvePoint> curve;
};

// Plans a batch. Owns a reusable workspace; not thread-safe (one planner per thread).
class BatchPlanner {
 public:
  // `cost` may be null only in BudgetMode::kFixed with kGoodput (then cycle_s, goodput and
  // ar_goodput are NaN). Errors name the request and field, e.g.
  // "requests[3].marginals.probs[2][1] = nan: must be a number in [0, 1]" or, for a provider's
  // reply, "requests[2].provider: dists[0][1].prob = 1.5: must be in [0, 1]"; an error status
  // returned by a provider is passed on with "requests[i].provider: " in front.
  absl::Status Plan(const std::vector<BatchRequest>& requests, const BatchPlanOptions& options,
                    const costmodel::BatchCycleCost* cost, BatchPlan* plan);

  BatchPlanner();
  ~BatchPlanner();
  BatchPlanner(BatchPlanner&&) noexcept;
  BatchPlanner& operator=(BatchPlanner&&) noexcept;

 private:
  // Plan's steps, in the order Plan runs them (batch_plan.cc).
  struct Choice;  // the objective over one round's prefixes N: running sums and the choice of N*
  // Sizes and clears the plan's per-request fields; shape_ = every request verifying its root.
  void ResetPlan(const std::vector<BatchRequest>& requests, BatchPlan* plan);
  // plan->price = κ_i (see the header comment), or all 1 when the cost cannot tell requests apart.
  void PriceDraftTokens(const costmodel::BatchCycleCost& cost, BatchPlan* plan);
  // scale_, cap_ and path_slot_ from the requests and prices (provider lattices restarted);
  // returns the number of provider requests and sets *weight_sum = Σ w_i.
  int PrepareRequests(const std::vector<BatchRequest>& requests, const BatchPlan& plan,
                      double* weight_sum);
  // Request i's lazy frontier (a provider request) over its lattice, tree and workspace; its type
  // is the best-first engine's (batch_plan.cc).
  auto PathFrontier(int i, BatchPlan* plan);
  // Pops request i's frontier f up to `chunk` more times ahead of the merge (not past its cap),
  // while its next key is above `above` (FrontierKey{}: every key is), recording each pop's key
  // in keys_[i]. Returns whether it stopped on the chunk (it may have more to pop).
  template <class Frontier>
  bool PopAhead(Frontier& f, int i, int chunk, const FrontierKey& above, BatchPlan* plan);
  // PopAhead on request i's own frontier.
  bool Refill(int i, int chunk, BatchPlan* plan, const FrontierKey& above = FrontierKey{});
  // PopAhead on the frontiers of marginals requests i and j, their pops interleaved.
  bool PopAheadPair(int i, int j, int chunk, const FrontierKey& above, BatchPlan* plan);
  // PopAhead on every request whose next key is above `above`, marginals requests in pairs;
  // returns whether some request stopped on the chunk (another pass may pop more).
  bool PopAllAhead(int chunk, const FrontierKey& above, BatchPlan* plan);
  // Whether request i's stream may have keys beyond those recorded in keys_[i].
  bool StreamOpen(int i) const;
  // Starts a round: every request at its root, popped ahead by first_chunk, its first key in
  // merge_ (a later round first clears what the previous one took).
  void StartRound(const std::vector<BatchRequest>& requests, const BatchPlanOptions& options,
                  int first_chunk, BatchPlan* plan);
  // Fixed budget, after the first pops ahead (half of n_max / B each): takes in bulk the pops
  // above a threshold T that all requests have been popped past, so that the merge only finishes
  // the last few percent. A fixed budget needs only the counts: when every key > T is recorded
  // (every open stream's next key is <= T), the keys > T are the first C pops of the global order,
  // whatever their order among themselves, so plan->n[i] = request i's keys > T. T is lowered in
  // up to two rounds toward the n_max-th key: the count C(t) of keys above a score t is fitted as
  // a power law through the last two exact counts and solved for 90 % and then 97 % of n_max, and
  // every open stream is popped until its next key is <= T (PopAllAhead). A round that would
  // take n_max or more is not taken (the previous T stands), so the merge always makes the last
  // pop; one that passes 2 n_max recorded pops is given up. Last, the open bound (OpenBound, at or
  // below T) is taken instead when fewer than n_max keys are above it. The fit only
  // decides how far ahead the requests pop; the taken pops are exact. Returns C (0: nothing taken)
  // and leaves merge_ holding each request's MergeKey.
  int TakeLeveled(int n_max, BatchPlan* plan);
  // The largest next key of a request that may pop more (FrontierKey{} when none may): every key
  // above it is recorded in keys_.
  FrontierKey OpenBound() const;
  // Request i's next key, the key of its next pop; requires StreamOpen(i).
  FrontierKey NextKey(int i) const;
  // Number of recorded keys > t over the batch (with per-request counts in *n when not null).
  int CountAbove(const FrontierKey& t, std::vector<int>* n) const;
  // The merge takes request i's next pop: pops it (and up to chunk - 1 more) ahead when it is not
  // recorded yet; returns plan->n[i], the tree node it is.
  int TakeNext(int i, int chunk, BatchPlan* plan);
  // Request i's key in merge_ after it has taken `taken` nodes: the next recorded key, else its
  // frontier's next key (popped when taken); FrontierKey{} (it leaves the merge) when it is full
  // (its cap) or its lattice ran out.
  FrontierKey MergeKey(int i, int taken) const;
  // Puts request i's MergeKey into merge_ after it has taken `taken` nodes.
  void AdvanceMerge(int i, int taken);
  // The merge without a cost (fixed budget): takes pops until *n = n_max, counting them in
  // plan->n. Returns the request of the last pop when it stopped right after taking it, else -1.
  int MergeFixedBudget(int n_max, int chunk, BatchPlan* plan, int* n);
  // The merge with a cost: takes pops, adding each to the sums and the curve, until *choice says
  // stop or N = n_max; records the global order in order_. Returns as MergeFixedBudget.
  int MergeAndPrice(const std::vector<BatchRequest>& requests, int n_max, int chunk, Choice* choice,
                    BatchPlan* plan);
  // Cuts every tree to T_{n_i(N*)} for N* = best_n and fills the plan's totals and cost.
  void CutToSelected(const std::vector<BatchRequest>& requests, const BatchPlanOptions& options,
                     const costmodel::BatchCycleCost* cost, int best_n, BatchPlan* plan);

  // After a round: asks every provider request for the distributions the merge needed (see the
  // header); `last` is the request of the last pop when the round stopped right after taking it,
  // else -1. *asked tells whether any provider was asked (another round is due).
  absl::Status AskProviders(const std::vector<BatchRequest>& requests, int last,
                            const BatchPlan& plan, bool* asked);

  // Request i's frontier keys are the score w_i rho / kappa_i, then a tie-breaker in which a
  // smaller value pops first: depth (bits 56..63), request (40..55), parent (8..39), rank (0..7)
  // (FrontierTie). merge_ holds the key of every growing request's next unmerged pop (keys_, or its
  // frontier's) in slot i (empty: the request takes no more), a tournament like the streams'
  // (frontier_heap.h).
  std::vector<BatchMarginalsFrontier> frontiers_;  // [>= B] one per request, reused
  FrontierTournament merge_;                       // [B] slots
  std::vector<int32_t> order_;  // request of each merged pop, in the global pop order
  // [>= B] key of each of request i's pops so far: the first recorded_[i] entries (the vectors
  // only grow, as the trees do during a call: plan->trees[i] holds recorded_[i] + 1 nodes and
  // room behind them until CutToSelected).
  std::vector<std::vector<FrontierKey>> keys_;
  std::vector<int> recorded_;  // [B] pops of request i so far
  std::vector<double> scale_;  // [B] w_i / kappa_i
  std::vector<int> cap_;       // [B] most draft nodes request i may take
  costmodel::BatchShape shape_;
  // Path-conditioned requests: request i's state is paths_[path_slot_[i]] (-1: marginals): its
  // revealed lattice, the lazy frontier's workspace and the provider's pending request and reply
  // (batch_plan.cc; implementation headers, not installed).
  struct PathState;
  int depth_cap_ = kMaxMarginalsGamma;  // the run's cut of every marginals lattice
  bool fresh_ = true;                   // no round has started since ResetPlan
  std::vector<int> path_slot_;          // [B]
  std::vector<PathState> paths_;        // [>= number of provider requests], reused
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_BATCH_BATCH_PLAN_H_
