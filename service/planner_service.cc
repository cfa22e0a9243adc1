// The gRPC handlers of specplan.v1.Planner, one marked section per RPC. The planning RPCs are a
// pure Do<Rpc> (request -> response or an absl::Status) wrapped by Serve, which assigns the
// request id, counts and times the request, logs it and maps the status. Over 500 lines because it
// holds one handler per RPC; PlanTree, PlanBatch and MergeTrees are adapters over the operations
// (ops/: proto fields in, request, operation, result, proto out); the others' logic lives in
// costmodel/, whatif/, convert.cc and cost_resolver.cc.

#include "service/planner_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/profile/profile_json.h"
#include "ops/acceptance_op.h"
#include "ops/engine_limits.h"
#include "ops/merge.h"
#include "ops/plan_batch.h"
#include "ops/plan_tree.h"
#include "ops/validate.h"
#include "ops/whatif_online_op.h"
#include "ops/whatif_op.h"
#include "planner/batch/batch_plan.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/merge.h"
#include "service/plan_session.h"
#include "util/json_util.h"
#include "util/status_macros.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::service {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status Invalid(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

double MicrosSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// The end of a PlanTree / PlanBatch reply: the latency model and profile the cost resolved to
// (when it named one) and the handler time since t0.
template <class Resp>
absl::Status FinishPlanReply(const std::optional<ResolvedCost>& cost, Clock::time_point t0,
                             Resp* resp) {
  if (cost) {
    resp->set_latency_model(cost->latency_kind());
    resp->set_profile_id(cost->profile_id());
  }
  resp->set_plan_us(MicrosSince(t0));
  return absl::OkStatus();
}

// Planning scratch reused by every call on one gRPC thread (no per-call planner allocation).
struct PlanScratch {
  planner::Marginals marginals;
  planner::BestFirstPlanner planner;
  ops::PlanTreeResult result;
};
PlanScratch& ThreadPlanScratch() {
  thread_local PlanScratch scratch;
  return scratch;
}

// PlanBatch's scratch, likewise per gRPC thread.
struct BatchScratch {
  std::vector<planner::Marginals> marginals;
  ops::PlanBatchRequest request;  // its requests point into `marginals`
  planner::BatchPlanner planner;
  ops::PlanBatchResult result;
};
BatchScratch& ThreadBatchScratch() {
  thread_local BatchScratch scratch;
  return scratch;
}

struct MergeScratch {
  planner::Tree a, b;
  planner::MergeWorkspace workspace;
  ops::MergeResult result;
};
MergeScratch& ThreadMergeScratch() {
  thread_local MergeScratch scratch;
  return scratch;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void FillInfo(const ProfileStore::Entry& e, v1::ProfileInfo* info) {
  const costmodel::Profile& p = e.profile;
  info->set_id(e.id);
  info->set_gpu(p.gpu);
  info->set_model(p.model);
  info->set_dtype(costmodel::DTypeName(p.dtype));
  info->set_default_model(p.default_model);
  for (const auto& [kind, model] : e.models) info->add_latency_models(kind);
  info->set_device_name(p.device_name);
  info->set_timer(p.timer);
  info->set_created_utc(p.created_utc);
  info->set_path(e.path);
  info->set_engine(p.engine);
  info->set_engine_version(p.engine_version);
  info->set_tp(static_cast<int32_t>(std::max<int64_t>(1, p.model_spec.tp)));
}

void FillFeedback(const AcceptanceSnapshot& a, const CorrectionSnapshot& c,
                  v1::AcceptanceStats* acceptance, v1::LatencyCorrection* correction) {
  acceptance->set_steps(a.steps);
  acceptance->set_accepted_tokens(a.accepted_tokens);
  acceptance->set_draft_nodes(a.draft_nodes);
  acceptance->set_mean_accepted(a.steps ? static_cast<double>(a.accepted_tokens) / a.steps : 0.0);
  acceptance->set_acceptance_rate(
      a.draft_nodes ? static_cast<double>(a.accepted_tokens) / a.draft_nodes : 0.0);
  acceptance->set_expected_steps(a.expected_steps);
  acceptance->set_realised_over_expected(
      a.expected_steps ? a.sum_realised_over_expected / a.expected_steps : 0.0);
  acceptance->set_realised_over_expected_recent(a.realised_over_expected_recent);
  correction->set_base_model(c.base_model);
  correction->set_alpha(c.alpha);
  correction->set_bias(c.bias);
  correction->set_observations(c.observations);
}

// Request ids from clients are echoed in logs and metadata: keep them short and printable.
std::string SanitizeRequestId(absl::string_view raw) {
  std::string out;
  for (char ch : raw.substr(0, 64)) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == ':';
    out.push_back(ok ? ch : '_');
  }
  return out;
}

