// The flags that give a command the user's acceptance as their engine reports it
// (planner/acceptance/engine_acceptance.h): the fields of one ops::AcceptanceRequest (the file, its
// format, the drafter of a step trace, the draft length k_max, an n-gram drafter's
// prompt_lookup_min / _max), registered by one function under the names each command gives them:
// `specplan acceptance FILE --format --drafter --k-max --prompt-lookup-min --prompt-lookup-max`,
// and --acceptance FILE --acceptance-format, --acceptance-drafter, ... beside the own flags of
// estimate, whatif --concurrency and schedule. Their help, checks and errors are the same
// everywhere.
#ifndef SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_
#define SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/acceptance_op.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::cli {

// How a command names the request's fields on its command line.
struct AcceptanceFlagNames {
  const char* file;    // the file: "file" (a positional) or "--acceptance"
  const char* prefix;  // of format, drafter and k-max: "--" or "--acceptance-"
};
// `specplan acceptance FILE [--format F] [--drafter D] [--k-max K]`.
inline constexpr AcceptanceFlagNames kAcceptanceCommandNames = {"file", "--"};
// [--acceptance FILE] [--acceptance-format F] [--acceptance-drafter D] [--acceptance-k-max K].
inline constexpr AcceptanceFlagNames kAcceptanceFlagNames = {"--acceptance", "--acceptance-"};

// The options AddAcceptanceOptions registered, for a command to add requirements.
struct AcceptanceOptions {
  CLI::Option* file = nullptr;
  CLI::Option* k_max = nullptr;
};

// Registers the request's fields on `cmd` under `names`, bound to `req` (which must outlive
// the parse): the file with `file_help`, the others with the help they have in every command.
AcceptanceOptions AddAcceptanceOptions(CLI::App* cmd, ops::AcceptanceRequest* req,
                                       const AcceptanceFlagNames& names,
                                       const std::string& file_help);

// ops::Validate's refusal of a request in the words of `names`: "format: unknown value 'x' ..." ->
// "<prefix>format: unknown value 'x' ...", "k_max = 5000: ..." -> "<prefix>k-max 5000: ...".
// Other messages are returned as they are.
absl::Status AcceptanceErrorInFlags(const absl::Status& status, const AcceptanceFlagNames& names);

// The request bound to the --acceptance flags: path "" = not given.
struct AcceptanceFlags : ops::AcceptanceRequest {
  bool given() const { return !path.empty(); }
  // ops::LoadAcceptance; errors name --acceptance (and the file's line and column),
  // --acceptance-format, --acceptance-k-max or --acceptance-prompt-lookup-min / -max.
  absl::StatusOr<planner::EngineAcceptance> Load() const;
};

// Registers the --acceptance flags on `cmd`, bound to `flags` (which must outlive the parse).
// Returns --acceptance.
CLI::Option* AddAcceptanceFlags(CLI::App* cmd, AcceptanceFlags* flags);

// --context N, in [0, 2^24]: with --acceptance of rates (priced under independence), every
// request's cached context, tokens (whatif --concurrency and schedule).
CLI::Option* AddAcceptanceContextOption(CLI::App* cmd, int64_t* context);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_ACCEPTANCE_FLAGS_H_
