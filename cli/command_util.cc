#include "cli/command_util.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "ops/validate.h"
#include "planner/tree/tree.h"
#include "util/atomic_file.h"
#include "whatif/trace.h"

namespace specplan::cli {

bool Failed(std::string_view cmd, const absl::Status& status, std::string_view prefix) {
  if (status.ok()) return false;
  std::cerr << cmd << prefix << status.message() << "\n";
  return true;
}

CLI::Option* AddServerOption(CLI::App* cmd, std::string* server, std::string_view verb,
                             std::string_view tail) {
  return cmd->add_option("--server", *server,
                         absl::StrCat(std::string(verb),
                                      " on a specplan-server at HOST:PORT (or replicas: "
                                      "A:P,B:Q,... or dns:///NAME:PORT, round robin with retries)",
                                      std::string(tail)));
}

void AddBudgetOptions(CLI::App* cmd, int* n_max, int* budget, int max,
                      const std::string& n_max_help, const std::string& budget_help) {
  CLI::Option* search = cmd->add_option("--n-max", *n_max, n_max_help)->check(CLI::Range(0, max));
  CLI::Option* fixed = cmd->add_option("--budget", *budget, budget_help)->check(CLI::Range(0, max));
  search->excludes(fixed);
  CLI::Option_group* group = cmd->add_option_group("budget", "one of --n-max / --budget");
  group->add_option(search);
  group->add_option(fixed);
  group->require_option(1);
}

CLI::Option* AddTreeNMaxOption(CLI::App* cmd, int* n_max, int min, const std::string& help) {
  return cmd->add_option("--n-max", *n_max, help)
      ->check(CLI::Range(min, planner::kMaxTreeNodes - 1))
      ->capture_default_str();
}

CLI::Option* AddDraftTimeOption(CLI::App* cmd, double* t_draft_ms, const std::string& help) {
  return cmd->add_option("--t-draft-ms", *t_draft_ms, help)->check(CLI::NonNegativeNumber);
}

CLI::Option* AddDraftBatchGrowthOption(CLI::App* cmd, double* growth, const std::string& help) {
  return cmd->add_option("--draft-batch-growth", *growth, help)->check(CLI::NonNegativeNumber);
}

void AddSglangLayoutOptions(CLI::App* cmd, CLI::Option* layout, std::string* tree_mask_mode,
                            int* draft_token_num, const std::string& draft_token_num_help) {
  cmd->add_option("--tree-mask-mode", *tree_mask_mode,
                  "SGLang tree_mask mode for --layout sglang: FULL_MASK, QLEN_ONLY, "
                  "QLEN_ONLY_BITPACKING")
      ->capture_default_str()
      ->needs(layout);
  cmd->add_option("--draft-token-num", *draft_token_num, draft_token_num_help)
      ->check(CLI::Range(0, 8192))
      ->needs(layout);
}

bool LayoutWithoutJson(std::string_view cmd, const std::string& layout, bool json) {
  if (layout.empty() || json) return false;
  std::cerr << cmd << "--layout " << layout << " needs --json\n";
  return true;
}

CLI::Option* AddJsonFlag(CLI::App* cmd, bool* json, std::string_view what) {
  return cmd->add_flag("--json", *json, absl::StrCat("Print one JSON object", std::string(what)));
}

CLI::Option* AddCachedContextOption(CLI::App* cmd, int64_t* c) {
  return cmd->add_option("--c", *c, "Cached context tokens")
      ->required()
      ->check(CLI::Range(int64_t{0}, ops::kMaxContext));
}

CLI::Option* AddForceFlag(CLI::App* cmd, bool* force) {
  return cmd->add_flag("--force", *force,
                       "Allow writing into the shipped profiles directory (calib/, or "
                       "$SPECPLAN_CALIB_DIR), over the profiles specplan ships");
}

CLI::Option* AddTraceOption(CLI::App* cmd, std::string* trace, std::string_view kind) {
  return cmd->add_option(
      "--trace", *trace,
      absl::StrCat(std::string(kind), " trace (JSONL, whatif/trace.h); default: the bundled trace ",
                   whatif::DefaultTracePath()));
}

bool WritePlot(std::string_view cmd, const std::string& path,
               const std::vector<plot::Chart>& charts) {
  auto png = plot::RenderPng(charts, 900, 900);
  if (!png.ok()) return !Failed(cmd, png.status(), absl::StrCat("--plot ", path, ": "));
  return !Failed(cmd, WriteFileAtomically(path, *png), absl::StrCat("--plot ", path, ": "));
}

}  // namespace specplan::cli
