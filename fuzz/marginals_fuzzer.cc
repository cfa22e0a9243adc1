// Marginals JSON -> ParseMarginalsJsonText -> BestFirstPlanner (every budget mode, several n_max,
// with and without a cost) -> ComputeTreeOutputs. Checks the planner's promises on every plan.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "costmodel/cycle_cost.h"
#include "fuzz/fuzz_util.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::fuzz {
namespace {

using planner::BestFirstOptions;
using planner::BestFirstPlan;
using planner::BudgetMode;

void CheckPlan(const planner::Marginals& m, const BestFirstOptions& options,
               const BestFirstPlan& plan) {
  CheckOk(planner::ValidateTree(plan.tree), "plan.tree");
  SPECPLAN_CHECK(plan.n == plan.tree.num_draft());
  SPECPLAN_CHECK(plan.n >= 0 && plan.n <= options.n_max);
  SPECPLAN_CHECK(plan.tree.tokens[0] == m.root_token);
  SPECPLAN_CHECK(plan.n <= planner::LatticeSize(m.gamma, m.k));
  if (options.mode == BudgetMode::kFixed) {
    SPECPLAN_CHECK(plan.n == options.n_max || plan.lattice_exhausted);
  }
  double a_hat = 1.0;
  for (int i = 1; i < plan.tree.size(); ++i) {
    SPECPLAN_CHECK(plan.tree.depths[i] <= m.gamma);
    SPECPLAN_CHECK(plan.tree.path_probs[i] <= plan.tree.path_probs[plan.tree.parents[i]]);
    a_hat += plan.tree.path_probs[i];
  }
  SPECPLAN_CHECK(std::fabs(a_hat - plan.expected_accepted) <= 1e-9 * a_hat);
}

void Outputs(const planner::Tree& tree, planner::TreeOutputs* out) {
  planner::TreeOutputOptions options;
  options.position_offset = 1024;
  options.dense_mask = tree.size() <= 512;
  planner::ComputeTreeOutputs(tree, options, out);
  SPECPLAN_CHECK(out->size == tree.size());
  SPECPLAN_CHECK(out->num_leaves >= 1);
  for (int i = 0; i < tree.size(); ++i) {
    SPECPLAN_CHECK(out->positions[i] == 1024 + tree.depths[i]);
    SPECPLAN_CHECK(out->MaskBit(i, 0) && out->MaskBit(i, i));
  }
}

void FuzzMarginals(std::string_view text) {
  auto parsed = planner::ParseMarginalsJsonText(text);
  if (!parsed.ok()) return;
  const planner::Marginals& m = *parsed;
  CheckOk(planner::ValidateMarginals(m), "ValidateMarginals after parse");
  // Round trip.
  auto again = planner::ParseMarginalsJson(planner::MarginalsToJson(m));
  CheckOk(again.status(), "ParseMarginalsJson(MarginalsToJson)");
  SPECPLAN_CHECK(again->tokens == m.tokens && again->probs == m.probs);

  const costmodel::CycleCost cost(&DefaultRoofline(), costmodel::DrafterCost{}, 1e-5, 2048);
  planner::BestFirstPlanner planner;  // reused across calls, as engines do
  BestFirstPlan plan;
  planner::TreeOutputs outputs;
  for (BudgetMode mode : {BudgetMode::kFixed, BudgetMode::kController, BudgetMode::kScan}) {
    for (int n_max : {0, 1, 7, 64, 700}) {
      for (bool with_cost : {false, true}) {
        if (!with_cost && mode != BudgetMode::kFixed) continue;
        BestFirstOptions options;
        options.mode = mode;
        options.n_max = n_max;
        const absl::Status st = planner.Plan(m, options, with_cost ? &cost : nullptr, &plan);
        CheckOk(st, "Plan on valid marginals");
        CheckPlan(m, options, plan);
        if (with_cost) {
          SPECPLAN_CHECK(std::isfinite(plan.speedup) && plan.speedup > 0);
        }
        Outputs(plan.tree, &outputs);
      }
    }
  }
}

}  // namespace

SPECPLAN_TEXT_FUZZER(FuzzMarginals)

}  // namespace specplan::fuzz
