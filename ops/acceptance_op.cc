#include "ops/acceptance_op.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ops/validate.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

constexpr int kMaxShownK = 8;  // text: tokens per step for k = 1..min(k_max, 8)

}  // namespace

absl::Status Validate(const AcceptanceRequest& req) {
  if (req.path.empty()) return absl::InvalidArgumentError("path: empty (a file, or - for stdin)");
  if (!req.format.empty()) {
    SPECPLAN_RETURN_IF_ERROR(planner::ParseAcceptanceFormat(req.format).status());
  }
  SPECPLAN_RETURN_IF_ERROR(
      CheckInRange("k_max", int64_t{req.k_max}, 0, kMaxAcceptanceK, "0 = from the file"));
  SPECPLAN_RETURN_IF_ERROR(CheckInRange("prompt_lookup_min", int64_t{req.prompt_lookup_min}, 0,
                                        planner::kMaxPromptLookup, "0 = not given"));
  SPECPLAN_RETURN_IF_ERROR(CheckInRange("prompt_lookup_max", int64_t{req.prompt_lookup_max}, 0,
                                        planner::kMaxPromptLookup, "0 = not given"));
  if (req.prompt_lookup_min > 0 && req.prompt_lookup_max > 0 &&
      req.prompt_lookup_min > req.prompt_lookup_max) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt_lookup_min = ", req.prompt_lookup_min,
                     ": exceeds prompt_lookup_max = ", req.prompt_lookup_max));
  }
  return absl::OkStatus();
}

namespace {

// The parser's options from a validated request.
planner::EngineAcceptanceOptions ParseOptions(const AcceptanceRequest& req) {
  planner::EngineAcceptanceOptions options;
  options.drafter = req.drafter;
  options.k_max = req.k_max;
  if (req.prompt_lookup_min > 0 || req.prompt_lookup_max > 0) {
    // vLLM's rule: one given sets the other.
    planner::PromptLookup p;
    p.min_n = req.prompt_lookup_min > 0 ? req.prompt_lookup_min : req.prompt_lookup_max;
    p.max_n = req.prompt_lookup_max > 0 ? req.prompt_lookup_max : req.prompt_lookup_min;
    options.prompt_lookup = p;
  }
  return options;
}

std::optional<planner::AcceptanceFormat> Format(const AcceptanceRequest& req) {
  if (req.format.empty()) return std::nullopt;
  return *planner::ParseAcceptanceFormat(req.format);
}

}  // namespace

absl::StatusOr<planner::EngineAcceptance> LoadAcceptance(const AcceptanceRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  return planner::LoadEngineAcceptance(req.path, Format(req), ParseOptions(req));
}

absl::StatusOr<planner::EngineAcceptance> ParseAcceptance(const AcceptanceRequest& req,
                                                          const std::string& text,
                                                          const std::string& source) {
  AcceptanceRequest named = req;
  named.path = source;  // Validate's other checks
  SPECPLAN_RETURN_IF_ERROR(Validate(named));
  return planner::ParseEngineAcceptance(text, source, Format(req), ParseOptions(req));
}

absl::StatusOr<AcceptanceResult> Acceptance(const AcceptanceRequest& req) {
  AcceptanceResult out;
  SPECPLAN_ASSIGN_OR_RETURN(out.acceptance, LoadAcceptance(req));
  for (int k = 0; k <= out.acceptance.k_max; ++k) {
    out.tokens_per_step.push_back(out.acceptance.TokensPerStep(k));
  }
  return out;
}

nlohmann::json ToJson(const AcceptanceResult& result) {
  nlohmann::json j = planner::EngineAcceptanceToJson(result.acceptance);
  j["tokens_per_step"] = result.tokens_per_step;  // [k_max + 1], index k
  return j;
}

std::string ToText(const AcceptanceResult& result) {
  const planner::EngineAcceptance& acc = result.acceptance;
  std::string out = absl::StrCat("format: ", planner::AcceptanceFormatName(acc.format), "\n",
                                 "source: ", acc.source, "\n");
  if (!acc.drafter.empty()) absl::StrAppend(&out, "drafter: ", acc.drafter, "\n");
  if (acc.prompt_lookup.has_value()) {
    absl::StrAppendFormat(&out,
                          "n-gram matcher: prompt_lookup_min %d, prompt_lookup_max %d; no match at "
                          "%d of %d output positions (%.1f %%): those steps draft nothing\n",
                          acc.prompt_lookup->min_n, acc.prompt_lookup->max_n,
                          acc.unmatched_positions, acc.positions,
                          acc.positions > 0 ? 100.0 * static_cast<double>(acc.unmatched_positions) /
                                                  static_cast<double>(acc.positions)
                                            : 0.0);
  }
  absl::StrAppend(&out, "k_max: ", acc.k_max, "\n",
                  "drafts: ", acc.drafts > 0 ? std::to_string(acc.drafts) : std::string("unknown"),
                  "\n");
  if (acc.has_trace()) absl::StrAppend(&out, "requests: ", acc.requests.size(), "\n");
  if (acc.format == planner::AcceptanceFormat::kSglangLog) {
    out +=
        "per-position rates: geometric model fitted to the mean (the log gives no per-position "
        "counts)\n";
  }
  out += "position  acceptance\n";
  for (size_t i = 0; i < acc.per_position.size(); ++i) {
    absl::StrAppendFormat(&out, "%8d  %10.4f\n", static_cast<int>(i), acc.per_position[i]);
  }
  absl::StrAppendFormat(&out, "mean acceptance length: %.4f tokens per step (bonus included)\n",
                        acc.mean_acceptance_length);
  if (acc.has_trace()) {
    out += "tokens per step (trace walk, chain of k):\n";
    for (int k = 1; k <= std::min(acc.k_max, kMaxShownK); ++k) {
      absl::StrAppendFormat(&out, "  k=%d  %.4f\n", k, result.tokens_per_step[k]);
    }
  }
  return out;
}

}  // namespace specplan::ops
