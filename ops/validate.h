// The checks every operation's validator makes, written once so that every refusal has the same
// shape: "<field> = <value>: must be in [<lo>, <hi>]" followed by " (<what>)" when a `what` is
// given ("c = -1: must be in [0, 16777216] (cached tokens)"). `field` is the request's own name
// for the value (a struct field, a proto path such as "requests[3].c", or a front end's flag after
// it mapped the name). All return INVALID_ARGUMENT, or OK.
#ifndef SPECPLAN_OPS_VALIDATE_H_
#define SPECPLAN_OPS_VALIDATE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace specplan::ops {

// The largest context any operation accepts by default (tokens in one sequence's KV cache):
// 2^24, the CLI's --c limit. Servers pass their own (--max-context).
inline constexpr int64_t kMaxContext = int64_t{1} << 24;

// lo <= value <= hi.
absl::Status CheckInRange(std::string_view field, int64_t value, int64_t lo, int64_t hi,
                          std::string_view what = "");
// lo <= value <= hi and finite ("<field> = nan: must be in [0, 1000]").
absl::Status CheckInRange(std::string_view field, double value, double lo, double hi,
                          std::string_view what = "");
// 0 <= c <= max_context: a context length in tokens.
absl::Status CheckContext(std::string_view field, int64_t c, int64_t max_context = kMaxContext,
                          std::string_view what = "");
// value > 0 and finite: "<field> = <value>: must be > 0".
absl::Status CheckPositive(std::string_view field, double value, std::string_view what = "");
// value >= 0 and finite: "<field> = <value>: must be >= 0".
absl::Status CheckNonNegative(std::string_view field, double value, std::string_view what = "");

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_VALIDATE_H_
