// The flags that give a command the user's acceptance as their engine reports it
// (planner/acceptance/engine_acceptance.h): --acceptance FILE, --acceptance-format,
// --acceptance-drafter and --acceptance-k-max, shared by estimate, whatif --concurrency and
// schedule so that their names, help and errors are the same everywhere.
#ifndef SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_
#define SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>

#include "absl/status/statusor.h"
#include "ops/acceptance_op.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::cli {

// The request (ops/acceptance_op.h) bound to the flags: path "" = not given, format "" = detect,
// drafter (step traces: which acc_* key), k_max (sglang logs: the draft length the engine ran).
struct AcceptanceFlags : ops::AcceptanceRequest {
  bool given() const { return !path.empty(); }
  // ops::LoadAcceptance; errors name --acceptance (and the file's line and column),
  // --acceptance-format or --acceptance-k-max.
  absl::StatusOr<planner::EngineAcceptance> Load() const;
};

// Registers the four flags on `cmd`, bound to `flags` (which must outlive the parse).
CLI::Option* AddAcceptanceFlags(CLI::App* cmd, AcceptanceFlags* flags);

// --context N, in [0, 2^24]: with --acceptance of rates (priced under independence), every
// request's cached context, tokens (whatif --concurrency and schedule).
CLI::Option* AddAcceptanceContextOption(CLI::App* cmd, int64_t* context);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_
