#include "cli/command_util.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "costmodel/profile/calib_dir.h"
#include "ops/validate.h"
#include "planner/tree/tree.h"
#include "util/atomic_file.h"
#include "util/shipped_dir.h"
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

CLI::Validator FiniteRange(double lo, double hi, std::string_view what, bool lo_open) {
  const std::string unit(what);
  return CLI::Validator(
      [lo, hi, unit, lo_open](std::string& text) -> std::string {
        double value = 0;
        if (!absl::SimpleAtod(text, &value)) return absl::StrCat("value ", text, ": not a number");
        if (lo_open && std::isfinite(value) && value > lo && value <= hi) return std::string();
        if (lo_open) {  // "value = 0: must be in (0, 10000] (ms)"
          return absl::StrCat("value = ", value, ": must be in (", lo, ", ", hi, "]",
                              unit.empty() ? "" : " (" + unit + ")");
        }
        const absl::Status st = ops::CheckInRange("value", value, lo, hi, unit);
        return st.ok() ? std::string() : std::string(st.message());
      },
      absl::StrCat("FLOAT in ", lo_open ? "(" : "[", lo, ", ", hi, "]"));
}

CLI::Validator MsRange() { return FiniteRange(0, ops::kMaxMs, "ms"); }

CLI::Option* AddDraftTimeOption(CLI::App* cmd, double* t_draft_ms, const std::string& help) {
  return cmd->add_option("--t-draft-ms", *t_draft_ms, help)->check(MsRange());
}

CLI::Option* AddDraftBatchGrowthOption(CLI::App* cmd, double* growth, const std::string& help) {
  return cmd->add_option("--draft-batch-growth", *growth, help)
      ->check(FiniteRange(0, 1, "of one sequence's draft time"));
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

CLI::Option* AddMkdirFlag(CLI::App* cmd, bool* mkdir) {
  return cmd->add_flag("--mkdir", *mkdir,
                       "Create the output file's missing parent directories (without it a missing "
                       "directory is an error)");
}

void AddOutputFlags(CLI::App* cmd, OutputFlags* out) {
  AddForceFlag(cmd, &out->force);
  AddMkdirFlag(cmd, &out->mkdir);
}

absl::Status CheckOutputPath(std::string_view flag, const std::string& path,
                             const OutputFlags& out) {
  namespace fs = std::filesystem;
  const std::string what(flag);
  if (absl::Status st =
          CheckNotShipped(what, path, ShippedCalibDirs(costmodel::DefaultCalibDir()), out.force);
      !st.ok()) {
    return st;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": is a directory"));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty() || fs::is_directory(parent, ec)) return absl::OkStatus();
  if (fs::exists(parent, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": ", parent.string(), " is not a directory"));
  }
  if (out.mkdir) return absl::OkStatus();  // WriteFileAtomically creates it
  return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": directory ", parent.string(),
                                                 " does not exist (pass --mkdir to create it)"));
}

bool WriteOutput(std::string_view cmd, std::string_view flag, const std::string& path,
                 std::string_view text, const OutputFlags& out) {
  if (Failed(cmd, CheckOutputPath(flag, path, out))) return false;
  return !Failed(cmd, WriteFileAtomically(path, absl::string_view(text.data(), text.size())),
                 absl::StrCat(std::string(flag), " ", path, ": "));
}

bool WritePlot(std::string_view cmd, const std::string& path,
               const std::vector<plot::Chart>& charts, const OutputFlags& out) {
  if (Failed(cmd, CheckOutputPath("--plot", path, out))) return false;
  auto png = plot::RenderPng(charts, 900, 900);
  if (!png.ok()) return !Failed(cmd, png.status(), absl::StrCat("--plot ", path, ": "));
  return !Failed(cmd, WriteFileAtomically(path, *png), absl::StrCat("--plot ", path, ": "));
}

}  // namespace specplan::cli
