// specplan schedule: the speculation schedule an engine takes today, in the engine's own format,
// from a cost profile and an acceptance trace (whatif/schedule.h).
//
//   specplan schedule --format vllm|trtllm|sglang [--gpu G --model M --engine E | --profile F]
//                     [--trace T] [--out FILE] [--batch-sizes LIST] [--n-max N] [--t-draft-ms X]
//                     [--draft-batch-growth F] [--calibrate] [--batch-scan] [--min-draft-len K]
//                     [--unconstrained] [--context-grid LIST] [--quiet]
//
// Without --engine and --profile the cost is the format's own engine's profile (--format vllm:
// --engine vllm). Without --trace the bundled trace (whatif::DefaultTracePath()). The schedule goes
// to stdout, or with --out to FILE (written atomically); a short summary (per B: the setting, its
// throughput, the batch planner's, the best single static setting's) goes to stderr unless
// --quiet. With --context-grid (vllm only) the output adds the context-length axis of vLLM RFC
// #48627 (whatif::RenderContextSchedule).
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/model_spec.h"
#include "util/atomic_file.h"
#include "whatif/chain_replay.h"
#include "whatif/concurrency.h"
#include "whatif/schedule.h"
#include "whatif/trace.h"

namespace specplan::cli {
namespace {

constexpr char kCmd[] = "specplan schedule: ";

struct ScheduleArgs : CostFlags {
  std::string format;
  std::string trace;
  std::string out;
  std::string batch_sizes = "1,2,4,8,16,32,64,128,256";
  int n_max = 64;
  double t_draft_ms = 0;
  double draft_batch_growth = whatif::kDefaultDraftBatchGrowth;
  bool calibrate = false;
  bool batch_scan = false;
  int min_draft_len = 0;
  bool unconstrained = false;
  std::string context_grid;
  bool quiet = false;
  AcceptanceFlags acceptance;  // chains over the user's acceptance instead of --trace
  int64_t context = 1024;      // --acceptance of rates: every request's context
};

// "0,1024,4096" -> {0, 1024, 4096}; the grid's own rules are BuildContextSchedule's.
absl::StatusOr<std::vector<int64_t>> ParseContextGrid(const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", std::string(part), "\": not a context length (an integer >= 0)"));
    }
    out.push_back(v);
  }
  return out;
}

// What the output's metadata names: the cost that priced it and what it was replayed over. A
// bundled profile is named by its id, a --profile file by its path (as whatif does).
whatif::ScheduleSource SourceOf(const ScheduleArgs& a, const costmodel::ResolvedLatencyModel& r,
                                costmodel::DType dtype, const std::string& replayed) {
  whatif::ScheduleSource source;
  source.profile = a.profile.empty() ? r.profile_id : r.profile_path;
  source.engine = r.engine;
  source.engine_version = r.engine_version;
  source.model = r.model_spec.name;
  source.gpu = r.gpu_spec.name;
  source.dtype = costmodel::DTypeName(dtype);
  source.trace_path = replayed;
  return source;
}

// Writes the schedule (to --out or stdout) and, unless --quiet, its summary to stderr.
int WriteSchedule(const ScheduleArgs& a, const whatif::Schedule& schedule,
                  const whatif::ContextSchedule& by_context, const whatif::ScheduleSource& source) {
  const std::string text = by_context.rows.empty()
                               ? whatif::RenderSchedule(schedule, source)
                               : whatif::RenderContextSchedule(by_context, source);
  if (a.out.empty()) {
    std::cout << text;
  } else {
    absl::Status st = WriteFileAtomically(a.out, text);
    if (!st.ok()) {
      std::cerr << kCmd << "--out " << a.out << ": " << st.message() << "\n";
      return 1;
    }
  }
  if (!a.quiet) {
    std::cerr << whatif::FormatScheduleSummary(schedule, source);
    for (size_t j = 1; j < by_context.rows.size(); ++j) {
      std::cerr << "at context +" << by_context.contexts[j] << " tokens: ";
      std::string sep;
      for (const whatif::SchedulePoint& p : by_context.rows[j].points) {
        std::cerr << sep << "B " << p.batch << " K " << p.setting << " ("
                  << absl::StrFormat("%.1f", p.throughput) << " tokens/s)";
        sep = ", ";
      }
      std::cerr << "\n";
    }
    if (!a.out.empty()) std::cerr << "wrote " << a.out << "\n";
  }
  return 0;
}

