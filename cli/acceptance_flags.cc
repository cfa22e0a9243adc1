#include "cli/acceptance_flags.h"

#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace specplan::cli {

absl::StatusOr<planner::EngineAcceptance> AcceptanceFlags::Load() const {
  if (absl::Status st = ops::Validate(*this); !st.ok()) {
    // The request's fields as their flags.
    const std::string msg(st.message());
    if (absl::StartsWith(msg, "format: ")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--acceptance-format ", format, ": ", msg.substr(strlen("format: "))));
    }
    if (absl::StartsWith(msg, "k_max = ")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--acceptance-k-max ", msg.substr(strlen("k_max = "))));
    }
    return st;
  }
  auto a = ops::LoadAcceptance(*this);
  if (!a.ok()) {
    return absl::Status(a.status().code(), absl::StrCat("--acceptance ", a.status().message()));
  }
  return a;
}

CLI::Option* AddAcceptanceFlags(CLI::App* cmd, AcceptanceFlags* f) {
  CLI::Option* path = cmd->add_option(
      "--acceptance", f->path,
      "Acceptance as your engine reports it (docs/acceptance.md): a vLLM /metrics scrape, vLLM "
      "'SpecDecoding metrics' log lines, vLLM per-request metrics, SGLang 'accept len' logs, or "
      "SpecDecode-Bench per-step traces");
  cmd->add_option("--acceptance-format", f->format,
                  "Format of --acceptance: vllm-prometheus, vllm-log, vllm-requests, sglang-log, "
                  "step-trace (default: detected)");
  cmd->add_option("--acceptance-drafter", f->drafter,
                  "Step traces: which drafter's acc_len to read (eagle -> acc_eagle; default: the "
                  "first)");
  cmd->add_option("--acceptance-k-max", f->k_max,
                  "SGLang logs: the draft length the engine ran (accept len alone does not say)");
  return path;
}

CLI::Option* AddAcceptanceContextOption(CLI::App* cmd, int64_t* context) {
  return cmd
      ->add_option("--context", *context,
                   "With --acceptance of rates: every request's cached context, tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
}

}  // namespace specplan::cli
