// specplan whatif: offline sweep of tree budgets and strategies over a recorded decoding trace
// (whatif/trace.h), priced with the cost model for a GPU and target model (whatif/sweep.h).
//
//   specplan whatif [--trace FILE] --model M --gpu G [--profile FILE] [--budgets LIST]
//                   [--strategies LIST] [--n-max N] [--json] [--per-step] [--plot OUT.png]
//                   [--server HOST:PORT]
//   specplan whatif --concurrency LIST|recorded [--draft-batch-growth F] ... (whatif_concurrency.h)
//   specplan whatif --online --acceptance FILE --rates LIST|--max-concurrency N ... (a request
//                   stream served online, whatif/online.h; whatif_concurrency.h OnlineFlags)
//
// An adapter: the flags become an ops::WhatIfRequest (ops/whatif_op.h; WhatIfConcurrencyRequest,
// WhatIfChainsRequest), the operation runs, its result is printed (whatif_concurrency.h).
// Without --trace the bundled trace (whatif::DefaultTracePath()) is used. Prints a table, or with
// --json one JSON object (ops::ToJson); --plot writes a two-panel PNG (speedup and
// accepted length vs log2(budget), controller and oracle marked) atomically. With --server the
// sweep runs on a specplan-server (WhatIf RPC): the trace file is read here and sent (without
// --trace the server's bundled trace is used), and the report comes back whole, so the table,
// JSON and plot are byte-identical to the in-process run with the same cost model. With
// --concurrency the trace is replayed with B requests in flight instead (whatif/concurrency.h);
// with --online a request stream is served (--plot: latency against throughput per setting).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/remote.h"
#include "cli/whatif_concurrency.h"
#include "costmodel/cost_spec.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "ops/whatif_op.h"
#include "plot/chart.h"
#include "util/file.h"
#include "whatif/concurrency.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::cli {
namespace {

struct WhatIfArgs : CostFlags, ReplayFlags {
  std::string budgets = "1,2,4,8,16,32,64,128";
  std::string strategies = "all";
  int n_max = 0;
  double policy_forward_ms = 0;
  int fixed_depth = 8;
  int fixed_branch = 3;
  double fixed_tau = 0.1;
  bool json = false;
  bool per_step = false;
  std::string plot;
  OutputFlags output;  // --force, --mkdir for --plot
  std::string server;
  std::string concurrency;  // --concurrency LIST; empty: the budget sweep
  bool best_fixed = false;
  bool best_chain = false;
  AcceptanceFlags acceptance;       // --acceptance: chains over the user's acceptance
  std::string batching = "copies";  // with --acceptance: copies or mixed
  std::string chains;               // with --acceptance: K list; "" = 0 .. min(k_max, 8)
  bool independent = false;         // with --acceptance: rates even for a trace
  int64_t context = 1024;           // with --acceptance of rates: every request's context
  int max_requests = 0;
  bool prefill = false;            // with --acceptance of a trace: count each request's prefill
  int64_t max_tokens = 0;          // with --acceptance of a trace: drop requests that reached it
  OnlineFlags online;              // --online and its flags (whatif_concurrency.h)
  std::vector<std::string> given;  // long names of the flags given on the command line
};

bool Given(const WhatIfArgs& a, const std::string& flag) {
  return std::find(a.given.begin(), a.given.end(), flag) != a.given.end();
}

// Two panels over the budget axis: bestfirst (and each policy) as curves, controller / scan as
// single points at their mean realised budget, oracle and controller as vertical lines.
std::vector<plot::Chart> MakeCharts(const whatif::WhatIfReport& r) {
  plot::Chart speed, accepted;
  speed.title = absl::StrFormat("What-if: %s on %s (%s latency), %d steps", r.draft, r.target,
                                r.latency_model, r.steps);
  // log2 axis: x = log2(budget), so budgets 1, 2, 4, ... sit at integer ticks.
  speed.x.label = "log2(budget): budget = 2^x draft nodes";
  speed.y.label = "speedup over AR";
  accepted.title = "Accepted draft tokens per step";
  accepted.x = speed.x;
  accepted.y.label = "accepted per step";
  for (whatif::Strategy s : r.strategies) {
    plot::Series sp, ac;
    sp.label = ac.label = whatif::StrategyName(s);
    if (!whatif::SweepsBudgets(s)) sp.style = ac.style = plot::SeriesStyle::kPoints;
    for (const whatif::WhatIfRow& row : r.rows) {
      if (row.strategy != s || row.steps_used == 0) continue;
      // Controller / scan sit at their mean realised budget (BASTION (docs/references.md) Fig. 4's
      // stars).
      const double x = whatif::SweepsBudgets(s) ? row.budget : row.mean_tree_size;
      if (!(x > 0)) continue;
      sp.x.push_back(std::log2(x));
      sp.y.push_back(row.speedup);
      ac.x.push_back(std::log2(x));
      ac.y.push_back(row.accepted_per_step);
    }
    if (sp.x.empty()) continue;
    speed.series.push_back(std::move(sp));
    accepted.series.push_back(std::move(ac));
  }
  std::vector<plot::VerticalLine> vlines;
  if (r.oracle.found) {
    vlines.push_back({std::log2(static_cast<double>(r.oracle.budget)),
                      absl::StrFormat("oracle N=%d", r.oracle.budget), 0xB8860Bu});
  }
  if (r.controller.found && r.controller.mean_tree_size > 0) {
    vlines.push_back({std::log2(r.controller.mean_tree_size),
                      absl::StrFormat("controller %.1f", r.controller.mean_tree_size), 0x2E8B57u});
  }
  speed.vlines = accepted.vlines = vlines;
  return {speed, accepted};
}

// The sweep's request from the flags (lists parsed by the caller).
ops::WhatIfRequest SweepRequest(const WhatIfArgs& a, std::vector<int> budgets,
                                std::vector<whatif::Strategy> strategies) {
  ops::WhatIfRequest req;
  req.cost = a;
  req.trace = a.trace;
  req.t_draft_ms = a.t_draft_ms;
  req.budgets = std::move(budgets);
  req.strategies = std::move(strategies);
  req.n_max = a.n_max;
  req.policy_forward_ms = a.policy_forward_ms;
  req.fixed_tree.depth = a.fixed_depth;
  req.fixed_tree.branch = a.fixed_branch;
  req.fixed_tree.tau = a.fixed_tau;
  req.per_step = a.per_step;
  req.calibrate = a.calibrate;
  return req;
}

// In-process: the operation loads the trace, resolves the cost and sweeps.
absl::StatusOr<ops::WhatIfResult> RunLocal(ops::WhatIfRequest req) {
  if (isatty(STDERR_FILENO)) {
    req.progress = [](int done, int total) {
      std::cerr << "\rspecplan whatif: " << done << "/" << total << " rows" << std::flush;
      if (done == total) std::cerr << "\n";
    };
  }
  return ops::WhatIf(req);
}

// --server: read the trace file here (none: the server's bundled trace), sweep on the server.
bool RunRemote(const WhatIfArgs& a, costmodel::DType dtype, const whatif::WhatIfOptions& options,
               ops::WhatIfResult* out) {
  const char* kCmd = "specplan whatif: ";
  if (Failed(kCmd, a.CheckRemote())) return false;
  std::string text;
  if (!a.trace.empty()) {
    auto read = ReadFileToString(a.trace);
    if (Failed(kCmd, read.status(), "--trace ")) return false;
    text = *std::move(read);
    if (text.empty()) {  // empty would mean "the server's bundled trace": say what in-process says
      std::cerr << kCmd << "--trace " << whatif::ParseTrace(text, a.trace).status().message()
                << "\n";
      return false;
    }
  }
  auto model = costmodel::ResolveModel(a.model);
  auto gpu = costmodel::ResolveGpu(a.gpu);
  if (!model.ok() || !gpu.ok()) {
    std::cerr << kCmd << (model.ok() ? gpu.status() : model.status()).message() << "\n";
    return false;
  }
  if (isatty(STDERR_FILENO)) std::cerr << kCmd << "sweeping on " << a.server << "\n";
  auto rc = a.ToRemoteCost(dtype, {}, 0);
  if (Failed(kCmd, rc.status())) return false;
  auto remote = RemoteWhatIf(a.server, text, a.trace, *rc, options);
  if (Failed(kCmd, remote.status())) return false;
  out->report = std::move(remote->report);
  out->source.trace_path = a.trace.empty() ? remote->bundled_trace : a.trace;
  out->source.model = model->name;
  out->source.gpu = gpu->name;
  out->source.dtype = costmodel::DTypeName(dtype);
  out->source.profile = remote->used.profile;
  const UsedEngine used = RemoteProfileEngine(a.server, out->source.profile);
  out->source.engine = used.engine;
  out->source.engine_version = used.version;
  return true;
}

// True after printing "<flag> does not apply with --concurrency" for the first such flag given.
bool SweepFlagWithConcurrency(const WhatIfArgs& a) {
  for (const char* flag : {"--server", "--strategies", "--per-step", "--policy-forward-ms",
                           "--fixed-depth", "--fixed-branch", "--fixed-tau"}) {
    if (Given(a, flag)) {
      std::cerr << "specplan whatif: " << flag << " does not apply with --concurrency (its "
                << "strategies are ar, fixed, controller and batch, run in-process)\n";
      return true;
    }
  }
  return false;
}

// --concurrency: the replay with B requests in flight, in-process only.
// n_max per request: --n-max, else the largest budget (as the sweep's controller).
int RunConcurrency(const WhatIfArgs& a, int n_max) {
  const char* kCmd = "specplan whatif: ";
  // "recorded": the trace's recorded batches (a batch run's passes) instead of a list of sizes.
  const bool recorded = a.concurrency == "recorded";
  auto sizes = recorded ? absl::StatusOr<std::vector<int>>(std::vector<int>{})
                        : whatif::ParseConcurrencyList(a.concurrency);
  if (!sizes.ok()) {
    std::cerr << kCmd << "--concurrency: " << sizes.status().message()
              << " (or \"recorded\": the trace's recorded batches)\n";
    return 1;
  }
  if (recorded && !a.plot.empty()) {
    std::cerr << kCmd << "--plot does not apply with --concurrency recorded (one recorded "
              << "schedule: nothing to draw against B)\n";
    return 1;
  }
  if (SweepFlagWithConcurrency(a)) return 1;
  ops::WhatIfConcurrencyRequest req;
  req.cost = a;
  a.Fill(&req);
  req.batch_sizes = *sizes;
  req.recorded = recorded;
  req.n_max = n_max;
  req.best_fixed = a.best_fixed;
  req.best_chain = a.best_chain;
  return RunWhatIfConcurrency(req, a.json, a.plot, a.output);
}

// --concurrency LIST --acceptance FILE: chains over the user's acceptance.
int RunChains(const WhatIfArgs& a) {
  const char* kCmd = "specplan whatif: ";
  if (a.concurrency.empty() || a.concurrency == "recorded") {
    std::cerr << kCmd << "--acceptance needs --concurrency LIST (the batch sizes to replay)\n";
    return 1;
  }
  ops::WhatIfChainsRequest req;
  req.cost = a;
  auto sizes = whatif::ParseConcurrencyList(a.concurrency);
  if (Failed(kCmd, sizes.status(), "--concurrency ")) return 1;
  req.replay.batch_sizes = *sizes;
  if (!a.chains.empty()) {
    auto ks = whatif::ParseBudgetList(a.chains);
    if (Failed(kCmd, ks.status(), "--chains ")) return 1;
    req.replay.chain_lengths = *ks;
  }
  auto batching = whatif::ParseChainBatching(a.batching);
  if (Failed(kCmd, batching.status(), "--")) return 1;
  req.replay.batching = *batching;
  req.replay.independent = a.independent;
  req.replay.context = a.context;
  req.replay.max_requests = a.max_requests;
  req.replay.drop_at_output = a.max_tokens;
  req.prefill = a.prefill;
  if (const std::string flag = a.online.LimitFlagGiven(); !flag.empty() && !a.prefill) {
    std::cerr << kCmd << flag << " applies only with --online or --prefill (the engine's "
              << "scheduler)\n";
    return 1;
  }
  req.limits = a.online.Limits();
  auto acceptance = a.acceptance.Load();
  if (Failed(kCmd, acceptance.status())) return 1;
  req.acceptance = *std::move(acceptance);
  return RunChainReplay(req, a.json);
}

int RunWhatIf(const WhatIfArgs& a) {
  const char* kCmd = "specplan whatif: ";
  // The --plot path first: nothing runs (or is written) for a path the command would refuse.
  if (!a.plot.empty() && Failed(kCmd, CheckOutputPath("--plot", a.plot, a.output))) return 1;
  for (const char* flag :
       {"--draft-batch-growth", "--batch-scan", "--best-fixed", "--best-chain"}) {
    if (a.concurrency.empty() && Given(a, flag)) {
      std::cerr << kCmd << flag << " applies only with --concurrency\n";
      return 1;
    }
  }
  auto budgets = whatif::ParseBudgetList(a.budgets);
  if (Failed(kCmd, budgets.status(), "--budgets ")) return 1;
  auto strategies = whatif::ParseStrategyList(a.strategies);
  if (Failed(kCmd, strategies.status(), "--strategies ")) return 1;
  auto parsed = a.Parse(a.t_draft_ms);
  if (Failed(kCmd, parsed.status())) return 1;

  if (a.online.online) {
    for (const char* flag :
         {"--concurrency", "--server", "--context", "--batching", "--max-requests", "--best-fixed",
          "--best-chain", "--prefill", "--max-tokens"}) {
      if (Given(a, flag)) {
        std::cerr << kCmd << flag << " does not apply with --online"
                  << (std::string(flag) == "--server"
                          ? " (the CLI replays in-process; a client calls the server's "
                            "WhatIfOnline RPC, docs/online.md)"
                          : "")
                  << "\n";
        return 1;
      }
    }
    return RunWhatIfOnline(a.online, a, a.acceptance, a.chains, a.independent, a.json, a.plot,
                           a.output);
  }
  if (const std::string flag = OnlineOnlyFlagGiven(a.online); !flag.empty()) {
    std::cerr << kCmd << flag << " applies only with --online\n";
    return 1;
  }
  if (a.acceptance.given()) return RunChains(a);
  if (const std::string flag = a.online.LimitFlagGiven(); !flag.empty()) {
    std::cerr << kCmd << flag << " applies only with --online or --prefill (the engine's "
              << "scheduler)\n";
    return 1;
  }
  for (const char* flag : {"--batching", "--chains", "--independent", "--context", "--max-requests",
                           "--prefill", "--max-tokens"}) {
    if (Given(a, flag)) {
      std::cerr << kCmd << flag << " applies only with --acceptance\n";
      return 1;
    }
  }
  if (!a.concurrency.empty()) return RunConcurrency(a, a.n_max > 0 ? a.n_max : budgets->back());

  const ops::WhatIfRequest req = SweepRequest(a, *budgets, *strategies);
  ops::WhatIfResult result;
  if (a.server.empty()) {
    auto local = RunLocal(req);
    if (Failed(kCmd, WhatIfErrorInFlags(local.status()))) return 1;
    result = *std::move(local);
  } else {
    whatif::WhatIfOptions options = ops::SweepOptions(req);
    options.drafter = parsed->drafter;
    options.t_aux_s = a.t_aux_ms * 1e-3;
    if (!RunRemote(a, parsed->dtype, options, &result)) return 1;
  }
  if (!a.plot.empty() && !WritePlot(kCmd, a.plot, MakeCharts(result.report), a.output)) return 1;
  if (a.json) {
    std::cout << ops::ToJson(result).dump(2) << "\n";
  } else {
    PrintWhatIfText(result.source, whatif::FormatWhatIfTable(result.report), a.plot);
  }
  return 0;
}

}  // namespace

void RegisterWhatIfCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<WhatIfArgs>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      "Offline sweep of tree budgets/strategies over a recorded trace: realised accepted length, "
      "predicted cycle cost and speedup per budget, the oracle budget and the controller");
  AddTraceOption(cmd, &args->trace, "Decoding");
  AddCostFlags(cmd, args.get());
  cmd->add_option("--budgets", args->budgets,
                  "Comma-separated draft-node budgets, each in [1, 8191]")
      ->capture_default_str();
  cmd->add_option("--strategies", args->strategies,
                  "Comma-separated: bestfirst, controller, scan, dynatree, fixed, linear, or all "
                  "(see planner/strategy.h)")
      ->capture_default_str();
  AddTreeNMaxOption(cmd, &args->n_max, 0,
                    "Controller/scan search n = 0..N draft nodes (0: the largest budget); with "
                    "--concurrency: per request, and fixed's size");
  AddDraftTimeOption(cmd, &args->t_draft_ms,
                     "Marginals drafter network time, ms (per step for ar, per block otherwise)");
  cmd->add_option("--policy-forward-ms", args->policy_forward_ms,
                  "Drafter time per forward (tree level) for dynatree/fixed/linear, ms")
      ->check(MsRange());
  cmd->add_option("--fixed-depth", args->fixed_depth, "fixed D: maximum depth")
      ->check(CLI::Range(1, 8191))
      ->capture_default_str();
  cmd->add_option("--fixed-branch", args->fixed_branch, "fixed B: children per node")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--fixed-tau", args->fixed_tau,
                  "fixed tau: minimum draft prob of a kept candidate")
      ->check(FiniteRange(0, 1))
      ->capture_default_str();
  AddJsonFlag(cmd, &args->json, " instead of the table");
  cmd->add_flag("--per-step", args->per_step, "JSON: add every row's per-step results");
  cmd->add_option("--plot", args->plot,
                  "Write a PNG: speedup and accepted length vs budget, controller and oracle "
                  "marked (with --concurrency: throughput and speedup over ar vs B; with "
                  "--online: TPOT p50 and TTFT p90 vs throughput per setting)");
  AddOutputFlags(cmd, &args->output);
  AddServerOption(cmd, &args->server, "Sweep",
                  " (the --trace file is read here and sent; without --trace the server's bundled "
                  "trace); same output");
  cmd->add_option("--concurrency", args->concurrency,
                  "Replay the trace with B requests in flight for each B of a comma-separated "
                  "list (e.g. 1,2,4,...,256; each in [1, 4096]): throughput, accepted length and "
                  "tree size per request for ar, fixed (n_max nodes per request), controller (per "
                  "request) and batch, and the B where speculation stops paying; or \"recorded\": "
                  "replay a batch run's recorded passes (specplan-bench --batch B --record-trace) "
                  "as they happened; in-process only");
  args->draft_batch_growth_option =
      AddDraftBatchGrowthOption(
          cmd, &args->draft_batch_growth,
          "With --concurrency: each further request in a batched draft pass adds this fraction of "
          "one "
          "request's drafting time, T_draft(B) = T_draft(1) (1 + F (B - 1)); 0 = a weight-bound "
          "drafter whose batched pass costs what one request's does")
          ->capture_default_str();
  AddBatchScanFlag(cmd, args.get(),
                   "With --concurrency: the batch planner takes the argmax of its goodput G(N) "
                   "instead of stopping at its first decrease (for measured, stepped profiles)");
  cmd->add_flag("--best-fixed", args->best_fixed,
                "With --concurrency: add a best-fixed row per B, the static budget (of 1, 2, 3, "
                "4, 6, 8, ... up to --n-max, or none) with the highest throughput at that B, "
                "chosen in hindsight: the best a per-batch-size table could do");
  cmd->add_flag("--best-chain", args->best_chain,
                "With --concurrency: add a best-chain row per B, the top-1 chain length K (1 .. "
                "the marginals' gamma, or none) with the highest throughput at that B: the best a "
                "per-batch-size draft length (vLLM, TensorRT-LLM) could do");
  AddCalibrateFlag(
      cmd, args.get(),
      "Calibrate the surrogate online: controller, scan (and with --concurrency the "
      "batch planner) price a node at s x rho, s = realised over promised draft "
      "tokens so far (planner::AcceptanceEstimator::surrogate_scale), as a planner fed "
      "ReportAcceptance would");
  AddAcceptanceFlags(cmd, &args->acceptance);
  cmd->add_option("--batching", args->batching,
                  "With --acceptance of a per-step trace: copies (each request as B identical "
                  "copies, as SpecDecode-Bench measured) or mixed (B different requests in flight)")
      ->capture_default_str();
  cmd->add_option("--chains", args->chains,
                  "With --acceptance: chain lengths K to replay, comma-separated (default: 1 .. "
                  "min(k_max, 8), and plain decoding)");
  cmd->add_flag("--independent", args->independent,
                "With --acceptance of a trace: use its per-position rates under independence "
                "between steps instead of replaying it step by step");
  AddAcceptanceContextOption(cmd, &args->context);
  cmd->add_option("--max-requests", args->max_requests,
                  "With --acceptance of a trace: replay only its first N requests (0 = all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag(
      "--prefill", args->prefill,
      "With --acceptance of a trace (copies): count each request's prefill, its B "
      "copies served as the engine serves them (whatif/online.h, the engine's default "
      "limits); each request's throughput counts its whole time, and the speedup is the ratio "
      "of the mean per-request throughputs, as SpecDecode-Bench averages");
  cmd->add_option("--max-tokens", args->max_tokens,
                  "With --acceptance of a trace: the benchmark's max_tokens; requests whose output "
                  "reached it ran to the limit instead of stopping and are dropped before "
                  "--max-requests (SpecDecode-Bench keeps only requests finished by stop)")
      ->check(CLI::NonNegativeNumber);
  AddOnlineFlags(cmd, &args->online);
  cmd->callback([cmd, args, exit_code] {
    for (const CLI::Option* opt : cmd->get_options()) {
      if (opt->count() > 0 && !opt->get_lnames().empty()) {
        args->given.push_back("--" + opt->get_lnames().front());
      }
    }
    *exit_code = RunWhatIf(*args);
  });
}

}  // namespace specplan::cli
