#include "service/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/model_spec.h"
#include "service/convert.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::client {
namespace {

namespace v1 = ::specplan::v1;

absl::Status FromGrpc(const std::string& server, const grpc::Status& st) {
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat("server ", server, ": ", st.error_message()));
}

template <class T, class R>
void Assign(const R& repeated, std::vector<T>* out) {
  out->assign(repeated.begin(), repeated.end());
}

void OutputsFromWire(const v1::TreeOutputs& in, planner::TreeOutputs* out) {
  out->size = in.size();
  out->max_depth = in.max_depth();
  out->mask_words = in.mask_words();
  out->num_leaves = in.num_leaves();
  out->retrieve_width = in.retrieve_width();
  Assign(in.positions(), &out->positions);
  Assign(in.parents(), &out->parents);
  Assign(in.mask_packed(), &out->mask_packed);
  out->mask_dense.assign(in.mask_dense().begin(), in.mask_dense().end());
  Assign(in.retrieve(), &out->retrieve);
}

void TreeFromWire(const v1::Tree& in, planner::Tree* out) {
  Assign(in.tokens(), &out->tokens);
  Assign(in.parents(), &out->parents);
  Assign(in.depths(), &out->depths);
  Assign(in.path_probs(), &out->path_probs);
}

void MarginalsToWire(const planner::Marginals& in, v1::Marginals* m) {
  m->set_root_token(in.root_token);
  m->set_gamma(in.gamma);
  m->set_k(in.k);
  m->mutable_tokens()->Assign(in.tokens.begin(), in.tokens.end());
  m->mutable_probs()->Assign(in.probs.begin(), in.probs.end());
}

v1::BudgetMode ModeToWire(planner::BudgetMode mode) {
  switch (mode) {
    case planner::BudgetMode::kFixed:
      return v1::BUDGET_MODE_FIXED;
    case planner::BudgetMode::kController:
      return v1::BUDGET_MODE_CONTROLLER;
    case planner::BudgetMode::kScan:
      return v1::BUDGET_MODE_SCAN;
  }
  return v1::BUDGET_MODE_UNSPECIFIED;
}

void DrafterToWire(const costmodel::DrafterCost& in, v1::DrafterCost* d) {
  d->set_drafter_class(costmodel::DrafterClassName(in.cls));
  d->set_gamma(in.gamma);
  d->set_t_net_s(in.t_net_s);
  d->set_t_head_s(in.t_head_s);
  d->set_t_light_s(in.t_light_s);
}

void PlanFromWire(const v1::Plan& p, planner::BestFirstPlan* plan) {
  TreeFromWire(p.tree(), &plan->tree);
  plan->n = p.n();
  plan->expected_accepted = p.expected_accepted();
  plan->cycle_s = p.cycle_s();
  plan->speedup = p.speedup();
  plan->l_ar_s = p.l_ar_s();
  plan->lattice_exhausted = p.lattice_exhausted();
  plan->curve.clear();
  const v1::Curve& curve = p.curve();
  for (int i = 0; i < curve.n_size(); ++i) {
    plan->curve.push_back(
        {curve.n(i), curve.expected_accepted(i), curve.cycle_s(i), curve.speedup(i)});
  }
}

void MergedFromWire(const v1::MergeTreesResponse& resp, planner::MergedTree* merged) {
  TreeFromWire(resp.tree(), &merged->tree);
  Assign(resp.phi_a(), &merged->phi_a);
  Assign(resp.phi_b(), &merged->phi_b);
  merged->source.clear();
  for (int s : resp.source()) merged->source.push_back(static_cast<planner::MergeSource>(s));
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

struct PlannerClient::Impl {
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Planner::Stub> stub;

  void SetDeadline(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(options.deadline_s)));
  }
};

