#include "cli/acceptance_flags.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ops/validate.h"

namespace specplan::cli {

AcceptanceOptions AddAcceptanceOptions(CLI::App* cmd, ops::AcceptanceRequest* req,
                                       const AcceptanceFlagNames& names,
                                       const std::string& file_help) {
  const std::string prefix = names.prefix;
  const std::string file = absl::StartsWith(names.file, "-") ? names.file : "the file";
  AcceptanceOptions o;
  o.file = cmd->add_option(names.file, req->path, file_help);
  cmd->add_option(prefix + "format", req->format,
                  absl::StrCat("Format of ", file,
                               ": vllm-prometheus, vllm-log, vllm-requests, sglang-log or "
                               "step-trace (default: detected from the content)"));
  cmd->add_option(prefix + "drafter", req->drafter,
                  "Step traces: which drafter's acc_len to read, e.g. eagle for acc_eagle "
                  "(default: the first acc_* key of the first line)");
  o.k_max = cmd->add_option(
      prefix + "k-max", req->k_max,
      "The draft length the engine ran: required for sglang-log (accept len alone does not say; "
      "SGLang's --speculative-num-steps); step-trace: the chain length per-position rates are "
      "walked with (default: the largest acc_len - 1); other formats: must match the positions "
      "the file gives");
  cmd->add_option(prefix + "prompt-lookup-min", req->prompt_lookup_min,
                  "Step traces of vLLM's n-gram drafter: its prompt_lookup_min, to run its "
                  "matcher over the trace's prompt_token_ids and generated_token_ids, so that a "
                  "step with no match drafts nothing (one of min/max given sets the other, as in "
                  "vLLM; default: no matcher, every step drafts K)")
      ->check(CLI::Range(1, planner::kMaxPromptLookup));
  cmd->add_option(prefix + "prompt-lookup-max", req->prompt_lookup_max,
                  "Step traces of vLLM's n-gram drafter: its prompt_lookup_max (see "
                  "prompt-lookup-min)")
      ->check(CLI::Range(1, planner::kMaxPromptLookup));
  return o;
}

absl::Status AcceptanceErrorInFlags(const absl::Status& status, const AcceptanceFlagNames& names) {
  const absl::string_view msg = status.message();
  for (const auto& [field, flag] :
       {std::pair<absl::string_view, absl::string_view>{"format: ", "format: "},
        {"k_max = ", "k-max "},
        {"prompt_lookup_min = ", "prompt-lookup-min "},
        {"prompt_lookup_max = ", "prompt-lookup-max "}}) {
    if (absl::StartsWith(msg, field)) {
      return absl::Status(status.code(),
                          absl::StrCat(names.prefix, flag, msg.substr(field.size())));
    }
  }
  return status;
}

absl::StatusOr<planner::EngineAcceptance> AcceptanceFlags::Load() const {
  if (absl::Status st = ops::Validate(*this); !st.ok()) {
    return AcceptanceErrorInFlags(st, kAcceptanceFlagNames);
  }
  auto a = ops::LoadAcceptance(*this);
  if (!a.ok()) {
    return absl::Status(a.status().code(), absl::StrCat("--acceptance ", a.status().message()));
  }
  return a;
}

CLI::Option* AddAcceptanceFlags(CLI::App* cmd, AcceptanceFlags* f) {
  return AddAcceptanceOptions(
             cmd, f, kAcceptanceFlagNames,
             "Acceptance as your engine reports it (docs/acceptance.md): a vLLM /metrics scrape, "
             "vLLM 'SpecDecoding metrics' log lines, vLLM per-request metrics, SGLang 'accept "
             "len' logs, or SpecDecode-Bench per-step traces")
      .file;
}

CLI::Option* AddAcceptanceContextOption(CLI::App* cmd, int64_t* context) {
  return cmd
      ->add_option("--context", *context,
                   "With --acceptance of rates: every request's cached context, tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, ops::kMaxContext));
}

}  // namespace specplan::cli