// A client-supplied trace name goes into error messages: printable ASCII, at most 256 bytes.
std::string SanitizeTraceName(absl::string_view raw) {
  std::string out;
  for (char ch : raw.substr(0, 256)) out.push_back(ch >= 0x20 && ch < 0x7f ? ch : '?');
  return out;
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

PlannerService::PlannerService(ProfileStore* store, ServiceOptions options)
    : store_(store),
      options_(std::move(options)),
      costs_(store, options_.limits, CostResolver::kDefaultCapacity, options_.default_engine) {
  SetMessageAllocatorFor_PlanTree(&plan_tree_allocator_);
}

template <class Fn>
grpc::Status PlannerService::Serve(Method method, grpc::ServerContextBase* ctx, Fn&& fn) {
  const Clock::time_point t0 = Clock::now();
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  last_call_start_.store(t0.time_since_epoch().count(), std::memory_order_relaxed);
  struct Leave {
    std::atomic<int>* n;
    ~Leave() { n->fetch_sub(1, std::memory_order_acq_rel); }
  } leave{&in_flight_};
  std::string id;
  const auto& md = ctx->client_metadata();
  if (auto it = md.find("x-request-id"); it != md.end()) {
    id = SanitizeRequestId(absl::string_view(it->second.data(), it->second.size()));
  } else {
    id = absl::StrCat(next_request_id_.fetch_add(1, std::memory_order_relaxed));
  }
  absl::Status status;
  const ServingState state = state_.load(std::memory_order_acquire);
  if (state != ServingState::kServing && method != Method::kPing && method != Method::kGetStats) {
    status = absl::UnavailableError(state == ServingState::kLoading
                                        ? "server is loading its profiles (not ready yet)"
                                        : "server is draining (shutting down)");
  } else {
    try {
      status = fn();
    } catch (const std::exception& e) {  // never let a request take the server down
      status = absl::InternalError(absl::StrCat("internal error: ", e.what()));
    }
  }
  const double us = MicrosSince(t0);
  stats_.Record(method, us, status.ok());
  metrics_.Record(method, static_cast<int>(status.code()), us * 1e-6);
  ctx->AddTrailingMetadata("x-request-id", id);
  if (!options_.replica_id.empty()) ctx->AddTrailingMetadata("x-replica", options_.replica_id);
  if (options_.log_requests) {
    const std::string ts =
        absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone());
    const std::string code = absl::StatusCodeToString(status.code());
    if (status.ok()) {
      std::fprintf(stderr, "%s req=%s method=%s peer=%s code=%s us=%.1f\n", ts.c_str(), id.c_str(),
                   MethodName(method), ctx->peer().c_str(), code.c_str(), us);
    } else {
      std::fprintf(stderr, "%s req=%s method=%s peer=%s code=%s us=%.1f msg=\"%s\"\n", ts.c_str(),
                   id.c_str(), MethodName(method), ctx->peer().c_str(), code.c_str(), us,
                   absl::CEscape(status.message()).c_str());
    }
  }
  return ToGrpcStatus(status);
}

template <class Fn>
grpc::ServerUnaryReactor* PlannerService::ServeReactor(Method method,
                                                       grpc::CallbackServerContext* ctx, Fn&& fn) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(Serve(method, ctx, std::forward<Fn>(fn)));
  return reactor;
}

template <class Req, class Resp, class Nodes>
grpc::ServerUnaryReactor* PlannerService::ServePlan(Method method, grpc::CallbackServerContext* ctx,
                                                    absl::Status (PlannerService::*plan)(const Req&,
                                                                                         Resp*),
                                                    const Req& req, Resp* resp, Nodes nodes) {
  return ServeReactor(method, ctx, [&] {
    absl::Status st = (this->*plan)(req, resp);
    if (st.ok()) metrics_.AddNodes(method, nodes(*resp));
    return st;
  });
}

// ---------------------------------------------------------------------------------------------
// PlanTree

absl::Status PlannerService::DoPlanTree(const v1::PlanTreeRequest& req,
                                        v1::PlanTreeResponse* resp) {
  const Clock::time_point t0 = Clock::now();
  const ServiceLimits& limits = options_.limits;
  PlanScratch& s = ThreadPlanScratch();
  if (!req.has_marginals()) return Invalid("marginals: required");
  SPECPLAN_RETURN_IF_ERROR(MarginalsFromProto(req.marginals(), limits, "marginals", &s.marginals));
  planner::BestFirstOptions options;
  SPECPLAN_RETURN_IF_ERROR(BudgetModeFromProto(req.mode(), "mode", &options.mode));
  SPECPLAN_RETURN_IF_ERROR(CheckNMax(req.n_max(), limits, "n_max"));
  options.n_max = req.n_max();
  if (!std::isfinite(req.l_ar_s())) {
    return Invalid(
        absl::StrCat("l_ar_s = ", req.l_ar_s(), ": must be finite (<= 0 means T_verify(1, c))"));
  }
  options.l_ar_s = req.l_ar_s();
  SPECPLAN_RETURN_IF_ERROR(AcceptanceScaleFromProto(req.acceptance_scale(), "acceptance_scale",
                                                    &options.acceptance_scale));
  options.validate = false;  // MarginalsFromProto validated

  const bool has_source =
      req.has_cost() && req.cost().source_case() != v1::CostSpec::SOURCE_NOT_SET;
  std::optional<ResolvedCost> cost;
  ops::PlanTreeRequest request;
  request.marginals = &s.marginals;
  if (options.mode != planner::BudgetMode::kFixed && !has_source) {
    return Invalid(
        "cost: required in CONTROLLER and SCAN modes (set cost.profile or cost.inline_model)");
  }
  if (has_source) {
    SPECPLAN_ASSIGN_OR_RETURN(cost, costs_.Resolve(req.cost(), s.marginals.gamma, "cost"));
    request.c = cost->context;
  } else if (req.has_cost()) {  // FIXED mode, cost used only for context_tokens
    SPECPLAN_RETURN_IF_ERROR(
        CheckContext(req.cost().context_tokens(), limits, "cost.context_tokens"));
    request.c = req.cost().context_tokens();
  }
  request.options = options;
  const Outputs o = OutputsFromProto(req.has_outputs(), req.outputs());
  request.outputs = TreeOutputOptionsFor(o, 0);
  // The operation prices a drafter architecture's whole step into the cycle and L_AR (a given
  // l_ar_s > 0 stands).
  std::optional<ops::CostView> view;
  if (cost) view = cost->View();
  SPECPLAN_RETURN_IF_ERROR(ops::PlanTreeInto(request, view ? &*view : nullptr, &s.planner,
                                             &s.result, limits.max_context));
  PlanToProto(s.result.plan, o, resp->mutable_plan());
  TreeOutputsToProto(s.result.outputs, o, resp->mutable_outputs());
  return FinishPlanReply(cost, t0, resp);
}

