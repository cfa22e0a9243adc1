#include "ops/validate.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/cost_request.h"
#include "ops/estimate.h"

namespace specplan::ops {
namespace {

std::string What(std::string_view what) {
  return what.empty() ? std::string() : absl::StrCat(" (", std::string(what), ")");
}

}  // namespace

absl::Status CheckInRange(std::string_view field, int64_t value, int64_t lo, int64_t hi,
                          std::string_view what) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), " = ", value, ": must be in [",
                                                 lo, ", ", hi, "]", What(what)));
}

absl::Status CheckInRange(std::string_view field, double value, double lo, double hi,
                          std::string_view what) {
  if (std::isfinite(value) && value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), " = ", value, ": must be in [",
                                                 lo, ", ", hi, "]", What(what)));
}

absl::Status CheckContext(std::string_view field, int64_t c, int64_t max_context,
                          std::string_view what) {
  return CheckInRange(field, c, int64_t{0}, max_context, what);
}

absl::Status CheckPositive(std::string_view field, double value, std::string_view what) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " = ", value, ": must be > 0", What(what)));
}

absl::Status CheckNonNegative(std::string_view field, double value, std::string_view what) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " = ", value, ": must be >= 0", What(what)));
}

absl::Status CheckMs(std::string_view field, double ms) {
  return CheckInRange(field, ms, 0.0, kMaxMs, "ms");
}

absl::Status CheckOptionalMs(std::string_view field, double ms) {
  if (std::isfinite(ms) && ms < 0) return absl::OkStatus();  // not given
  if (!std::isfinite(ms)) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(field), " = ", ms, ": must be in [0, ", kMaxMs, "] (ms), or not given"));
  }
  return CheckMs(field, ms);
}

absl::Status CheckPassShape(int64_t s, int64_t c, int64_t b, int64_t max_context) {
  if (absl::Status st = CheckInRange("s", s, 1, kMaxEstimateS, "tokens verified per sequence");
      !st.ok()) {
    return st;
  }
  if (absl::Status st = CheckContext("c", c, max_context, "cached tokens"); !st.ok()) return st;
  return CheckInRange("b", b, 1, kMaxEstimateBatch, "sequences in the pass");
}

absl::Status CheckCostRequestNumbers(const CostRequest& r) {
  const struct {
    const char* field;
    double ms;
  } optional_ms[] = {{"host_step_ms", r.host_step_ms},
                     {"host_per_seq_ms", r.host_per_seq_ms},
                     {"host_per_draft_ms", r.host_per_draft_ms},
                     {"sample_ms", r.sample_ms}};
  for (const auto& [field, ms] : optional_ms) {
    if (absl::Status st = CheckOptionalMs(field, ms); !st.ok()) return st;
  }
  if (absl::Status st = CheckMs("t_aux_ms", r.t_aux_ms); !st.ok()) return st;
  return CheckInRange("draft_vocab", r.draft_vocab, int64_t{0}, kMaxVocab,
                      "draft vocabulary; 0 = the drafter's default");
}

}  // namespace specplan::ops
