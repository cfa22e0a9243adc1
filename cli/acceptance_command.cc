// specplan acceptance: reads the acceptance an engine reports (vLLM metrics scrape or log, vLLM
// per-request metrics, SGLang log, SpecDecode-Bench step trace) and prints per-position acceptance,
// the mean acceptance length and the tokens per step a chain of k would give
// (planner/acceptance/engine_acceptance.h). An adapter over ops::Acceptance (ops/acceptance_op.h).
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/acceptance_flags.h"
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
  auto result = ops::Acceptance(a);
  if (Failed("specplan acceptance: ",
             AcceptanceErrorInFlags(result.status(), kAcceptanceCommandNames))) {
    return 1;
  }
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
  const AcceptanceOptions options =
      AddAcceptanceOptions(cmd, args, kAcceptanceCommandNames, "Input file; - reads stdin");
  options.file->required();
  // Given here, a draft length (0, "from the file", is what leaving it out says).
  options.k_max->check(CLI::Range(1, ops::kMaxAcceptanceK));
  AddJsonFlag(cmd, &args->json, " (the acceptance fields and tokens_per_step[k], k = 0..k_max)");
}

}  // namespace specplan::cli
