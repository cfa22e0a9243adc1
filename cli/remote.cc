#include "cli/remote.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/engines.h"
#include "costmodel/step/step_model.h"
#include "util/status_macros.h"

namespace specplan::cli {
namespace {

// The cost the in-process command would use: the server's stored profile for (gpu, model, dtype,
// tp) when it has one (the bundled tensor-parallel profiles are keyed by tp as the in-process
// lookup keys them), of the engine --engine names (the server checks that it holds it; without
// --engine it picks one), else the bare roofline of the registry entries at that tp (or of the
// GPU spec file).
absl::StatusOr<client::CostRequest> ToCostRequest(client::PlannerClient* client,
                                                  const RemoteCost& in) {
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
  const bool user_gpu = std::filesystem::is_regular_file(in.gpu, ec);
  std::string engine;
  if (!in.engine.empty()) {
    auto parsed = costmodel::ParseEngine(in.engine);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--engine ", in.engine,
                       ": unknown (known: ", absl::StrJoin(costmodel::KnownEngines(), ", "), ")"));
    }
    engine = *std::move(parsed);
    // An engine names a stored profile; these costs go inline (a bare roofline, no engine).
    if (user_gpu) {
      return absl::InvalidArgumentError(
          absl::StrCat("--engine ", in.engine,
                       ": with --server an engine picks a stored profile "
                       "of the server, and --gpu ",
                       in.gpu, " is a GPU spec file (sent inline)"));
    }
  }

  // The step's options as in-process (ops::CostRequest::StepOptionsFor's checks, in the flags'
  // words); the server checks them again in the request's.
  if (!in.step.architecture.empty()) {
    costmodel::StepOptions o;
    o.drafter = in.step.architecture;
    o.draft_steps = in.step.draft_steps;
    o.topk = in.step.topk;
    if (absl::Status st = costmodel::ValidateStepOptions(o); !st.ok()) {
      const std::string msg(st.message());
      for (const auto& [field, flag] :
           {std::pair<std::string, std::string>{"draft_steps", "--draft-steps"},
            {"topk", "--topk"}}) {
        if (msg.rfind(field + " = ", 0) == 0) {
          return absl::InvalidArgumentError(flag + " " + msg.substr(field.size() + 3));
        }
      }
      return st;
    }
  }

  client::CostRequest out;
  out.model = model.name;
  out.dtype = in.dtype;
  out.drafter = in.drafter;
  out.t_aux_s = in.t_aux_s;
  out.context = in.context;
  out.tp = in.tp;
  out.step = in.step;
  if (user_gpu) {
    out.gpu_spec = gpu;
    return out;
  }
  out.gpu = gpu.name;
  out.engine = engine;
  if (!engine.empty()) {
    // An engine's costs, or the server's NOT_FOUND naming profile.engine: never the roofline.
    out.stored_profile = true;
    return out;
  }
  SPECPLAN_ASSIGN_OR_RETURN(std::vector<client::ProfileKey> profiles, client->ListProfiles());
  const std::string dtype = costmodel::DTypeName(in.dtype);
  for (const client::ProfileKey& p : profiles) {
    if (p.gpu == gpu.name && p.model == model.name && p.dtype == dtype && p.tp == in.tp) {
      out.stored_profile = true;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<RemoteResult> RemotePlanTree(const std::string& server,
                                            const planner::Marginals& marginals,
                                            const planner::BestFirstOptions& options,
                                            const RemoteCost* cost, int64_t c,
                                            planner::BestFirstPlan* plan,
                                            planner::TreeOutputs* outputs) {
  client::PlannerClient client(server);
  if (cost == nullptr) return client.PlanTree(marginals, options, nullptr, c, plan, outputs);
  SPECPLAN_ASSIGN_OR_RETURN(client::CostRequest request, ToCostRequest(&client, *cost));
  return client.PlanTree(marginals, options, &request, c, plan, outputs);
}

absl::StatusOr<RemoteResult> RemotePlanBatch(const std::string& server,
                                             const std::vector<planner::BatchRequest>& requests,
                                             const planner::BatchPlanOptions& options,
                                             const RemoteCost* cost, planner::BatchPlan* plan,
                                             std::vector<planner::TreeOutputs>* outputs) {
  client::PlannerClient client(server);
  if (cost == nullptr) return client.PlanBatch(requests, options, nullptr, plan, outputs);
  SPECPLAN_ASSIGN_OR_RETURN(client::CostRequest request, ToCostRequest(&client, *cost));
  return client.PlanBatch(requests, options, &request, plan, outputs);
}

absl::Status RemoteMergeTrees(const std::string& server, const planner::Tree& a,
                              const planner::Tree& b, const planner::MergeOptions& options,
                              int64_t c, planner::MergedTree* merged,
                              planner::TreeOutputs* outputs) {
  return client::PlannerClient(server).MergeTrees(a, b, options, c, merged, outputs);
}

absl::StatusOr<RemoteEstimate> RemoteEstimateLatency(const std::string& server,
                                                     const RemoteCost& cost, int64_t s) {
  client::PlannerClient client(server);
  SPECPLAN_ASSIGN_OR_RETURN(client::CostRequest request, ToCostRequest(&client, cost));
  return client.EstimateLatency(request, s);
}

absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> RemoteProfiles(
    const std::string& server) {
  return client::PlannerClient(server).Profiles();
}

absl::StatusOr<RemoteWhatIfResult> RemoteWhatIf(const std::string& server,
                                                const std::string& trace_jsonl,
                                                const std::string& trace_name,
                                                const RemoteCost& cost,
                                                const whatif::WhatIfOptions& options) {
  client::PlannerClient client(server);
  SPECPLAN_ASSIGN_OR_RETURN(client::CostRequest request, ToCostRequest(&client, cost));
  return client.WhatIf(trace_jsonl, trace_name, request, options);
}

}  // namespace specplan::cli