// --acceptance: chains of K replayed over the user's acceptance on the engine's whole step
// (whatif/chain_replay.h; a per-step trace as B mixed requests in flight, rates under
// independence at --context), and the schedule chosen from them (whatif::BuildChainSchedule).
int RunAcceptanceSchedule(const ScheduleArgs& a, whatif::ScheduleFormat format,
                          const std::vector<int>& sizes, costmodel::DType dtype) {
  if (!a.context_grid.empty()) {
    std::cerr << kCmd
              << "--context-grid: not with --acceptance (the acceptance replay prices "
                 "each request at its own context already)\n";
    return 1;
  }
  auto acceptance = a.acceptance.Load();
  if (Failed(kCmd, acceptance.status())) return 1;
  auto resolved = a.Resolve(dtype);
  if (Failed(kCmd, resolved.status())) return 1;
  auto step = a.Step(*resolved, a.t_draft_ms * 1e-3);
  if (Failed(kCmd, step.status())) return 1;
  whatif::ChainReplayOptions replay;
  replay.batch_sizes = sizes;
  for (int k = 0; k <= std::min(acceptance->k_max, a.n_max); ++k) replay.chain_lengths.push_back(k);
  replay.batching =
      acceptance->has_trace() ? whatif::ChainBatching::kMixed : whatif::ChainBatching::kCopies;
  replay.context = a.context;
  auto report = whatif::ReplayChains(*acceptance, *step, replay);
  if (Failed(kCmd, report.status())) return 1;
  whatif::ScheduleOptions options;
  options.min_chain = a.min_draft_len;
  options.monotone = !a.unconstrained;
  const std::string described = absl::StrFormat(
      "%s (%s; %s%s)", acceptance->source, planner::AcceptanceFormatName(acceptance->format),
      report->mode, report->mode == "rates" ? absl::StrFormat(", c = %d", report->context) : "");
  const std::string step_note =
      absl::StrFormat("drafter %s, draft priced by %s; host: %s", a.drafter,
                      step->draft_priced_by(), step->host().provenance);
  auto schedule = whatif::BuildChainSchedule(*report, format, options, described, step_note);
  if (Failed(kCmd, schedule.status())) return 1;
  return WriteSchedule(a, *schedule, whatif::ContextSchedule{},
                       SourceOf(a, *resolved, dtype, acceptance->source));
}