grpc::ServerUnaryReactor* PlannerService::PlanTree(grpc::CallbackServerContext* ctx,
                                                   const v1::PlanTreeRequest* req,
                                                   v1::PlanTreeResponse* resp) {
  return ServePlan(Method::kPlanTree, ctx, &PlannerService::DoPlanTree, *req, resp,
                   [](const v1::PlanTreeResponse& r) { return r.plan().n(); });
}

// ---------------------------------------------------------------------------------------------
// PlanBatch

absl::Status PlannerService::DoPlanBatch(const v1::PlanBatchRequest& req,
                                         v1::PlanBatchResponse* resp) {
  const Clock::time_point t0 = Clock::now();
  const ServiceLimits& limits = options_.limits;
  BatchScratch& s = ThreadBatchScratch();
  ops::PlanBatchRequest& request = s.request;
  SPECPLAN_RETURN_IF_ERROR(BatchRequestsFromProto(req, limits, &s.marginals, &request.requests));
  planner::BatchPlanOptions& options = request.options;
  options = planner::BatchPlanOptions();
  SPECPLAN_RETURN_IF_ERROR(BatchOptionsFromProto(req, limits, &options));
  request.sglang = planner::SglangLayoutOptions();
  switch (req.layout()) {
    case v1::BATCH_LAYOUT_NONE:
      request.layout = ops::BatchLayoutKind::kNone;
      break;
    case v1::BATCH_LAYOUT_RAGGED:
      request.layout = ops::BatchLayoutKind::kRagged;
      break;
    case v1::BATCH_LAYOUT_SGLANG:
      request.layout = ops::BatchLayoutKind::kSglang;
      SPECPLAN_RETURN_IF_ERROR(SglangOptionsFromProto(req, &request.sglang));
      break;
    default:
      return Invalid(absl::StrCat("layout = ", req.layout(),
                                  ": unknown BatchLayoutKind (use NONE, RAGGED or SGLANG)"));
  }

  const bool has_source =
      req.has_cost() && req.cost().source_case() != v1::CostSpec::SOURCE_NOT_SET;
  if (ops::NeedsCost(options) && !has_source) {
    return Invalid(
        "cost: required in CONTROLLER and SCAN modes and for LATENCY_BOUND (set cost.profile, "
        "cost.inline_model or cost.latency_grid)");
  }
  std::optional<ResolvedCost> cost;
  std::optional<ops::CostView> view;
  if (has_source) {
    // drafter.gamma = 0: the batch's largest gamma (as `plan-batch` uses); the operation prices a
    // drafter architecture's whole step at the batch's mean context.
    const int gamma = std::max(1, ops::MaxGamma(request.requests));
    SPECPLAN_ASSIGN_OR_RETURN(cost, costs_.Resolve(req.cost(), gamma, "cost"));
    view = cost->View();
  }
  const Outputs o = OutputsFromProto(req.has_outputs(), req.outputs());
  request.outputs = TreeOutputOptionsFor(o, 0);
  request.compute_outputs = true;
  request.max_reply_bytes = options_.max_reply_bytes;
  SPECPLAN_RETURN_IF_ERROR(ops::PlanBatchInto(request, view ? &*view : nullptr, &s.planner,
                                              &s.result, limits.max_context));
  BatchPlanToProto(s.result.plan, s.result.outputs, o, resp);
  if (request.layout == ops::BatchLayoutKind::kRagged) {
    RaggedBatchToProto(s.result.ragged, resp->mutable_ragged());
  } else if (request.layout == ops::BatchLayoutKind::kSglang) {
    SglangBatchToProto(s.result.sglang, resp->mutable_sglang());
  }
  return FinishPlanReply(cost, t0, resp);
}

