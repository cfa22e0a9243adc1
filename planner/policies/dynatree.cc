#include "planner/policies/dynatree.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace specplan::planner {
namespace {

bool Finite(double x) { return std::isfinite(x); }

absl::Status OpenUnit(const char* name, double v) {
  if (!(v > 0.0 && v < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " = ", v, ": must be in (0, 1)"));
  }
  return absl::OkStatus();
}

absl::Status NonNegative(const char* name, double v) {
  if (!(v >= 0.0 && Finite(v))) {
    return absl::InvalidArgumentError(absl::StrCat(name, " = ", v, ": must be finite and >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDynaTreeOptions(const DynaTreeOptions& o) {
  // §3.3: 1 <= B_min <= B_mid <= B_max.
  if (o.b_min < 1) {
    return absl::InvalidArgumentError(absl::StrCat("b_min = ", o.b_min, ": must be >= 1"));
  }
  if (o.b_mid < o.b_min) {
    return absl::InvalidArgumentError(
        absl::StrCat("b_mid = ", o.b_mid, ": must be >= b_min = ", o.b_min));
  }
  if (o.b_max < o.b_mid || o.b_max > kMaxCandidatesPerNode) {
    return absl::InvalidArgumentError(absl::StrCat(
        "b_max = ", o.b_max, ": must be in [b_mid = ", o.b_mid, ", ", kMaxCandidatesPerNode, "]"));
  }
  // §3.3: 0 < tau_l < tau_h < 1.
  SPECPLAN_RETURN_IF_ERROR(OpenUnit("tau_h", o.tau_h));
  if (!(o.tau_l > 0.0 && o.tau_l < o.tau_h)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tau_l = ", o.tau_l, ": must be in (0, tau_h = ", o.tau_h, ")"));
  }
  // §3.3: 1 <= D_0 < D_max.
  if (o.d_max < 2 || o.d_max > kMaxTreeNodes - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("d_max = ", o.d_max, ": must be in [2, ", kMaxTreeNodes - 1, "]"));
  }
  if (o.d0 < 1 || o.d0 >= o.d_max) {
    return absl::InvalidArgumentError(
        absl::StrCat("d0 = ", o.d0, ": must be in [1, d_max = ", o.d_max, ")"));
  }
  // §3.3: 0 < rho_stop < rho_deep < 1.
  SPECPLAN_RETURN_IF_ERROR(OpenUnit("rho_deep", o.rho_deep));
  if (!(o.rho_stop > 0.0 && o.rho_stop < o.rho_deep)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rho_stop = ", o.rho_stop, ": must be in (0, rho_deep = ", o.rho_deep, ")"));
  }
  // §3.3: tau in (0, 1).
  SPECPLAN_RETURN_IF_ERROR(OpenUnit("tau", o.tau));
  if (o.n_max < 1 || o.n_max > kMaxTreeNodes - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_max = ", o.n_max, ": must be in [1, ", kMaxTreeNodes - 1, "]"));
  }
  if (o.window < 1 || o.window > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("window = ", o.window, ": must be in [1, ", 1 << 20, "]"));
  }
  // §3.3: a* in (0, 1), eta > 0 (we allow 0 to freeze one parameter).
  SPECPLAN_RETURN_IF_ERROR(OpenUnit("target_acceptance", o.target_acceptance));
  SPECPLAN_RETURN_IF_ERROR(NonNegative("eta_d", o.eta_d));
  SPECPLAN_RETURN_IF_ERROR(NonNegative("eta_h", o.eta_h));
  SPECPLAN_RETURN_IF_ERROR(NonNegative("eta_l", o.eta_l));
  return absl::OkStatus();
}

DynaTreePolicy::DynaTreePolicy(const DynaTreeOptions& options)
    : ConfiguredLevelPolicy(options), window_(options.window, 0.0) {
  tree_.Reserve(options_.n_max + 1);
  ResetHistory();
}

std::string DynaTreePolicy::Name() const {
  return absl::StrCat("dynatree(D0=", state_.d0_used, ",Dmax=", options_.d_max,
                      ",N=", options_.n_max, ")");
}

void DynaTreePolicy::ResetHistory() {
  state_ = DynaTreeState();
  state_.d0 = options_.d0;
  state_.d0_used = options_.d0;
  state_.tau_h = options_.tau_h;
  state_.tau_l = options_.tau_l;
  std::fill(window_.begin(), window_.end(), 0.0);
  window_next_ = 0;
}

bool DynaTreePolicy::Expandable(int32_t u) {
  const double p = tree_.path_probs[u];  // p(u) = exp(cumulative log-prob), Alg. 1 exp(l_bar_u)
  const int32_t d = tree_.depths[u];
  if (p < options_.tau) return false;  // Alg. 1 lines 14-16: probability-threshold pruning
  if (d >= options_.d_max) {           // Alg. 1 lines 17-19: hard depth limit
    ++trace_.stopped_depth_max;
    return false;
  }
  if (p < options_.rho_stop) {  // Alg. 1 lines 20-22: early stopping
    ++trace_.stopped_rho_stop;
    return false;
  }
  if (d >= state_.d0_used && p <= options_.rho_deep) {  // Alg. 1 lines 23-25: depth gating
    ++trace_.stopped_depth_gate;
    return false;
  }
  return true;
}

void DynaTreePolicy::OnBegin(std::vector<int32_t>& pending) {
  trace_ = DynaTreeStepTrace();
  // Alg. 1 line 11: the frontier starts with the root (p = 1, depth 0 < D_0: always expandable).
  if (Expandable(0)) pending.push_back(0);
}

void DynaTreePolicy::OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) {
  const int32_t n_max = options_.n_max;
  for (int r = 0; r < dists.num_nodes(); ++r) {
    // Alg. 1 line 12: stop popping once |T| = N_max; remaining frontier nodes stay leaves.
    if (tree_.num_draft() >= n_max) break;
    const int32_t u = dists.nodes[r];
    ++trace_.expanded;
    // Alg. 1 line 26: c(u) = max softmax = the row's top-1 probability (rows are sorted).
    const double c = dists.token(r, 0) >= 0 ? static_cast<double>(dists.prob(r, 0)) : 0.0;
    // §3.3 eq. B(u) / Alg. 1 line 27: B_min if c >= tau_h, B_max if c < tau_l, else B_mid.
    int32_t b;
    if (c >= state_.tau_h) {
      b = options_.b_min;
      ++trace_.breadth_min;
    } else if (c < state_.tau_l) {
      b = options_.b_max;
      ++trace_.breadth_max;
    } else {
      b = options_.b_mid;
      ++trace_.breadth_mid;
    }
    // Alg. 1 line 28: the top-B(u) candidates become children, in order, until N_max.
    const int width = std::min(b, dists.k);
    const double rho_u = tree_.path_probs[u];
    for (int j = 0; j < width; ++j) {
      if (tree_.num_draft() >= n_max) break;
      const int32_t token = dists.token(r, j);
      if (token < 0) break;  // fewer than B(u) candidates supplied
      const double rho = rho_u * static_cast<double>(dists.prob(r, j));
      if (rho < options_.tau) {
        ++trace_.pruned;
        // §3.3 "p(u) < tau => prune u": the candidate would be a leaf (Alg. 1 line 14 never
        // expands it), so under kRemoveLeaf it never enters the tree.
        if (options_.prune_mode == DynaTreePruneMode::kRemoveLeaf) continue;
      }
      const int child = tree_.AddNode(u, token, rho);
      CountDrafted(1);
      if (Expandable(child)) next.push_back(child);
    }
  }
  if (tree_.num_draft() >= n_max) {
    trace_.budget_hit = true;
    next.clear();  // §3.3: "when |N| = N_max, expansion stops"
  }
}

