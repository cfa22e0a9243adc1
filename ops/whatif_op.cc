#include "ops/whatif_op.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "costmodel/cost_spec.h"
#include "ops/validate.h"
#include "planner/tree/tree.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

// The checks of the inputs every form shares: dtype and drafter names, the by-hand draft time.
absl::Status ValidateInputs(const WhatIfInputs& in) {
  SPECPLAN_RETURN_IF_ERROR(in.cost.Parse(in.t_draft_ms).status());
  SPECPLAN_RETURN_IF_ERROR(CheckNonNegative("t_draft_ms", in.t_draft_ms, "ms"));
  return CheckNonNegative("t_aux_ms", in.cost.t_aux_ms, "ms");
}

// Each of `values` in [lo, hi]: "<field>[i] = v: must be in [lo, hi] (<what>)".
absl::Status CheckEachInRange(const char* field, const std::vector<int>& values, int lo, int hi,
                              const char* what) {
  if (values.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": empty (need at least one)"));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    SPECPLAN_RETURN_IF_ERROR(
        CheckInRange(absl::StrCat(field, "[", i, "]"), int64_t{values[i]}, lo, hi, what));
  }
  return absl::OkStatus();
}

// A report's JSON form `j` with the source's keys (AddSourceJson).
nlohmann::json WithSourceJson(nlohmann::json j, const WhatIfSource& source) {
  AddSourceJson(source, &j);
  return j;
}

}  // namespace

void PriceTraceDrafter(const whatif::Trace& trace, const CostView& cost,
                       costmodel::DrafterCost* drafter, double* t_aux_s) {
  *t_aux_s = cost.t_aux_s;
  if (cost.step == nullptr) return;
  const whatif::TraceDraftShape shape = whatif::DraftShapeOf(trace);
  const CycleTerms terms = PriceCycle(cost, shape.max_gamma, shape.mean_context);
  *drafter = terms.drafter;
  *t_aux_s = terms.t_aux_s;
}

absl::Status InTrace(const absl::Status& st, const std::string& trace_path) {
  return absl::Status(st.code(), absl::StrCat(trace_path, ": ", st.message()));
}

// In-process: Validate, the trace loaded and the cost resolved (both named in the result's
// source), then `run` (the operation's overload over a loaded trace and a cost) over them; its
// errors after the trace's path.
template <typename Result, typename Request, typename Report>
absl::StatusOr<Result> RunInProcess(const Request& req,
                                    absl::StatusOr<Report> (*run)(const Request&,
                                                                  const whatif::Trace&,
                                                                  const CostView&)) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  Result out;
  SPECPLAN_ASSIGN_OR_RETURN(const whatif::Trace trace, LoadWhatIfTrace(req, &out.source));
  SPECPLAN_ASSIGN_OR_RETURN(const ResolvedCost cost, ResolveWhatIfCost(req, &out.source));
  auto report = run(req, trace, cost.View());
  if (!report.ok()) return InTrace(report.status(), out.source.trace_path);
  out.report = *std::move(report);
  return out;
}

void NameCost(const CostRequest& cost, const costmodel::ResolvedLatencyModel& resolved,
              costmodel::DType dtype, WhatIfSource* source) {
  source->model = resolved.model_spec.name;
  source->gpu = resolved.gpu_spec.name;
  source->dtype = costmodel::DTypeName(dtype);
  // A bundled profile is named by its id, as the server names it; a profile file by its path.
  source->profile = cost.profile.empty() ? resolved.profile_id : resolved.profile_path;
  source->engine = resolved.engine;
  source->engine_version = resolved.engine_version;
}

absl::StatusOr<whatif::Trace> LoadWhatIfTrace(const WhatIfInputs& in, WhatIfSource* source) {
  source->trace_path = in.trace.empty() ? whatif::DefaultTracePath() : in.trace;
  auto trace = whatif::LoadTrace(source->trace_path);
  if (!trace.ok()) {
    return absl::Status(trace.status().code(), absl::StrCat("trace ", trace.status().message()));
  }
  return trace;
}

absl::StatusOr<ResolvedCost> ResolveWhatIfCost(const WhatIfInputs& in, WhatIfSource* source) {
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedCost cost,
                            in.cost.Resolve(in.t_draft_ms, in.t_draft_ms * 1e-3));
  NameCost(in.cost, *cost.resolved, cost.parsed.dtype, source);
  return cost;
}

