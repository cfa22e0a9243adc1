// What the `specplan` subcommands share besides their cost flags (cli/cost_flags.h): printing an
// error after the command's name, the options several commands take (--server, --n-max / --budget,
// the SGLang layout options, --json, --c, --force, ...; each named and checked here once, with the
// help a command gives where it says more), the budget mode those options choose, and writing a
// --plot PNG.
#ifndef SPECPLAN_CLI_COMMAND_UTIL_H_
#define SPECPLAN_CLI_COMMAND_UTIL_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "ops/validate.h"
#include "planner/policies/best_first.h"
#include "plot/chart.h"

namespace specplan::cli {

// Adds the subcommand `name` of `parent` with a fresh Args for its options to bind to; once the
// flags parse, its callback sets *exit_code = run(args). Returns the subcommand and the Args (which
// lives as long as the subcommand's callback).
template <typename Args>
std::pair<CLI::App*, Args*> AddCommand(CLI::App* parent, const std::string& name,
                                       const std::string& description, int* exit_code,
                                       int (*run)(const Args&)) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = parent->add_subcommand(name, description);
  cmd->callback([args, exit_code, run] { *exit_code = run(*args); });
  return {cmd, args.get()};
}

// When `status` is an error: prints "<cmd><prefix><message>\n" to stderr ("specplan plan: " +
// "--marginals " + ...) and returns true. OK: prints nothing, returns false.
bool Failed(std::string_view cmd, const absl::Status& status, std::string_view prefix = "");

// --server HOST:PORT: "<verb> on a specplan-server at HOST:PORT (or replicas: ...)<tail>".
CLI::Option* AddServerOption(CLI::App* cmd, std::string* server, std::string_view verb,
                             std::string_view tail);

// --n-max N (search) and --budget N (fixed), exactly one of them, each in [0, max].
void AddBudgetOptions(CLI::App* cmd, int* n_max, int* budget, int max,
                      const std::string& n_max_help, const std::string& budget_help);

// --n-max N, in [min, planner::kMaxTreeNodes - 1] (one tree's draft nodes), its default shown: as
// `help` says for the command.
CLI::Option* AddTreeNMaxOption(CLI::App* cmd, int* n_max, int min, const std::string& help);

// The mode and n_max --n-max / --budget / --scan choose: --budget N: kFixed with n_max N; else
// kScan (--scan) or kController with n_max = --n-max.
template <typename Options>
void SetBudgetMode(int n_max, int budget, bool scan, Options* options) {
  if (budget >= 0) {
    options->mode = planner::BudgetMode::kFixed;
    options->n_max = budget;
  } else {
    options->mode = scan ? planner::BudgetMode::kScan : planner::BudgetMode::kController;
    options->n_max = n_max;
  }
}

// The check of every floating flag: a finite number in [lo, hi] (in (lo, hi] when `lo_open`),
// through ops::CheckInRange, so NaN and infinities are refused (CLI11's own Range and
// NonNegativeNumber let "nan" through): "--t-aux-ms: value 1e+308: must be in [0, 10000] (ms)".
CLI::Validator FiniteRange(double lo, double hi, std::string_view what = "", bool lo_open = false);
// A time in ms: FiniteRange(0, ops::kMaxMs, "ms"), the range ops/validate.h states for every
// time given by hand.
CLI::Validator MsRange();

// --t-draft-ms MS (in [0, 1e4]): the drafter's network time, as `help` says for the command.
CLI::Option* AddDraftTimeOption(CLI::App* cmd, double* t_draft_ms, const std::string& help);
// --draft-batch-growth F (in [0, 1]): the fraction of one sequence's draft time each further
// sequence in a batched draft pass adds (at most a whole sequence's time: a sequence batched costs
// no more than one drafted on its own), as `help` says for the command.
CLI::Option* AddDraftBatchGrowthOption(CLI::App* cmd, double* growth, const std::string& help);

// --tree-mask-mode and --draft-token-num for --layout sglang (`layout`, which they need).
void AddSglangLayoutOptions(CLI::App* cmd, CLI::Option* layout, std::string* tree_mask_mode,
                            int* draft_token_num, const std::string& draft_token_num_help);
// True after printing "<cmd>--layout X needs --json" when a layout is asked for without --json.
bool LayoutWithoutJson(std::string_view cmd, const std::string& layout, bool json);

// --json: "Print one JSON object<what>" (what the object holds, or what it replaces).
CLI::Option* AddJsonFlag(CLI::App* cmd, bool* json, std::string_view what = "");

// --c C (required), in [0, 2^24] (ops::kMaxContext): the cached context tokens the pass verifies
// over.
CLI::Option* AddCachedContextOption(CLI::App* cmd, int64_t* c);

// --force: allows writing a profile into the shipped profiles directory (the check is
// util/shipped_dir.h CheckNotShipped, the operation's or the command's).
CLI::Option* AddForceFlag(CLI::App* cmd, bool* force);

// The one convention of every command that writes a file (--out, --plot; docs/reliability.md):
// the path is refused inside the shipped profiles directories (calib/, $SPECPLAN_CALIB_DIR)
// unless --force, and a parent directory that does not exist is an error unless --mkdir (then
// it is created).
struct OutputFlags {
  bool force = false;  // --force: write into the shipped profiles directory
  bool mkdir = false;  // --mkdir: create the output's missing parent directories
};
// --mkdir, bound to `mkdir`.
CLI::Option* AddMkdirFlag(CLI::App* cmd, bool* mkdir);
// --force and --mkdir, bound to `out`.
void AddOutputFlags(CLI::App* cmd, OutputFlags* out);
// OK when `path` (given by `flag`) may be written under `out`'s rules; else INVALID_ARGUMENT
//   "<flag> <path>: inside the shipped profiles directory <dir>, ...; ... or --force ..."
//   "<flag> <path>: directory <parent> does not exist (pass --mkdir to create it)"
//   "<flag> <path>: <parent> is not a directory"     "<flag> <path>: is a directory"
absl::Status CheckOutputPath(std::string_view flag, const std::string& path,
                             const OutputFlags& out);
// CheckOutputPath, then the atomic write (util/atomic_file.h); false after printing
// "<cmd><message>" (the message starts "<flag> <path>: ").
bool WriteOutput(std::string_view cmd, std::string_view flag, const std::string& path,
                 std::string_view text, const OutputFlags& out);

// --trace FILE: "<kind> trace (JSONL, whatif/trace.h); default: the bundled trace <path>".
CLI::Option* AddTraceOption(CLI::App* cmd, std::string* trace, std::string_view kind);

// Checks `path` (CheckOutputPath under `out`), renders `charts` (900 x 900) and writes the PNG to
// `path` atomically; false after printing "<cmd>--plot <path>: <error>".
bool WritePlot(std::string_view cmd, const std::string& path,
               const std::vector<plot::Chart>& charts, const OutputFlags& out);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_COMMAND_UTIL_H_