void DynaTreePolicy::OnAcceptance(int accepted_length) {
  if (!options_.history_adaptation) return;
  // Alg. 1 line 7 UPDATEHISTORY: per-step statistic a_r in [0, 1].
  const PolicyStats& s = stats();
  double a = 0.0;
  if (options_.statistic == DynaTreeAcceptanceStatistic::kPathFraction) {
    if (s.last_depth == 0) return;  // root-only tree: nothing was drafted, no information
    a = static_cast<double>(accepted_length) / s.last_depth;
  } else {
    if (s.last_tree_nodes == 0) return;
    a = static_cast<double>(accepted_length) / s.last_tree_nodes;
  }
  const int32_t w = options_.window;
  window_[window_next_] = a;
  window_next_ = (window_next_ + 1) % w;
  state_.window_fill = std::min(state_.window_fill + 1, w);
  double sum = 0.0;
  for (int32_t i = 0; i < state_.window_fill; ++i) sum += window_[i];
  state_.window_mean = sum / state_.window_fill;
  // §3.3: a_bar_t = (1/W) sum_{i<W} a_{t-i} is defined once W statistics exist.
  if (state_.window_fill < w) return;
  // Alg. 1 line 7 ADJUST(tau_l, tau_h, D_0), proportional control around a* (§3.3).
  const double err = state_.window_mean - options_.target_acceptance;
  state_.d0 =
      std::clamp(state_.d0 + options_.eta_d * err, 1.0, static_cast<double>(options_.d_max - 1));
  state_.tau_h = std::clamp(state_.tau_h - options_.eta_h * err, 0.0, 1.0);
  state_.tau_l = std::clamp(state_.tau_l - options_.eta_l * err, 0.0, state_.tau_h);
  state_.d0_used =
      std::clamp(static_cast<int32_t>(std::lround(state_.d0)), int32_t{1}, options_.d_max - 1);
  ++state_.adjustments;
}

}  // namespace specplan::planner
