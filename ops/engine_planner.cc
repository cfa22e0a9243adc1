// specplan::Planner (include/specplan/specplan.h): the installed engine API as a thin adapter over
// the operations. The config becomes an ops::CostRequest resolved once; Step is ops::Estimate's
// step, PlanTree ops::PlanTreeInto and PlanBatch ops::PlanBatchInto over the held cost, so an
// engine's answers are the CLI's.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ops/cost_request.h"
#include "ops/estimate.h"
#include "ops/plan_batch.h"
#include "ops/plan_tree.h"
#include "specplan/specplan.h"
#include "util/status_macros.h"

namespace specplan {

struct Planner::State {
  ops::CostRequest request;
  ops::ResolvedCost cost;
  ops::CostView view;
  planner::BestFirstPlanner tree_planner;
  planner::BatchPlanner batch_planner;
  ops::PlanTreeResult tree_result;
  ops::PlanBatchResult batch_result;
};

namespace {

ops::CostRequest RequestOf(const PlannerConfig& config) {
  ops::CostRequest r;
  r.gpu = config.gpu;
  r.model = config.model;
  r.engine = config.engine;
  r.profile = config.profile;
  r.calib_dir = config.calib_dir;
  r.dtype = config.dtype;
  r.tp = config.tp;
  r.drafter = config.drafter;
  r.draft_steps = config.draft_steps;
  r.topk = config.topk;
  r.draft_vocab = config.draft_vocab;
  r.host_file = config.host_file;
  // CostRequest's "unset" is a negative value.
  r.host_step_ms = config.host_step_ms.value_or(-1);
  r.host_per_seq_ms = config.host_per_seq_ms.value_or(-1);
  r.host_per_draft_ms = config.host_per_draft_ms.value_or(-1);
  r.sample_ms = config.sample_ms.value_or(-1);
  return r;
}

// A host term given as a negative number would read as "unset" in the request: refuse it here.
absl::Status CheckHostTerms(const PlannerConfig& config) {
  const std::pair<const char*, const std::optional<double>*> terms[] = {
      {"host_step_ms", &config.host_step_ms},
      {"host_per_seq_ms", &config.host_per_seq_ms},
      {"host_per_draft_ms", &config.host_per_draft_ms},
      {"sample_ms", &config.sample_ms}};
  for (const auto& [name, value] : terms) {
    if (value->has_value() && !(**value >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " = ", **value, ": must be in [0, 1000] ms"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Planner::Planner(std::unique_ptr<State> state) : state_(std::move(state)) {}
Planner::Planner(Planner&&) noexcept = default;
Planner& Planner::operator=(Planner&&) noexcept = default;
Planner::~Planner() = default;

absl::StatusOr<Planner> Planner::Create(const PlannerConfig& config) {
  SPECPLAN_RETURN_IF_ERROR(CheckHostTerms(config));
  auto state = std::make_unique<State>();
  state->request = RequestOf(config);
  if (config.drafter.empty() || state->request.DrafterIsCostClass()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "drafter = '", config.drafter,
        "': name the drafter architecture the engine runs (eagle, eagle3, mtp, draft:MODEL, "
        "block:MODEL, ngram, suffix), whose drafting the step model prices; the by-hand cost "
        "classes (ar, parallel, causal) and \"\" would leave drafting unpriced"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(state->cost, state->request.Resolve(/*t_draft_ms=*/0));
  state->view = state->cost.View();
  return Planner(std::move(state));
}

absl::StatusOr<costmodel::StepBreakdown> Planner::Step(int64_t b, int64_t s, int64_t c) const {
  ops::EstimateRequest req;
  req.cost = state_->request;
  req.b = b;
  req.s = s;
  req.c = c;
  const costmodel::ResolvedLatencyModel& resolved = *state_->cost.resolved;
  SPECPLAN_ASSIGN_OR_RETURN(
      ops::EstimateResult r,
      ops::Estimate(req, state_->view, resolved.model_spec, resolved.gpu_spec));
  return *r.step;
}

absl::StatusOr<costmodel::StepBreakdown> Planner::PlainStep(int64_t b, int64_t c) const {
  ops::EstimateRequest req;
  req.cost = state_->request;
  req.b = b;
  req.s = 1;
  req.c = c;
  const costmodel::ResolvedLatencyModel& resolved = *state_->cost.resolved;
  SPECPLAN_ASSIGN_OR_RETURN(
      ops::EstimateResult r,
      ops::Estimate(req, state_->view, resolved.model_spec, resolved.gpu_spec));
  return *r.ar_step;
}

absl::Status Planner::PlanTree(const planner::Marginals& marginals, int64_t c,
                               const planner::BestFirstOptions& options, TreePlan* out) {
  ops::PlanTreeRequest req;
  req.marginals = &marginals;
  req.c = c;
  req.options = options;
  req.outputs = {c, /*packed_mask=*/true};
  ops::PlanTreeResult& r = state_->tree_result;
  // The caller's buffers go into the operation and come back filled (no allocation once grown).
  std::swap(r.plan, out->plan);
  std::swap(r.outputs, out->outputs);
  const absl::Status st = ops::PlanTreeInto(req, &state_->view, &state_->tree_planner, &r);
  std::swap(r.plan, out->plan);
  std::swap(r.outputs, out->outputs);
  return st;
}

absl::Status Planner::PlanBatch(absl::Span<const planner::BatchRequest> requests,
                                const planner::BatchPlanOptions& options, BatchTreePlan* out) {
  ops::PlanBatchRequest req;
  req.requests.assign(requests.begin(), requests.end());
  req.options = options;
  req.outputs = {0, /*packed_mask=*/true};
  ops::PlanBatchResult& r = state_->batch_result;
  std::swap(r.plan, out->plan);
  std::swap(r.outputs, out->outputs);
  const absl::Status st = ops::PlanBatchInto(req, &state_->view, &state_->batch_planner, &r);
  std::swap(r.plan, out->plan);
  std::swap(r.outputs, out->outputs);
  return st;
}

const std::string& Planner::profile_id() const { return state_->view.profile_id; }
const std::string& Planner::latency_model() const { return state_->view.latency_kind; }
const std::string& Planner::draft_priced_by() const {
  static const std::string kNone = "none";
  return state_->view.step != nullptr ? state_->view.step->draft_priced_by() : kNone;
}

}  // namespace specplan
