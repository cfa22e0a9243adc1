#include "client/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/profile/profile_json.h"
#include "service/channel.h"
#include "service/convert.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "util/check.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::client {
namespace {

// The caller's own latency model as spec's cost.latency_grid: T_verify(s, c) for s = 1..points
// (what RemotePlanBackend sends, so that remote plans price exactly as in-process ones).
void DenseLatencyGrid(const costmodel::LatencyModel& latency, int64_t points, int64_t c,
                      v1::CostSpec* spec) {
  v1::LatencyGrid* grid = spec->mutable_latency_grid();
  grid->clear_s();
  grid->clear_seconds();
  grid->mutable_s()->Reserve(static_cast<int>(points));
  grid->mutable_seconds()->Reserve(static_cast<int>(points));
  for (int64_t s = 1; s <= points; ++s) {
    grid->add_s(s);
    grid->add_seconds(latency.VerifySeconds(s, c));
  }
}

// The PlanBatch RPC carries marginals: a path-conditioned provider is an in-process callback.
absl::Status CheckBatchWireable(const std::vector<planner::BatchRequest>& requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].provider != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("requests[", i,
                       "].provider: a path-conditioned provider cannot be sent; the PlanBatch "
                       "RPC carries marginals only (plan it in-process)"));
    }
    if (requests[i].marginals == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("requests[", i, "].marginals: missing"));
    }
  }
  return absl::OkStatus();
}

namespace v1 = ::specplan::v1;

absl::Status FromGrpc(const std::string& server, const grpc::Status& st) {
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat("server ", server, ": ", st.error_message()));
}

void MergeRequestToWire(const planner::Tree& a, const planner::Tree& b,
                        const planner::MergeOptions& options, int64_t c,
                        v1::MergeTreesRequest* req) {
  service::TreeToProto(a, req->mutable_a());
  service::TreeToProto(b, req->mutable_b());
  req->set_dedup(options.dedup);
  req->set_budget(options.n_max >= 0);
  req->set_n_max(options.n_max >= 0 ? options.n_max : 0);
  req->set_position_offset(c);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PlannerClient

namespace {

std::chrono::system_clock::time_point Deadline(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(seconds));
}

}  // namespace

// A unary method of the stub, e.g. &v1::Planner::Stub::PlanTree.
template <class Req, class Resp>
using StubMethod = grpc::Status (v1::Planner::Stub::*)(grpc::ClientContext*, const Req&, Resp*);

struct PlannerClient::Impl {
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Planner::Stub> stub;
  absl::Status target_error;  // the server string is not a valid target (service/channel.h)

  // A call's result; a bad server string's error (naming --server) wins over the call's.
  absl::Status Check(const std::string& server, const grpc::Status& st) const {
    return target_error.ok() ? FromGrpc(server, st) : target_error;
  }

  // One unary call of the stub's `method`, `deadline_s` from now, *resp cleared first.
  template <class Req, class Resp>
  absl::Status Unary(const std::string& server, StubMethod<Req, Resp> method, const Req& req,
                     Resp* resp, double deadline_s) const {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(deadline_s));
    resp->Clear();
    return Check(server, (stub.get()->*method)(&ctx, req, resp));
  }

  // The same within options.deadline_s.
  template <class Req, class Resp>
  absl::Status Unary(const std::string& server, StubMethod<Req, Resp> method, const Req& req,
                     Resp* resp) const {
    return Unary(server, method, req, resp, options.deadline_s);
  }
};

PlannerClient::PlannerClient(std::string server, ClientOptions options)
    : server_(std::move(server)), impl_(std::make_unique<Impl>()) {
  SPECPLAN_CHECK(options.deadline_s > 0, "ClientOptions::deadline_s must be > 0");
  SPECPLAN_CHECK(options.whatif_deadline_s > 0, "ClientOptions::whatif_deadline_s must be > 0");
  impl_->options = options;
  // Several replicas ("A:P,B:Q" or dns:///NAME:PORT): round robin, health-checked, idempotent
  // calls retried on UNAVAILABLE (service/channel.h).
  grpc::ChannelArguments args = service::PlannerChannelArguments();
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  absl::StatusOr<std::string> target = service::PlannerTarget(server_, "--server");
  if (!target.ok()) impl_->target_error = target.status();
  impl_->channel = grpc::CreateCustomChannel(target.ok() ? *target : server_,
                                             grpc::InsecureChannelCredentials(), args);
  impl_->stub = v1::Planner::NewStub(impl_->channel);
}

