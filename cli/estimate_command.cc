// specplan estimate: roofline terms and predicted verification latency for one (s, c) point.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/remote.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency_models.h"
#include "costmodel/model_registry.h"
#include "costmodel/profile.h"
#include "costmodel/roofline.h"

namespace specplan::cli {
namespace {

struct EstimateArgs : CostFlags {
  int64_t s = 1;
  int64_t c = 0;
  int gamma = 16;
  double t_net_ms = 0, t_head_ms = 0, t_light_ms = 0;
  bool json = false;
  std::string server;
};

int RunEstimate(const EstimateArgs& a) {
  using namespace specplan::costmodel;
  auto dtype = ParseDType(a.dtype);
  if (!dtype.ok()) {
    std::cerr << "specplan estimate: --" << dtype.status().message() << "\n";
    return 1;
  }
  auto drafter_cls = ParseDrafterClass(a.drafter);
  if (!drafter_cls.ok()) {
    std::cerr << "specplan estimate: --" << drafter_cls.status().message() << "\n";
    return 1;
  }
  DrafterCost drafter;
  drafter.cls = *drafter_cls;
  drafter.gamma = a.gamma;
  drafter.t_net_s = a.t_net_ms * 1e-3;
  drafter.t_head_s = a.t_head_ms * 1e-3;
  drafter.t_light_s = a.t_light_ms * 1e-3;
  const int64_t n = a.s - 1;

  // What the output reports; filled in-process or from the server.
  ModelSpec model_spec;
  GpuSpec gpu_spec;
  std::string kind, profile_path;
  double predicted = 0, draft_s = 0, aux_s = 0, verify_s = 0, cycle_s = 0;
  if (!a.server.empty()) {
    if (!a.profile.empty() || !a.latency_model.empty()) {
      std::cerr << "specplan estimate: --profile and --latency-model are local; with --server the "
                   "server's stored profile for --gpu/--model/--dtype and its default model are "
                   "used\n";
      return 1;
    }
    auto m = ResolveModel(a.model);
    auto g = ResolveGpu(a.gpu);
    if (!m.ok() || !g.ok()) {
      std::cerr << "specplan estimate: " << (m.ok() ? g.status() : m.status()).message() << "\n";
      return 1;
    }
    model_spec = *m;
    model_spec.dtype = *dtype;
    model_spec.tp = a.tp == 0 ? 1 : a.tp;
    gpu_spec = *g;
    if (const std::string why = TensorParallelProblem(model_spec, gpu_spec, model_spec.tp);
        !why.empty()) {
      std::cerr << "specplan estimate: --tp " << model_spec.tp << ": " << why << "\n";
      return 1;
    }
    cli::RemoteCost rc{a.model, a.gpu, *dtype, drafter, a.t_aux_ms * 1e-3, a.c};
    rc.tp = model_spec.tp;
    auto remote = cli::RemoteEstimateLatency(a.server, rc, a.s);
    if (!remote.ok()) {
      std::cerr << "specplan estimate: " << remote.status().message() << "\n";
      return 1;
    }
    kind = remote->used.latency_model;
    profile_path = remote->used.profile;
    predicted = verify_s = remote->verify_s;
    draft_s = remote->draft_s;
    aux_s = remote->aux_s;
    cycle_s = remote->cycle_s;
  } else {
    auto resolved = ResolveLatencyModel(a.model, a.gpu, a.profile, *dtype, a.latency_model, a.tp);
    if (!resolved.ok()) {
      std::cerr << "specplan estimate: " << resolved.status().message() << "\n";
      return 1;
    }
    model_spec = resolved->model_spec;
    gpu_spec = resolved->gpu_spec;
    kind = resolved->model->Kind();
    profile_path = resolved->profile_path;
    predicted = resolved->model->VerifySeconds(a.s, a.c);
    const CycleCost cycle(resolved->model.get(), drafter, a.t_aux_ms * 1e-3, a.c);
    draft_s = cycle.DraftSeconds();
    aux_s = cycle.AuxSeconds();
    verify_s = cycle.VerifySeconds(n);
    cycle_s = cycle.Seconds(n);
  }
  const RooflineEstimate e = EstimateRoofline(model_spec, gpu_spec, a.s, a.c);

  if (a.json) {
    nlohmann::json j = RooflineEstimateToJson(e);
    j["model"] = model_spec.name;
    j["gpu"] = gpu_spec.name;
    j["dtype"] = DTypeName(model_spec.dtype);
    j["tp"] = model_spec.tp;
    if (model_spec.is_moe()) j["experts_streamed"] = ExpectedDistinctExperts(model_spec, a.s);
    j["s"] = a.s;
    j["c"] = a.c;
    j["predicted_s"] = predicted;
    j["latency_model"] = kind;
    j["profile"] = profile_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(profile_path);
    j["cycle"] = {{"n", n},
                  {"drafter", DrafterClassName(drafter.cls)},
                  {"draft_s", draft_s},
                  {"aux_s", aux_s},
                  {"verify_s", verify_s},
                  {"cycle_s", cycle_s}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const RooflineTerms& t = e.terms;
  if (model_spec.tp > 1) {
    std::cout << absl::StrFormat(
        "tensor parallel: tp = %d GPUs; terms below are per GPU; %d all-reduces of %.4g bytes = "
        "%.4f ms\n",
        model_spec.tp, t.allreduces, t.allreduce_bytes, e.comm_s * 1e3);
  }
  if (model_spec.is_moe()) {
    std::cout << absl::StrFormat(
        "MoE: %d experts, top-%d; %d tokens stream %.2f distinct experts per layer (%.1f%%)\n",
        model_spec.experts, model_spec.experts_active, a.s,
        ExpectedDistinctExperts(model_spec, a.s),
        100 * ExpectedDistinctExperts(model_spec, a.s) / model_spec.experts);
  }
  std::cout << absl::StrFormat(
      "model %s on %s (%s), s = %d new tokens over c = %d cached\n"
      "  FLOPs  %.4g  (attention %.4g = proj %.4g + scores %.4g, FFN %.4g, LM head %.4g)\n"
      "  bytes  %.4g  (weights %.4g, KV cache %.4g, activations %.4g)\n"
      "  roofline  compute %.4f ms, memory %.4f ms%s -> %.4f ms (%s-bound)\n"
      "  predicted %.4f ms (%s%s%s)\n"
      "  cycle C(n=%d) = draft %.4f + aux %.4f + verify %.4f = %.4f ms\n",
      model_spec.name, gpu_spec.name, DTypeName(model_spec.dtype), a.s, a.c, t.total_flops(),
      t.attention_flops(), t.attn_proj_flops, t.attn_score_flops, t.ffn_flops, t.lm_head_flops,
      t.total_bytes(), t.weight_bytes, t.kv_bytes, t.activation_bytes, e.compute_s * 1e3,
      e.memory_s * 1e3,
      model_spec.tp > 1 ? absl::StrFormat(", all-reduce %.4f ms", e.comm_s * 1e3) : "",
      e.seconds * 1e3, BoundName(e.bound), predicted * 1e3, kind,
      profile_path.empty() ? "" : ", profile ", profile_path, n, draft_s * 1e3, aux_s * 1e3,
      verify_s * 1e3, cycle_s * 1e3);
  return 0;
}

}  // namespace

void RegisterEstimateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EstimateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "estimate", "Roofline FLOPs/bytes and predicted latency of one verification pass");
  const CostFlagOptions cost = AddCostFlags(cmd, args.get());
  cost.model->required();
  cost.gpu->required();
  cmd->add_option("--s", args->s, "Tokens verified in the pass (draft nodes + 1 root)")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--c", args->c, "Cached context tokens")
      ->required()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--gamma", args->gamma, "Drafted positions per cycle")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--t-net-ms", args->t_net_ms, "Draft network forward, ms (per step for ar)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--t-head-ms", args->t_head_ms, "Draft LM head, ms (per step for ar)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--t-light-ms", args->t_light_ms, "Light causal-correction step, ms (causal)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->add_option("--server", args->server,
                  "Ask a specplan-server at HOST:PORT for the prediction (same output)");
  cmd->callback([args, exit_code] { *exit_code = RunEstimate(*args); });
}

}  // namespace specplan::cli