grpc::ServerUnaryReactor* PlannerService::PlanBatch(grpc::CallbackServerContext* ctx,
                                                    const v1::PlanBatchRequest* req,
                                                    v1::PlanBatchResponse* resp) {
  return ServePlan(Method::kPlanBatch, ctx, &PlannerService::DoPlanBatch, *req, resp,
                   [](const v1::PlanBatchResponse& r) { return r.n_total(); });
}

// ---------------------------------------------------------------------------------------------
// PlanSession

grpc::Status PlannerService::PlanSession(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::SessionServerMessage, v1::SessionClientMessage>* stream) {
  return Serve(Method::kPlanSession, ctx, [&]() -> absl::Status {
    // Each open stream holds this thread: past the limit the stream is refused before it reads.
    struct Release {
      std::atomic<int>* open;
      ~Release() { open->fetch_sub(1); }
    } release{&sessions_};
    const int open = sessions_.fetch_add(1) + 1;
    const int limit = options_.limits.max_sessions;
    if (open > limit) {
      return absl::ResourceExhaustedError(absl::StrCat("PlanSession: ", open - 1,
                                                       " streams are open, the server's limit "
                                                       "(--max-sessions ",
                                                       limit, "); retry when one closes"));
    }
    metrics_.SessionOpened();
    struct Close {
      ServiceMetrics* m;
      ~Close() { m->SessionClosed(); }
    } close{&metrics_};
    PlanSessionDriver driver(&costs_);
    v1::SessionClientMessage in;
    v1::SessionServerMessage out;
    while (stream->Read(&in)) {
      out.Clear();
      SPECPLAN_RETURN_IF_ERROR(driver.Handle(in, &out));
      if (out.msg_case() != v1::SessionServerMessage::MSG_NOT_SET && !stream->Write(out)) {
        return absl::CancelledError("PlanSession: the client went away");
      }
    }
    if (ctx->IsCancelled()) return absl::CancelledError("PlanSession: cancelled by the client");
    return absl::OkStatus();
  });
}

// ---------------------------------------------------------------------------------------------
// MergeTrees

absl::Status PlannerService::DoMergeTrees(const v1::MergeTreesRequest& req,
                                          v1::MergeTreesResponse* resp) {
  const ServiceLimits& limits = options_.limits;
  MergeScratch& s = ThreadMergeScratch();
  SPECPLAN_RETURN_IF_ERROR(TreeFromProto(req.a(), limits, "a", &s.a));
  SPECPLAN_RETURN_IF_ERROR(TreeFromProto(req.b(), limits, "b", &s.b));
  ops::MergeRequest request;
  request.a = &s.a;
  request.b = &s.b;
  request.options.dedup = req.dedup();
  if (req.budget()) {
    SPECPLAN_RETURN_IF_ERROR(CheckNMax(req.n_max(), limits, "n_max"));
    request.options.n_max = req.n_max();
  }
  SPECPLAN_RETURN_IF_ERROR(CheckContext(req.position_offset(), limits, "position_offset"));
  request.c = req.position_offset();
  const Outputs o = OutputsFromProto(req.has_outputs(), req.outputs());
  request.outputs = TreeOutputOptionsFor(o, 0);
  SPECPLAN_RETURN_IF_ERROR(ops::MergeInto(request, &s.workspace, &s.result, limits.max_context));
  const planner::MergedTree& merged = s.result.merged;
  if (merged.tree.num_draft() > limits.max_n) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "merged tree: ", merged.tree.num_draft(), " draft nodes exceed the server limit ",
        limits.max_n, " (--max-n); set budget and n_max"));
  }
  TreeToProto(merged.tree, resp->mutable_tree());
  resp->mutable_phi_a()->Assign(merged.phi_a.begin(), merged.phi_a.end());
  resp->mutable_phi_b()->Assign(merged.phi_b.begin(), merged.phi_b.end());
  auto* source = resp->mutable_source();
  source->Reserve(static_cast<int>(merged.source.size()));
  for (planner::MergeSource src : merged.source) source->Add(static_cast<int>(src));
  TreeOutputsToProto(s.result.outputs, o, resp->mutable_outputs());
  return absl::OkStatus();
}

grpc::Status PlannerService::MergeTrees(grpc::ServerContext* ctx, const v1::MergeTreesRequest* req,
                                        v1::MergeTreesResponse* resp) {
  return Serve(Method::kMergeTrees, ctx, [&] { return DoMergeTrees(*req, resp); });
}

// ---------------------------------------------------------------------------------------------
// EstimateLatency

