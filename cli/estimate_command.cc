// specplan estimate: roofline terms and predicted verification latency for one (s, c) point, or
// for one ragged pass of B such sequences (--b); with a drafter architecture (--drafter eagle3,
// the default) the engine's whole step (verify + draft + sample + host) and the plain decoding
// step; with --acceptance the speedup a chain of K = s - 1 gives.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/remote.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline.h"
#include "ops/estimate.h"

namespace specplan::cli {
namespace {

struct EstimateArgs : CostFlags {
  int64_t s = 1;
  int64_t c = 0;
  int64_t b = 1;  // sequences in the pass, each verifying s tokens over c cached
  int gamma = 16;
  double t_net_ms = 0, t_head_ms = 0, t_light_ms = 0;
  bool json = false;
  std::string server;
  AcceptanceFlags acceptance;
  bool warn_memory = false;  // --warn-memory: a pass that cannot fit is a warning, not an error
};

// Prints "specplan estimate: <message>" and returns 1: the memory check's refusal with the advice
// to pass --warn-memory, an operation's error (`in_flags`) with its fields named as flags.
int Refuse(const absl::Status& st, bool in_flags) {
  if (st.code() == absl::StatusCode::kResourceExhausted && absl::StartsWith(st.message(), "b = ")) {
    std::cerr << "specplan estimate: " << st.message() << " (--warn-memory answers anyway)\n";
  } else {
    std::cerr << "specplan estimate: " << (in_flags ? CostErrorInFlags(st) : st).message() << "\n";
  }
  return 1;
}

// The pass priced by a specplan-server (EstimateLatency): the model and GPU from the registry, the
// memory check, then the server's latency model, cycle and step into `r`.
absl::Status EstimateRemote(const EstimateArgs& a, const ops::EstimateRequest& req,
                            ops::EstimateResult* r) {
  using namespace specplan::costmodel;
  if (a.b != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--b ", a.b, ": local only (with --server the server prices one sequence)"));
  }
  if (absl::Status st = a.CheckRemote(); !st.ok()) return st;
  auto parsed = a.Parse(a.t_net_ms);
  if (!parsed.ok()) return parsed.status();
  auto m = ResolveModel(a.model);
  if (!m.ok()) return m.status();
  auto g = ResolveGpu(a.gpu);
  if (!g.ok()) return g.status();
  r->model_spec = *m;
  r->model_spec.dtype = parsed->dtype;
  r->model_spec.tp = a.tp == 0 ? 1 : a.tp;
  r->gpu_spec = *g;
  if (const std::string why = TensorParallelProblem(r->model_spec, r->gpu_spec, r->model_spec.tp);
      !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--tp ", r->model_spec.tp, ": ", why));
  }
  if (absl::Status st = ops::CheckMemory(req, r->model_spec, r->gpu_spec, &r->memory_warning);
      !st.ok()) {
    return st;
  }
  auto remote_cost = a.ToRemoteCost(parsed->dtype, ops::EstimateDrafter(req), a.c);
  if (!remote_cost.ok()) return remote_cost.status();
  const RemoteCost& rc = *remote_cost;
  auto remote = cli::RemoteEstimateLatency(a.server, rc, a.s);
  if (!remote.ok()) return remote.status();
  r->latency_model = remote->used.latency_model;
  r->profile = remote->used.profile;
  const UsedEngine used = RemoteProfileEngine(a.server, r->profile);
  r->engine = used.engine;
  r->engine_version = used.version;
  r->predicted_s = r->verify_s = remote->verify_s;
  r->draft_s = remote->draft_s;
  r->aux_s = remote->aux_s;
  r->cycle_s = remote->cycle_s;
  // The server's step model (its profile's drafter tables and engine), printed as the
  // in-process one is.
  r->step = remote->step;
  r->ar_step = remote->ar_step;
  r->draft_priced_by = remote->draft_priced_by;
  r->host = remote->host;
  ops::CompleteEstimate(req, r);
  return absl::OkStatus();
}

void PrintText(const ops::EstimateRequest& req, const ops::EstimateResult& r) {
  using namespace specplan::costmodel;
  const ModelSpec& model_spec = r.model_spec;
  const RooflineEstimate& e = r.roofline;
  const RooflineTerms& t = e.terms;
  const double tokens = static_cast<double>(req.b * req.s);
  if (model_spec.tp > 1) {
    std::cout << absl::StrFormat(
        "tensor parallel: tp = %d GPUs; terms below are per GPU; %d all-reduces of %.4g bytes = "
        "%.4f ms\n",
        model_spec.tp, t.allreduces, t.allreduce_bytes, e.comm_s * 1e3);
  }
  if (model_spec.is_moe()) {
    std::cout << absl::StrFormat(
        "MoE: %d experts, top-%d; %d tokens stream %.2f distinct experts per layer (%.1f%%)\n",
        model_spec.experts, model_spec.experts_active, static_cast<int64_t>(tokens),
        ExpectedDistinctExperts(model_spec, tokens),
        100 * ExpectedDistinctExperts(model_spec, tokens) / model_spec.experts);
  }
  const std::string shape =
      req.b == 1 ? absl::StrFormat("s = %d new tokens over c = %d cached", req.s, req.c)
                 : absl::StrFormat(
                       "b = %d sequences in one pass, each s = %d new tokens over c = "
                       "%d cached",
                       req.b, req.s, req.c);
  std::string profile = r.profile;  // ", profile PATH, engine sglang 0.5.14"
  if (!profile.empty() && !r.engine.empty()) {
    profile += ", " + DescribeEngine(r.engine, r.engine_version);
  }
  std::cout << absl::StrFormat(
      "model %s on %s (%s), %s\n"
      "  FLOPs  %.4g  (attention %.4g = proj %.4g + scores %.4g, FFN %.4g, LM head %.4g)\n"
      "  bytes  %.4g  (weights %.4g, KV cache %.4g, activations %.4g)\n"
      "  roofline  compute %.4f ms, memory %.4f ms%s -> %.4f ms (%s-bound)\n"
      "  predicted %.4f ms (%s%s%s)\n"
      "  cycle C(n=%d%s) = draft %.4f + aux %.4f + verify %.4f = %.4f ms\n",
      model_spec.name, r.gpu_spec.name, DTypeName(model_spec.dtype), shape, t.total_flops(),
      t.attention_flops(), t.attn_proj_flops, t.attn_score_flops, t.ffn_flops, t.lm_head_flops,
      t.total_bytes(), t.weight_bytes, t.kv_bytes, t.activation_bytes, e.compute_s * 1e3,
      e.memory_s * 1e3,
      model_spec.tp > 1 ? absl::StrFormat(", all-reduce %.4f ms", e.comm_s * 1e3) : "",
      e.seconds * 1e3, BoundName(e.bound), r.predicted_s * 1e3, r.latency_model,
      profile.empty() ? "" : ", profile ", profile, r.n,
      req.b == 1 ? "" : absl::StrFormat(" per sequence, b = %d", req.b), r.draft_s * 1e3,
      r.aux_s * 1e3, r.verify_s * 1e3, r.cycle_s * 1e3);
  if (r.step) {
    const StepBreakdown& step = *r.step;
    const double total = step.step_s();
    std::cout << absl::StrFormat(
        "  step (%s, D = %d, topk = %d; draft priced by %s): verify %.4f + draft %.4f (%d "
        "forwards) + sample %.4f + host %.4f = %.4f ms; plain decoding step %.4f ms\n"
        "    shares: verify %.1f%%, draft %.1f%%, sample %.1f%%, host %.1f%%\n",
        req.cost.drafter, r.draft_steps, r.topk, r.draft_priced_by, step.verify_s * 1e3,
        step.draft_s * 1e3, step.draft_forwards, step.sample_s * 1e3, step.host_s * 1e3,
        total * 1e3, r.ar_step->step_s() * 1e3, 100 * step.verify_s / total,
        100 * step.draft_s / total, 100 * step.sample_s / total, 100 * step.host_s / total);
    if (const std::optional<ops::EstimateGraph> g = ops::GraphOfEstimate(req, r)) {
      std::cout << (g->graphed
                        ? absl::StrFormat(
                              "    cuda graph (%s ladder): %d x %d tokens run the graph of "
                              "%d requests%s\n",
                              g->ladder, req.b, req.s, g->padded_requests,
                              g->padded_requests > req.b ? " (padded)" : "")
                        : absl::StrFormat("    cuda graph (%s ladder): %d x %d tokens run without "
                                          "graphs (above the largest captured size, or eager)\n",
                                          g->ladder, req.b, req.s));
    }
  }
  if (r.acceptance) {
    std::cout << absl::StrFormat("  acceptance (%s): %.3f tokens per step at K = %d",
                                 r.acceptance->source, r.tokens_per_step, r.n);
    if (r.speedup) {
      std::cout << absl::StrFormat(" -> speedup %.3fx over plain decoding", *r.speedup);
    }
    std::cout << "\n";
  }
  if (req.b > 1) {
    std::cout << absl::StrFormat(
        "  batch b = %d: %.4f ms per pass, %.4f ms per sequence, %.4f ms per token (%d tokens); "
        "the cycle drafts all %d\n",
        req.b, r.predicted_s * 1e3, r.predicted_s * 1e3 / static_cast<double>(req.b),
        r.predicted_s * 1e3 / tokens, static_cast<int64_t>(tokens), req.b);
  }
}

int RunEstimate(const EstimateArgs& a) {
  ops::EstimateRequest req;
  req.cost = a;
  req.s = a.s;
  req.c = a.c;
  req.b = a.b;
  req.gamma = a.gamma;
  req.t_net_ms = a.t_net_ms;
  req.t_head_ms = a.t_head_ms;
  req.t_light_ms = a.t_light_ms;
  req.warn_memory = a.warn_memory;
  // The user's acceptance (a chain of K = s - 1), for the speedup.
  if (a.acceptance.given()) {
    auto loaded = a.acceptance.Load();
    if (Failed("specplan estimate: ", loaded.status())) return 1;
    if (a.s - 1 > loaded->k_max) {
      std::cerr << "specplan estimate: --s " << a.s << ": a chain of " << a.s - 1
                << " drafts, but --acceptance " << a.acceptance.path << " holds positions up to "
                << loaded->k_max << " (pass --s " << loaded->k_max + 1 << " or less)\n";
      return 1;
    }
    req.acceptance = *std::move(loaded);
  }
  absl::StatusOr<ops::EstimateResult> result;
  if (!a.server.empty()) {
    if (absl::Status st = ops::Validate(req); !st.ok()) return Refuse(st, /*in_flags=*/true);
    result.emplace();
    // Its errors are in the flags' words already (or the server's).
    if (absl::Status st = EstimateRemote(a, req, &*result); !st.ok()) return Refuse(st, false);
  } else {
    result = ops::Estimate(req);
    if (!result.ok()) return Refuse(result.status(), /*in_flags=*/true);
  }
  if (!result->memory_warning.empty()) {
    std::cerr << "specplan estimate: warning: " << result->memory_warning << "\n";
  }
  if (a.json) {
    std::cout << ops::ToJson(req, *result).dump(2) << "\n";
    return 0;
  }
  PrintText(req, *result);
  return 0;
}

}  // namespace

void RegisterEstimateCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand(
      &app, "estimate", "Roofline FLOPs/bytes and predicted latency of one verification pass",
      exit_code, &RunEstimate);
  const CostFlagOptions cost = AddCostFlags(cmd, args);
  cost.model->required();
  cost.gpu->required();
  cmd->add_option("--s", args->s, "Tokens verified in the pass (draft nodes + 1 root)")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  AddCachedContextOption(cmd, &args->c);
  cmd->add_option("--b", args->b,
                  "Sequences verified in one ragged pass, each s tokens over c cached (the "
                  "prediction is the whole pass, also given per sequence and per token)")
      ->capture_default_str();
  cmd->add_option("--gamma", args->gamma, "Drafted positions per cycle")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--t-net-ms", args->t_net_ms, "Draft network forward, ms (per step for ar)")
      ->check(MsRange());
  cmd->add_option("--t-head-ms", args->t_head_ms, "Draft LM head, ms (per step for ar)")
      ->check(MsRange());
  cmd->add_option("--t-light-ms", args->t_light_ms, "Light causal-correction step, ms (causal)")
      ->check(MsRange());
  AddJsonFlag(cmd, &args->json);
  AddAcceptanceFlags(cmd, &args->acceptance);
  cmd->add_flag("--warn-memory", args->warn_memory,
                "Answer a pass whose weights and KV cache cannot fit in the GPU's memory, with a "
                "warning naming the bytes (default: refuse it)");
  AddServerOption(cmd, &args->server, "Ask",
                  " for the verification pass and the engine's whole step (one sequence: no --b)");
}

}  // namespace specplan::cli
