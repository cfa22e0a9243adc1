// The one place that reports mistyped command lines by name, before CLI11 parses them: an unknown
// subcommand ("specplan estimat") or an unknown option ("plan --n-mx 256") is named with the
// closest known one, instead of CLI11's first complaint (a required option group, "A subcommand is
// required") that never names the typo.
#ifndef SPECPLAN_CLI_ARG_CHECK_H_
#define SPECPLAN_CLI_ARG_CHECK_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace specplan::cli {

// Walks `args` (argv without the program name) through `app` and its subcommands as CLI11 would
// and returns the first problem, or "" when every word is a known subcommand, a known option or an
// option's value:
//   "specplan: unknown command 'estimat' (did you mean 'estimate'?)"
//   "specplan plan: unknown option --n-mx (did you mean --n-max?)"
// Words after "--" are not checked.
std::string UnknownArgument(const CLI::App& app, const std::vector<std::string>& args);

// UnknownArgument over argv: prints the problem and a --help hint to stderr and returns CLI11's
// exit status for unexpected arguments (109); 0 when there is none.
int CheckArguments(const CLI::App& app, int argc, const char* const* argv);

// The candidate closest to `word` by edit distance, or "" when none is close (at most 2 edits, or
// a third of the word's length).
std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_ARG_CHECK_H_
