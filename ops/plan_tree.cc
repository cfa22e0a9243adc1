#include "ops/plan_tree.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "ops/validate.h"
#include "util/enum_names.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::ops {

absl::Status Validate(const PlanTreeRequest& req, int64_t max_context) {
  if (req.marginals == nullptr) return absl::InvalidArgumentError("marginals: required");
  const absl::Status checks[] = {
      CheckContext("c", req.c, max_context, "cached tokens"),
      CheckInRange("n_max", int64_t{req.options.n_max}, 0, planner::kMaxTreeNodes - 1,
                   "draft nodes"),
      CheckNonNegative("t_draft_ms", req.t_draft_ms),
  };
  for (const absl::Status& st : checks) {
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status PlanTreeInto(const PlanTreeRequest& req, const CostView* cost,
                          planner::BestFirstPlanner* planner, PlanTreeResult* result,
                          int64_t max_context) {
  if (absl::Status st = Validate(req, max_context); !st.ok()) return st;
  planner::BestFirstOptions options = req.options;
  std::optional<costmodel::CycleCost> cycle;
  RecordPricing(cost, result);
  if (cost != nullptr) {
    const int gamma = cost->drafter.gamma > 0 ? cost->drafter.gamma : req.marginals->gamma;
    const CycleTerms terms = PriceCycle(*cost, gamma, req.c);
    // A drafter architecture's plain step is L_AR unless the request gives one.
    if (terms.l_ar_s > 0 && options.l_ar_s <= 0) options.l_ar_s = terms.l_ar_s;
    cycle.emplace(cost->latency, terms.drafter, terms.t_aux_s, req.c);
  }
  SPECPLAN_RETURN_IF_ERROR(
      planner->Plan(*req.marginals, options, cycle ? &*cycle : nullptr, &result->plan));
  planner::ComputeTreeOutputsAt(result->plan.tree, req.outputs, req.c, &result->outputs);
  return absl::OkStatus();
}

absl::StatusOr<PlanTreeResult> PlanTree(const PlanTreeRequest& req) {
  if (absl::Status st = Validate(req); !st.ok()) return st;
  SPECPLAN_ASSIGN_OR_RETURN(
      const std::optional<ResolvedCost> resolved,
      req.cost.ResolveIfNeeded(req.cost.NeedsCost(req.options.mode == planner::BudgetMode::kFixed),
                               req.t_draft_ms));
  std::optional<CostView> view;
  if (resolved) view = resolved->View();
  planner::BestFirstPlanner planner;
  PlanTreeResult result;
  if (absl::Status st = PlanTreeInto(req, view ? &*view : nullptr, &planner, &result); !st.ok()) {
    return st;
  }
  return result;
}

bool DraftsByLevel(const CostRequest& cost, double t_draft_ms) {
  costmodel::StepOptions o;
  o.drafter = cost.DrafterIsCostClass() ? "" : cost.drafter;
  if (t_draft_ms > 0) o.draft_s = t_draft_ms * 1e-3;
  return costmodel::DraftsByLevel(o);
}

nlohmann::json RetrieveJson(const planner::TreeOutputs& outputs) {
  nlohmann::json retrieve = nlohmann::json::array();
  for (int l = 0; l < outputs.num_leaves; ++l) {
    const auto* row = outputs.retrieve.data() + static_cast<size_t>(l) * outputs.retrieve_width;
    retrieve.push_back(std::vector<int32_t>(row, row + outputs.retrieve_width));
  }
  return retrieve;
}

nlohmann::json ToJson(const PlanTreeRequest& req, const PlanTreeResult& r) {
  const planner::BestFirstPlan& plan = r.plan;
  nlohmann::json j;
  j["mode"] = EnumName(planner::kBudgetModeNames, req.options.mode);
  j["search"] = EnumName(planner::kPlanSearchNames, plan.search);
  j["n_max"] = req.options.n_max;
  j["n"] = plan.n;
  j["tokens"] = plan.tree.tokens;
  j["parents"] = plan.tree.parents;
  j["depths"] = plan.tree.depths;
  j["path_probs"] = plan.tree.path_probs;
  j["expected_accepted"] = plan.expected_accepted;
  j["positions"] = r.outputs.positions;
  j["retrieve"] = RetrieveJson(r.outputs);
  j["cycle_s"] = json_util::NumberOrNull(plan.cycle_s);
  j["speedup"] = json_util::NumberOrNull(plan.speedup);
  j["l_ar_s"] = json_util::NumberOrNull(plan.l_ar_s);
  j["lattice_exhausted"] = plan.lattice_exhausted;
  j["c"] = req.c;
  if (r.priced) {
    j["latency_model"] = r.latency_model;
    j["profile"] = r.profile;
  }
  if (req.options.mode != planner::BudgetMode::kFixed) {
    j["curve"] = CurveJson(plan.curve, "speedup", &planner::CurvePoint::speedup);
  }

  return j;
}

}  // namespace specplan::ops
