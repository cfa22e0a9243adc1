// specplan whatif: offline sweep of tree budgets and strategies over a recorded decoding trace
// (whatif/trace.h), priced with the cost model for a GPU and target model (whatif/sweep.h).
//
//   specplan whatif [--trace FILE] --model M --gpu G [--profile FILE] [--budgets LIST]
//                   [--strategies LIST] [--n-max N] [--json] [--per-step] [--plot OUT.png]
//                   [--server HOST:PORT]
//   specplan whatif --concurrency LIST|recorded [--draft-batch-growth F] ... (whatif_concurrency.h)
//
// Without --trace the bundled trace (whatif::DefaultTracePath()) is used. Prints a table, or with
// --json one JSON object (whatif::WhatIfReportToJson); --plot writes a two-panel PNG (speedup and
// accepted length vs log2(budget), controller and oracle marked) atomically. With --server the
// sweep runs on a specplan-server (WhatIf RPC): the trace file is read here and sent (without
// --trace the server's bundled trace is used), and the report comes back whole, so the table,
// JSON and plot are byte-identical to the in-process run with the same cost model. With
// --concurrency the trace is replayed with B requests in flight instead (whatif/concurrency.h).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/remote.h"
#include "cli/whatif_concurrency.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/model_registry.h"
#include "costmodel/model_spec.h"
#include "plot/chart.h"
#include "util/atomic_file.h"
#include "util/file.h"
#include "whatif/concurrency.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::cli {
namespace {

struct WhatIfArgs : CostFlags {
  std::string trace;
  std::string budgets = "1,2,4,8,16,32,64,128";
  std::string strategies = "all";
  int n_max = 0;
  double t_draft_ms = 0;
  double policy_forward_ms = 0;
  int fixed_depth = 8;
  int fixed_branch = 3;
  double fixed_tau = 0.1;
  bool json = false;
  bool per_step = false;
  std::string plot;
  std::string server;
  std::string concurrency;  // --concurrency LIST; empty: the budget sweep
  double draft_batch_growth = whatif::kDefaultDraftBatchGrowth;
  bool batch_scan = false;
  bool best_fixed = false;
  bool best_chain = false;
  bool calibrate = false;
  AcceptanceFlags acceptance;       // --acceptance: chains over the user's acceptance
  std::string batching = "copies";  // with --acceptance: copies or mixed
  std::string chains;               // with --acceptance: K list; "" = 0 .. min(k_max, 8)
  bool independent = false;         // with --acceptance: rates even for a trace
  int64_t context = 1024;           // with --acceptance of rates: every request's context
  int max_requests = 0;
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

// What one run produced, in-process or from a server, and what the output says about its inputs.
struct WhatIfOutcome {
  whatif::WhatIfReport report;
  WhatIfSource source;
};

// The trace (--trace, else the bundled one) and the latency model, for an in-process run.
struct LocalInputs {
  whatif::Trace trace;
  std::string trace_path;
  costmodel::ResolvedLatencyModel resolved;
  std::string profile;  // the bundled profile's id, a --profile file's path, "" for the roofline
};

bool LoadLocal(const WhatIfArgs& a, costmodel::DType dtype, LocalInputs* in) {
  const char* kCmd = "specplan whatif: ";
  in->trace_path = a.trace.empty() ? whatif::DefaultTracePath() : a.trace;
  auto trace = whatif::LoadTrace(in->trace_path);
  if (Failed(kCmd, trace.status(), "--trace ")) return false;
  in->trace = *std::move(trace);
  auto resolved = a.Resolve(dtype);
  if (Failed(kCmd, resolved.status())) return false;
  in->resolved = *std::move(resolved);
  // A bundled profile is named by its id, as the server names it; a --profile file by its path.
  in->profile = a.profile.empty() ? in->resolved.profile_id : in->resolved.profile_path;
  return true;
}

// With a drafter architecture, its whole step (cost_flags.h PriceDrafter) at the trace's mean
// context and largest marginals gamma becomes the replay's drafter cost and T_aux; a cost class
// is left as given.
bool PriceTraceDrafter(const WhatIfArgs& a, const LocalInputs& in, costmodel::DrafterCost* d,
                       double* t_aux_s) {
  const whatif::TraceDraftShape shape = whatif::DraftShapeOf(in.trace);
  double l_ar_s = 0;
  const double growth = d->batch_growth;
  const absl::Status st =
      a.PriceDrafter(in.resolved, shape.max_gamma, shape.mean_context, d, t_aux_s, &l_ar_s);
  // A given --draft-batch-growth (or a cost class's, or the default with drafting given by hand:
  // --t-draft-ms is one request's, the growth prices the rest) stands; else the step model's.
  if (a.DrafterIsCostClass() || Given(a, "--draft-batch-growth") || a.t_draft_ms > 0) {
    d->batch_growth = growth;
  }
  return !Failed("specplan whatif: ", st);
}

// What an in-process run analysed and what priced it.
WhatIfSource LocalSource(const LocalInputs& in, costmodel::DType dtype) {
  WhatIfSource source;
  source.trace_path = in.trace_path;
  source.model_name = in.resolved.model_spec.name;
  source.gpu_name = in.resolved.gpu_spec.name;
  source.dtype_name = costmodel::DTypeName(dtype);
  source.profile = in.profile;
  source.engine = in.resolved.engine;
  source.engine_version = in.resolved.engine_version;
  return source;
}

// In-process: load the trace and the latency model, run the sweep.
bool RunLocal(const WhatIfArgs& a, costmodel::DType dtype, const whatif::WhatIfOptions& base,
              WhatIfOutcome* out) {
  const char* kCmd = "specplan whatif: ";
  LocalInputs in;
  if (!LoadLocal(a, dtype, &in)) return false;
  out->source.trace_path = in.trace_path;
  const whatif::Trace* trace = &in.trace;
  const costmodel::ResolvedLatencyModel* resolved = &in.resolved;
  whatif::WhatIfOptions options = base;
  if (!PriceTraceDrafter(a, in, &options.drafter, &options.t_aux_s)) return false;
  if (isatty(STDERR_FILENO) && trace->steps.size() >= 2000) {
    options.progress = [](int done, int total) {
      std::cerr << "\rspecplan whatif: " << done << "/" << total << " rows" << std::flush;
      if (done == total) std::cerr << "\n";
    };
  }
  auto report = whatif::RunWhatIf(*trace, *resolved->model, options);
  if (Failed(kCmd, report.status(), out->source.trace_path + ": ")) return false;
  out->report = *std::move(report);
  out->source = LocalSource(in, dtype);
  return true;
}

// --concurrency: the replay with B requests in flight, in-process only.
// n_max per request: --n-max, else the largest budget (as the sweep's controller).
int RunConcurrency(const WhatIfArgs& a, costmodel::DType dtype,
                   const costmodel::DrafterCost& drafter, double t_aux_s, int n_max) {
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
  for (const char* flag : {"--server", "--strategies", "--per-step", "--policy-forward-ms",
                           "--fixed-depth", "--fixed-branch", "--fixed-tau"}) {
    if (Given(a, flag)) {
      std::cerr << kCmd << flag << " does not apply with --concurrency (its strategies are "
                << "ar, fixed, controller and batch, run in-process)\n";
      return 1;
    }
  }
  LocalInputs in;
  if (!LoadLocal(a, dtype, &in)) return 1;
  WhatIfConcurrencyRun run;
  run.trace = &in.trace;
  run.latency = in.resolved.model.get();
  run.source = LocalSource(in, dtype);
  run.options.batch_sizes = *sizes;
  run.options.recorded = recorded;
  run.options.n_max = n_max;
  run.options.drafter = drafter;
  run.options.drafter.batch_growth = a.draft_batch_growth;
  run.options.t_aux_s = t_aux_s;
  if (!PriceTraceDrafter(a, in, &run.options.drafter, &run.options.t_aux_s)) return 1;
  run.options.batch_scan = a.batch_scan;
  run.options.best_fixed = a.best_fixed;
  run.options.best_chain = a.best_chain;
  run.options.calibrate = a.calibrate;
  run.json = a.json;
  run.plot = a.plot;
  return RunWhatIfConcurrency(run);
}

// --server: read the trace file here (none: the server's bundled trace), sweep on the server.
bool RunRemote(const WhatIfArgs& a, costmodel::DType dtype, const whatif::WhatIfOptions& options,
               WhatIfOutcome* out) {
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
  auto remote = RemoteWhatIf(a.server, text, a.trace, a.ToRemoteCost(dtype, {}, 0), options);
  if (Failed(kCmd, remote.status())) return false;
  out->report = std::move(remote->report);
  out->source.trace_path = a.trace.empty() ? remote->bundled_trace : a.trace;
  out->source.model_name = model->name;
  out->source.gpu_name = gpu->name;
  out->source.dtype_name = costmodel::DTypeName(dtype);
  out->source.profile = remote->used.profile;
  const UsedEngine used = RemoteProfileEngine(a.server, out->source.profile);
  out->source.engine = used.engine;
  out->source.engine_version = used.version;
  return true;
}

int RunWhatIf(const WhatIfArgs& a) {
  const char* kCmd = "specplan whatif: ";
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
  const costmodel::DType dtype = parsed->dtype;

  if (a.acceptance.given()) {
    if (a.concurrency.empty() || a.concurrency == "recorded") {
      std::cerr << kCmd << "--acceptance needs --concurrency LIST (the batch sizes to replay)\n";
      return 1;
    }
    ChainReplayRun run;
    run.cost = &a;
    run.acceptance = &a.acceptance;
    run.dtype = dtype;
    run.json = a.json;
    auto sizes = whatif::ParseConcurrencyList(a.concurrency);
    if (Failed(kCmd, sizes.status(), "--concurrency ")) return 1;
    run.options.batch_sizes = *sizes;
    if (!a.chains.empty()) {
      auto ks = whatif::ParseBudgetList(a.chains);
      if (Failed(kCmd, ks.status(), "--chains ")) return 1;
      run.options.chain_lengths = *ks;
    }
    auto batching = whatif::ParseChainBatching(a.batching);
    if (Failed(kCmd, batching.status(), "--")) return 1;
    run.options.batching = *batching;
    run.options.independent = a.independent;
    run.options.context = a.context;
    run.options.max_requests = a.max_requests;
    return RunChainReplay(run);
  }
  for (const char* flag :
       {"--batching", "--chains", "--independent", "--context", "--max-requests"}) {
    if (Given(a, flag)) {
      std::cerr << kCmd << flag << " applies only with --acceptance\n";
      return 1;
    }
  }

  if (!a.concurrency.empty()) {
    return RunConcurrency(a, dtype, parsed->drafter, a.t_aux_ms * 1e-3,
                          a.n_max > 0 ? a.n_max : budgets->back());
  }

  whatif::WhatIfOptions options;
  options.budgets = *budgets;
  options.strategies = *strategies;
  options.n_max = a.n_max;
  options.drafter.cls = parsed->drafter.cls;
  options.drafter.t_net_s = parsed->drafter.t_net_s;
  options.policy_forward_s = a.policy_forward_ms * 1e-3;
  options.t_aux_s = a.t_aux_ms * 1e-3;
  options.fixed_tree.depth = a.fixed_depth;
  options.fixed_tree.branch = a.fixed_branch;
  options.fixed_tree.tau = a.fixed_tau;
  options.per_step = a.per_step;
  options.calibrate = a.calibrate;
  WhatIfOutcome o;
  if (!(a.server.empty() ? RunLocal(a, dtype, options, &o) : RunRemote(a, dtype, options, &o))) {
    return 1;
  }
  const whatif::WhatIfReport& report = o.report;

  if (!a.plot.empty() && !WritePlot(kCmd, a.plot, MakeCharts(report))) return 1;
  PrintWhatIfReport(o.source, a.json,
                    a.json ? whatif::WhatIfReportToJson(report) : nlohmann::json(),
                    a.json ? std::string() : whatif::FormatWhatIfTable(report), a.plot);
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
  cmd->add_option("--n-max", args->n_max,
                  "Controller/scan search n = 0..N draft nodes (0: the largest budget); with "
                  "--concurrency: per request, and fixed's size")
      ->check(CLI::Range(0, 8191))
      ->capture_default_str();
  cmd->add_option("--t-draft-ms", args->t_draft_ms,
                  "Marginals drafter network time, ms (per step for ar, per block otherwise)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--policy-forward-ms", args->policy_forward_ms,
                  "Drafter time per forward (tree level) for dynatree/fixed/linear, ms")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--fixed-depth", args->fixed_depth, "fixed D: maximum depth")
      ->check(CLI::Range(1, 8191))
      ->capture_default_str();
  cmd->add_option("--fixed-branch", args->fixed_branch, "fixed B: children per node")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--fixed-tau", args->fixed_tau,
                  "fixed tau: minimum draft prob of a kept candidate")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the table");
  cmd->add_flag("--per-step", args->per_step, "JSON: add every row's per-step results");
  cmd->add_option("--plot", args->plot,
                  "Write a PNG: speedup and accepted length vs budget, controller and oracle "
                  "marked (with --concurrency: throughput and speedup over ar vs B)");
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
  cmd->add_option(
         "--draft-batch-growth", args->draft_batch_growth,
         "With --concurrency: each further request in a batched draft pass adds this "
         "fraction of one request's drafting time, T_draft(B) = T_draft(1) (1 + F (B - 1)); "
         "0 = a weight-bound drafter whose batched pass costs what one request's does")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--batch-scan", args->batch_scan,
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
  cmd->add_flag("--calibrate", args->calibrate,
                "Calibrate the surrogate online: controller, scan (and with --concurrency the "
                "batch planner) price a node at s x rho, s = realised over promised draft tokens "
                "so far (planner::AcceptanceEstimator::surrogate_scale), as a planner fed "
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
  cmd->add_option("--context", args->context,
                  "With --acceptance of rates: every request's cached context, tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--max-requests", args->max_requests,
                  "With --acceptance of a trace: replay only its first N requests (0 = all)")
      ->check(CLI::NonNegativeNumber);
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
