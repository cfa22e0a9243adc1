#include "cli/remote.h"

#include <chrono>
#include <filesystem>
#include <memory>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/model_spec.h"
#include "service/convert.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "util/status_macros.h"

namespace specplan::cli {
namespace {

namespace v1 = ::specplan::v1;
constexpr int kDeadlineSeconds = 30;

std::unique_ptr<v1::Planner::Stub> Connect(const std::string& server) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return v1::Planner::NewStub(
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
}

void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(kDeadlineSeconds));
}

absl::Status FromGrpc(const std::string& server, const grpc::Status& st) {
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat("server ", server, ": ", st.error_message()));
}

// The cost the in-process commands would use: the server's stored profile for
// (gpu, model, dtype) when it has one, else the bare roofline of the registry entries.
absl::Status FillCost(v1::Planner::Stub* stub, const std::string& server, const RemoteCost& in,
                      v1::CostSpec* out) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(in.model, ec) ||
      std::filesystem::is_directory(in.model, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model ", in.model, ": with --server the model must be a registry name (the server "
        "cannot read local config files)"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::ModelSpec model, costmodel::LookupModel(in.model));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::GpuSpec gpu, costmodel::ResolveGpu(in.gpu));
  const std::string dtype = costmodel::DTypeName(in.dtype);
  const bool user_gpu = std::filesystem::is_regular_file(in.gpu, ec);

  bool stored = false;
  if (!user_gpu) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
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
    } else {
      m->set_gpu(gpu.name);
    }
  }
  out->set_context_tokens(in.context);
  v1::DrafterCost* d = out->mutable_drafter();
  d->set_drafter_class(costmodel::DrafterClassName(in.drafter.cls));
  d->set_gamma(in.drafter.gamma);
  d->set_t_net_s(in.drafter.t_net_s);
  d->set_t_head_s(in.drafter.t_head_s);
  d->set_t_light_s(in.drafter.t_light_s);
  out->set_t_aux_s(in.t_aux_s);
  return absl::OkStatus();
}

template <class T, class R>
void Assign(const R& repeated, std::vector<T>* out) {
  out->assign(repeated.begin(), repeated.end());
}

void OutputsFromProto(const v1::TreeOutputs& in, planner::TreeOutputs* out) {
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

}  // namespace

absl::StatusOr<RemoteResult> RemotePlanTree(const std::string& server,
                                            const planner::Marginals& marginals,
                                            const planner::BestFirstOptions& options,
                                            const RemoteCost* cost, int64_t c,
                                            planner::BestFirstPlan* plan,
                                            planner::TreeOutputs* outputs) {
  auto stub = Connect(server);
  v1::PlanTreeRequest req;
  v1::Marginals* m = req.mutable_marginals();
  m->set_root_token(marginals.root_token);
  m->set_gamma(marginals.gamma);
  m->set_k(marginals.k);
  m->mutable_tokens()->Assign(marginals.tokens.begin(), marginals.tokens.end());
  m->mutable_probs()->Assign(marginals.probs.begin(), marginals.probs.end());
  if (cost != nullptr) SPECPLAN_RETURN_IF_ERROR(FillCost(stub.get(), server, *cost, req.mutable_cost()));
  switch (options.mode) {
    case planner::BudgetMode::kFixed: req.set_mode(v1::BUDGET_MODE_FIXED); break;
    case planner::BudgetMode::kController: req.set_mode(v1::BUDGET_MODE_CONTROLLER); break;
    case planner::BudgetMode::kScan: req.set_mode(v1::BUDGET_MODE_SCAN); break;
  }
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

  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::PlanTreeResponse resp;
  SPECPLAN_RETURN_IF_ERROR(FromGrpc(server, stub->PlanTree(&ctx, req, &resp)));
  const v1::Plan& p = resp.plan();
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
  OutputsFromProto(resp.outputs(), outputs);
  return RemoteResult{resp.latency_model(), resp.profile_id()};
}

absl::Status RemoteMergeTrees(const std::string& server, const planner::Tree& a,
                              const planner::Tree& b, const planner::MergeOptions& options,
                              int64_t c, planner::MergedTree* merged,
                              planner::TreeOutputs* outputs) {
  auto stub = Connect(server);
  v1::MergeTreesRequest req;
  service::TreeToProto(a, req.mutable_a());
  service::TreeToProto(b, req.mutable_b());
  req.set_dedup(options.dedup);
  req.set_budget(options.n_max >= 0);
  if (options.n_max >= 0) req.set_n_max(options.n_max);
  req.set_position_offset(c);
  v1::OutputSelection* sel = req.mutable_outputs();
  sel->set_positions(true);
  sel->set_parents(true);
  sel->set_retrieve(true);
  sel->set_packed_mask(true);
  sel->set_dense_mask(true);
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::MergeTreesResponse resp;
  SPECPLAN_RETURN_IF_ERROR(FromGrpc(server, stub->MergeTrees(&ctx, req, &resp)));
  TreeFromWire(resp.tree(), &merged->tree);
  Assign(resp.phi_a(), &merged->phi_a);
  Assign(resp.phi_b(), &merged->phi_b);
  merged->source.clear();
  for (int s : resp.source()) merged->source.push_back(static_cast<planner::MergeSource>(s));
  OutputsFromProto(resp.outputs(), outputs);
  return absl::OkStatus();
}

absl::StatusOr<RemoteEstimate> RemoteEstimateLatency(const std::string& server,
                                                     const RemoteCost& cost, int64_t s) {
  auto stub = Connect(server);
  v1::EstimateLatencyRequest req;
  SPECPLAN_RETURN_IF_ERROR(FillCost(stub.get(), server, cost, req.mutable_cost()));
  req.add_s(s);
  req.add_c(cost.context);
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::EstimateLatencyResponse resp;
  SPECPLAN_RETURN_IF_ERROR(FromGrpc(server, stub->EstimateLatency(&ctx, req, &resp)));
  if (resp.points_size() != 1) {
    return absl::InternalError(
        absl::StrCat("server ", server, ": expected 1 latency point, got ", resp.points_size()));
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

absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> RemoteProfiles(
    const std::string& server) {
  auto stub = Connect(server);
  v1::ListProfilesResponse list;
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    SPECPLAN_RETURN_IF_ERROR(FromGrpc(server, stub->ListProfiles(&ctx, {}, &list)));
  }
  std::vector<std::pair<std::string, costmodel::Profile>> out;
  for (const v1::ProfileInfo& info : list.profiles()) {
    v1::GetProfileRequest req;
    req.mutable_profile()->set_gpu(info.gpu());
    req.mutable_profile()->set_model(info.model());
    req.mutable_profile()->set_dtype(info.dtype());
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::GetProfileResponse resp;
    SPECPLAN_RETURN_IF_ERROR(FromGrpc(server, stub->GetProfile(&ctx, req, &resp)));
    nlohmann::json j = nlohmann::json::parse(resp.profile_json(), nullptr, false);
    auto profile = costmodel::ProfileFromJson(j);
    if (!profile.ok()) {
      return absl::Status(profile.status().code(), absl::StrCat("server ", server, ": profile ",
                                                                info.id(), ": ",
                                                                profile.status().message()));
    }
    out.emplace_back(info.id(), *std::move(profile));
  }
  return out;
}

}  // namespace specplan::cli
