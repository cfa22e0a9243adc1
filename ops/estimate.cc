#include "ops/estimate.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/memory_fit.h"
#include "costmodel/latency/batch_shape.h"
#include "ops/validate.h"

namespace specplan::ops {

absl::Status Validate(const EstimateRequest& req) {
  const absl::Status checks[] = {
      CheckInRange("b", req.b, 1, kMaxEstimateBatch, "sequences in the pass"),
      CheckInRange("s", req.s, 1, kMaxEstimateS, "tokens verified per sequence"),
      CheckContext("c", req.c, kMaxContext, "cached tokens"),
      CheckInRange("gamma", int64_t{req.gamma}, 1, 1024, "drafted positions per cycle"),
      CheckNonNegative("t_net_ms", req.t_net_ms),
      CheckNonNegative("t_head_ms", req.t_head_ms),
      CheckNonNegative("t_light_ms", req.t_light_ms),
      CheckNonNegative("t_aux_ms", req.cost.t_aux_ms),
  };
  for (const absl::Status& st : checks) {
    if (!st.ok()) return st;
  }
  if (auto parsed = req.cost.Parse(req.t_net_ms); !parsed.ok()) return parsed.status();
  if (req.acceptance && req.s - 1 > req.acceptance->k_max) {
    return absl::InvalidArgumentError(
        absl::StrCat("s = ", req.s, ": a chain of ", req.s - 1, " drafts, but acceptance ",
                     req.acceptance->source, " holds positions up to ", req.acceptance->k_max,
                     " (pass s = ", req.acceptance->k_max + 1, " or less)"));
  }
  return absl::OkStatus();
}

costmodel::DrafterCost EstimateDrafter(const EstimateRequest& req) {
  costmodel::DrafterCost d;
  if (auto cls = costmodel::ParseDrafterClass(req.cost.drafter); cls.ok()) d.cls = *cls;
  d.gamma = req.gamma;
  d.t_net_s = req.t_net_ms * 1e-3;
  d.t_head_s = req.t_head_ms * 1e-3;
  d.t_light_s = req.t_light_ms * 1e-3;
  return d;
}

absl::Status CheckMemory(const EstimateRequest& req, const costmodel::ModelSpec& model,
                         const costmodel::GpuSpec& gpu, std::string* warning) {
  absl::Status fits = costmodel::CheckFitsInMemory(model, gpu, req.b, req.s, req.c);
  if (fits.ok() || !req.warn_memory) return fits;
  *warning = std::string(fits.message());
  return absl::OkStatus();
}

void CompleteEstimate(const EstimateRequest& req, EstimateResult* r) {
  r->n = req.s - 1;
  const costmodel::DrafterCost drafter = EstimateDrafter(req);
  r->drafter =
      req.cost.DrafterIsCostClass() ? costmodel::DrafterClassName(drafter.cls) : req.cost.drafter;
  if (r->step) {
    // With a drafter architecture the cycle a planner prices is the engine's whole step: T_draft,
    // then T_aux = the step's sampling and host work (plus t_aux), then T_verify.
    r->draft_s = r->step->draft_s;
    r->aux_s = r->step->sample_s + r->step->host_s + req.cost.t_aux_ms * 1e-3;
    r->verify_s = r->step->verify_s;
    r->cycle_s = r->draft_s + r->aux_s + r->verify_s;
    r->draft_steps = req.cost.draft_steps >= 0 ? req.cost.draft_steps : static_cast<int>(r->n);
    r->topk = req.cost.topk;
  }
  // The roofline of the whole pass: its weights once, its tokens, context and scores b times.
  r->roofline =
      req.b == 1 ? costmodel::EstimateRoofline(r->model_spec, r->gpu_spec, req.s, req.c)
                 : costmodel::EstimateRoofline(r->model_spec, r->gpu_spec,
                                               costmodel::UniformPass(static_cast<double>(req.b),
                                                                      static_cast<double>(req.s),
                                                                      static_cast<double>(req.c)));
  r->acceptance = req.acceptance;
  r->speedup.reset();
  if (r->acceptance) {
    r->tokens_per_step = r->acceptance->TokensPerStep(static_cast<int>(r->n));
    if (r->step) r->speedup = r->tokens_per_step * r->ar_step->step_s() / r->step->step_s();
  }
}

absl::StatusOr<EstimateResult> Estimate(const EstimateRequest& req, const CostView& cost,
                                        const costmodel::ModelSpec& model,
                                        const costmodel::GpuSpec& gpu) {
  if (absl::Status st = Validate(req); !st.ok()) return st;
  EstimateResult r;
  r.model_spec = model;
  r.gpu_spec = gpu;
  if (absl::Status st = CheckMemory(req, model, gpu, &r.memory_warning); !st.ok()) return st;
  r.latency_model = cost.latency->Kind();
  if (cost.step != nullptr) {
    r.step = cost.step->Step(req.b, req.s, req.c);
    r.ar_step = cost.step->ArStep(req.b, req.c);
    r.draft_priced_by = cost.step->draft_priced_by();
    r.host = cost.step->host();
  }
  const costmodel::DrafterCost drafter = EstimateDrafter(req);
  const double t_aux_s = req.cost.t_aux_ms * 1e-3;
  const int64_t n = req.s - 1;
  if (req.b == 1) {
    r.predicted_s = cost.latency->VerifySeconds(req.s, req.c);
    const costmodel::CycleCost cycle(cost.latency, drafter, t_aux_s, req.c);
    r.draft_s = cycle.DraftSeconds();
    r.aux_s = cycle.AuxSeconds();
    r.verify_s = cycle.VerifySeconds(n);
    r.cycle_s = cycle.Seconds(n);
  } else {
    // One ragged pass of b equal sequences; the drafter drafts all b (batch_growth 0: a batched
    // draft step costs one sequence's).
    costmodel::BatchShape pass;
    pass.Reserve(static_cast<size_t>(req.b));
    for (int64_t i = 0; i < req.b; ++i) pass.Add(req.s, req.c);
    const costmodel::BatchCycleCost cycle(cost.latency, drafter, t_aux_s);
    r.predicted_s = r.verify_s = cycle.VerifySeconds(pass);
    r.draft_s = cycle.DraftSeconds(pass.size());
    r.aux_s = cycle.AuxSeconds();
    r.cycle_s = cycle.Seconds(pass);
  }
  CompleteEstimate(req, &r);
  return r;
}

absl::StatusOr<EstimateResult> Estimate(const EstimateRequest& req) {
  if (absl::Status st = Validate(req); !st.ok()) return st;
  // By hand when any t_*_ms is given: that drafter cost replaces the composed one.
  const double by_hand =
      req.t_net_ms + req.t_head_ms + req.t_light_ms > 0 ? EstimateDrafter(req).DraftSeconds() : 0;
  auto parsed = req.cost.Parse(req.t_net_ms);
  if (!parsed.ok()) return parsed.status();
  auto spec = req.cost.ResolveSpec(parsed->dtype);
  if (!spec.ok()) return spec.status();
  // The memory check comes before the step model, as a refusal that names the bytes.
  std::string warning;
  if (absl::Status st = CheckMemory(req, spec->model_spec, spec->gpu_spec, &warning); !st.ok()) {
    return st;
  }
  ResolvedCost cost;
  cost.resolved = std::make_shared<costmodel::ResolvedLatencyModel>(*std::move(spec));
  cost.parsed = *parsed;
  cost.t_aux_s = req.cost.t_aux_ms * 1e-3;
  if (!req.cost.DrafterIsCostClass()) {
    auto step = req.cost.Step(*cost.resolved, by_hand);
    if (!step.ok()) return step.status();
    cost.step.emplace(*std::move(step));
  }
  auto r = Estimate(req, cost.View(), cost.resolved->model_spec, cost.resolved->gpu_spec);
  if (!r.ok()) return r.status();
  r->profile = cost.resolved->profile_path;
  r->engine = cost.resolved->engine;
  r->engine_version = cost.resolved->engine_version;
  return r;
}

std::optional<EstimateGraph> GraphOfEstimate(const EstimateRequest& req, const EstimateResult& r) {
  if (!r.step) return std::nullopt;
  auto graphs = req.cost.GraphsFor(r.engine, r.gpu_spec.mem_bytes);
  if (!graphs.ok() || !graphs->has_value()) return std::nullopt;
  const costmodel::GraphPass p = costmodel::GraphBuckets(**graphs).PadDecodeBatch(req.b, req.s);
  return EstimateGraph{costmodel::GraphLadderName((*graphs)->ladder), p.graphed, p.padded};
}

namespace {

nlohmann::json StringOrNull(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

}  // namespace

nlohmann::json ToJson(const EstimateRequest& req, const EstimateResult& r) {
  const costmodel::ModelSpec& m = r.model_spec;
  const double tokens = static_cast<double>(req.b * req.s);  // verified in the pass
  nlohmann::json j = costmodel::RooflineEstimateToJson(r.roofline);
  j["model"] = m.name;
  j["gpu"] = r.gpu_spec.name;
  j["dtype"] = costmodel::DTypeName(m.dtype);
  j["tp"] = m.tp;
  if (m.is_moe()) j["experts_streamed"] = costmodel::ExpectedDistinctExperts(m, tokens);
  j["s"] = req.s;
  j["c"] = req.c;
  j["b"] = req.b;
  j["predicted_s"] = r.predicted_s;  // the whole pass (all b sequences)
  j["per_sequence_s"] = r.predicted_s / static_cast<double>(req.b);
  j["per_token_s"] = r.predicted_s / tokens;
  j["latency_model"] = r.latency_model;
  j["profile"] = StringOrNull(r.profile);
  j["engine"] = StringOrNull(r.engine);
  j["engine_version"] = StringOrNull(r.engine_version);
  j["cycle"] = {{"n", r.n},         {"drafter", r.drafter},   {"draft_s", r.draft_s},
                {"aux_s", r.aux_s}, {"verify_s", r.verify_s}, {"cycle_s", r.cycle_s}};
  if (r.step) {
    j["step"] = costmodel::StepBreakdownToJson(*r.step);
    j["step"]["drafter"] = req.cost.drafter;
    j["step"]["draft_steps"] = r.draft_steps;
    j["step"]["topk"] = r.topk;
    j["step"]["draft_priced_by"] = r.draft_priced_by;
    j["step"]["host"] = costmodel::HostTimeToJson(r.host);
    j["ar_step"] = costmodel::StepBreakdownToJson(*r.ar_step);
    j["ar_step_s"] = r.ar_step->step_s();
    if (const std::optional<EstimateGraph> g = GraphOfEstimate(req, r)) {
      j["cuda_graph"] = {
          {"ladder", g->ladder}, {"graphed", g->graphed}, {"padded_requests", g->padded_requests}};
    }
  }
  if (r.acceptance) {
    j["acceptance"] = {{"source", r.acceptance->source},
                       {"format", planner::AcceptanceFormatName(r.acceptance->format)},
                       {"k", r.n},
                       {"tokens_per_step", r.tokens_per_step}};
    if (r.speedup) j["speedup"] = *r.speedup;
  }
  return j;
}

}  // namespace specplan::ops
