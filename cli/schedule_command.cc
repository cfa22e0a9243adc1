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
// #48627 (whatif::RenderContextSchedule). An adapter: the flags become an ops::ScheduleRequest
// (ops/schedule_op.h), whose result is rendered (ops::Render, ops::Summary).
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/whatif_concurrency.h"
#include "ops/schedule_op.h"
#include "util/atomic_file.h"
#include "whatif/concurrency.h"
#include "whatif/schedule.h"

namespace specplan::cli {
namespace {

constexpr char kCmd[] = "specplan schedule: ";

struct ScheduleArgs : CostFlags, ReplayFlags {
  std::string format;
  std::string out;
  OutputFlags output;  // --force, --mkdir for --out
  std::string batch_sizes = "1,2,4,8,16,32,64,128,256";
  int n_max = 64;
  int min_draft_len = 0;
  bool unconstrained = false;
  double slo_tpot_ms = 0, slo_ttft_ms = 0;
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

// An operation's error in the flags' words: a leading request field becomes its flag with the
// text given on the command line ("batch_sizes = 2,4: ..." -> "--batch-sizes 2,4: ..."), the
// cost request's fields as CostErrorInFlags names them; a replay's "<trace path>: ..." stays.
absl::Status ScheduleErrorInFlags(const ScheduleArgs& a, const absl::Status& status) {
  if (status.ok()) return status;
  std::string msg(status.message());
  const struct {
    const char* field;
    std::string flag;  // with the text given
  } kFields[] = {
      {"batch_sizes", "--batch-sizes " + a.batch_sizes},
      {"context_grid", "--context-grid " + a.context_grid},
      {"min_draft_len", absl::StrCat("--min-draft-len ", a.min_draft_len)},
  };
  for (const auto& [field, flag] : kFields) {
    size_t rest = std::string::npos;  // where ": ..." starts
    if (absl::StartsWith(msg, absl::StrCat(field, ": "))) {
      rest = strlen(field);
    } else if (absl::StartsWith(msg, absl::StrCat(field, " = "))) {
      rest = msg.find(": ");
    }
    if (rest == std::string::npos) continue;
    msg = absl::StrReplaceAll(absl::StrCat(flag, msg.substr(rest)),
                              {{"applies to format ", "applies to --format "}});
    return absl::Status(status.code(), msg);
  }
  for (const auto& [field, flag] : {std::pair<const char*, const char*>{
           "trace and acceptance: ", "--trace and --acceptance: "}}) {
    if (absl::StartsWith(msg, field)) {
      return absl::Status(status.code(), absl::StrCat(flag, msg.substr(strlen(field))));
    }
  }
  return WhatIfErrorInFlags(status);
}

// Writes the schedule (to --out or stdout) and, unless --quiet, its summary to stderr.
int WriteSchedule(const ScheduleArgs& a, const ops::ScheduleResult& result) {
  const std::string text = ops::Render(result);
  if (a.out.empty()) {
    std::cout << text;
  } else {
    if (!WriteOutput(kCmd, "--out", a.out, text, a.output)) return 1;
  }
  if (!a.quiet) {
    std::cerr << ops::Summary(result);
    if (!a.out.empty()) std::cerr << "wrote " << a.out << "\n";
  }
  return 0;
}

// The request from the flags; false after printing the error of a list that does not parse.
bool RequestOf(const ScheduleArgs& a, ops::ScheduleRequest* req) {
  auto format = whatif::ParseScheduleFormat(a.format);
  if (Failed(kCmd, format.status(), "--format ")) return false;
  req->format = *format;
  auto sizes = whatif::ParseConcurrencyList(a.batch_sizes);
  if (!sizes.ok()) {
    std::cerr << kCmd << "--batch-sizes " << a.batch_sizes << ": " << sizes.status().message()
              << "\n";
    return false;
  }
  if (!a.context_grid.empty()) {
    auto grid = ParseContextGrid(a.context_grid);
    if (!grid.ok()) {
      std::cerr << kCmd << "--context-grid " << a.context_grid << ": " << grid.status().message()
                << "\n";
      return false;
    }
    req->context_grid = *std::move(grid);
  }
  ops::WhatIfConcurrencyRequest& r = req->replay;
  r.cost = a;
  a.Fill(&r);
  r.batch_sizes = *std::move(sizes);
  r.n_max = a.n_max;
  req->min_draft_len = a.min_draft_len;
  req->monotone = !a.unconstrained;
  req->slo_tpot_ms = a.slo_tpot_ms;
  req->context = a.context;
  return true;
}

int RunSchedule(const ScheduleArgs& a) {
  // The output path first: nothing runs (or is written) for a path the command would refuse.
  if (!a.out.empty() && Failed(kCmd, CheckOutputPath("--out", a.out, a.output))) return 1;
  if (a.slo_ttft_ms > 0) {
    std::cerr << kCmd << "--slo-ttft-ms: the schedule's replay keeps B requests in flight and "
              << "has no arrivals or prefill, so it has no TTFT; use whatif --online "
              << "--slo-ttft-ms (docs/online.md)\n";
    return 1;
  }
  ops::ScheduleRequest req;
  if (!RequestOf(a, &req)) return 1;
  if (Failed(kCmd, ScheduleErrorInFlags(a, ops::Validate(req)))) return 1;
  if (a.acceptance.given()) {
    auto acceptance = a.acceptance.Load();
    if (Failed(kCmd, acceptance.status())) return 1;
    req.acceptance = *std::move(acceptance);
    if (Failed(kCmd, ScheduleErrorInFlags(a, ops::Validate(req)))) return 1;
  }
  auto result = ops::Schedule(req);
  if (Failed(kCmd, ScheduleErrorInFlags(a, result.status()))) return 1;
  return WriteSchedule(a, *result);
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
  AddOutputFlags(cmd, &args->output);
  cmd->add_option("--batch-sizes", args->batch_sizes,
                  "Comma-separated grid of batch sizes, starting at 1 (each in [1, 4096]); the "
                  "setting chosen at a grid point applies up to the next one")
      ->capture_default_str();
  AddTreeNMaxOption(cmd, &args->n_max, 1,
                    "Largest draft tree (sglang: budgets 1, 2, 3, 4, 6, 8, ... up to N nodes per "
                    "request) and longest chain (vllm, trtllm: K up to min(N, the marginals' "
                    "gamma))");
  AddDraftTimeOption(cmd, &args->t_draft_ms,
                     "Drafter network time of one request's draft pass, ms");
  args->draft_batch_growth_option =
      AddDraftBatchGrowthOption(
          cmd, &args->draft_batch_growth,
          "Each further request in a batched draft pass adds this fraction of one request's "
          "drafting time, T_draft(B) = T_draft(1) (1 + F (B - 1))")
          ->capture_default_str();
  AddCalibrateFlag(cmd, args,
                   "The batch planner (the comparison row) calibrates its surrogate online, as a "
                   "planner fed ReportAcceptance would");
  AddBatchScanFlag(cmd, args,
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
  cmd->add_option("--slo-tpot-ms", args->slo_tpot_ms,
                  "TPOT SLO, ms per output token: each grid point says whether its setting meets "
                  "it (TPOT = B / throughput with B requests in flight), and the summary and "
                  "metadata name the largest batch size that does, beside plain decoding's")
      ->check(MsRange());
  cmd->add_option("--slo-ttft-ms", args->slo_ttft_ms,
                  "Refused here (the replay has no arrivals or prefill): use whatif --online")
      ->check(MsRange());
  cmd->add_flag("--quiet", args->quiet, "Do not print the summary to stderr");
  AddAcceptanceFlags(cmd, &args->acceptance)
      ->description(
          "Your engine's acceptance instead of --trace (docs/acceptance.md): chains of K are "
          "replayed over it on the engine's whole step (a per-step trace with B requests in "
          "flight, rates under independence at --context); --format sglang then writes SGLang's "
          "batch-size-aware adaptive configuration (--speculative-adaptive-config)");
  AddAcceptanceContextOption(cmd, &args->context);
}

}  // namespace specplan::cli
