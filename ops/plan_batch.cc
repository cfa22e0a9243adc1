#include "ops/plan_batch.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/cycle_cost.h"
#include "ops/plan_tree.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree_outputs.h"
#include "util/enum_names.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::ops {

int64_t MeanContext(absl::Span<const planner::BatchRequest> requests) {
  int64_t sum = 0;
  for (const planner::BatchRequest& r : requests) sum += r.c;
  return requests.empty() ? 0 : sum / static_cast<int64_t>(requests.size());
}

int64_t MeanContext(absl::Span<const int64_t> contexts) {
  int64_t sum = 0;
  for (int64_t c : contexts) sum += c;
  return contexts.empty() ? 0 : sum / static_cast<int64_t>(contexts.size());
}

int MaxGamma(absl::Span<const planner::BatchRequest> requests) {
  int gamma = 0;
  for (const planner::BatchRequest& r : requests) {
    gamma = std::max(gamma, r.marginals != nullptr ? r.marginals->gamma : r.gamma);
  }
  return gamma;
}

bool NeedsCost(const planner::BatchPlanOptions& options) {
  return options.mode != planner::BudgetMode::kFixed ||
         options.objective == planner::BatchObjective::kLatencyBound;
}

absl::Status Validate(const PlanBatchRequest& req, int64_t max_context) {
  if (req.requests.empty()) return absl::InvalidArgumentError("requests: empty");
  if (absl::Status st = CheckInRange("requests", static_cast<int64_t>(req.requests.size()), 1,
                                     planner::kMaxBatchRequests, "requests in the batch");
      !st.ok()) {
    return st;
  }
  for (size_t i = 0; i < req.requests.size(); ++i) {
    if (absl::Status st =
            CheckContext(absl::StrCat("requests[", i, "].c"), req.requests[i].c, max_context);
        !st.ok()) {
      return st;
    }
  }
  const planner::BatchPlanOptions& o = req.options;
  const absl::Status checks[] = {
      CheckInRange("n_max", int64_t{o.n_max}, 0, planner::kMaxBatchNodes,
                   "draft nodes over the batch"),
      CheckNonNegative("t_draft_ms", req.t_draft_ms),
      CheckNonNegative("draft_batch_growth", req.draft_batch_growth),
  };
  for (const absl::Status& st : checks) {
    if (!st.ok()) return st;
  }
  if (o.objective == planner::BatchObjective::kLatencyBound) {
    const double ms = o.max_seconds_per_token * 1e3;
    if (o.mode == planner::BudgetMode::kFixed) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_ms_per_token = ", ms,
                       ": a latency bound chooses the budget itself, so it needs the controller "
                       "or scan mode, not a fixed budget"));
    }
    if (absl::Status st = CheckPositive("max_ms_per_token", ms); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status PlanBatchInto(const PlanBatchRequest& req, const CostView* cost,
                           planner::BatchPlanner* planner, PlanBatchResult* result,
                           int64_t max_context) {
  if (absl::Status st = Validate(req, max_context); !st.ok()) return st;
  if (cost == nullptr && NeedsCost(req.options)) {
    return absl::InvalidArgumentError(
        "cost: required in controller and scan modes and for the latency bound");
  }
  const size_t B = req.requests.size();
  std::optional<costmodel::BatchCycleCost> cycle;
  RecordPricing(cost, result);
  if (cost != nullptr) {
    // The drafter architecture's whole step into the cycle, priced at the batch's mean context
    // for its largest gamma.
    const int gamma = cost->drafter.gamma > 0 ? cost->drafter.gamma : MaxGamma(req.requests);
    const CycleTerms terms = PriceCycle(*cost, gamma, MeanContext(req.requests));
    cycle.emplace(cost->latency, terms.drafter, terms.t_aux_s);
  }
  SPECPLAN_RETURN_IF_ERROR(
      planner->Plan(req.requests, req.options, cycle ? &*cycle : nullptr, &result->plan));
  result->contexts.resize(B);
  for (size_t i = 0; i < B; ++i) result->contexts[i] = req.requests[i].c;
  const absl::Span<const planner::Tree> planned(result->plan.trees.data(), B);
  if (req.max_reply_bytes > 0) {
    // Sized from the trees alone, before any output or layout is built.
    int64_t bytes = 0, nodes = 0;
    for (const planner::Tree& t : planned) {
      nodes += t.size();
      if (req.compute_outputs) bytes += planner::TreeOutputsBytes(t, req.outputs);
      bytes += t.size() * 13;  // the trees themselves: token, parent, depth, path probability
    }
    if (req.layout == BatchLayoutKind::kRagged) bytes += planner::BatchLayoutBytes(planned);
    if (req.layout == BatchLayoutKind::kSglang) {
      const int d = planner::SglangDraftTokenNum(planned, req.sglang.draft_token_num);
      bytes +=
          planner::SglangLayoutBytes(static_cast<int>(B), d, result->contexts, req.sglang.mode);
    }
    if (bytes > req.max_reply_bytes) {
      result->plan.trees.clear();
      return absl::ResourceExhaustedError(absl::StrFormat(
          "reply: the outputs and layout of %d trees (%d nodes) take %.3g bytes, over the limit "
          "of %d bytes: ask for fewer outputs (dense_mask), a smaller n_max or fewer requests",
          B, nodes, static_cast<double>(bytes), req.max_reply_bytes));
    }
  }
  if (req.compute_outputs) {
    result->outputs.resize(B);
    for (size_t i = 0; i < B; ++i) {
      planner::ComputeTreeOutputsAt(result->plan.trees[i], req.outputs, req.requests[i].c,
                                    &result->outputs[i]);
    }
  } else {
    result->outputs.clear();
  }
  const absl::Span<const planner::Tree> trees(result->plan.trees.data(), B);
  if (req.layout == BatchLayoutKind::kRagged) {
    if (absl::Status st = planner::ComputeBatchLayout(trees, result->contexts, &result->ragged);
        !st.ok()) {
      return absl::Status(st.code(), absl::StrCat("layout = ragged: ", st.message()));
    }
  } else if (req.layout == BatchLayoutKind::kSglang) {
    if (absl::Status st =
            planner::ComputeSglangLayout(trees, result->contexts, req.sglang, &result->sglang);
        !st.ok()) {
      return absl::Status(st.code(), absl::StrCat("layout = sglang (tree_mask_mode ",
                                                  planner::SglangTreeMaskModeName(req.sglang.mode),
                                                  ", draft_token_num ", req.sglang.draft_token_num,
                                                  "): ", st.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PlanBatchResult> PlanBatch(const PlanBatchRequest& req) {
  if (absl::Status st = Validate(req); !st.ok()) return st;
  SPECPLAN_ASSIGN_OR_RETURN(
      const std::optional<ResolvedCost> resolved,
      req.cost.ResolveIfNeeded(NeedsCost(req.options) || req.cost.AnyCostGiven(), req.t_draft_ms));
  std::optional<CostView> view;
  if (resolved) {
    view = resolved->View();
    view->drafter.batch_growth = req.draft_batch_growth;  // a cost class's; a step has its own
  }
  planner::BatchPlanner planner;
  PlanBatchResult result;
  if (absl::Status st = PlanBatchInto(req, view ? &*view : nullptr, &planner, &result); !st.ok()) {
    return st;
  }
  return result;
}

nlohmann::json ToJson(const PlanBatchRequest& req, const PlanBatchResult& r) {
  const planner::BatchPlan& plan = r.plan;
  const planner::BatchPlanOptions& options = req.options;
  nlohmann::json j;
  j["mode"] = EnumName(planner::kBudgetModeNames, options.mode);
  j["search"] = EnumName(planner::kPlanSearchNames, plan.search);
  j["objective"] =
      options.objective == planner::BatchObjective::kGoodput ? "goodput" : "latency_bound";
  j["n_max"] = options.n_max;
  j["n_total"] = plan.n_total;
  nlohmann::json reqs = nlohmann::json::array();
  for (size_t i = 0; i < req.requests.size(); ++i) {
    nlohmann::json one = {{"n", plan.n[i]},
                          {"c", req.requests[i].c},
                          {"tokens", plan.trees[i].tokens},
                          {"parents", plan.trees[i].parents},
                          {"depths", plan.trees[i].depths},
                          {"expected_accepted", plan.expected_accepted[i]},
                          {"price", plan.price[i]}};
    if (i < r.outputs.size()) {
      one["positions"] = r.outputs[i].positions;
      one["retrieve"] = RetrieveJson(r.outputs[i]);
    }
    reqs.push_back(std::move(one));
  }
  j["requests"] = std::move(reqs);
  j["curve"] = CurveJson(plan.curve, "goodput", &planner::BatchCurvePoint::goodput);
  j["cycle_s"] = json_util::NumberOrNull(plan.cycle_s);
  j["goodput"] = json_util::NumberOrNull(plan.goodput);
  j["ar_goodput"] = json_util::NumberOrNull(plan.ar_goodput);
  if (options.objective == planner::BatchObjective::kLatencyBound) j["bound_met"] = plan.bound_met;
  j["speculation_pays"] = plan.speculation_pays;
  j["lattice_exhausted"] = plan.lattice_exhausted;
  if (r.priced) {
    j["latency_model"] = r.latency_model;
    j["profile"] = r.profile;
  }
  return j;
}

}  // namespace specplan::ops
