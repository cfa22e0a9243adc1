// specplan: command-line front end to the cost model and the planner.
#include <CLI/CLI.hpp>

#include "cli/arg_check.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace specplan::cli;
  int exit_code = 0;  // set by the subcommand that runs
  CLI::App app{
      "specplan: hardware-aware speculative decoding planner.\n"
      "Estimates verification latency on a GPU for a target model and plans draft trees."};
  app.require_subcommand(1);
  for (auto* add : {&RegisterEstimateCommand, &RegisterProfilesCommand, &RegisterPlanCommand,
                    &RegisterPlanBatchCommand, &RegisterMergeCommand, &RegisterWhatIfCommand,
                    &RegisterScheduleCommand, &RegisterFitCommand, &RegisterAcceptanceCommand,
                    &RegisterStepCommand}) {
    add(app, &exit_code);
  }
  if (int rc = CheckArguments(app, argc, argv); rc != 0) return rc;  // typos, by name
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
