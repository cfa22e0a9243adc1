// The flags that give a command the user's acceptance as their engine reports it
// (planner/acceptance/engine_acceptance.h): --acceptance FILE, --acceptance-format,
// --acceptance-drafter and --acceptance-k-max, shared by estimate, whatif --concurrency and
// schedule so that their names, help and errors are the same everywhere.
#ifndef SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_
#define SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::cli {

struct AcceptanceFlags {
  std::string path;     // "" = not given
  std::string format;   // "" = detect
  std::string drafter;  // step traces: which acc_* key
  int k_max = 0;        // sglang logs: the draft length the engine ran

  bool given() const { return !path.empty(); }
  // The file read and parsed; errors name --acceptance and the file's line and column.
  absl::StatusOr<planner::EngineAcceptance> Load() const;
};

// Registers the four flags on `cmd`, bound to `flags` (which must outlive the parse).
CLI::Option* AddAcceptanceFlags(CLI::App* cmd, AcceptanceFlags* flags);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_
