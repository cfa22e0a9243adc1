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
  return CheckInRange("k_max", int64_t{req.k_max}, 0, kMaxAcceptanceK, "0 = from the file");
}

absl::StatusOr<planner::EngineAcceptance> LoadAcceptance(const AcceptanceRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  std::optional<planner::AcceptanceFormat> format;
  if (!req.format.empty()) format = *planner::ParseAcceptanceFormat(req.format);
  planner::EngineAcceptanceOptions options;
  options.drafter = req.drafter;
  options.k_max = req.k_max;
  return planner::LoadEngineAcceptance(req.path, format, options);
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
