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

// The physical ranges every front end's numbers are checked against (docs/reliability.md,
// "Limits"), whichever way they come in (a CLI flag, a Python keyword, a proto field):
// a time given by hand for one term of one step, ms: at most 10 s.
inline constexpr double kMaxMs = 1e4;
// a vocabulary (a drafter's draft_vocab): at most 2^24 tokens.
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;

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
// A time in ms: finite and in [0, kMaxMs] ("t_aux_ms = 1e+308: must be in [0, 10000] (ms)").
absl::Status CheckMs(std::string_view field, double ms);
// A time in ms where a value < 0 means "not given" (the host overrides): NaN and infinities are
// refused, a finite negative value is OK, anything else as CheckMs.
absl::Status CheckOptionalMs(std::string_view field, double ms);
// One pass's shape as the operations take it (ops/estimate.h's bounds): b in [1, 65536]
// sequences, s in [1, 2^20] tokens verified per sequence, c in [0, max_context] cached tokens.
absl::Status CheckPassShape(int64_t s, int64_t c, int64_t b, int64_t max_context = kMaxContext);

struct CostRequest;  // ops/cost_request.h
// The numbers of a cost request, each in its physical range: t_aux_ms (CheckMs), the host
// overrides (CheckOptionalMs), draft_vocab in [0, kMaxVocab] (0 = the drafter's default).
// CostRequest::Parse calls it, so the CLI, Python and the service refuse the same values.
absl::Status CheckCostRequestNumbers(const CostRequest& request);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_VALIDATE_H_
