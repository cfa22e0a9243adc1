// specplan estimate: roofline terms and predicted verification latency for one (s, c) point, or
// for one ragged pass of B such sequences (--b); with a drafter architecture (--drafter eagle3,
// the default) the engine's whole step (verify + draft + sample + host) and the plain decoding
// step; with --acceptance the speedup a chain of K = s - 1 gives.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/remote.h"
#include "costmodel/batch_shape.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/memory_fit.h"
#include "costmodel/model_registry.h"
#include "costmodel/roofline.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::cli {
namespace {

constexpr int64_t kMaxEstimateBatch = int64_t{1} << 16;  // --b

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

int RunEstimate(const EstimateArgs& a) {
  using namespace specplan::costmodel;
  auto dtype = ParseDType(a.dtype);
  if (!dtype.ok()) {
    std::cerr << "specplan estimate: --" << dtype.status().message() << "\n";
    return 1;
  }
  auto parsed = a.Parse(a.t_net_ms);
  if (!parsed.ok()) {
    std::cerr << "specplan estimate: " << parsed.status().message() << "\n";
    return 1;
  }
  DrafterCost drafter;
  drafter.cls = parsed->drafter.cls;
  drafter.gamma = a.gamma;
  drafter.t_net_s = a.t_net_ms * 1e-3;
  drafter.t_head_s = a.t_head_ms * 1e-3;
  drafter.t_light_s = a.t_light_ms * 1e-3;
  const int64_t n = a.s - 1;
  if (a.b < 1 || a.b > kMaxEstimateBatch) {
    std::cerr << "specplan estimate: --b " << a.b << ": must be in [1, " << kMaxEstimateBatch
              << "] (sequences in the pass)\n";
    return 1;
  }

  // The user's acceptance (a chain of K = s - 1), for the speedup.
  std::optional<planner::EngineAcceptance> acceptance;
  if (a.acceptance.given()) {
    auto loaded = a.acceptance.Load();
    if (!loaded.ok()) {
      std::cerr << "specplan estimate: " << loaded.status().message() << "\n";
      return 1;
    }
    if (n > loaded->k_max) {
      std::cerr << "specplan estimate: --s " << a.s << ": a chain of " << n
                << " drafts, but --acceptance " << a.acceptance.path << " holds positions up to "
                << loaded->k_max << " (pass --s " << loaded->k_max + 1 << " or less)\n";
      return 1;
    }
    acceptance = *std::move(loaded);
  }
  // The engine's whole step (costmodel/step/step_model.h), priced in-process or by the server.
  std::optional<StepBreakdown> step, ar_step;
  std::string draft_priced_by;
  HostTime host;

  // What the output reports; filled in-process or from the server.
  ModelSpec model_spec;
  GpuSpec gpu_spec;
  std::string kind, profile_path, engine, engine_version;
  double predicted = 0, draft_s = 0, aux_s = 0, verify_s = 0, cycle_s = 0;
  if (!a.server.empty()) {
    if (a.b != 1) {
      std::cerr << "specplan estimate: --b " << a.b
                << ": local only (with --server the server prices one sequence)\n";
      return 1;
    }
    if (absl::Status st = a.CheckRemote(); !st.ok()) {
      std::cerr << "specplan estimate: " << st.message() << "\n";
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
    if (absl::Status fits = CheckFitsInMemory(model_spec, gpu_spec, a.b, a.s, a.c); !fits.ok()) {
      std::cerr << "specplan estimate: " << (a.warn_memory ? "warning: " : "") << fits.message()
                << (a.warn_memory ? "" : " (--warn-memory answers anyway)") << "\n";
      if (!a.warn_memory) return 1;
    }
    const RemoteCost rc = a.ToRemoteCost(*dtype, drafter, a.c);
    auto remote = cli::RemoteEstimateLatency(a.server, rc, a.s);
    if (!remote.ok()) {
      std::cerr << "specplan estimate: " << remote.status().message() << "\n";
      return 1;
    }
    kind = remote->used.latency_model;
    profile_path = remote->used.profile;
    const UsedEngine used = RemoteProfileEngine(a.server, profile_path);
    engine = used.engine;
    engine_version = used.version;
    predicted = verify_s = remote->verify_s;
    draft_s = remote->draft_s;
    aux_s = remote->aux_s;
    cycle_s = remote->cycle_s;
    // The server's step model (its profile's drafter tables and engine), printed below as the
    // in-process one is.
    step = remote->step;
    ar_step = remote->ar_step;
    draft_priced_by = remote->draft_priced_by;
    host = remote->host;
  } else {
    auto resolved = a.Resolve(*dtype);
    if (!resolved.ok()) {
      std::cerr << "specplan estimate: " << resolved.status().message() << "\n";
      return 1;
    }
    model_spec = resolved->model_spec;
    gpu_spec = resolved->gpu_spec;
    if (absl::Status fits = CheckFitsInMemory(model_spec, gpu_spec, a.b, a.s, a.c); !fits.ok()) {
      std::cerr << "specplan estimate: " << (a.warn_memory ? "warning: " : "") << fits.message()
                << (a.warn_memory ? "" : " (--warn-memory answers anyway)") << "\n";
      if (!a.warn_memory) return 1;
    }
    kind = resolved->model->Kind();
    profile_path = resolved->profile_path;
    engine = resolved->engine;
    engine_version = resolved->engine_version;
    if (!a.DrafterIsCostClass()) {
      // By hand when any --t-*-ms is given: that drafter cost replaces the composed one.
      const double by_hand =
          a.t_net_ms + a.t_head_ms + a.t_light_ms > 0 ? drafter.DraftSeconds() : 0;
      auto model = a.Step(*resolved, by_hand);
      if (!model.ok()) {
        std::cerr << "specplan estimate: " << model.status().message() << "\n";
        return 1;
      }
      step = model->Step(a.b, a.s, a.c);
      ar_step = model->ArStep(a.b, a.c);
      draft_priced_by = model->draft_priced_by();
      host = model->host();
    }
    if (a.b == 1) {
      predicted = resolved->model->VerifySeconds(a.s, a.c);
      const CycleCost cycle(resolved->model.get(), drafter, a.t_aux_ms * 1e-3, a.c);
      draft_s = cycle.DraftSeconds();
      aux_s = cycle.AuxSeconds();
      verify_s = cycle.VerifySeconds(n);
      cycle_s = cycle.Seconds(n);
    } else {
      // One ragged pass of B equal sequences; the drafter drafts all B (DrafterCost::batch_growth
      // 0: a batched draft step costs one sequence's).
      BatchShape pass;
      pass.Reserve(static_cast<size_t>(a.b));
      for (int64_t i = 0; i < a.b; ++i) pass.Add(a.s, a.c);
      const BatchCycleCost cycle(resolved->model.get(), drafter, a.t_aux_ms * 1e-3);
      predicted = verify_s = cycle.VerifySeconds(pass);
      draft_s = cycle.DraftSeconds(pass.size());
      aux_s = cycle.AuxSeconds();
      cycle_s = cycle.Seconds(pass);
    }
  }
  if (step) {
    // With a drafter architecture the cycle a planner prices is the engine's whole step: T_draft,
    // then T_aux = the step's sampling and host work (plus --t-aux-ms), then T_verify.
    draft_s = step->draft_s;
    aux_s = step->sample_s + step->host_s + a.t_aux_ms * 1e-3;
    verify_s = step->verify_s;
    cycle_s = draft_s + aux_s + verify_s;
  }
  // The roofline of the whole pass: its weights once, its tokens, context and scores B times.
  const RooflineEstimate e =
      a.b == 1 ? EstimateRoofline(model_spec, gpu_spec, a.s, a.c)
               : EstimateRoofline(model_spec, gpu_spec,
                                  UniformPass(static_cast<double>(a.b), static_cast<double>(a.s),
                                              static_cast<double>(a.c)));
  const double tokens = static_cast<double>(a.b * a.s);  // verified in the pass

  if (a.json) {
    nlohmann::json j = RooflineEstimateToJson(e);
    j["model"] = model_spec.name;
    j["gpu"] = gpu_spec.name;
    j["dtype"] = DTypeName(model_spec.dtype);
    j["tp"] = model_spec.tp;
    if (model_spec.is_moe()) j["experts_streamed"] = ExpectedDistinctExperts(model_spec, tokens);
    j["s"] = a.s;
    j["c"] = a.c;
    j["b"] = a.b;
    j["predicted_s"] = predicted;  // the whole pass (all b sequences)
    j["per_sequence_s"] = predicted / static_cast<double>(a.b);
    j["per_token_s"] = predicted / tokens;
    j["latency_model"] = kind;
    j["profile"] = profile_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(profile_path);
    j["engine"] = engine.empty() ? nlohmann::json(nullptr) : nlohmann::json(engine);
    j["engine_version"] =
        engine_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(engine_version);
    j["cycle"] = {
        {"n", n},
        {"drafter", a.DrafterIsCostClass() ? DrafterClassName(drafter.cls) : a.drafter.c_str()},
        {"draft_s", draft_s},
        {"aux_s", aux_s},
        {"verify_s", verify_s},
        {"cycle_s", cycle_s}};
    if (step) {
      j["step"] = StepBreakdownToJson(*step);
      j["step"]["drafter"] = a.drafter;
      j["step"]["draft_steps"] = a.draft_steps >= 0 ? a.draft_steps : n;
      j["step"]["topk"] = a.topk;
      j["step"]["draft_priced_by"] = draft_priced_by;
      j["step"]["host"] = HostTimeToJson(host);
      j["ar_step"] = StepBreakdownToJson(*ar_step);
      j["ar_step_s"] = ar_step->step_s();
    }
    if (acceptance) {
      const double tokens_per_step = acceptance->TokensPerStep(static_cast<int>(n));
      j["acceptance"] = {{"source", acceptance->source},
                         {"format", planner::AcceptanceFormatName(acceptance->format)},
                         {"k", n},
                         {"tokens_per_step", tokens_per_step}};
      if (step) {
        j["speedup"] = tokens_per_step * ar_step->step_s() / step->step_s();
      }
    }
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
        model_spec.experts, model_spec.experts_active, static_cast<int64_t>(tokens),
        ExpectedDistinctExperts(model_spec, tokens),
        100 * ExpectedDistinctExperts(model_spec, tokens) / model_spec.experts);
  }
  const std::string shape =
      a.b == 1 ? absl::StrFormat("s = %d new tokens over c = %d cached", a.s, a.c)
               : absl::StrFormat(
                     "b = %d sequences in one pass, each s = %d new tokens over c = "
                     "%d cached",
                     a.b, a.s, a.c);
  std::string profile = profile_path;  // ", profile PATH, engine sglang 0.5.14"
  if (!profile.empty() && !engine.empty()) {
    profile += ", " + DescribeEngine(engine, engine_version);
  }
  std::cout << absl::StrFormat(
      "model %s on %s (%s), %s\n"
      "  FLOPs  %.4g  (attention %.4g = proj %.4g + scores %.4g, FFN %.4g, LM head %.4g)\n"
      "  bytes  %.4g  (weights %.4g, KV cache %.4g, activations %.4g)\n"
      "  roofline  compute %.4f ms, memory %.4f ms%s -> %.4f ms (%s-bound)\n"
      "  predicted %.4f ms (%s%s%s)\n"
      "  cycle C(n=%d%s) = draft %.4f + aux %.4f + verify %.4f = %.4f ms\n",
      model_spec.name, gpu_spec.name, DTypeName(model_spec.dtype), shape, t.total_flops(),
      t.attention_flops(), t.attn_proj_flops, t.attn_score_flops, t.ffn_flops, t.lm_head_flops,
      t.total_bytes(), t.weight_bytes, t.kv_bytes, t.activation_bytes, e.compute_s * 1e3,
      e.memory_s * 1e3,
      model_spec.tp > 1 ? absl::StrFormat(", all-reduce %.4f ms", e.comm_s * 1e3) : "",
      e.seconds * 1e3, BoundName(e.bound), predicted * 1e3, kind,
      profile.empty() ? "" : ", profile ", profile, n,
      a.b == 1 ? "" : absl::StrFormat(" per sequence, b = %d", a.b), draft_s * 1e3, aux_s * 1e3,
      verify_s * 1e3, cycle_s * 1e3);
  if (step) {
    const double total = step->step_s();
    std::cout << absl::StrFormat(
        "  step (%s, D = %d, topk = %d; draft priced by %s): verify %.4f + draft %.4f (%d "
        "forwards) + sample %.4f + host %.4f = %.4f ms; plain decoding step %.4f ms\n"
        "    shares: verify %.1f%%, draft %.1f%%, sample %.1f%%, host %.1f%%\n",
        a.drafter, a.draft_steps >= 0 ? a.draft_steps : n, a.topk, draft_priced_by,
        step->verify_s * 1e3, step->draft_s * 1e3, step->draft_forwards, step->sample_s * 1e3,
        step->host_s * 1e3, total * 1e3, ar_step->step_s() * 1e3, 100 * step->verify_s / total,
        100 * step->draft_s / total, 100 * step->sample_s / total, 100 * step->host_s / total);
  }
  if (acceptance) {
    const double tokens_per_step = acceptance->TokensPerStep(static_cast<int>(n));
    std::cout << absl::StrFormat("  acceptance (%s): %.3f tokens per step at K = %d",
                                 acceptance->source, tokens_per_step, n);
    if (step) {
      std::cout << absl::StrFormat(" -> speedup %.3fx over plain decoding",
                                   tokens_per_step * ar_step->step_s() / step->step_s());
    }
    std::cout << "\n";
  }
  if (a.b > 1) {
    std::cout << absl::StrFormat(
        "  batch b = %d: %.4f ms per pass, %.4f ms per sequence, %.4f ms per token (%d tokens); "
        "the cycle drafts all %d\n",
        a.b, predicted * 1e3, predicted * 1e3 / static_cast<double>(a.b), predicted * 1e3 / tokens,
        static_cast<int64_t>(tokens), a.b);
  }
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
  cmd->add_option("--c", args->c, "Cached context tokens")
      ->required()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--b", args->b,
                  "Sequences verified in one ragged pass, each s tokens over c cached (the "
                  "prediction is the whole pass, also given per sequence and per token)")
      ->capture_default_str();
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
  AddAcceptanceFlags(cmd, &args->acceptance);
  cmd->add_flag("--warn-memory", args->warn_memory,
                "Answer a pass whose weights and KV cache cannot fit in the GPU's memory, with a "
                "warning naming the bytes (default: refuse it)");
  AddServerOption(cmd, &args->server, "Ask",
                  " for the verification pass and the engine's whole step (one sequence: no --b)");
}

}  // namespace specplan::cli
