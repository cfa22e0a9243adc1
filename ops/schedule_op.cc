#include "ops/schedule_op.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "costmodel/cost_spec.h"
#include "ops/validate.h"
#include "util/status_macros.h"
#include "whatif/chain_replay.h"

namespace specplan::ops {
namespace {

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

whatif::ScheduleOptions ChoiceOptions(const ScheduleRequest& req) {
  whatif::ScheduleOptions options;
  options.min_chain = req.min_draft_len;
  options.monotone = req.monotone;
  options.slo_tpot_s = req.slo_tpot_ms * 1e-3;
  return options;
}

// Chains of K over the user's acceptance on the engine's whole step (a per-step trace as B mixed
// requests in flight, rates under independence at req.context), and the schedule chosen from them.
absl::StatusOr<ScheduleResult> AcceptanceSchedule(const ScheduleRequest& req,
                                                  const CostRequest& cost) {
  const planner::EngineAcceptance& acceptance = *req.acceptance;
  const WhatIfConcurrencyRequest& r = req.replay;
  SPECPLAN_ASSIGN_OR_RETURN(const CostRequest::Parsed parsed, cost.Parse(r.t_draft_ms));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::ResolvedLatencyModel resolved,
                            cost.ResolveSpec(parsed.dtype));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::StepModel step, cost.Step(resolved, r.t_draft_ms * 1e-3));
  // The replay prices a step per simulated step: read the drafting from a table laid on the
  // target's grid (costmodel/step/step_model.h, within 0.033 % of forward by forward).
  step.TabulateDraft();
  whatif::ChainReplayOptions replay;
  replay.batch_sizes = r.batch_sizes;
  for (int k = 0; k <= std::min(acceptance.k_max, r.n_max); ++k) replay.chain_lengths.push_back(k);
  replay.batching =
      acceptance.has_trace() ? whatif::ChainBatching::kMixed : whatif::ChainBatching::kCopies;
  replay.context = req.context;
  SPECPLAN_ASSIGN_OR_RETURN(const whatif::ChainReplayReport report,
                            whatif::ReplayChains(acceptance, step, replay));
  const std::string described = absl::StrFormat(
      "%s (%s; %s%s)", acceptance.source, planner::AcceptanceFormatName(acceptance.format),
      report.mode, report.mode == "rates" ? absl::StrFormat(", c = %d", report.context) : "");
  const std::string step_note =
      absl::StrFormat("drafter %s, draft priced by %s; host: %s", cost.drafter,
                      step.draft_priced_by(), step.host().provenance);
  ScheduleResult out;
  SPECPLAN_ASSIGN_OR_RETURN(
      out.schedule,
      whatif::BuildChainSchedule(report, req.format, ChoiceOptions(req), described, step_note));
  out.source.trace_path = acceptance.source;
  NameCost(cost, resolved, parsed.dtype, &out.source);
  return out;
}

// The drafter cost of one SGLang tree setting as SGLang's EAGLE worker drafts it at every step,
// whatever that step's tree: speculative_num_steps levels of speculative_eagle_topk beams (the
// step model's drafting at depth num_steps with topk beams per forward, at the trace's mean
// context; costmodel::PlannerTermsFor), depth-flat. A given draft_batch_growth stands over the
// step model's, as ReplayOptions has it.
std::function<absl::StatusOr<costmodel::DrafterCost>(const whatif::SglangTree&)> SglangDrafter(
    const ScheduleRequest& req, const whatif::Trace& trace, const costmodel::StepModel& step) {
  const int64_t context = whatif::DraftShapeOf(trace).mean_context;
  const std::optional<double> growth = req.replay.draft_batch_growth;
  return [&step, context,
          growth](const whatif::SglangTree& t) -> absl::StatusOr<costmodel::DrafterCost> {
    SPECPLAN_ASSIGN_OR_RETURN(const costmodel::StepModel beams,
                              step.WithTopk(std::max(1, t.eagle_topk)));
    costmodel::DrafterCost d =
        costmodel::PlannerTermsFor(beams, std::max(1, t.num_steps), context).drafter;
    d.depth_s.clear();
    d.depth_growth.clear();
    if (growth) d.batch_growth = *growth;
    return d;
  };
}

}  // namespace

