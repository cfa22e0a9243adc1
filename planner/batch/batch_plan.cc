#include "planner/batch/batch_plan.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/policies/best_first_engine.h"
#include "planner/policies/path_lattice.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::planner {

struct BatchPlanner::PathState {
  internal::PathLatticeStore lattice;
  internal::EngineWorkspace ws;  // the lazy frontier's heap, handles and missing nodes
  std::vector<int32_t> needed;   // missing nodes the merge needed
  std::vector<int32_t> nodes;    // the same, sorted by (depth, node index): the request
  std::vector<int32_t> handles;  // their lattice ids
  std::vector<TokenProb> reply;  // [needed][k]
  std::vector<int32_t> counts;   // [needed]
};

BatchPlanner::BatchPlanner() = default;
BatchPlanner::~BatchPlanner() = default;
BatchPlanner::BatchPlanner(BatchPlanner&&) noexcept = default;
BatchPlanner& BatchPlanner::operator=(BatchPlanner&&) noexcept = default;
namespace {

// Tokens of the probe tree that prices one request's draft tokens (see the header).
constexpr int64_t kPriceProbeTokens = 16;
// Pops a request takes ahead of the merge at a time (see Plan).
constexpr int kRefillChunk = 8;
constexpr int kControllerChunk = 2;   // the controller's (see Plan)
constexpr int kLevelChunk = 16;       // TakeLeveled's pops ahead at a time
constexpr int kLevelFinishChunk = 2;  // the merge's after a bulk take

absl::Status ValidateRequests(const std::vector<BatchRequest>& requests, bool marginals) {
  if (requests.empty()) return absl::InvalidArgumentError("requests: empty batch");
  if (requests.size() > static_cast<size_t>(kMaxBatchRequests)) {
    return absl::InvalidArgumentError(
        absl::StrCat("requests: ", requests.size(), " requests, limit ", kMaxBatchRequests));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const BatchRequest& r = requests[i];
    // The field's name, built only for an error.
    const auto at = [i] { return absl::StrCat("requests[", i, "]"); };
    if (r.marginals == nullptr && r.provider == nullptr) {
      return absl::InvalidArgumentError(
          at() + ".marginals: missing (give exactly one of marginals and provider)");
    }
    if (r.marginals != nullptr && r.provider != nullptr) {
      return absl::InvalidArgumentError(
          at() + ".provider: given together with marginals (give exactly one of the two)");
    }
    if (r.provider != nullptr) {
      if (r.root_token < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(), ".root_token = ", r.root_token, ": token ids must be >= 0"));
      }
      if (r.gamma < 1 || r.gamma > kMaxMarginalsGamma) {
        return absl::InvalidArgumentError(absl::StrCat(at(), ".gamma = ", r.gamma,
                                                       ": must be in [1, ", kMaxMarginalsGamma,
                                                       "] with a provider"));
      }
      if (r.k < 1 || r.k > kMaxMarginalsK) {
        return absl::InvalidArgumentError(absl::StrCat(at(), ".k = ", r.k, ": must be in [1, ",
                                                       kMaxMarginalsK, "] with a provider"));
      }
    } else if (marginals) {
      if (absl::Status st = ValidateMarginals(*r.marginals); !st.ok()) {
        return absl::Status(st.code(), absl::StrCat(at(), ".marginals.", st.message()));
      }
    }
    if (r.c < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at(), ".c = ", r.c, ": must be >= 0"));
    }
    if (r.n_max < -1 || r.n_max >= kMaxTreeNodes) {
      return absl::InvalidArgumentError(absl::StrCat(
          at(), ".n_max = ", r.n_max, ": must be -1 (no cap) or in [0, ", kMaxTreeNodes - 1, "]"));
    }
    if (!std::isfinite(r.weight) || r.weight <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(at(), ".weight = ", r.weight, ": must be finite and > 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const BatchPlanOptions& o, const costmodel::BatchCycleCost* cost) {
  if (o.n_max < 0 || o.n_max > kMaxBatchNodes) {
    return absl::InvalidArgumentError(absl::StrCat("n_max = ", o.n_max, ": must be in [0, ",
                                                   kMaxBatchNodes, "] draft nodes over the batch"));
  }
  if (!(o.acceptance_scale > 0 && o.acceptance_scale <= kMaxAcceptanceScale)) {
    return absl::InvalidArgumentError(absl::StrCat("acceptance_scale = ", o.acceptance_scale,
                                                   ": must be in (0, ", kMaxAcceptanceScale, "]"));
  }
  const bool latency = o.objective == BatchObjective::kLatencyBound;
  if ((o.mode != BudgetMode::kFixed || latency) && cost == nullptr) {
    return absl::InvalidArgumentError(
        "cost: a batch cycle cost is required in controller and scan modes and for a latency "
        "bound");
  }
  if (latency) {
    if (o.mode == BudgetMode::kFixed) {
      return absl::InvalidArgumentError(
          "objective: a latency bound chooses the budget itself; use controller or scan mode, "
          "not a fixed budget");
    }
    if (!std::isfinite(o.max_seconds_per_token) || o.max_seconds_per_token <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_seconds_per_token = ", o.max_seconds_per_token, ": must be finite and > 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BatchPlanner::AskProviders(const std::vector<BatchRequest>& requests, int last,
                                        const BatchPlan& plan, bool* asked) {
  *asked = false;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (path_slot_[i] < 0) continue;
    PathState& ps = paths_[static_cast<size_t>(path_slot_[i])];
    // The merge needed the children of the root and of every pop it took, except the last pop
    // when the round stopped right after taking it. Pops ahead of the merge are not needed.
    const int32_t upto = plan.n[i] - (static_cast<int>(i) == last ? 1 : 0);
    ps.needed.clear();
    for (const int32_t v : ps.ws.missing) {
      if (v <= upto) ps.needed.push_back(v);
    }
    if (ps.needed.empty()) continue;
    const Tree& tree = plan.trees[i];
    internal::SortRequestNodes(ps.needed, tree, ps.ws.handles, &ps.nodes, &ps.handles);
    const int k = requests[i].k;
    const size_t m = ps.nodes.size();
    ps.reply.assign(m * static_cast<size_t>(k), TokenProb{});
    ps.counts.assign(m, 0);
    absl::Status st = requests[i].provider->Expand(tree, ps.nodes, k, absl::MakeSpan(ps.reply),
                                                   absl::MakeSpan(ps.counts));
    if (st.ok()) st = internal::ValidateDistributions(ps.reply, ps.counts, m, k);
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("requests[", i, "].provider: ", st.message()));
    }
    for (size_t j = 0; j < m; ++j) {
      ps.lattice.SetDistribution(ps.handles[j], ps.reply.data() + j * k, ps.counts[j]);
    }
    *asked = true;
  }
  return absl::OkStatus();
}

// The objective over the prefixes N = 0, 1, ... of one round's merge (see the header): the running
// sums over the batch at the current N and the choice of N* so far.
struct BatchPlanner::Choice {
  Choice(const BatchPlanOptions& options, const costmodel::BatchCycleCost* cost)
      : cost(cost),
        latency(options.objective == BatchObjective::kLatencyBound),
        scan(options.mode == BudgetMode::kScan || latency),
        max_seconds_per_token(options.max_seconds_per_token),
        scale(options.acceptance_scale) {}

  // Back to N = 0: every request holds its root only.
  void Restart(int batch, double weight_sum) {
    depth = 0;
    accepted = calibrated = batch;
    weighted = weight_sum;
    min_a = 1.0;
    argmin_a = 0;
    best_n = 0;
    best_g = -std::numeric_limits<double>::infinity();
    prev_g = 0;
    best_violation = std::numeric_limits<double>::infinity();
    feasible_seen = false;
  }

  // Adds a pop of request i with path score rho; `expected_accepted` already counts it.
  void Add(int i, double rho, double weight, const std::vector<double>& expected_accepted) {
    accepted += rho;
    calibrated += scale * rho;
    weighted += weight * scale * rho;
    if (latency && i == argmin_a) {
      const int batch = static_cast<int>(expected_accepted.size());
      for (int j = 0; j < batch; ++j) {
        if (expected_accepted[j] < expected_accepted[argmin_a]) argmin_a = j;
      }
      min_a = expected_accepted[argmin_a];
    }
  }

  // Records point N of the curve (the sums must describe N and `shape` its batch, its deepest tree
  // `depth`) and updates the choice; false: the controller's first decrease, stop. N = 0 drafts
  // nothing (the plain step); the drafting is priced at price_depth when >= 0, else at `depth`.
  bool Consider(int n, const costmodel::BatchShape& shape, BatchPlan* plan) {
    const double c = cost->TreeSeconds(shape, price_depth >= 0 ? price_depth : depth);
    const double g = weighted / c;
    plan->curve.push_back({n, accepted, weighted, c, calibrated / c});
    if (latency) {
      const double worst = c / CalibratedAccepted(min_a, scale);  // max_i C / Â'_i
      if (worst <= max_seconds_per_token) {
        if (!feasible_seen || g > best_g) best_g = g, best_n = n;
        feasible_seen = true;
      } else if (!feasible_seen && worst < best_violation) {
        best_violation = worst;
        best_n = n;
      }
      return true;
    }
    if (scan) {
      if (g > best_g) best_g = g, best_n = n;
      return true;
    }
    // First decrease over N >= 1 (the cost steps by the drafting from N = 0 to 1; the off switch
    // compares with N = 0 after the stop): n - 1 is the answer.
    if (n > 1 && g < prev_g) return false;
    prev_g = g;
    best_n = n;
    return true;
  }

  // The off switch (see the header): N* = 0 unless the chosen plan beats plain decoding, whose
  // step takes ar_s and gives every request one token (weighted goodput weight_sum / ar_s).
  // Sets plan->speculation_pays and, for a latency bound, plan->bound_met.
  void ApplyOffSwitch(double weight_sum, double ar_s, BatchPlan* plan) {
    if (best_n > 0) {
      const double plain_g = weight_sum / ar_s;
      const BatchCurvePoint& p = plan->curve[static_cast<size_t>(best_n)];
      if (latency) {
        const bool plain_ok = ar_s <= max_seconds_per_token;  // a token per plain step each
        if (plain_ok && (!feasible_seen || plain_g >= p.weighted_accepted / p.cycle_s)) best_n = 0;
        if (!plain_ok && !feasible_seen && ar_s <= best_violation) best_n = 0;
        feasible_seen = feasible_seen || plain_ok;
      } else if (p.weighted_accepted / p.cycle_s <= plain_g) {
        best_n = 0;
      }
    }
    plan->speculation_pays = best_n > 0;  // N* = 0 is a plain decoding step
    if (latency) plan->bound_met = feasible_seen;
  }

  // This choice's standing, to compare runs (depth caps): a met bound first, then the weighted
  // goodput of N* (for an unmet bound, the smaller violation); N* = 0 stands at plain decoding's.
  std::pair<int, double> Standing(double weight_sum, double ar_s, const BatchPlan& plan) const {
    if (best_n == 0)
      return {latency ? (ar_s <= max_seconds_per_token ? 1 : 0) : 1,
              latency && ar_s > max_seconds_per_token ? -ar_s : weight_sum / ar_s};
    const BatchCurvePoint& p = plan.curve[static_cast<size_t>(best_n)];
    if (latency && !feasible_seen) return {0, -best_violation};
    return {1, p.weighted_accepted / p.cycle_s};
  }

  const costmodel::BatchCycleCost* cost;
  int price_depth = -1;  // the depth cap's price (-1: the batch's own depth)
  int depth = 0;         // the deepest merged node so far
  bool latency;
  bool scan;
  double max_seconds_per_token;  // X
  double scale;                  // s of Â' = 1 + s (Â - 1)

  double accepted = 0;    // Σ Â_i
  double calibrated = 0;  // Σ Â'_i
  double weighted = 0;    // Σ w_i Â'_i
  double min_a = 1.0;     // min_i Â_i, for the latency bound
  int argmin_a = 0;
  int best_n = 0;
  double best_g = 0;
  double prev_g = 0;
  double best_violation = 0;
  bool feasible_seen = false;
};

void BatchPlanner::ResetPlan(const std::vector<BatchRequest>& requests, BatchPlan* plan) {
  const size_t b = requests.size();
  plan->trees.resize(b);
  plan->n.assign(b, 0);
  plan->expected_accepted.assign(b, 1.0);
  plan->price.assign(b, 1.0);
  plan->curve.clear();
  plan->lattice_exhausted = false;
  plan->bound_met = true;
  fresh_ = true;
  depth_cap_ = kMaxMarginalsGamma;
  shape_.Clear();
  shape_.Reserve(b);
  for (const BatchRequest& r : requests) shape_.Add(1, r.c);
}

void BatchPlanner::PriceDraftTokens(const costmodel::BatchCycleCost& cost, BatchPlan* plan) {
  const int B = static_cast<int>(plan->price.size());
  const double base = cost.VerifySeconds(shape_);
  double sum = 0;
  bool usable = std::isfinite(base);
  for (int i = 0; i < B && usable; ++i) {
    shape_.SetTokens(i, 1 + kPriceProbeTokens);
    const double d = cost.VerifySeconds(shape_) - base;
    shape_.SetTokens(i, 1);
    plan->price[i] = d;
    sum += d;
    usable = std::isfinite(d) && d > 0;
  }
  const bool equal = usable && std::all_of(plan->price.begin(), plan->price.end(),
                                           [&](double d) { return d == plan->price[0]; });
  if (!usable || equal) {
    std::fill(plan->price.begin(), plan->price.end(), 1.0);
  } else {
    const double mean = sum / B;
    for (double& p : plan->price) p /= mean;
  }
}

int BatchPlanner::PrepareRequests(const std::vector<BatchRequest>& requests, const BatchPlan& plan,
                                  double* weight_sum) {
  const size_t b = requests.size();
  scale_.resize(b);
  cap_.resize(b);
  path_slot_.assign(b, -1);
  int num_paths = 0;
  *weight_sum = 0;
  for (size_t i = 0; i < b; ++i) {
    const BatchRequest& r = requests[i];
    // scale_i = w_i / kappa_i; with w = kappa = 1 the key is rho itself (B = 1: BestFirstPlanner).
    scale_[i] = r.weight == 1.0 && plan.price[i] == 1.0 ? 1.0 : r.weight / plan.price[i];
    const int64_t lattice =
        r.provider != nullptr ? LatticeSize(r.gamma, r.k, kMaxTreeNodes - 1)
                              : LatticeSize(r.marginals->gamma, r.marginals->k, kMaxTreeNodes - 1);
    cap_[i] =
        static_cast<int>(std::min<int64_t>(r.n_max < 0 ? kMaxTreeNodes - 1 : r.n_max, lattice));
    *weight_sum += r.weight;
    if (r.provider != nullptr) {
      path_slot_[i] = num_paths++;
      if (paths_.size() < static_cast<size_t>(num_paths)) paths_.resize(num_paths);
      paths_[path_slot_[i]].lattice.Reset(r.root_token, r.gamma);
    }
  }
  return num_paths;
}

inline bool BatchPlanner::StreamOpen(int i) const {
  if (recorded_[i] >= cap_[i]) return false;
  return path_slot_[i] < 0 ? !frontiers_[i].empty() : !paths_[path_slot_[i]].ws.heap.empty();
}

inline FrontierKey BatchPlanner::NextKey(int i) const {
  return path_slot_[i] < 0 ? frontiers_[i].top() : paths_[path_slot_[i]].ws.heap.top();
}

auto BatchPlanner::PathFrontier(int i, BatchPlan* plan) {
  PathState& ps = paths_[path_slot_[i]];
  return internal::LazyFrontier<internal::PathLatticeStore>(ps.lattice, plan->trees[i], &ps.ws,
                                                            scale_[i], static_cast<uint32_t>(i));
}

namespace {

// One request's pops ahead of the merge: pops its frontier up to `chunk` more times (not past its
// cap), adding each pop to its tree and its key to `keys`, and counting them in `recorded` (the
// tree's first recorded + 1 nodes and the first `recorded` keys are the pops; see
// BatchPlanner::recorded_). The tree and keys are written by index into arrays that only grow,
// by doubling, and are cut by CutToSelected: five appends per pop cost about as much as the pop,
// and growing and cutting them for every chunk filled each new entry with zeros again.
template <class Frontier>
class PopCursor {
 public:
  PopCursor(Frontier& f, Tree& tree, std::vector<FrontierKey>& keys, int& recorded, int cap,
            int chunk)
      : f_(f), tree_(tree), keys_(keys), recorded_(recorded), cap_(cap), popped_(recorded) {
    stop_ = std::min(cap_, popped_ + chunk);
    if (tree_.size() < stop_ + 1) tree_.Resize(std::max(stop_ + 1, 2 * tree_.size()));
    if (keys_.size() < static_cast<size_t>(stop_)) {
      keys_.resize(std::max(static_cast<size_t>(stop_), 2 * keys_.size()));
    }
  }
  bool more() const { return popped_ < stop_ && !f_.empty(); }
  // more(), and the next key is above t.
  bool more_above(const FrontierKey& t) const { return more() && FrontierKeyLess(t, f_.top()); }
  void Step() {
    keys_[static_cast<size_t>(popped_)] = f_.top();
    const FrontierCandidate e = f_.Pop();
    const int32_t node = ++popped_;
    tree_.tokens[node] = e.token;
    tree_.parents[node] = e.parent;
    tree_.depths[node] = tree_.depths[e.parent] + 1;
    tree_.path_probs[node] = e.rho;
    f_.Added(node, e);
    if (popped_ < cap_) f_.Expand(node, e);
  }
  // Records the pops made; returns whether the chunk ran out before the cap (the frontier may
  // have more keys to pop).
  bool Finish() {
    recorded_ = popped_;
    return popped_ == stop_ && popped_ < cap_;
  }

 private:
  Frontier& f_;
  Tree& tree_;
  std::vector<FrontierKey>& keys_;
  int& recorded_;
  int cap_;
  int popped_;  // draft nodes in the tree
  int stop_;
};

// Starts a tree at its root, keeping the nodes behind it as room for the pops (PopCursor).
void RestartTree(Tree& tree, TokenId root_token) {
  if (tree.size() == 0) tree.Resize(1);
  tree.tokens[0] = root_token;
  tree.parents[0] = -1;
  tree.depths[0] = 0;
  tree.path_probs[0] = 1.0;
}

}  // namespace

template <class Frontier>
bool BatchPlanner::PopAhead(Frontier& f, int i, int chunk, const FrontierKey& above,
                            BatchPlan* plan) {
  PopCursor<Frontier> c(f, plan->trees[i], keys_[i], recorded_[i], cap_[i], chunk);
  while (c.more_above(above)) c.Step();
  return c.Finish();
}

bool BatchPlanner::PopAheadPair(int i, int j, int chunk, const FrontierKey& above,
                                BatchPlan* plan) {
  PopCursor<BatchMarginalsFrontier> a(frontiers_[i], plan->trees[i], keys_[i], recorded_[i],
                                      cap_[i], chunk);
  PopCursor<BatchMarginalsFrontier> b(frontiers_[j], plan->trees[j], keys_[j], recorded_[j],
                                      cap_[j], chunk);
  // Alternating steps: each pop waits on its frontier's previous pop (the new maximum), and the
  // two requests' chains are independent, so the core overlaps them.
  while (a.more_above(above) && b.more_above(above)) {
    a.Step();
    b.Step();
  }
  while (a.more_above(above)) a.Step();
  while (b.more_above(above)) b.Step();
  const bool more = a.Finish();
  return b.Finish() || more;
}

bool BatchPlanner::Refill(int i, int chunk, BatchPlan* plan, const FrontierKey& above) {
  if (path_slot_[i] < 0) return PopAhead(frontiers_[i], i, chunk, above, plan);
  internal::LazyFrontier<internal::PathLatticeStore> f = PathFrontier(i, plan);
  return PopAhead(f, i, chunk, above, plan);
}

bool BatchPlanner::PopAllAhead(int chunk, const FrontierKey& above, BatchPlan* plan) {
  // Marginals requests two at a time (PopAheadPair), provider requests alone. A request's pops
  // do not depend on the others', so the order does not matter.
  const int B = static_cast<int>(cap_.size());
  bool more = false;  // some chunk ran out
  int pending = -1;   // a marginals request waiting for a partner
  for (int i = 0; i < B; ++i) {
    if (!StreamOpen(i) || !FrontierKeyLess(above, NextKey(i))) continue;
    if (path_slot_[i] >= 0) {
      more |= Refill(i, chunk, plan, above);
    } else if (pending < 0) {
      pending = i;
    } else {
      more |= PopAheadPair(pending, i, chunk, above, plan);
      pending = -1;
    }
  }
  if (pending >= 0) more |= Refill(pending, chunk, plan, above);
  return more;
}

void BatchPlanner::StartRound(const std::vector<BatchRequest>& requests,
                              const BatchPlanOptions& options, int first_chunk, BatchPlan* plan) {
  const int B = static_cast<int>(requests.size());
  if (plan->provider_rounds > 1 || !fresh_) {
    std::fill(plan->n.begin(), plan->n.end(), 0);
    std::fill(plan->expected_accepted.begin(), plan->expected_accepted.end(), 1.0);
    for (int i = 0; i < B; ++i) shape_.SetTokens(i, 1);
    plan->curve.clear();
    plan->lattice_exhausted = false;
  }
  order_.clear();
  for (int i = 0; i < B; ++i) {
    const BatchRequest& r = requests[i];
    recorded_[i] = 0;
    if (path_slot_[i] < 0) {
      RestartTree(plan->trees[i], r.marginals->root_token);
      if (options.n_max == 0 || cap_[i] == 0) continue;
      frontiers_[i].Reset(r.marginals, &plan->trees[i], scale_[i], static_cast<uint32_t>(i),
                          depth_cap_);
    } else {
      RestartTree(plan->trees[i], r.root_token);
      paths_[path_slot_[i]].ws.missing.clear();
      if (options.n_max == 0 || cap_[i] == 0) continue;
      PathFrontier(i, plan).Start(/*root_handle=*/0, /*expand_root=*/true);
    }
  }
  fresh_ = false;
  // The first pops ahead (none where n_max = 0: every stream is closed).
  if (options.n_max > 0) PopAllAhead(first_chunk, FrontierKey{}, plan);
  merge_.Reset(static_cast<size_t>(B));
  merge_.SetRange(0, static_cast<size_t>(B),
                  [&](size_t i) { return recorded_[i] == 0 ? FrontierKey{} : keys_[i][0]; });
}

FrontierKey BatchPlanner::OpenBound() const {
  FrontierKey m;
  for (int i = 0; i < static_cast<int>(cap_.size()); ++i) {
    if (!StreamOpen(i)) continue;
    const FrontierKey k = NextKey(i);
    if (FrontierKeyLess(m, k)) m = k;
  }
  return m;
}

int BatchPlanner::CountAbove(const FrontierKey& t, std::vector<int>* n) const {
  int c = 0;
  for (size_t i = 0; i < cap_.size(); ++i) {
    const FrontierKey* keys = keys_[i].data();
    const int above = static_cast<int>(
        std::partition_point(keys, keys + recorded_[i],
                             [&](const FrontierKey& k) { return FrontierKeyLess(t, k); }) -
        keys);
    if (n != nullptr) (*n)[i] = above;
    c += above;
  }
  return c;
}

int BatchPlanner::TakeLeveled(int n_max, BatchPlan* plan) {
  const int B = static_cast<int>(plan->n.size());
  // The threshold taken so far and its exact count (nothing: the merge starts at the top).
  FrontierKey take = OpenBound();
  int taken = CountAbove(take, &plan->n);
  bool counted = true;  // plan->n holds each request's keys above `take`
  const bool open = FrontierKeyLess(FrontierKey{}, take);
  if (taken >= n_max) {
    take = FrontierKey{~uint64_t{0}, ~uint64_t{0}};  // above every key: nothing is taken
    taken = 0;
    counted = false;
  }
  if (open && taken > 0) {
    // Two exact points (score, count) of C: at the open bound, and at the geometric mean of its
    // score and the highest score, where every key is recorded too.
    double t_b = take.score();
    double c_b = taken;
    double top = 0;
    for (int i = 0; i < B; ++i) {
      if (recorded_[i] > 0) top = std::max(top, keys_[i][0].score());
    }
    double t_a = std::sqrt(top * t_b);
    double c_a = CountAbove(FrontierKey::Make(t_a, ~uint64_t{0}), nullptr);
    for (const double aim : {0.9, 0.97}) {
      const double target = aim * n_max;
      if (c_b >= target) continue;
      if (!(c_a >= 1 && c_b > c_a && t_a > t_b && t_b > 0)) break;
      // C(t) = c_b (t / t_b)^-alpha through both points, solved for C = target.
      const double alpha = std::log(c_b / c_a) / std::log(t_a / t_b);
      const double t = t_b * std::pow(c_b / target, 1.0 / alpha);
      if (!(t > 0 && t < t_b)) break;
      // The key below every key of score >= t (a real key's lo is never 0).
      const FrontierKey key = FrontierKey::Make(t, ~uint64_t{0});
      // Every open stream pops until its next key is <= key, in passes of about twice the pops
      // a stream needs on average.
      // A fit far off (a count that grows much faster below the points than above them) would
      // pop far past the budget: past 2 n_max recorded pops the round is given up, and the
      // open bound below takes what is exact.
      const int chunk = std::max(kLevelChunk, static_cast<int>(2 * (target - c_b) / B));
      bool given_up = false;
      while (PopAllAhead(chunk, key, plan)) {
        int64_t recorded = 0;
        for (int i = 0; i < B; ++i) recorded += recorded_[i];
        if (recorded > 2 * static_cast<int64_t>(n_max)) {
          given_up = true;
          break;
        }
      }
      if (given_up) {
        counted = false;
        break;
      }
      const int c = CountAbove(key, &plan->n);
      if (c >= n_max) {  // past the budget: the previous threshold stands
        counted = false;
        break;
      }
      t_a = t_b, c_a = c_b;
      t_b = t, c_b = c;
      take = key, taken = c;
    }
    // Every stream has been popped past its own next key, which may be lower still.
    const FrontierKey m = OpenBound();
    const int c = CountAbove(m, &plan->n);  // >= taken: m <= take
    if (c < n_max) {
      take = m, taken = c;
      counted = true;
    } else {
      counted = false;
    }
  }
  if (!counted) CountAbove(take, &plan->n);
  // The merge continues from each request's next key, recorded or not (TakeNext pops it).
  merge_.SetRange(0, static_cast<size_t>(B),
                  [&](size_t i) { return MergeKey(static_cast<int>(i), plan->n[i]); });
  return taken;
}

int BatchPlanner::TakeNext(int i, int chunk, BatchPlan* plan) {
  // The slot held the frontier's next key, not yet popped: pop it now, with the chunk behind it.
  if (plan->n[i] == recorded_[i]) Refill(i, chunk, plan);
  return ++plan->n[i];
}

FrontierKey BatchPlanner::MergeKey(int i, int taken) const {
  if (taken < recorded_[i]) return keys_[i][static_cast<size_t>(taken)];
  return StreamOpen(i) ? NextKey(i) : FrontierKey{};
}

void BatchPlanner::AdvanceMerge(int i, int taken) {
  // Request i's slot holds the merge's top.
  merge_.Set(static_cast<size_t>(i), MergeKey(i, taken));
}

int BatchPlanner::MergeFixedBudget(int n_max, int chunk, BatchPlan* plan, int* n) {
  while (*n < n_max) {
    if (merge_.empty()) {
      plan->lattice_exhausted = true;
      break;
    }
    const int32_t i = static_cast<int32_t>(TieRequest(merge_.top().tie()));
    const int taken = TakeNext(i, chunk, plan);
    if (++*n == n_max) return i;
    AdvanceMerge(i, taken);
  }
  return -1;
}

int BatchPlanner::MergeAndPrice(const std::vector<BatchRequest>& requests, int n_max, int chunk,
                                Choice* choice, BatchPlan* plan) {
  int n = 0;
  while (n < n_max) {
    if (merge_.empty()) {
      plan->lattice_exhausted = true;
      break;
    }
    const int32_t i = static_cast<int32_t>(TieRequest(merge_.top().tie()));
    const int taken = TakeNext(i, chunk, plan);  // the tree node this pop added
    const double rho = plan->trees[i].path_probs[static_cast<size_t>(taken)];
    ++n;
    order_.push_back(i);
    plan->expected_accepted[i] += rho;
    choice->depth = std::max(choice->depth, plan->trees[i].depths[static_cast<size_t>(taken)]);
    shape_.Grow(i);
    choice->Add(i, rho, requests[i].weight, plan->expected_accepted);
    if (!choice->Consider(n, shape_, plan) || n == n_max) return i;
    AdvanceMerge(i, taken);
  }
  return -1;
}

void BatchPlanner::CutToSelected(const std::vector<BatchRequest>& requests,
                                 const BatchPlanOptions& options,
                                 const costmodel::BatchCycleCost* cost, int best_n,
                                 BatchPlan* plan) {
  const int B = static_cast<int>(requests.size());
  // The first N* pops, counted per request, are a prefix of each request's own pop order
  // (plan->n counts every merged pop, so it is the answer when N* is all of them).
  if (best_n < static_cast<int>(order_.size())) {
    std::fill(plan->n.begin(), plan->n.end(), 0);
    for (int j = 0; j < best_n; ++j) ++plan->n[order_[j]];
  }
  plan->n_total = best_n;
  shape_.Clear();
  plan->weighted_accepted = 0;
  double total_accepted = 0;
  int depth = 0;
  for (int i = 0; i < B; ++i) {
    Tree& tree = plan->trees[i];
    tree.Resize(plan->n[i] + 1);
    if (cost != nullptr) depth = std::max(depth, tree.max_depth());
    const double a = tree.expected_accepted();
    plan->expected_accepted[i] = a;
    const double calibrated = CalibratedAccepted(a, options.acceptance_scale);
    plan->weighted_accepted += requests[i].weight * calibrated;
    total_accepted += calibrated;
    if (cost != nullptr) shape_.Add(plan->n[i] + 1, requests[i].c);
  }
  if (cost != nullptr) {
    plan->cycle_s = cost->TreeSeconds(shape_, depth);  // at the trees' own depth
    plan->goodput = total_accepted / plan->cycle_s;
  } else {
    plan->cycle_s = plan->goodput = std::numeric_limits<double>::quiet_NaN();
  }
}

absl::Status BatchPlanner::Plan(const std::vector<BatchRequest>& requests,
                                const BatchPlanOptions& options,
                                const costmodel::BatchCycleCost* cost, BatchPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  if (absl::Status st = ValidateRequests(requests, options.validate); !st.ok()) return st;
  if (absl::Status st = ValidateOptions(options, cost); !st.ok()) return st;
  const int B = static_cast<int>(requests.size());
  const bool evaluate = cost != nullptr && options.mode != BudgetMode::kFixed;
  Choice choice(options, cost);

  ResetPlan(requests, plan);
  // Prices (see the header): only when a cost orders the nodes and the requests differ.
  if (evaluate && B > 1) PriceDraftTokens(*cost, plan);
  double weight_sum = 0;
  const int num_paths = PrepareRequests(requests, *plan, &weight_sum);
  // Plain decoding: every request verifies its root alone and nothing is drafted.
  const double ar_s =
      cost != nullptr ? cost->PlainSeconds(shape_) : std::numeric_limits<double>::quiet_NaN();
  plan->ar_goodput = B / ar_s;

  static_assert(kMaxBatchRequests < 65536);  // the request index fits FrontierTie's 16 bits
  // Each request's own frontier (marginals_frontier.h; the lazy one of best_first.h for a
  // provider), keyed by w_i rho / kappa_i with the request in the tie-breaker. A request's pop
  // order does not depend on the other requests, so each request pops ahead in chunks (Refill:
  // its tree grows past what the merge has taken, and keys_[i] records the key of every pop) while
  // its rows are in cache, and the global pop order is the merge of the B recorded streams: merge_
  // holds the key of each request's next unmerged pop. plan->n[i] counts the pops of request i
  // that the merge has taken; its tree keeps the pops ahead of that until CutToSelected.
  // (Merging the live frontiers pop by pop instead hopped between 64 requests' rows and heaps at
  // every pop; perf put most of the time there.)
  if (frontiers_.size() < static_cast<size_t>(B)) frontiers_.resize(static_cast<size_t>(B));
  if (keys_.size() < static_cast<size_t>(B)) keys_.resize(static_cast<size_t>(B));
  recorded_.resize(static_cast<size_t>(B));
  order_.reserve(static_cast<size_t>(options.n_max));
  // Chunk sizes: a fixed budget or a scan takes about n_max / B pops per request; the controller
  // usually stops much earlier, so it pops ahead less (pops ahead of the stop are wasted).
  const bool to_the_end = !evaluate || choice.scan;
  const int chunk = to_the_end ? kRefillChunk : kControllerChunk;
  // A fixed budget pops half of that first and the rest up to thresholds (TakeLeveled).
  const int first_chunk = !evaluate     ? std::max(chunk, (options.n_max + 2 * B - 1) / (2 * B))
                          : choice.scan ? std::max(chunk, (options.n_max + B - 1) / B)
                                        : chunk;

  // The rounds of one run over the lattices cut at depth_cap_ (one round without providers; see
  // the header).
  auto run = [&]() -> absl::Status {
    plan->provider_rounds = 0;
    for (;;) {
      ++plan->provider_rounds;
      StartRound(requests, options, first_chunk, plan);
      choice.Restart(B, weight_sum);
      // The request of the last pop when the round stopped right after taking it, else -1.
      int last = -1;
      if (evaluate) {
        choice.Consider(0, shape_, plan);
        last = MergeAndPrice(requests, options.n_max, chunk, &choice, plan);
      } else {
        // A fixed budget needs only the counts plan->n (N* is every pop, and the sums are made
        // by CutToSelected).
        int n = options.n_max > 0 ? TakeLeveled(options.n_max, plan) : 0;
        // After a bulk take the merge makes the last few percent: it pops ahead little.
        last = MergeFixedBudget(options.n_max, n > 0 ? kLevelFinishChunk : chunk, plan, &n);
        choice.best_n = n;
      }
      if (num_paths == 0) return absl::OkStatus();
      // The providers see each tree as popped so far (PopCursor leaves room behind the pops).
      for (int i = 0; i < B; ++i) {
        if (path_slot_[i] >= 0) plan->trees[i].Resize(recorded_[i] + 1);
      }
      bool asked = false;
      SPECPLAN_RETURN_IF_ERROR(AskProviders(requests, last, *plan, &asked));
      if (!asked) return absl::OkStatus();
    }
  };
  int gamma = 0;  // the deepest lattice of the batch
  for (const BatchRequest& r : requests) {
    gamma = std::max(gamma, r.marginals != nullptr ? r.marginals->gamma : r.gamma);
  }
  plan->depth_cap = -1;
  plan->search = SearchFor(
      evaluate ? (choice.scan ? BudgetMode::kScan : BudgetMode::kController) : BudgetMode::kFixed,
      evaluate && num_paths == 0 && cost->depth_stepped(), gamma);
  if (plan->search == PlanSearch::kFirstDecreasePerDepth ||
      plan->search == PlanSearch::kScanPerDepth) {
    // A depth-stepped cost (best_first.h): one run per depth cap d = 1..gamma, every request's
    // lattice cut at d and the drafting priced at d, then the best over d (ties to the shallower
    // cap); the chosen cap runs again unless it ran last.
    int best_cap = gamma;
    std::pair<int, double> best{-1, 0};
    for (int d = 1; d <= gamma; ++d) {
      depth_cap_ = d;
      choice.price_depth = d;
      SPECPLAN_RETURN_IF_ERROR(run());
      const std::pair<int, double> standing = choice.Standing(weight_sum, ar_s, *plan);
      if (choice.best_n > 0 && standing > best) best = standing, best_cap = d;
    }
    if (best_cap != gamma) {
      depth_cap_ = best_cap;
      choice.price_depth = best_cap;
      SPECPLAN_RETURN_IF_ERROR(run());
    }
    plan->depth_cap = best_cap;
  } else {
    SPECPLAN_RETURN_IF_ERROR(run());
  }
  // The off switch: a plan that drafts must beat plain decoding, which pays no drafter.
  if (evaluate) {
    choice.ApplyOffSwitch(weight_sum, ar_s, plan);
  } else {
    plan->speculation_pays = true;
  }
  CutToSelected(requests, options, cost, choice.best_n, plan);
  return absl::OkStatus();
}

}  // namespace specplan::planner
