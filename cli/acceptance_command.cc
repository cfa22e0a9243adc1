// specplan acceptance: reads the acceptance an engine reports (vLLM metrics scrape or log, vLLM
// per-request metrics, SGLang log, SpecDecode-Bench step trace) and prints per-position acceptance,
// the mean acceptance length and the tokens per step a chain of k would give
// (planner/acceptance/engine_acceptance.h).
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::cli {
namespace {

constexpr int kMaxShownK = 8;  // text output: tokens per step for k = 1..min(k_max, 8)

struct AcceptanceArgs {
  std::string file;
  std::string format;  // "" = detect
  std::string drafter;
  int k_max = 0;
  bool json = false;
};

int RunAcceptance(const AcceptanceArgs& a) {
  constexpr char kCmd[] = "specplan acceptance: ";
  std::optional<planner::AcceptanceFormat> format;
  if (!a.format.empty()) {
    auto f = planner::ParseAcceptanceFormat(a.format);
    if (Failed(kCmd, f.status(), "--")) return 1;
    format = *f;
  }
  planner::EngineAcceptanceOptions options;
  options.drafter = a.drafter;
  options.k_max = a.k_max;
  auto acc = planner::LoadEngineAcceptance(a.file, format, options);
  if (Failed(kCmd, acc.status())) return 1;

  if (a.json) {
    nlohmann::json j = planner::EngineAcceptanceToJson(*acc);
    nlohmann::json tps = nlohmann::json::array();
    for (int k = 0; k <= acc->k_max; ++k) tps.push_back(acc->TokensPerStep(k));
    j["tokens_per_step"] = tps;  // [k_max + 1], index k
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "format: " << planner::AcceptanceFormatName(acc->format) << "\n";
  std::cout << "source: " << acc->source << "\n";
  if (!acc->drafter.empty()) std::cout << "drafter: " << acc->drafter << "\n";
  std::cout << "k_max: " << acc->k_max << "\n";
  std::cout << "drafts: "
            << (acc->drafts > 0 ? std::to_string(acc->drafts) : std::string("unknown")) << "\n";
  if (acc->has_trace()) std::cout << "requests: " << acc->requests.size() << "\n";
  if (acc->format == planner::AcceptanceFormat::kSglangLog) {
    std::cout << "per-position rates: geometric model fitted to the mean (the log gives no "
                 "per-position counts)\n";
  }
  std::cout << "position  acceptance\n";
  for (size_t i = 0; i < acc->per_position.size(); ++i) {
    std::cout << absl::StrFormat("%8d  %10.4f\n", static_cast<int>(i), acc->per_position[i]);
  }
  std::cout << absl::StrFormat("mean acceptance length: %.4f tokens per step (bonus included)\n",
                               acc->mean_acceptance_length);
  if (acc->has_trace()) {
    std::cout << "tokens per step (trace walk, chain of k):\n";
    for (int k = 1; k <= std::min(acc->k_max, kMaxShownK); ++k) {
      std::cout << absl::StrFormat("  k=%d  %.4f\n", k, acc->TokensPerStep(k));
    }
  }
  return 0;
}

}  // namespace

void RegisterAcceptanceCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand<AcceptanceArgs>(
      &app, "acceptance",
      "Read the draft acceptance your engine reports (vLLM /metrics scrape or log, vLLM "
      "per-request metrics, SGLang log, SpecDecode-Bench step trace) and print per-position "
      "acceptance, the mean acceptance length and, for a step trace, tokens per step for chains "
      "of k = 1..8",
      exit_code, &RunAcceptance);
  cmd->add_option("file", args->file, "Input file; - reads stdin")->required();
  cmd->add_option("--format", args->format,
                  "vllm-prometheus, vllm-log, vllm-requests, sglang-log or step-trace (default: "
                  "detected from the content)");
  cmd->add_option("--drafter", args->drafter,
                  "step-trace: which drafter's acc_len to read, e.g. eagle for acc_eagle "
                  "(default: the first acc_* key of the first line)");
  cmd->add_option("--k-max", args->k_max,
                  "Draft length: required for sglang-log (SGLang's --speculative-num-steps); "
                  "step-trace: the chain length per-position rates are walked with (default: the "
                  "largest acc_len - 1); other formats: must match the positions the file gives")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag(
      "--json", args->json,
      "Print one JSON object (the acceptance fields and tokens_per_step[k], k = 0..k_max)");
}

}  // namespace specplan::cli