absl::Status Validate(const ScheduleRequest& req) {
  const WhatIfConcurrencyRequest& r = req.replay;
  if (r.recorded) return Invalid("replay.recorded: a schedule replays a grid of batch sizes");
  SPECPLAN_RETURN_IF_ERROR(Validate(r));
  SPECPLAN_RETURN_IF_ERROR(CheckMs("slo_tpot_ms", req.slo_tpot_ms));
  if (r.batch_sizes.front() != 1) {
    return Invalid(absl::StrCat("batch_sizes = ", absl::StrJoin(r.batch_sizes, ","),
                                ": must start at 1 (the setting chosen at each batch size applies "
                                "up to the next one, so the first must cover batch size 1)"));
  }
  SPECPLAN_RETURN_IF_ERROR(
      CheckInRange("min_draft_len", int64_t{req.min_draft_len}, 0, 64, "draft tokens"));
  if (req.min_draft_len > 0 && !whatif::ScheduleUsesChains(req.format)) {
    return Invalid(absl::StrCat("min_draft_len = ", req.min_draft_len,
                                ": applies to format vllm and trtllm (draft lengths), not ",
                                whatif::ScheduleFormatName(req.format)));
  }
  if (!req.context_grid.empty()) {
    if (req.format != whatif::ScheduleFormat::kVllm) {
      return Invalid(absl::StrCat("context_grid = ", absl::StrJoin(req.context_grid, ","),
                                  ": applies to format vllm (the context axis of vLLM RFC "
                                  "#48627), not ",
                                  whatif::ScheduleFormatName(req.format)));
    }
    if (req.acceptance) {
      return Invalid(
          "context_grid: not with acceptance (the acceptance replay prices each request at its "
          "own context already)");
    }
  }
  if (req.acceptance && !r.trace.empty()) {
    return Invalid(
        "trace and acceptance: give one (marginals for trees, or your engine's acceptance for "
        "chains)");
  }
  return CheckContext("context", req.context);
}

absl::StatusOr<ScheduleResult> Schedule(const ScheduleRequest& req, const whatif::Trace& trace,
                                        const CostView& cost) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  whatif::ScheduleOptions options = ChoiceOptions(req);
  options.replay = ReplayOptions(req.replay, trace, cost);
  if (req.format == whatif::ScheduleFormat::kSglang && cost.step != nullptr &&
      costmodel::DraftsByLevel(cost.step->options())) {
    options.sglang_drafter = SglangDrafter(req, trace, *cost.step);
  }
  ScheduleResult out;
  if (req.context_grid.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(out.schedule,
                              whatif::BuildSchedule(trace, *cost.latency, req.format, options));
    return out;
  }
  auto built =
      whatif::BuildContextSchedule(trace, *cost.latency, req.format, options, req.context_grid);
  if (!built.ok()) {
    return absl::Status(built.status().code(),
                        absl::StrCat("context_grid: ", built.status().message()));
  }
  out.by_context = *std::move(built);
  out.schedule = out.by_context.rows.front();
  return out;
}

absl::StatusOr<ScheduleResult> Schedule(const ScheduleRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  // The format's own engine prices the passes unless the request names an engine or a profile.
  CostRequest cost = req.replay.cost;
  if (cost.engine.empty() && cost.profile.empty()) {
    cost.engine = whatif::ScheduleFormatName(req.format);
  }
  if (req.acceptance) return AcceptanceSchedule(req, cost);
  WhatIfConcurrencyRequest inputs = req.replay;
  inputs.cost = cost;
  WhatIfSource source;
  SPECPLAN_ASSIGN_OR_RETURN(const whatif::Trace trace, LoadWhatIfTrace(inputs, &source));
  SPECPLAN_ASSIGN_OR_RETURN(const ResolvedCost resolved, ResolveWhatIfCost(inputs, &source));
  auto out = Schedule(req, trace, resolved.View());
  if (!out.ok()) {
    if (absl::StartsWith(out.status().message(), "context_grid: ")) return out.status();
    return InTrace(out.status(), source.trace_path);
  }
  out->source = std::move(source);
  return out;
}

std::string Render(const ScheduleResult& result) {
  return result.by_context.rows.empty()
             ? whatif::RenderSchedule(result.schedule, result.source)
             : whatif::RenderContextSchedule(result.by_context, result.source);
}

std::string Summary(const ScheduleResult& result) {
  std::string out = whatif::FormatScheduleSummary(result.schedule, result.source);
  const whatif::ContextSchedule& by_context = result.by_context;
  for (size_t j = 1; j < by_context.rows.size(); ++j) {
    absl::StrAppend(&out, "at context +", by_context.contexts[j], " tokens: ");
    std::string sep;
    for (const whatif::SchedulePoint& p : by_context.rows[j].points) {
      absl::StrAppendFormat(&out, "%sB %d K %d (%.1f tokens/s)", sep, p.batch, p.setting,
                            p.throughput);
      sep = ", ";
    }
    out += "\n";
  }
  return out;
}

}  // namespace specplan::ops
