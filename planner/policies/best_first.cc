#include "planner/policies/best_first.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/policies/best_first_engine.h"
#include "util/check.h"

namespace specplan::planner {
namespace internal {

absl::Status MakeBudgetSpec(const BestFirstOptions& options, const costmodel::CycleCost* cost,
                            BudgetSpec* spec) {
  if (options.n_max < 0 || options.n_max >= kMaxTreeNodes) {
    return absl::InvalidArgumentError(absl::StrCat("n_max = ", options.n_max, ": must be in [0, ",
                                                   kMaxTreeNodes - 1, "] draft nodes"));
  }
  if (options.mode != BudgetMode::kFixed && cost == nullptr) {
    return absl::InvalidArgumentError(
        "cost: a cycle cost is required in controller and scan modes");
  }
  if (!(options.acceptance_scale > 0 && options.acceptance_scale <= kMaxAcceptanceScale)) {
    return absl::InvalidArgumentError(absl::StrCat("acceptance_scale = ", options.acceptance_scale,
                                                   ": must be in (0, ", kMaxAcceptanceScale, "]"));
  }
  spec->mode = options.mode;
  spec->n_max = options.n_max;
  spec->acceptance_scale = options.acceptance_scale;
  spec->cost = cost;
  spec->l_ar_s = 0;
  if (cost != nullptr) {
    spec->l_ar_s = options.l_ar_s > 0 ? options.l_ar_s : cost->PlainSeconds();
    if (!(spec->l_ar_s > 0) || !std::isfinite(spec->l_ar_s)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "l_ar_s = ", spec->l_ar_s, ": L_AR (T_verify(1, c)) must be a positive number"));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal

namespace {

// One best-first run over the lattice cut at max_depth, priced at spec.price_depth (-1: each
// prefix's own depth). A free function, so that the public header names nothing of internal::.
void RunOnce(MarginalsFrontier& frontier, const Marginals& marginals,
             const internal::BudgetSpec& spec, int max_depth, BestFirstPlan* plan) {
  plan->tree.ResetRoot(marginals.root_token);
  frontier.Reset(&marginals, &plan->tree, /*scale=*/1.0, /*request=*/0, max_depth);
  internal::RunBestFirst(frontier, spec, plan);
}

}  // namespace

absl::Status BestFirstPlanner::Plan(const Marginals& marginals, const BestFirstOptions& options,
                                    const costmodel::CycleCost* cost, BestFirstPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  if (options.validate) {
    absl::Status st = ValidateMarginals(marginals);
    if (!st.ok()) return st;
  }
  internal::BudgetSpec spec;
  absl::Status st = internal::MakeBudgetSpec(options, cost, &spec);
  if (!st.ok()) return st;
  frontier_.Reserve(options.n_max);
  plan->tree.Reserve(options.n_max + 1);
  const bool scan = options.mode == BudgetMode::kScan;
  plan->depth_caps.clear();
  plan->depth_cap = -1;
  plan->search = SearchFor(cost == nullptr ? BudgetMode::kFixed : options.mode,
                           cost != nullptr && cost->depth_stepped(), marginals.gamma);
  if (plan->search != PlanSearch::kFirstDecreasePerDepth &&
      plan->search != PlanSearch::kScanPerDepth) {
    // One run (see the header): a fixed budget, a depth-flat cost, or one depth only.
    if (options.mode != BudgetMode::kFixed) plan->curve.reserve(options.n_max + 2);
    RunOnce(frontier_, marginals, spec, marginals.gamma, plan);
    internal::TruncateToSelected(plan);
    return absl::OkStatus();
  }
  // A depth-stepped cost: the best tree per depth cap d = 1..gamma, each priced at depth d, then
  // the best over d (ties to the shallower cap). Each cap runs into `run`; a run that beats the
  // best so far is kept by swapping it with `kept` (no copy), and the kept run ends in *plan.
  // Without a cap that pays, *plan holds the last cap's run (gamma), as before.
  plan->curve.reserve(options.n_max + 2);
  spare_.curve.reserve(options.n_max + 2);
  spare_.tree.Reserve(options.n_max + 1);
  const PlanSearch search = plan->search;
  const int gamma = marginals.gamma;
  int best_cap = gamma;
  double best_s = 1.0;  // S(0): the plain step
  depth_caps_.clear();
  BestFirstPlan* run = plan;
  BestFirstPlan* kept = &spare_;
  for (int d = 1; d <= gamma; ++d) {
    spec.price_depth = d;
    RunOnce(frontier_, marginals, spec, d, run);
    depth_caps_.push_back({d, run->n, run->speedup});
    if (run->n > 0 && run->speedup > best_s) {
      best_s = run->speedup;
      best_cap = d;
      std::swap(run, kept);
    }
  }
  // The best run is in `kept` when some cap paid; else the last run is in *plan (run == plan).
  if (best_s > 1.0 && kept != plan) std::swap(*plan, spare_);
  plan->search = search;
  plan->depth_caps.swap(depth_caps_);
  plan->depth_cap = best_cap;
  internal::TruncateToSelected(plan);
  if (plan->n > 0) {  // priced at the tree's own depth (<= the cap)
    plan->cycle_s = cost->TreeSeconds(plan->n, plan->tree.max_depth());
    plan->speedup = CalibratedAccepted(plan->expected_accepted, options.acceptance_scale) *
                    spec.l_ar_s / plan->cycle_s;
  }
  return absl::OkStatus();
}

absl::Status BestFirstPlanner::PlanFixed(const Marginals& marginals, int budget,
                                         BestFirstPlan* plan) {
  BestFirstOptions options;
  options.mode = BudgetMode::kFixed;
  options.n_max = budget;
  return Plan(marginals, options, nullptr, plan);
}

int64_t LatticeSize(int gamma, int k, int64_t cap) {
  int64_t total = 0;
  int64_t level = 1;
  for (int d = 1; d <= gamma; ++d) {
    if (level > cap / std::max(k, 1)) return cap;
    level *= k;
    total += level;
    if (total >= cap) return cap;
  }
  return total;
}

}  // namespace specplan::planner
