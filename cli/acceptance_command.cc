// specplan acceptance: reads the acceptance an engine reports (vLLM metrics scrape or log, vLLM
// per-request metrics, SGLang log, SpecDecode-Bench step trace) and prints per-position acceptance,
// the mean acceptance length and the tokens per step a chain of k would give
// (planner/acceptance/engine_acceptance.h). An adapter over ops::Acceptance (ops/acceptance_op.h).
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/match.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "ops/acceptance_op.h"

namespace specplan::cli {
namespace {

// The request's fields bound to the flags, and --json.
struct AcceptanceArgs : ops::AcceptanceRequest {
  bool json = false;
};

int RunAcceptance(const AcceptanceArgs& a) {
  constexpr char kCmd[] = "specplan acceptance: ";
  auto result = ops::Acceptance(a);
  // A format name is refused as "format: unknown value ...": the flag is --format.
  const bool format = !result.ok() && absl::StartsWith(result.status().message(), "format: ");
  if (Failed(kCmd, result.status(), format ? "--" : "")) return 1;
  std::cout << (a.json ? ops::ToJson(*result).dump(2) + "\n" : ops::ToText(*result));
  return 0;
}

}  // namespace

void RegisterAcceptanceCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand<AcceptanceArgs>(
      &app, "acceptance",
      "Read the draft acceptance your engine reports (vLLM /metrics scrape or log, vLLM "
      "per-request metrics, SGLang log, SpecDecode-Bench step trace) and print per-position "
      "acceptance, the mean acceptance length and, for a step trace, tokens per step for chains "
      "of k = 1..8",
      exit_code, &RunAcceptance);
  cmd->add_option("file", args->path, "Input file; - reads stdin")->required();
  cmd->add_option("--format", args->format,
                  "vllm-prometheus, vllm-log, vllm-requests, sglang-log or step-trace (default: "
                  "detected from the content)");
  cmd->add_option("--drafter", args->drafter,
                  "step-trace: which drafter's acc_len to read, e.g. eagle for acc_eagle "
                  "(default: the first acc_* key of the first line)");
  cmd->add_option("--k-max", args->k_max,
                  "Draft length: required for sglang-log (SGLang's --speculative-num-steps); "
                  "step-trace: the chain length per-position rates are walked with (default: the "
                  "largest acc_len - 1); other formats: must match the positions the file gives")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag(
      "--json", args->json,
      "Print one JSON object (the acceptance fields and tokens_per_step[k], k = 0..k_max)");
}

}  // namespace specplan::cli