void AddSourceJson(const WhatIfSource& source, nlohmann::json* j) {
  auto or_null = [](const std::string& v) {
    return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  if (!j->contains("trace")) (*j)["trace"] = nlohmann::json::object();
  (*j)["trace"]["path"] = source.trace_path;
  (*j)["model"] = source.model;
  (*j)["gpu"] = source.gpu;
  (*j)["profile"] = or_null(source.profile);
  (*j)["engine"] = or_null(source.engine);
  (*j)["engine_version"] = or_null(source.engine_version);
}

// ---- the sweep ----------------------------------------------------------------------------------

absl::Status Validate(const WhatIfRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(ValidateInputs(req));
  SPECPLAN_RETURN_IF_ERROR(
      CheckEachInRange("budgets", req.budgets, 1, planner::kMaxTreeNodes - 1, "draft nodes"));
  if (req.strategies.empty()) {
    return absl::InvalidArgumentError("strategies: empty (need at least one strategy)");
  }
  SPECPLAN_RETURN_IF_ERROR(CheckInRange("n_max", int64_t{req.n_max}, 0, planner::kMaxTreeNodes - 1,
                                        "draft nodes; 0: the largest budget"));
  return CheckNonNegative("policy_forward_ms", req.policy_forward_ms, "ms");
}

whatif::WhatIfOptions SweepOptions(const WhatIfRequest& req) {
  whatif::WhatIfOptions o;
  o.budgets = req.budgets;
  o.strategies = req.strategies;
  o.n_max = req.n_max;
  o.policy_forward_s = req.policy_forward_ms * 1e-3;
  o.fixed_tree = req.fixed_tree;
  o.per_step = req.per_step;
  o.calibrate = req.calibrate;
  o.progress = req.progress;
  return o;
}

absl::StatusOr<whatif::WhatIfReport> WhatIf(const WhatIfRequest& req, const whatif::Trace& trace,
                                            const CostView& cost) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  return WhatIfSweep(SweepOptions(req), trace, cost);
}

absl::StatusOr<whatif::WhatIfReport> WhatIfSweep(whatif::WhatIfOptions options,
                                                 const whatif::Trace& trace, const CostView& cost) {
  options.drafter = cost.drafter;
  PriceTraceDrafter(trace, cost, &options.drafter, &options.t_aux_s);
  return whatif::RunWhatIf(trace, *cost.latency, options);
}

absl::StatusOr<WhatIfResult> WhatIf(const WhatIfRequest& req) {
  return RunInProcess<WhatIfResult>(req, &WhatIf);
}

nlohmann::json ToJson(const WhatIfResult& result) {
  return WithSourceJson(whatif::WhatIfReportToJson(result.report), result.source);
}

// ---- under concurrency --------------------------------------------------------------------------

absl::Status Validate(const WhatIfConcurrencyRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(ValidateInputs(req));
  if (!req.recorded) {
    SPECPLAN_RETURN_IF_ERROR(CheckEachInRange("batch_sizes", req.batch_sizes, 1,
                                              whatif::MaxConcurrency(), "requests in flight"));
  }
  SPECPLAN_RETURN_IF_ERROR(CheckInRange("n_max", int64_t{req.n_max}, 1, planner::kMaxTreeNodes - 1,
                                        "draft nodes per request"));
  if (req.draft_batch_growth) {
    SPECPLAN_RETURN_IF_ERROR(CheckNonNegative("draft_batch_growth", *req.draft_batch_growth));
  }
  return absl::OkStatus();
}

whatif::ConcurrencyOptions ReplayOptions(const WhatIfConcurrencyRequest& req,
                                         const whatif::Trace& trace, const CostView& cost) {
  whatif::ConcurrencyOptions options;
  options.batch_sizes = req.batch_sizes;
  options.recorded = req.recorded;
  options.n_max = req.n_max;
  options.drafter = cost.drafter;
  const double growth = req.draft_batch_growth.value_or(whatif::kDefaultDraftBatchGrowth);
  options.drafter.batch_growth = growth;
  PriceTraceDrafter(trace, cost, &options.drafter, &options.t_aux_s);
  // A given growth (or a cost class's, or the default with drafting given by hand: t_draft_ms is
  // one request's, the growth prices the rest) stands; else the step model's.
  if (cost.step == nullptr || req.draft_batch_growth || req.t_draft_ms > 0) {
    options.drafter.batch_growth = growth;
  }
  options.batch_scan = req.batch_scan;
  options.best_fixed = req.best_fixed;
  options.best_chain = req.best_chain;
  options.calibrate = req.calibrate;
  options.progress = req.progress;
  return options;
}

