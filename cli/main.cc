// specplan: command-line front end to the cost model and the planner.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "specplan: hardware-aware speculative decoding planner.\n"
      "Estimates verification latency on a GPU for a target model and plans draft trees."};
  app.require_subcommand(1);
  int exit_code = 0;
  specplan::cli::RegisterEstimateCommand(app, &exit_code);
  specplan::cli::RegisterProfilesCommand(app, &exit_code);
  specplan::cli::RegisterPlanCommand(app, &exit_code);
  specplan::cli::RegisterPlanBatchCommand(app, &exit_code);
  specplan::cli::RegisterMergeCommand(app, &exit_code);
  specplan::cli::RegisterWhatIfCommand(app, &exit_code);
  specplan::cli::RegisterScheduleCommand(app, &exit_code);
  specplan::cli::RegisterFitCommand(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