PlannerClient::~PlannerClient() = default;

absl::Status PlannerClient::WaitReady(double timeout_s) {
  const auto deadline = Deadline(timeout_s);
  if (!impl_->target_error.ok()) return impl_->target_error;
  if (!impl_->channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(
        absl::StrCat("server ", server_, ": not reachable within ", timeout_s, " s"));
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  v1::PingResponse resp;
  return impl_->Check(server_, impl_->stub->Ping(&ctx, v1::PingRequest(), &resp));
}

absl::Status PlannerClient::Call(const v1::PlanTreeRequest& req, v1::PlanTreeResponse* resp) {
  return impl_->Unary(server_, &v1::Planner::Stub::PlanTree, req, resp);
}

absl::Status PlannerClient::Call(const v1::PlanBatchRequest& req, v1::PlanBatchResponse* resp) {
  return impl_->Unary(server_, &v1::Planner::Stub::PlanBatch, req, resp);
}

absl::Status PlannerClient::Call(const v1::MergeTreesRequest& req, v1::MergeTreesResponse* resp) {
  return impl_->Unary(server_, &v1::Planner::Stub::MergeTrees, req, resp);
}

absl::Status PlannerClient::Call(const v1::WhatIfRequest& req, v1::WhatIfResponse* resp) {
  return impl_->Unary(server_, &v1::Planner::Stub::WhatIf, req, resp,
                      impl_->options.whatif_deadline_s);
}

namespace {

void CostToWire(const CostRequest& in, v1::CostSpec* out) {
  if (in.stored_profile) {
    v1::ProfileRef* ref = out->mutable_profile();
    ref->set_gpu(in.gpu);
    ref->set_model(in.model);
    ref->set_dtype(costmodel::DTypeName(in.dtype));
    ref->set_engine(in.engine);
    if (in.tp != 1) ref->set_tp(static_cast<int32_t>(in.tp));  // the profile made at that tp
  } else {
    v1::InlineCostModel* m = out->mutable_inline_model();
    m->set_model(in.model);
    m->set_dtype(costmodel::DTypeName(in.dtype));
    if (in.gpu_spec.has_value()) {
      v1::GpuSpec* g = m->mutable_gpu_spec();
      g->set_name(in.gpu_spec->name);
      g->set_peak_flops(in.gpu_spec->peak_flops);
      g->set_mem_bw(in.gpu_spec->mem_bw);
      g->set_mem_bytes(in.gpu_spec->mem_bytes);
      g->set_link_bw(in.gpu_spec->link_bw);
      g->set_link_latency_s(in.gpu_spec->link_latency_s);
    } else {
      m->set_gpu(in.gpu);
    }
    if (in.tp != 1) m->set_tp(static_cast<int32_t>(in.tp));
  }
  out->set_context_tokens(in.context);
  v1::DrafterCost* d = out->mutable_drafter();
  service::DrafterCostToProto(in.drafter, d);
  out->set_t_aux_s(in.t_aux_s);
  const StepRequest& step = in.step;
  if (step.architecture.empty()) return;
  d->set_architecture(step.architecture);
  if (step.draft_steps >= 0) {
    d->set_has_draft_steps(true);
    d->set_draft_steps(step.draft_steps);
  }
  d->set_topk(step.topk);
  d->set_draft_vocab(step.draft_vocab);
  const struct {
    const std::optional<double>& value;
    void (v1::HostTimeOverrides::*set_has)(bool);
    void (v1::HostTimeOverrides::*set)(double);
  } overrides[] = {
      {step.host_step_s, &v1::HostTimeOverrides::set_has_step_s,
       &v1::HostTimeOverrides::set_step_s},
      {step.host_per_sequence_s, &v1::HostTimeOverrides::set_has_per_sequence_s,
       &v1::HostTimeOverrides::set_per_sequence_s},
      {step.host_per_draft_forward_s, &v1::HostTimeOverrides::set_has_per_draft_forward_s,
       &v1::HostTimeOverrides::set_per_draft_forward_s},
      {step.sample_call_s, &v1::HostTimeOverrides::set_has_sample_call_s,
       &v1::HostTimeOverrides::set_sample_call_s}};
  if (step.host_base) service::HostTimeToProto(*step.host_base, d->mutable_host_base());
  for (const auto& o : overrides) {
    if (!o.value) continue;
    v1::HostTimeOverrides* host = d->mutable_host();
    (host->*o.set_has)(true);
    (host->*o.set)(*o.value);
    host->set_provenance(step.host_provenance);
  }
}

}  // namespace

absl::StatusOr<std::vector<ProfileKey>> PlannerClient::ListProfiles() {
  v1::ListProfilesResponse list;
  SPECPLAN_RETURN_IF_ERROR(
      impl_->Unary(server_, &v1::Planner::Stub::ListProfiles, v1::ListProfilesRequest(), &list));
  std::vector<ProfileKey> out;
  out.reserve(list.profiles_size());
  for (const v1::ProfileInfo& p : list.profiles()) {
    out.push_back({p.id(), p.gpu(), p.model(), p.dtype(), p.engine(), p.tp() > 0 ? p.tp() : 1});
  }
  return out;
}

absl::StatusOr<RemoteResult> PlannerClient::PlanTree(const planner::Marginals& marginals,
                                                     const planner::BestFirstOptions& options,
                                                     const CostRequest* cost, int64_t c,
                                                     planner::BestFirstPlan* plan,
                                                     planner::TreeOutputs* outputs) {
  v1::PlanTreeRequest req;
  service::MarginalsToProto(marginals, req.mutable_marginals());
  if (cost != nullptr) CostToWire(*cost, req.mutable_cost());
  req.set_mode(service::BudgetModeToProto(options.mode));
  req.set_n_max(options.n_max);
  req.set_l_ar_s(options.l_ar_s);
  req.set_acceptance_scale(options.acceptance_scale);
  v1::OutputSelection* sel = req.mutable_outputs();
  sel->set_positions(true);
  sel->set_parents(true);
  sel->set_retrieve(true);
  sel->set_packed_mask(true);
  sel->set_curve(true);
  // Positions are absolute on the CLI (c + depth); the server offsets by the cost's context,
  // so fixed mode without a cost must carry c too.
  if (cost == nullptr) req.mutable_cost()->set_context_tokens(c);

  v1::PlanTreeResponse resp;
  SPECPLAN_RETURN_IF_ERROR(Call(req, &resp));
  service::PlanFromProto(resp.plan(), plan);
  service::TreeOutputsFromProto(resp.outputs(), outputs);
  return RemoteResult{resp.latency_model(), resp.profile_id()};
}

absl::StatusOr<RemoteResult> PlannerClient::PlanBatch(
    const std::vector<planner::BatchRequest>& requests, const planner::BatchPlanOptions& options,
    const CostRequest* cost, planner::BatchPlan* plan, std::vector<planner::TreeOutputs>* outputs) {
  SPECPLAN_RETURN_IF_ERROR(CheckBatchWireable(requests));
  v1::PlanBatchRequest req;
  service::BatchRequestToProto(requests, options, &req);
  if (cost != nullptr) CostToWire(*cost, req.mutable_cost());
  v1::OutputSelection* sel = req.mutable_outputs();
  sel->set_positions(true);
  sel->set_parents(true);
  sel->set_retrieve(true);
  sel->set_curve(true);
  v1::PlanBatchResponse resp;
  SPECPLAN_RETURN_IF_ERROR(Call(req, &resp));
  service::BatchPlanFromProto(resp, plan, outputs);
  return RemoteResult{resp.latency_model(), resp.profile_id()};
}

absl::Status PlannerClient::MergeTrees(const planner::Tree& a, const planner::Tree& b,
                                       const planner::MergeOptions& options, int64_t c,
                                       planner::MergedTree* merged, planner::TreeOutputs* outputs) {
  v1::MergeTreesRequest req;
  MergeRequestToWire(a, b, options, c, &req);
  v1::OutputSelection* sel = req.mutable_outputs();
  sel->set_positions(true);
  sel->set_parents(true);
  sel->set_retrieve(true);
  sel->set_packed_mask(true);
  sel->set_dense_mask(true);
  v1::MergeTreesResponse resp;
  SPECPLAN_RETURN_IF_ERROR(Call(req, &resp));
  service::MergedTreeFromProto(resp, merged);
  service::TreeOutputsFromProto(resp.outputs(), outputs);
  return absl::OkStatus();
}

absl::StatusOr<RemoteEstimate> PlannerClient::EstimateLatency(const CostRequest& cost, int64_t s) {
  v1::EstimateLatencyRequest req;
  CostToWire(cost, req.mutable_cost());
  req.add_s(s);
  req.add_c(cost.context);
  v1::EstimateLatencyResponse resp;
  SPECPLAN_RETURN_IF_ERROR(impl_->Unary(server_, &v1::Planner::Stub::EstimateLatency, req, &resp));
  if (resp.points_size() != 1) {
    return absl::InternalError(
        absl::StrCat("server ", server_, ": expected 1 latency point, got ", resp.points_size()));
  }
  const v1::LatencyPoint& p = resp.points(0);
  RemoteEstimate out;
  out.used = {resp.latency_model(), resp.profile_id()};
  out.verify_s = p.verify_s();
  out.cycle_s = p.cycle_s();
  out.draft_s = p.draft_s();
  out.aux_s = p.aux_s();
  if (p.has_step()) {
    out.step = service::StepBreakdownFromProto(p.step());
    out.ar_step = service::StepBreakdownFromProto(p.ar_step());
    out.draft_priced_by = p.step().draft_priced_by();
    out.host = service::HostTimeFromProto(resp.host());
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> PlannerClient::Profiles() {
  v1::ListProfilesResponse list;
  SPECPLAN_RETURN_IF_ERROR(
      impl_->Unary(server_, &v1::Planner::Stub::ListProfiles, v1::ListProfilesRequest(), &list));
  std::vector<std::pair<std::string, costmodel::Profile>> out;
  for (const v1::ProfileInfo& info : list.profiles()) {
    v1::GetProfileRequest req;
    req.mutable_profile()->set_gpu(info.gpu());
    req.mutable_profile()->set_model(info.model());
    req.mutable_profile()->set_dtype(info.dtype());
    req.mutable_profile()->set_engine(info.engine());  // "" from a server without engines
    req.mutable_profile()->set_tp(info.tp());          // 0 from a server before tp: 1
    v1::GetProfileResponse resp;
    SPECPLAN_RETURN_IF_ERROR(impl_->Unary(server_, &v1::Planner::Stub::GetProfile, req, &resp));
    auto j = json_util::ParseJson(resp.profile_json(), absl::StrCat("profile ", info.id()));
    auto profile =
        j.ok() ? costmodel::ProfileFromJson(*j) : absl::StatusOr<costmodel::Profile>(j.status());
    if (!profile.ok()) {
      return absl::Status(profile.status().code(),
                          absl::StrCat("server ", server_, ": profile ", info.id(), ": ",
                                       profile.status().message()));
    }
    if (!info.engine().empty()) profile->engine = info.engine();
    if (!info.engine_version().empty()) profile->engine_version = info.engine_version();
    out.emplace_back(info.id(), *std::move(profile));
  }
  return out;
}

absl::StatusOr<RemoteWhatIfResult> PlannerClient::WhatIf(const std::string& trace_jsonl,
                                                         const std::string& trace_name,
                                                         const CostRequest& cost,
                                                         const whatif::WhatIfOptions& options) {
  v1::WhatIfRequest req;
  SPECPLAN_RETURN_IF_ERROR(service::WhatIfOptionsToProto(options, &req));
  req.set_trace_jsonl(trace_jsonl);
  req.set_trace_name(trace_name);
  CostRequest c = cost;
  c.drafter = options.drafter;
  c.t_aux_s = options.t_aux_s;
  c.context = 0;
  CostToWire(c, req.mutable_cost());
  v1::WhatIfResponse resp;
  SPECPLAN_RETURN_IF_ERROR(Call(req, &resp));
  auto report = service::WhatIfReportFromProto(resp);
  if (!report.ok()) {
    return absl::InternalError(
        absl::StrCat("server ", server_, ": malformed WhatIf reply: ", report.status().message()));
  }
  RemoteWhatIfResult out;
  out.report = *std::move(report);
  out.used = {resp.latency_model(), resp.profile_id()};
  out.bundled_trace = resp.trace().bundled_path();
  out.run_us = resp.run_us();
  return out;
}

// ---------------------------------------------------------------------------------------------
// RemotePlanBackend

struct RemotePlanBackend::Scratch {
  v1::PlanTreeRequest plan_req;
  v1::PlanTreeResponse plan_resp;
  v1::PlanBatchRequest batch_req;
  v1::PlanBatchResponse batch_resp;
  v1::MergeTreesRequest merge_req;
  v1::MergeTreesResponse merge_resp;
};

RemotePlanBackend::RemotePlanBackend(std::string server, ClientOptions options)
    : client_(std::move(server), options), scratch_(std::make_unique<Scratch>()) {
  // Only the plan and the curve are needed: no kernel-facing outputs.
  v1::OutputSelection* sel = scratch_->plan_req.mutable_outputs();
  sel->set_curve(true);
  scratch_->merge_req.mutable_outputs();  // present and all false: no outputs
}

RemotePlanBackend::~RemotePlanBackend() = default;

absl::StatusOr<std::unique_ptr<RemotePlanBackend>> RemotePlanBackend::Connect(
    const std::string& server, double timeout_s, ClientOptions options) {
  auto backend = std::make_unique<RemotePlanBackend>(server, options);
  SPECPLAN_RETURN_IF_ERROR(backend->client_.WaitReady(timeout_s));
  return backend;
}

absl::Status RemotePlanBackend::PlanBestFirst(const planner::Marginals& marginals,
                                              const planner::BestFirstOptions& options,
                                              const planner::PlanCost* cost,
                                              planner::BestFirstPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  v1::PlanTreeRequest& req = scratch_->plan_req;
  service::MarginalsToProto(marginals, req.mutable_marginals());
  req.set_mode(service::BudgetModeToProto(options.mode));
  req.set_n_max(options.n_max);
  req.set_l_ar_s(options.l_ar_s);
  req.set_acceptance_scale(options.acceptance_scale);
  if (cost != nullptr) {
    SPECPLAN_CHECK(cost->latency != nullptr, "PlanCost::latency is required");
    v1::CostSpec* spec = req.mutable_cost();
    // Every T_verify the planner can ask for: s = 1 (L_AR, C(0)) .. n_max + 1.
    DenseLatencyGrid(*cost->latency, std::max(options.n_max, 0) + 1, cost->context, spec);
    spec->set_context_tokens(cost->context);
    spec->set_t_aux_s(cost->t_aux_s);
    service::DrafterCostToProto(cost->drafter, spec->mutable_drafter());
  } else {
    req.clear_cost();
  }
  ++calls_;
  SPECPLAN_RETURN_IF_ERROR(client_.Call(req, &scratch_->plan_resp));
  service::PlanFromProto(scratch_->plan_resp.plan(), plan);
  return absl::OkStatus();
}

absl::Status RemotePlanBackend::PlanBatch(const std::vector<planner::BatchRequest>& requests,
                                          const planner::BatchPlanOptions& options,
                                          const planner::BatchPlanCost* cost,
                                          planner::BatchPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  SPECPLAN_RETURN_IF_ERROR(CheckBatchWireable(requests));
  v1::PlanBatchRequest& req = scratch_->batch_req;
  req.Clear();
  service::BatchRequestToProto(requests, options, &req);
  req.mutable_outputs()->set_curve(true);  // the plan and the curve; no per-request outputs
  if (cost != nullptr) {
    SPECPLAN_CHECK(cost->latency != nullptr, "BatchPlanCost::latency is required");
    // Every pass the planner can price: S = 1 .. Σ_i (cap_i + 1) tokens, at the mean context.
    int64_t points = 0;
    double context = 0;
    for (const planner::BatchRequest& r : requests) {
      const int cap = r.n_max >= 0 ? std::min(r.n_max, options.n_max) : options.n_max;
      points += std::max(cap, 0) + 1;
      context += static_cast<double>(r.c);
    }
    const int64_t c_mean =
        requests.empty() ? 0 : std::llround(context / static_cast<double>(requests.size()));
    v1::CostSpec* spec = req.mutable_cost();
    DenseLatencyGrid(*cost->latency, points, c_mean, spec);
    spec->set_t_aux_s(cost->t_aux_s);
    service::DrafterCostToProto(cost->drafter, spec->mutable_drafter());
  }
  ++calls_;
  SPECPLAN_RETURN_IF_ERROR(client_.Call(req, &scratch_->batch_resp));
  service::BatchPlanFromProto(scratch_->batch_resp, plan, nullptr);
  return absl::OkStatus();
}

absl::Status RemotePlanBackend::Merge(const planner::Tree& a, const planner::Tree& b,
                                      const planner::MergeOptions& options,
                                      planner::MergedTree* out) {
  SPECPLAN_CHECK(out != nullptr);
  MergeRequestToWire(a, b, options, 0, &scratch_->merge_req);
  ++calls_;
  SPECPLAN_RETURN_IF_ERROR(client_.Call(scratch_->merge_req, &scratch_->merge_resp));
  service::MergedTreeFromProto(scratch_->merge_resp, out);
  return absl::OkStatus();
}

}  // namespace specplan::client
