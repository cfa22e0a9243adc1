#include "ops/validate.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

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

}  // namespace specplan::ops
