// Subcommands of the `specplan` CLI. Each Register* adds one subcommand to the app; its callback
// sets *exit_code (0 ok, 1 bad input or failure) and prints errors to stderr.
#ifndef SPECPLAN_CLI_COMMANDS_H_
#define SPECPLAN_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace specplan::cli {

void RegisterEstimateCommand(CLI::App& app, int* exit_code);  // estimate_command.cc
void RegisterProfilesCommand(CLI::App& app, int* exit_code);  // profiles_command.cc
// `specplan profiles compose`, a subcommand of `profiles` (compose_command.cc).
void RegisterProfilesComposeCommand(CLI::App* profiles, int* exit_code);
void RegisterProfilesCompareKernelsCommand(CLI::App* profiles, int* exit_code);
void RegisterPlanCommand(CLI::App& app, int* exit_code);        // plan_command.cc
void RegisterMergeCommand(CLI::App& app, int* exit_code);       // merge_command.cc
void RegisterWhatIfCommand(CLI::App& app, int* exit_code);      // whatif_command.cc
void RegisterFitCommand(CLI::App& app, int* exit_code);         // fit_command.cc
void RegisterPlanBatchCommand(CLI::App& app, int* exit_code);   // plan_batch_command.cc
void RegisterScheduleCommand(CLI::App& app, int* exit_code);    // schedule_command.cc
void RegisterAcceptanceCommand(CLI::App& app, int* exit_code);  // acceptance_command.cc
void RegisterStepCommand(CLI::App& app, int* exit_code);        // step_command.cc

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_COMMANDS_H_