absl::Status PlannerService::DoEstimateLatency(const v1::EstimateLatencyRequest& req,
                                               v1::EstimateLatencyResponse* resp) {
  const ServiceLimits& limits = options_.limits;
  if (!req.has_cost() || req.cost().source_case() == v1::CostSpec::SOURCE_NOT_SET) {
    return Invalid("cost: required (set cost.profile or cost.inline_model)");
  }
  std::vector<int64_t> s_values(req.s().begin(), req.s().end());
  std::vector<int64_t> c_values(req.c().begin(), req.c().end());
  if (s_values.empty()) s_values.push_back(1);
  if (c_values.empty()) c_values.push_back(req.cost().context_tokens());
  for (int i = 0; i < req.s_size(); ++i) {
    if (req.s(i) < 1 || req.s(i) > limits.max_s) {
      return Invalid(absl::StrCat("s[", i, "] = ", req.s(i), ": must be in [1, ", limits.max_s,
                                  "] (tokens per verification pass)"));
    }
  }
  for (int i = 0; i < req.c_size(); ++i) {
    SPECPLAN_RETURN_IF_ERROR(ops::CheckContext(absl::StrCat("c[", i, "]"), req.c(i),
                                               limits.max_context, "cached tokens"));
  }
  const int64_t points = static_cast<int64_t>(s_values.size()) * c_values.size();
  if (points > limits.max_grid_points) {
    return absl::ResourceExhaustedError(
        absl::StrCat("s x c: ", s_values.size(), " x ", c_values.size(), " = ", points,
                     " points exceed the server limit ", limits.max_grid_points));
  }
  if (req.roofline_terms() && req.cost().source_case() == v1::CostSpec::kLatencyGrid) {
    return Invalid(
        "roofline_terms = true: not available with cost.latency_grid (no model or GPU to split)");
  }
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedCost cost, costs_.Resolve(req.cost(), 16, "cost"));
  auto* out = resp->mutable_points();
  out->Reserve(static_cast<int>(points));
  for (int64_t c : c_values) {
    const costmodel::CycleCost cycle(&cost.latency(), cost.drafter, cost.t_aux_s, c);
    for (int64_t s : s_values) {
      v1::LatencyPoint* p = out->Add();
      p->set_s(s);
      p->set_c(c);
      p->set_verify_s(cost.latency().VerifySeconds(s, c));
      p->set_cycle_s(cycle.Seconds(s - 1));
      p->set_draft_s(cycle.DraftSeconds());
      p->set_aux_s(cycle.AuxSeconds());
      if (cost.step != nullptr) {
        const costmodel::StepBreakdown ar = cost.step->ArStep(1, c);
        StepBreakdownToProto(cost.step->Step(1, s, c), cost.step->draft_priced_by(),
                             p->mutable_step());
        StepBreakdownToProto(ar, "none", p->mutable_ar_step());
        p->set_ar_step_s(ar.step_s());
      }
      if (req.roofline_terms()) {
        const costmodel::RooflineEstimate e =
            costmodel::EstimateRoofline(cost.source->model_spec, cost.source->gpu_spec, s, c);
        p->set_roofline_compute_s(e.compute_s);
        p->set_roofline_memory_s(e.memory_s);
        p->set_roofline_bound(costmodel::BoundName(e.bound));
      }
    }
  }
  if (cost.step != nullptr) HostTimeToProto(cost.step->host(), resp->mutable_host());
  resp->set_latency_model(cost.latency_kind());
  resp->set_profile_id(cost.profile_id());
  return absl::OkStatus();
}

grpc::Status PlannerService::EstimateLatency(grpc::ServerContext* ctx,
                                             const v1::EstimateLatencyRequest* req,
                                             v1::EstimateLatencyResponse* resp) {
  return Serve(Method::kEstimateLatency, ctx, [&] { return DoEstimateLatency(*req, resp); });
}

// ---------------------------------------------------------------------------------------------
// WhatIf

absl::Status PlannerService::DoWhatIf(const v1::WhatIfRequest& req, v1::WhatIfResponse* resp) {
  const Clock::time_point t0 = Clock::now();
  const ServiceLimits& limits = options_.limits;
  whatif::WhatIfOptions options;
  SPECPLAN_RETURN_IF_ERROR(WhatIfOptionsFromProto(req, limits, &options));
  if (!req.has_cost() || req.cost().source_case() == v1::CostSpec::SOURCE_NOT_SET) {
    return Invalid("cost: required (set cost.profile, cost.inline_model or cost.latency_grid)");
  }
  // drafter.gamma = 0 becomes the library default; RunWhatIf prices each step with the step's own
  // marginals gamma anyway.
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedCost cost,
                            costs_.Resolve(req.cost(), costmodel::DrafterCost().gamma, "cost"));

  whatif::Trace trace;
  std::string bundled_path;
  if (req.trace_jsonl().empty()) {
    bundled_path = whatif::DefaultTracePath();
    auto loaded = whatif::LoadTrace(bundled_path);
    if (!loaded.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("trace_jsonl: empty, and the server's bundled trace cannot be read: ",
                       loaded.status().message()));
    }
    trace = *std::move(loaded);
  } else {
    const std::string& text = req.trace_jsonl();
    // Bound the work before parsing: every step is one non-blank line after the header.
    int64_t lines = 0;
    bool blank = true;
    for (char ch : text) {
      if (ch == '\n') {
        lines += blank ? 0 : 1;
        blank = true;
      } else if (ch != ' ' && ch != '\r' && ch != '\t') {
        blank = false;
      }
    }
    lines += blank ? 0 : 1;
    if (lines - 1 > limits.max_whatif_steps) {
      return absl::ResourceExhaustedError(absl::StrCat("trace_jsonl: ", lines - 1,
                                                       " steps exceed the server limit ",
                                                       limits.max_whatif_steps, " per request"));
    }
    const std::string name =
        req.trace_name().empty()
            ? std::string("trace_jsonl")
            : absl::StrCat("trace_jsonl (", SanitizeTraceName(req.trace_name()), ")");
    SPECPLAN_ASSIGN_OR_RETURN(trace, whatif::ParseTrace(text, name));
    options.validate_trace = false;  // ParseTrace validated every step
  }
  if (static_cast<int64_t>(trace.steps.size()) > limits.max_whatif_steps) {
    return absl::ResourceExhaustedError(absl::StrCat("trace: ", trace.steps.size(),
                                                     " steps exceed the server limit ",
                                                     limits.max_whatif_steps, " per request"));
  }
  // The operation prices a drafter architecture's whole step at the trace's mean context and
  // largest marginals gamma, as `specplan whatif` does in-process.
  SPECPLAN_ASSIGN_OR_RETURN(whatif::WhatIfReport report,
                            ops::WhatIfSweep(std::move(options), trace, cost.View()));
  WhatIfReportToProto(report, resp);
  resp->mutable_trace()->set_bundled_path(bundled_path);
  resp->set_profile_id(cost.profile_id());
  resp->set_run_us(MicrosSince(t0));
  return absl::OkStatus();
}