absl::StatusOr<whatif::ConcurrencyReport> WhatIfConcurrency(const WhatIfConcurrencyRequest& req,
                                                            const whatif::Trace& trace,
                                                            const CostView& cost) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  return whatif::RunConcurrency(trace, *cost.latency, ReplayOptions(req, trace, cost));
}

absl::StatusOr<WhatIfConcurrencyResult> WhatIfConcurrency(const WhatIfConcurrencyRequest& req) {
  return RunInProcess<WhatIfConcurrencyResult>(req, &WhatIfConcurrency);
}

nlohmann::json ToJson(const WhatIfConcurrencyResult& result) {
  return WithSourceJson(whatif::ConcurrencyReportToJson(result.report), result.source);
}

// ---- chains over the user's acceptance ----------------------------------------------------------

absl::Status Validate(const WhatIfChainsRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(req.cost.Parse(0).status());
  SPECPLAN_RETURN_IF_ERROR(CheckEachInRange("batch_sizes", req.replay.batch_sizes, 1,
                                            whatif::MaxConcurrency(), "requests in flight"));
  SPECPLAN_RETURN_IF_ERROR(CheckContext("context", req.replay.context));
  SPECPLAN_RETURN_IF_ERROR(Validate(req.limits));
  if (req.limits.any() && !req.prefill) {
    return absl::InvalidArgumentError(
        "limits: the engine's limits apply only with prefill (the decode-only replay has no "
        "scheduler)");
  }
  return CheckInRange("max_requests", int64_t{req.replay.max_requests}, 0, int64_t{1} << 30,
                      "0 = all");
}

absl::StatusOr<WhatIfChainsResult> WhatIfChains(const WhatIfChainsRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  SPECPLAN_ASSIGN_OR_RETURN(const CostRequest::Parsed parsed, req.cost.Parse(0));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::ResolvedLatencyModel resolved,
                            req.cost.ResolveSpec(parsed.dtype));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::StepModel step,
                            WithGraphLimits(req.cost, req.limits).Step(resolved, 0));
  // The replay prices a step per simulated step: read the drafting from a table laid on the
  // target's grid (costmodel/step/step_model.h, within 0.033 % of forward by forward).
  step.TabulateDraft();
  whatif::ChainReplayOptions replay = req.replay;
  const whatif::StepModelPricer pricer(&step);
  if (req.prefill) {
    const std::string engine = SchedulerEngine(resolved.engine);
    replay.prefill = &pricer;
    SPECPLAN_ASSIGN_OR_RETURN(replay.prefill_limits,
                              ResolveEngineLimits(req.limits, engine, resolved.model_spec,
                                                  resolved.gpu_spec, true, nullptr));
    SPECPLAN_ASSIGN_OR_RETURN(replay.prefill_plain_limits,
                              ResolveEngineLimits(req.limits, engine, resolved.model_spec,
                                                  resolved.gpu_spec, false, nullptr));
  }
  SPECPLAN_ASSIGN_OR_RETURN(whatif::ChainReplayReport report,
                            whatif::ReplayChains(req.acceptance, step, replay));
  WhatIfChainsResult out;
  out.report = std::move(report);
  out.source.trace_path = req.acceptance.source;
  NameCost(req.cost, resolved, parsed.dtype, &out.source);
  out.drafter = req.cost.drafter;
  out.draft_priced_by = step.draft_priced_by();
  out.host = step.host();
  out.acceptance = req.acceptance;
  out.prefill = req.prefill;
  return out;
}

nlohmann::json ToJson(const WhatIfChainsResult& result) {
  nlohmann::json j = whatif::ChainReplayToJson(result.report);
  j["drafter"] = result.drafter;
  j["draft_priced_by"] = result.draft_priced_by;
  j["host"] = costmodel::HostTimeToJson(result.host);
  j["acceptance"] = planner::EngineAcceptanceToJson(result.acceptance);
  j["prefill"] = result.prefill;
  AddSourceJson(result.source, &j);
  return j;
}

std::string ChainsTable(const WhatIfChainsResult& result) {
  return absl::StrCat("drafter ", result.drafter, " (draft priced by ", result.draft_priced_by,
                      "); host: ", result.host.provenance, "\n",
                      whatif::FormatChainReplay(result.report));
}

}  // namespace specplan::ops