int RunSchedule(const ScheduleArgs& given) {
  ScheduleArgs a = given;
  auto format = whatif::ParseScheduleFormat(a.format);
  if (Failed(kCmd, format.status(), "--format ")) return 1;
  auto sizes = whatif::ParseConcurrencyList(a.batch_sizes);
  if (!sizes.ok()) {
    std::cerr << kCmd << "--batch-sizes " << a.batch_sizes << ": " << sizes.status().message()
              << "\n";
    return 1;
  }
  if (sizes->front() != 1) {
    std::cerr << kCmd << "--batch-sizes " << a.batch_sizes
              << ": must start at 1 (the setting chosen at each batch size applies up to the next "
                 "one, so the first must cover batch size 1)\n";
    return 1;
  }
  if (a.min_draft_len > 0 && !whatif::ScheduleUsesChains(*format)) {
    std::cerr << kCmd << "--min-draft-len " << a.min_draft_len
              << ": applies to --format vllm and trtllm (draft lengths), not sglang\n";
    return 1;
  }
  std::vector<int64_t> contexts;
  if (!a.context_grid.empty()) {
    if (*format != whatif::ScheduleFormat::kVllm) {
      std::cerr << kCmd << "--context-grid " << a.context_grid
                << ": applies to --format vllm (the context axis of vLLM RFC #48627), not "
                << a.format << "\n";
      return 1;
    }
    auto grid = ParseContextGrid(a.context_grid);
    if (!grid.ok()) {
      std::cerr << kCmd << "--context-grid " << a.context_grid << ": " << grid.status().message()
                << "\n";
      return 1;
    }
    contexts = *std::move(grid);
  }
  auto parsed = a.Parse(a.t_draft_ms);
  if (Failed(kCmd, parsed.status())) return 1;
  const costmodel::DType dtype = parsed->dtype;
  // The format's own engine prices the passes unless --engine or --profile says otherwise.
  if (a.engine.empty() && a.profile.empty()) a.engine = whatif::ScheduleFormatName(*format);
  if (a.acceptance.given()) {
    if (!a.trace.empty()) {
      std::cerr << kCmd
                << "--trace and --acceptance: give one (marginals for trees, or your "
                   "engine's acceptance for chains)\n";
      return 1;
    }
    return RunAcceptanceSchedule(a, *format, *sizes, dtype);
  }

  const std::string trace_path = a.trace.empty() ? whatif::DefaultTracePath() : a.trace;
  auto trace = whatif::LoadTrace(trace_path);
  if (Failed(kCmd, trace.status(), "--trace ")) return 1;
  auto resolved = a.Resolve(dtype);
  if (Failed(kCmd, resolved.status())) return 1;

  whatif::ScheduleOptions options;
  options.replay.batch_sizes = *sizes;
  options.replay.n_max = a.n_max;
  options.replay.drafter.cls = parsed->drafter.cls;
  options.replay.drafter.t_net_s = parsed->drafter.t_net_s;
  options.replay.drafter.batch_growth = a.draft_batch_growth;
  options.replay.t_aux_s = a.t_aux_ms * 1e-3;
  {
    // A drafter architecture's whole step at the trace's mean context (cost_flags.h).
    const whatif::TraceDraftShape shape = whatif::DraftShapeOf(*trace);
    double l_ar_s = 0;
    if (Failed(kCmd, a.PriceDrafter(*resolved, shape.max_gamma, shape.mean_context,
                                    &options.replay.drafter, &options.replay.t_aux_s, &l_ar_s))) {
      return 1;
    }
    // Drafting given by hand (--t-draft-ms) is one request's: the batch growth prices the rest.
    if (a.DrafterIsCostClass() || a.t_draft_ms > 0) {
      options.replay.drafter.batch_growth = a.draft_batch_growth;
    }
  }
  options.replay.calibrate = a.calibrate;
  options.replay.batch_scan = a.batch_scan;
  options.min_chain = a.min_draft_len;
  options.monotone = !a.unconstrained;
  whatif::ContextSchedule by_context;
  absl::StatusOr<whatif::Schedule> schedule;
  if (contexts.empty()) {
    schedule = whatif::BuildSchedule(*trace, *resolved->model, *format, options);
  } else {
    auto built = whatif::BuildContextSchedule(*trace, *resolved->model, *format, options, contexts);
    if (!built.ok()) {
      std::cerr << kCmd << "--context-grid " << a.context_grid << ": " << built.status().message()
                << "\n";
      return 1;
    }
    by_context = *std::move(built);
    schedule = by_context.rows.front();
  }
  if (!schedule.ok()) {
    std::cerr << kCmd << trace_path << ": " << schedule.status().message() << "\n";
    return 1;
  }

  return WriteSchedule(a, *schedule, by_context, SourceOf(a, *resolved, dtype, trace_path));
}

}  // namespace

void RegisterScheduleCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand(
      &app, "schedule",
      "Write the speculation schedule an engine takes today, in its own format: per batch size the "
      "static draft length (vLLM num_speculative_tokens_per_batch_size, TensorRT-LLM "
      "draft_len_schedule) or draft tree (SGLang speculative_num_steps / speculative_eagle_topk / "
      "speculative_num_draft_tokens) with the highest throughput when the trace is replayed with B "
      "requests in flight, priced by a cost profile",
      exit_code, &RunSchedule);
  cmd->add_option(
         "--format", args->format,
         "Engine format: vllm (JSON with speculative_config), trtllm (YAML for the LLM API "
         "options) or sglang (JSON, server args per batch range)")
      ->required();
  AddCostFlags(cmd, args);
  // Here the default engine is the format's own, not the lookup order the other commands use.
  cmd->get_option("--engine")
      ->description(
          "Whose kernels price the passes: sglang, vllm, trtllm or specplan; default: the engine "
          "--format names (its profile for --gpu x --model must ship, or pass --profile)");
  AddTraceOption(cmd, &args->trace, "Acceptance");
  cmd->add_option("--out", args->out, "Write the schedule to FILE (atomically) instead of stdout");
  cmd->add_option("--batch-sizes", args->batch_sizes,
                  "Comma-separated grid of batch sizes, starting at 1 (each in [1, 4096]); the "
                  "setting chosen at a grid point applies up to the next one")
      ->capture_default_str();
  cmd->add_option("--n-max", args->n_max,
                  "Largest draft tree (sglang: budgets 1, 2, 3, 4, 6, 8, ... up to N nodes per "
                  "request) and longest chain (vllm, trtllm: K up to min(N, the marginals' gamma))")
      ->check(CLI::Range(1, 8191))
      ->capture_default_str();
  cmd->add_option("--t-draft-ms", args->t_draft_ms,
                  "Drafter network time of one request's draft pass, ms")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--draft-batch-growth", args->draft_batch_growth,
                  "Each further request in a batched draft pass adds this fraction of one "
                  "request's drafting time, T_draft(B) = T_draft(1) (1 + F (B - 1))")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--calibrate", args->calibrate,
                "The batch planner (the comparison row) calibrates its surrogate online, as a "
                "planner fed ReportAcceptance would");
  cmd->add_flag("--batch-scan", args->batch_scan,
                "The batch planner takes the argmax of its goodput G(N) instead of its first "
                "decrease (for stepped, measured profiles)");
  cmd->add_option("--min-draft-len", args->min_draft_len,
                  "vllm, trtllm: choose among draft lengths K >= this (0 = speculation may be "
                  "off). TensorRT-LLM PR #16888 floors one-engine drafters' scheduled draft "
                  "lengths at 1; --min-draft-len 1 prices what such an engine runs")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_flag("--unconstrained", args->unconstrained,
                "Choose each batch size's best setting on its own, even where a larger batch then "
                "gets a longer chain or a bigger tree than a smaller one (default: never more than "
                "the previous batch size's; trtllm is always capped at K(1))");
  cmd->add_option("--context-grid", args->context_grid,
                  "vllm: also write the context-length axis of vLLM RFC #48627 / PR #48944 "
                  "(speculative_config_context_axis, [bs_lo, bs_hi, ctx_lo, ctx_hi, K] entries): "
                  "a comma-separated grid of context lengths starting at 0, e.g. "
                  "0,2048,8192,32768; at each point the trace is replayed with every request's "
                  "context grown by that many tokens");
  cmd->add_flag("--quiet", args->quiet, "Do not print the summary to stderr");
  AddAcceptanceFlags(cmd, &args->acceptance)
      ->description(
          "Your engine's acceptance instead of --trace (docs/acceptance.md): chains of K are "
          "replayed over it on the engine's whole step (a per-step trace with B requests in "
          "flight, rates under independence at --context); --format sglang then writes SGLang's "
          "batch-size-aware adaptive configuration (--speculative-adaptive-config)");
  cmd->add_option("--context", args->context,
                  "With --acceptance of rates: every request's cached context, tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
}

}  // namespace specplan::cli