grpc::Status PlannerService::WhatIf(grpc::ServerContext* ctx, const v1::WhatIfRequest* req,
                                    v1::WhatIfResponse* resp) {
  return Serve(Method::kWhatIf, ctx, [&] { return DoWhatIf(*req, resp); });
}

// ---------------------------------------------------------------------------------------------
// WhatIfOnline

namespace {

ops::LengthRange LengthsFromProto(const v1::TokenRange& r) { return {r.lo(), r.hi()}; }

// 0 / "" = not given; a value given, in or out of range, is passed on for the operation's checks
// (ops::Validate(EngineLimitRequest)), so a negative one is refused as the CLI refuses it.
absl::StatusOr<ops::EngineLimitRequest> LimitsFromProto(const v1::EngineLimits& in) {
  ops::EngineLimitRequest out;
  if (in.max_num_seqs() != 0) out.max_running = in.max_num_seqs();
  if (in.max_num_batched_tokens() != 0) out.token_budget = in.max_num_batched_tokens();
  if (in.kv_cache_tokens() != 0) out.kv_cache_tokens = in.kv_cache_tokens();
  if (in.gpu_memory_utilization() != 0) out.memory_fraction = in.gpu_memory_utilization();
  const std::string& chunked = in.enable_chunked_prefill();
  if (chunked == "true" || chunked == "false") {
    out.chunked_prefill = chunked == "true";
  } else if (!chunked.empty()) {
    return Invalid(absl::StrCat("limits.enable_chunked_prefill = '", absl::CHexEscape(chunked),
                                "': must be 'true', 'false' or '' (the engine's default)"));
  }
  return out;
}

}  // namespace