PlannerClient::PlannerClient(std::string server, ClientOptions options)
    : server_(std::move(server)), impl_(std::make_unique<Impl>()) {
  SPECPLAN_CHECK(options.deadline_s > 0, "ClientOptions::deadline_s must be > 0");
  SPECPLAN_CHECK(options.whatif_deadline_s > 0, "ClientOptions::whatif_deadline_s must be > 0");
  impl_->options = options;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  impl_->channel = grpc::CreateCustomChannel(server_, grpc::InsecureChannelCredentials(), args);
  impl_->stub = v1::Planner::NewStub(impl_->channel);
}

PlannerClient::~PlannerClient() = default;

absl::Status PlannerClient::WaitReady(double timeout_s) {
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  if (!impl_->channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(
        absl::StrCat("server ", server_, ": not reachable within ", timeout_s, " s"));
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  v1::PingResponse resp;
  return FromGrpc(server_, impl_->stub->Ping(&ctx, v1::PingRequest(), &resp));
}

absl::Status PlannerClient::Call(const v1::PlanTreeRequest& req, v1::PlanTreeResponse* resp) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(&ctx);
  resp->Clear();
  return FromGrpc(server_, impl_->stub->PlanTree(&ctx, req, resp));
}

absl::Status PlannerClient::Call(const v1::MergeTreesRequest& req, v1::MergeTreesResponse* resp) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(&ctx);
  resp->Clear();
  return FromGrpc(server_, impl_->stub->MergeTrees(&ctx, req, resp));
}

absl::Status PlannerClient::Call(const v1::WhatIfRequest& req, v1::WhatIfResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(
                       std::chrono::duration<double>(impl_->options.whatif_deadline_s)));
  resp->Clear();
  return FromGrpc(server_, impl_->stub->WhatIf(&ctx, req, resp));
}

namespace {

// The cost the in-process commands would use: the server's stored profile for
// (gpu, model, dtype) when it has one, else the bare roofline of the registry entries.
absl::Status FillCost(v1::Planner::Stub* stub, const std::string& server,
                      const std::function<void(grpc::ClientContext*)>& set_deadline,
                      const RemoteCost& in, v1::CostSpec* out) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(in.model, ec) ||
      std::filesystem::is_directory(in.model, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model ", in.model,
                     ": with --server the model must be a registry name (the server "
                     "cannot read local config files)"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::ModelSpec model, costmodel::LookupModel(in.model));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::GpuSpec gpu, costmodel::ResolveGpu(in.gpu));
  const std::string dtype = costmodel::DTypeName(in.dtype);
  const bool user_gpu = std::filesystem::is_regular_file(in.gpu, ec);

  bool stored = false;
  if (!user_gpu && in.tp == 1) {
    grpc::ClientContext ctx;
    set_deadline(&ctx);
    v1::ListProfilesResponse list;
    SPECPLAN_RETURN_IF_ERROR(FromGrpc(server, stub->ListProfiles(&ctx, {}, &list)));
    for (const v1::ProfileInfo& p : list.profiles()) {
      if (p.gpu() == gpu.name && p.model() == model.name && p.dtype() == dtype) stored = true;
    }
  }
  if (stored) {
    v1::ProfileRef* ref = out->mutable_profile();
    ref->set_gpu(gpu.name);
    ref->set_model(model.name);
    ref->set_dtype(dtype);
  } else {
    v1::InlineCostModel* m = out->mutable_inline_model();
    m->set_model(model.name);
    m->set_dtype(dtype);
    if (user_gpu) {
      v1::GpuSpec* g = m->mutable_gpu_spec();
      g->set_name(gpu.name);
      g->set_peak_flops(gpu.peak_flops);
      g->set_mem_bw(gpu.mem_bw);
      g->set_mem_bytes(gpu.mem_bytes);
      g->set_link_bw(gpu.link_bw);
      g->set_link_latency_s(gpu.link_latency_s);
    } else {
      m->set_gpu(gpu.name);
    }
    if (in.tp != 1) m->set_tp(static_cast<int32_t>(in.tp));
  }
  out->set_context_tokens(in.context);
  DrafterToWire(in.drafter, out->mutable_drafter());
  out->set_t_aux_s(in.t_aux_s);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RemoteResult> PlannerClient::PlanTree(const planner::Marginals& marginals,
                                                     const planner::BestFirstOptions& options,
                                                     const RemoteCost* cost, int64_t c,
                                                     planner::BestFirstPlan* plan,
                                                     planner::TreeOutputs* outputs) {
  v1::PlanTreeRequest req;
  MarginalsToWire(marginals, req.mutable_marginals());
  if (cost != nullptr) {
    SPECPLAN_RETURN_IF_ERROR(FillCost(
        impl_->stub.get(), server_, [this](grpc::ClientContext* ctx) { impl_->SetDeadline(ctx); },
        *cost, req.mutable_cost()));
  }
  req.set_mode(ModeToWire(options.mode));
  req.set_n_max(options.n_max);
  req.set_l_ar_s(options.l_ar_s);
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
  PlanFromWire(resp.plan(), plan);
  OutputsFromWire(resp.outputs(), outputs);
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
  MergedFromWire(resp, merged);
  OutputsFromWire(resp.outputs(), outputs);
  return absl::OkStatus();
}

