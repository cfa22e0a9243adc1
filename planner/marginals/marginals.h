// Marginals of a parallel drafter: for each of gamma future
// positions, the top-k candidate tokens with their draft probabilities q_d(x), each row sorted by
// descending probability. Row d (0-based) holds the candidates for depth d + 1 of the draft tree.
// JSON form: {"root_token": int, "tokens": [[int] * k] * gamma, "probs": [[float] * k] * gamma}.
#ifndef SPECPLAN_PLANNER_MARGINALS_MARGINALS_H_
#define SPECPLAN_PLANNER_MARGINALS_MARGINALS_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/tree/token.h"

namespace specplan::planner {

// Documented limits on marginals accepted from outside callers.
inline constexpr int kMaxMarginalsGamma = 64;              // positions (rows)
inline constexpr int kMaxMarginalsK = 64;                  // candidates per position (columns)
inline constexpr double kMarginalsRowSumTolerance = 1e-6;  // row sum must be <= 1 + this

struct Marginals {
  TokenId root_token = 0;       // token of the root (pending bonus token), >= 0
  int gamma = 0;                // positions, 1..kMaxMarginalsGamma
  int k = 0;                    // candidates per position, 1..kMaxMarginalsK
  std::vector<TokenId> tokens;  // [gamma][k] token ids >= 0, no repeats within a row
  std::vector<float> probs;     // [gamma][k] q_d(token) in [0, 1], each row non-increasing

  TokenId token(int d, int r) const { return tokens[static_cast<size_t>(d) * k + r]; }
  float prob(int d, int r) const { return probs[static_cast<size_t>(d) * k + r]; }
};

// Checks shapes, limits, probs in [0, 1] and not NaN, rows sorted by descending prob, no repeated
// token within a row, row sums <= 1 + kMarginalsRowSumTolerance. Errors name the field:
// "probs[2][0] = nan: must be a number in [0, 1]".
absl::Status ValidateMarginals(const Marginals& m);

// Parses and validates the JSON form. Errors name the field, e.g.
// "tokens[3]: row has 5 entries, expected 8 (ragged rows)".
absl::StatusOr<Marginals> ParseMarginalsJson(const nlohmann::json& j);
absl::StatusOr<Marginals> ParseMarginalsJsonText(std::string_view text);
// ParseMarginalsJsonText's parse errors are "marginals:<line>:<column>: not valid JSON: <what>"
// (util/json_error.h). LoadMarginalsFile reads `path` and parses it; its errors are prefixed with
// the path ("<path>:<line>:<column>: not valid JSON: ..." for a parse error).
absl::StatusOr<Marginals> LoadMarginalsFile(const std::string& path);

// The JSON form of `m` (inverse of ParseMarginalsJson).
nlohmann::json MarginalsToJson(const Marginals& m);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_MARGINALS_MARGINALS_H_