absl::Status PlannerService::DoWhatIfOnline(const v1::WhatIfOnlineRequest& req,
                                            v1::WhatIfOnlineResponse* resp) {
  const Clock::time_point t0 = Clock::now();
  // The request as the CLI's flags and Python's keywords give it; the operation validates it.
  SPECPLAN_RETURN_IF_ERROR(ops::CheckMs("slo_ttft_ms", req.slo_ttft_ms()));
  SPECPLAN_RETURN_IF_ERROR(ops::CheckMs("slo_tpot_ms", req.slo_tpot_ms()));
  if (req.rates().empty() == (req.max_concurrency() == 0)) {
    return Invalid(
        "rates, max_concurrency: give one (arrival rates in requests/s, or N in flight)");
  }
  if (req.acceptance().empty()) {
    return Invalid("acceptance: empty (the file `specplan acceptance` reads, as bytes)");
  }
  if (!req.has_cost() || req.cost().source_case() == v1::CostSpec::SOURCE_NOT_SET) {
    return Invalid("cost: required (set cost.profile or cost.inline_model)");
  }
  if (req.cost().drafter().architecture().empty()) {
    return Invalid(
        "cost.drafter.architecture = '': the online replay prices the engine's whole step; name "
        "the drafter (eagle3, eagle, mtp, ngram, draft:MODEL)");
  }
  ops::AcceptanceRequest areq;
  areq.format = req.acceptance_format();
  areq.drafter = req.acceptance_drafter();
  areq.k_max = req.acceptance_k_max();
  areq.prompt_lookup_min = req.prompt_lookup_min();
  areq.prompt_lookup_max = req.prompt_lookup_max();
  const std::string source =
      req.acceptance_name().empty()
          ? std::string("acceptance")
          : absl::StrCat("acceptance (", SanitizeTraceName(req.acceptance_name()), ")");

  ops::WhatIfOnlineRequest op;
  SPECPLAN_ASSIGN_OR_RETURN(op.acceptance, ops::ParseAcceptance(areq, req.acceptance(), source));
  op.independent = req.independent();
  op.prompt_tokens = LengthsFromProto(req.prompt_tokens());
  op.output_tokens = LengthsFromProto(req.output_tokens());
  op.num_prompts = req.num_prompts();
  op.seed = req.seed();
  if (!req.chains().empty())
    op.online.chain_lengths.assign(req.chains().begin(), req.chains().end());
  op.online.arrivals.rates.assign(req.rates().begin(), req.rates().end());
  op.online.arrivals.in_flight = req.max_concurrency();
  op.online.arrivals.seed = req.seed();
  op.online.arrivals.constant = req.constant_arrivals();
  op.online.slo.ttft_s = req.slo_ttft_ms() / 1e3;
  op.online.slo.tpot_s = req.slo_tpot_ms() / 1e3;
  SPECPLAN_ASSIGN_OR_RETURN(op.limits, LimitsFromProto(req.limits()));
  op.max_replayed_tokens = options_.limits.max_online_tokens;
  SPECPLAN_RETURN_IF_ERROR(ops::ValidateLoad(op));

  SPECPLAN_ASSIGN_OR_RETURN(ResolvedCost cost,
                            costs_.Resolve(req.cost(), costmodel::DrafterCost().gamma, "cost"));
  // vLLM's CUDA-graph ladder follows the limits given, as in the CLI and Python
  // (ops::ApplyGraphLimits); the shared step model is kept when they do not change it.
  std::optional<costmodel::StepModel> limited;
  costmodel::StepOptions step_options = cost.step->options();
  if (step_options.graphs && ops::ApplyGraphLimits(op.limits, &*step_options.graphs)) {
    const CostSource& src = *cost.source;
    SPECPLAN_ASSIGN_OR_RETURN(
        limited, costmodel::StepModel::Create(src.latency.get(), src.model_spec, src.gpu_spec,
                                              src.entry ? &src.entry->profile.drafters : nullptr,
                                              src.engine, step_options));
    limited->TabulateDraft();
  }
  ops::OnlineCost online{cost.source->latency.get(), limited ? &*limited : cost.step.get(),
                         cost.source->model_spec, cost.source->gpu_spec, cost.source->engine};
  SPECPLAN_ASSIGN_OR_RETURN(ops::WhatIfOnlineResult result, ops::WhatIfOnline(op, online));
  // Named as the CLI names a bundled profile: by its id.
  result.source.profile = cost.profile_id();
  if (cost.source->entry) result.source.engine_version = cost.source->entry->profile.engine_version;
  resp->set_json(ops::ToJson(result).dump());
  resp->set_table(ops::OnlineTable(result));
  resp->set_profile_id(cost.profile_id());
  resp->set_run_us(MicrosSince(t0));
  return absl::OkStatus();
}

grpc::Status PlannerService::WhatIfOnline(grpc::ServerContext* ctx,
                                          const v1::WhatIfOnlineRequest* req,
                                          v1::WhatIfOnlineResponse* resp) {
  return Serve(Method::kWhatIfOnline, ctx, [&] { return DoWhatIfOnline(*req, resp); });
}

// ---------------------------------------------------------------------------------------------
// Profiles

grpc::Status PlannerService::ListProfiles(grpc::ServerContext* ctx,
                                          const v1::ListProfilesRequest* /*req*/,
                                          v1::ListProfilesResponse* resp) {
  return Serve(Method::kListProfiles, ctx, [&] {
    for (const auto& entry : store_->List()) FillInfo(*entry, resp->add_profiles());
    return absl::OkStatus();
  });
}

grpc::Status PlannerService::GetProfile(grpc::ServerContext* ctx, const v1::GetProfileRequest* req,
                                        v1::GetProfileResponse* resp) {
  return Serve(Method::kGetProfile, ctx, [&]() -> absl::Status {
    if (!req->has_profile()) return Invalid("profile: required");
    SPECPLAN_ASSIGN_OR_RETURN(auto entry, costs_.FindProfile(req->profile(), "profile"));
    FillInfo(*entry, resp->mutable_info());
    resp->set_profile_json(entry->json_text);
    AcceptanceSnapshot a;
    CorrectionSnapshot c;
    ProfileStore::ReadFeedback(*entry, &a, &c);
    FillFeedback(a, c, resp->mutable_acceptance(), resp->mutable_correction());
    return absl::OkStatus();
  });
}

absl::Status PlannerService::CheckWriteAuth(const grpc::ServerContext& ctx,
                                            absl::string_view method) const {
  if (options_.auth_token.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, ": writes are disabled on this server (start it with --auth-token-file)"));
  }
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return absl::UnauthenticatedError(
        "authorization: missing (send metadata 'authorization: Bearer <token>')");
  }
  const absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kBearer = "Bearer ";
  if (value.substr(0, kBearer.size()) != kBearer ||
      !ConstantTimeEquals(value.substr(kBearer.size()), options_.auth_token)) {
    return absl::UnauthenticatedError("authorization: invalid token");
  }
  return absl::OkStatus();
}