absl::StatusOr<RemoteEstimate> PlannerClient::EstimateLatency(const RemoteCost& cost, int64_t s) {
  v1::EstimateLatencyRequest req;
  SPECPLAN_RETURN_IF_ERROR(FillCost(
      impl_->stub.get(), server_, [this](grpc::ClientContext* ctx) { impl_->SetDeadline(ctx); },
      cost, req.mutable_cost()));
  req.add_s(s);
  req.add_c(cost.context);
  grpc::ClientContext ctx;
  impl_->SetDeadline(&ctx);
  v1::EstimateLatencyResponse resp;
  SPECPLAN_RETURN_IF_ERROR(FromGrpc(server_, impl_->stub->EstimateLatency(&ctx, req, &resp)));
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
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> PlannerClient::Profiles() {
  v1::ListProfilesResponse list;
  {
    grpc::ClientContext ctx;
    impl_->SetDeadline(&ctx);
    SPECPLAN_RETURN_IF_ERROR(FromGrpc(server_, impl_->stub->ListProfiles(&ctx, {}, &list)));
  }
  std::vector<std::pair<std::string, costmodel::Profile>> out;
  for (const v1::ProfileInfo& info : list.profiles()) {
    v1::GetProfileRequest req;
    req.mutable_profile()->set_gpu(info.gpu());
    req.mutable_profile()->set_model(info.model());
    req.mutable_profile()->set_dtype(info.dtype());
    grpc::ClientContext ctx;
    impl_->SetDeadline(&ctx);
    v1::GetProfileResponse resp;
    SPECPLAN_RETURN_IF_ERROR(FromGrpc(server_, impl_->stub->GetProfile(&ctx, req, &resp)));
    nlohmann::json j = nlohmann::json::parse(resp.profile_json(), nullptr, false);
    auto profile = costmodel::ProfileFromJson(j);
    if (!profile.ok()) {
      return absl::Status(profile.status().code(),
                          absl::StrCat("server ", server_, ": profile ", info.id(), ": ",
                                       profile.status().message()));
    }
    out.emplace_back(info.id(), *std::move(profile));
  }
  return out;
}

absl::StatusOr<RemoteWhatIfResult> PlannerClient::WhatIf(const std::string& trace_jsonl,
                                                         const std::string& trace_name,
                                                         const RemoteCost& cost,
                                                         const whatif::WhatIfOptions& options) {
  v1::WhatIfRequest req;
  SPECPLAN_RETURN_IF_ERROR(service::WhatIfOptionsToProto(options, &req));
  req.set_trace_jsonl(trace_jsonl);
  req.set_trace_name(trace_name);
  RemoteCost c = cost;
  c.drafter = options.drafter;
  c.t_aux_s = options.t_aux_s;
  c.context = 0;
  SPECPLAN_RETURN_IF_ERROR(FillCost(
      impl_->stub.get(), server_, [this](grpc::ClientContext* ctx) { impl_->SetDeadline(ctx); }, c,
      req.mutable_cost()));
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
// One-shot forms

absl::StatusOr<RemoteResult> RemotePlanTree(const std::string& server,
                                            const planner::Marginals& marginals,
                                            const planner::BestFirstOptions& options,
                                            const RemoteCost* cost, int64_t c,
                                            planner::BestFirstPlan* plan,
                                            planner::TreeOutputs* outputs) {
  return PlannerClient(server).PlanTree(marginals, options, cost, c, plan, outputs);
}

absl::Status RemoteMergeTrees(const std::string& server, const planner::Tree& a,
                              const planner::Tree& b, const planner::MergeOptions& options,
                              int64_t c, planner::MergedTree* merged,
                              planner::TreeOutputs* outputs) {
  return PlannerClient(server).MergeTrees(a, b, options, c, merged, outputs);
}

absl::StatusOr<RemoteEstimate> RemoteEstimateLatency(const std::string& server,
                                                     const RemoteCost& cost, int64_t s) {
  return PlannerClient(server).EstimateLatency(cost, s);
}

absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> RemoteProfiles(
    const std::string& server) {
  return PlannerClient(server).Profiles();
}

absl::StatusOr<RemoteWhatIfResult> RemoteWhatIf(const std::string& server,
                                                const std::string& trace_jsonl,
                                                const std::string& trace_name,
                                                const RemoteCost& cost,
                                                const whatif::WhatIfOptions& options) {
  return PlannerClient(server).WhatIf(trace_jsonl, trace_name, cost, options);
}

// ---------------------------------------------------------------------------------------------
// RemotePlanBackend

struct RemotePlanBackend::Scratch {
  v1::PlanTreeRequest plan_req;
  v1::PlanTreeResponse plan_resp;
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
  MarginalsToWire(marginals, req.mutable_marginals());
  req.set_mode(ModeToWire(options.mode));
  req.set_n_max(options.n_max);
  req.set_l_ar_s(options.l_ar_s);
  if (cost != nullptr) {
    SPECPLAN_CHECK(cost->latency != nullptr, "PlanCost::latency is required");
    v1::CostSpec* spec = req.mutable_cost();
    // Every T_verify the planner can ask for: s = 1 (L_AR, C(0)) .. n_max + 1.
    v1::LatencyGrid* grid = spec->mutable_latency_grid();
    grid->clear_s();
    grid->clear_seconds();
    const int64_t points = std::max(options.n_max, 0) + 1;
    grid->mutable_s()->Reserve(static_cast<int>(points));
    grid->mutable_seconds()->Reserve(static_cast<int>(points));
    for (int64_t s = 1; s <= points; ++s) {
      grid->add_s(s);
      grid->add_seconds(cost->latency->VerifySeconds(s, cost->context));
    }
    spec->set_context_tokens(cost->context);
    spec->set_t_aux_s(cost->t_aux_s);
    DrafterToWire(cost->drafter, spec->mutable_drafter());
  } else {
    req.clear_cost();
  }
  ++calls_;
  SPECPLAN_RETURN_IF_ERROR(client_.Call(req, &scratch_->plan_resp));
  PlanFromWire(scratch_->plan_resp.plan(), plan);
  return absl::OkStatus();
}

absl::Status RemotePlanBackend::Merge(const planner::Tree& a, const planner::Tree& b,
                                      const planner::MergeOptions& options,
                                      planner::MergedTree* out) {
  SPECPLAN_CHECK(out != nullptr);
  MergeRequestToWire(a, b, options, 0, &scratch_->merge_req);
  ++calls_;
  SPECPLAN_RETURN_IF_ERROR(client_.Call(scratch_->merge_req, &scratch_->merge_resp));
  MergedFromWire(scratch_->merge_resp, out);
  return absl::OkStatus();
}

}  // namespace specplan::client