grpc::Status PlannerService::PutProfile(grpc::ServerContext* ctx, const v1::PutProfileRequest* req,
                                        v1::PutProfileResponse* resp) {
  return Serve(Method::kPutProfile, ctx, [&]() -> absl::Status {
    SPECPLAN_RETURN_IF_ERROR(CheckWriteAuth(*ctx, "PutProfile"));
    if (req->profile_json().empty()) return Invalid("profile_json: empty");
    // util/json_error.h: its depth and size limits; "profile_json:1:5: not valid JSON: ...".
    auto j = json_util::ParseJson(req->profile_json(), "profile_json");
    if (!j.ok()) return absl::InvalidArgumentError(j.status().message());
    auto profile = costmodel::ProfileFromJson(*j);
    if (!profile.ok()) return Prefixed("profile_json", profile.status());
    bool replaced = false;
    auto entry = store_->Put(*std::move(profile), &replaced);
    if (!entry.ok()) {
      return entry.status().code() == absl::StatusCode::kInvalidArgument
                 ? Prefixed("profile_json", entry.status())
                 : entry.status();
    }
    FillInfo(**entry, resp->mutable_info());
    resp->set_replaced(replaced);
    return absl::OkStatus();
  });
}

grpc::Status PlannerService::ReportAcceptance(grpc::ServerContext* ctx,
                                              const v1::ReportAcceptanceRequest* req,
                                              v1::ReportAcceptanceResponse* resp) {
  return Serve(Method::kReportAcceptance, ctx, [&]() -> absl::Status {
    // The statistics and the EMA correction are shared by every client of the profile: a write.
    SPECPLAN_RETURN_IF_ERROR(CheckWriteAuth(*ctx, "ReportAcceptance"));
    const ServiceLimits& limits = options_.limits;
    if (!req->has_profile()) return Invalid("profile: required");
    if (req->steps_size() > limits.max_report_steps) {
      return absl::ResourceExhaustedError(absl::StrCat("steps: ", req->steps_size(),
                                                       " entries exceed the server limit ",
                                                       limits.max_report_steps, " per call"));
    }
    std::vector<AcceptanceReport> reports;
    reports.reserve(req->steps_size());
    for (int i = 0; i < req->steps_size(); ++i) {
      const v1::AcceptanceStep& st = req->steps(i);
      const std::string f = absl::StrCat("steps[", i, "]");
      if (st.accepted_length() < 0) {
        return Invalid(
            absl::StrCat(f, ".accepted_length = ", st.accepted_length(), ": must be >= 0"));
      }
      if (st.draft_nodes() < st.accepted_length() || st.draft_nodes() > limits.max_n) {
        return Invalid(absl::StrCat(f, ".draft_nodes = ", st.draft_nodes(), ": must be in [",
                                    st.accepted_length(), " (accepted_length), ", limits.max_n,
                                    "]"));
      }
      const double e = st.expected_accepted();
      if (!(e == 0 || (e >= 1 && e <= st.draft_nodes() + 1.0))) {
        return Invalid(absl::StrCat(f, ".expected_accepted = ", e,
                                    ": must be 0 (not reported) or in [1, ", st.draft_nodes() + 1,
                                    "] (root included)"));
      }
      SPECPLAN_RETURN_IF_ERROR(
          CheckContext(st.context_tokens(), limits, absl::StrCat(f, ".context_tokens")));
      SPECPLAN_RETURN_IF_ERROR(CheckSeconds(st.verify_s(), absl::StrCat(f, ".verify_s")));
      reports.push_back(
          {st.accepted_length(), st.draft_nodes(), e, st.context_tokens(), st.verify_s()});
    }
    SPECPLAN_ASSIGN_OR_RETURN(auto entry, costs_.FindProfile(req->profile(), "profile"));
    AcceptanceSnapshot a;
    CorrectionSnapshot c;
    SPECPLAN_RETURN_IF_ERROR(store_->Report(entry->id, reports, &a, &c));
    FillFeedback(a, c, resp->mutable_acceptance(), resp->mutable_correction());
    return absl::OkStatus();
  });
}

// ---------------------------------------------------------------------------------------------
// Stats / Ping

grpc::Status PlannerService::GetStats(grpc::ServerContext* ctx, const v1::GetStatsRequest* /*req*/,
                                      v1::GetStatsResponse* resp) {
  return Serve(Method::kGetStats, ctx, [&] {
    resp->set_uptime_s(stats_.UptimeSeconds());
    for (const MethodSummary& m : stats_.Summaries()) {
      v1::MethodStats* out = resp->add_methods();
      out->set_method(m.method);
      out->set_requests(m.requests);
      out->set_errors(m.errors);
      out->set_p50_us(m.p50_us);
      out->set_p90_us(m.p90_us);
      out->set_p99_us(m.p99_us);
      out->set_max_us(m.max_us);
    }
    return absl::OkStatus();
  });
}

std::string PlannerService::MetricsText() const {
  return metrics_.Render(store_, in_flight(), state() == ServingState::kServing);
}

grpc::ServerUnaryReactor* PlannerService::Ping(grpc::CallbackServerContext* ctx,
                                               const v1::PingRequest* /*req*/,
                                               v1::PingResponse* /*resp*/) {
  return ServeReactor(Method::kPing, ctx, [] { return absl::OkStatus(); });
}

}  // namespace specplan::service
