#include "planner/marginals/marginals.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "util/file.h"
#include "util/json_error.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::planner {
namespace {

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

// Four lanes as GCC's and Clang's generic vectors (SSE2 on x86-64, NEON on ARM, scalar code
// elsewhere); loads through memcpy, so any alignment is fine.
using Int4 = int32_t __attribute__((vector_size(16)));
using Float4 = float __attribute__((vector_size(16)));
Int4 LoadInt4(const int32_t* p) {
  Int4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
Float4 LoadFloat4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
Int4 Rotate(Int4 v, int by) {
  switch (by) {
    case 1:
      return __builtin_shufflevector(v, v, 1, 2, 3, 0);
    case 2:
      return __builtin_shufflevector(v, v, 2, 3, 0, 1);
    default:
      return __builtin_shufflevector(v, v, 3, 0, 1, 2);
  }
}

// Whether a row of k probs (each in [0, 1]) sums to <= 1 + tolerance, added in order as the checks
// below add them. The sum is first taken four lanes at a time in another order, which differs
// from the ordered sum by less than 64 roundings of a sum <= 64, about 1e-12; only a row within
// that of the bound is added again in order. The lanes' sums are independent chains, where the
// ordered sum waits on every addition.
using Double2 = double __attribute__((vector_size(16)));
bool RowSumWithinBound(const float* p, int k) {
  constexpr double kBound = 1.0 + kMarginalsRowSumTolerance;
  constexpr double kOrderError = 1e-11;
  Double2 lo = {0.0, 0.0};
  Double2 hi = {0.0, 0.0};
  int r = 0;
  for (; r + 4 <= k; r += 4) {
    const Float4 v = LoadFloat4(p + r);
    lo += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1), Double2);
    hi += __builtin_convertvector(__builtin_shufflevector(v, v, 2, 3), Double2);
  }
  double tail = 0.0;
  for (; r < k; ++r) tail += p[r];
  const Double2 both = lo + hi;
  const double sum = both[0] + both[1] + tail;
  if (sum <= kBound - kOrderError) return true;
  if (sum > kBound + kOrderError) return false;
  double ordered = 0.0;
  for (int j = 0; j < k; ++j) ordered += p[j];
  return ordered <= kBound;
}

// Whether a row of k tokens repeats none: blocks of four compared with each other as vectors
// (every pair once or twice), the last k % 4 entry by entry with every earlier one.
bool RowTokensDistinct(const int32_t* t, int k) {
  const int blocks = k / 4;
  Int4 eq = {0, 0, 0, 0};
  for (int a = 0; a < blocks; ++a) {
    const Int4 x = LoadInt4(t + 4 * a);
    eq |= x == Rotate(x, 1);
    eq |= x == Rotate(x, 2);
    for (int b = a + 1; b < blocks; ++b) {
      const Int4 y = LoadInt4(t + 4 * b);
      eq |= x == y;
      eq |= x == Rotate(y, 1);
      eq |= x == Rotate(y, 2);
      eq |= x == Rotate(y, 3);
    }
  }
  bool repeat = (eq[0] | eq[1] | eq[2] | eq[3]) != 0;
  for (int r = 4 * blocks; r < k; ++r) {
    for (int r2 = 0; r2 < r; ++r2) repeat |= t[r] == t[r2];
  }
  return !repeat;
}

// The fast screen: true exactly when ValidateMarginals's per-entry checks below would all pass
// (tokens >= 0 and distinct in each row, probs in [0, 1] and non-increasing in each row, each
// row's sum, added in the same order, <= 1 + tolerance), for marginals whose shape was checked.
// The checks below branch on every entry and name the first failure; this pass checks four
// entries at a time without jumps on the data, and only a failing screen runs them. PlanBatch
// validates every request's marginals on every call (docs/planner-performance.md).
bool PlainlyValid(const Marginals& m) {
  const int32_t* t = m.tokens.data();
  const float* p = m.probs.data();
  const int k = m.k;
  const int n = m.gamma * k;
  // Every token >= 0, every prob in [0, 1] (NaN fails both comparisons), and the rises
  // p[i] > p[i - 1] over the whole array counted: only those at row starts are allowed.
  Int4 sign = {0, 0, 0, 0};
  Int4 in_range = {-1, -1, -1, -1};
  Int4 rises = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const Float4 v = LoadFloat4(p + i);
    sign |= LoadInt4(t + i);
    in_range &= (v >= 0.0f) & (v <= 1.0f);
    if (i > 0) rises -= v > LoadFloat4(p + i - 1);
  }
  bool ok = ((sign[0] | sign[1] | sign[2] | sign[3]) >= 0) &&
            (in_range[0] & in_range[1] & in_range[2] & in_range[3]) != 0;
  int rise_count = rises[0] + rises[1] + rises[2] + rises[3];
  if (i > 0) {  // the first block's p[1..3] against p[0..2]
    for (int j = 1; j < 4; ++j) rise_count += p[j] > p[j - 1];
  }
  for (int j = i; j < n; ++j) {  // the last n % 4 entries
    ok &= t[j] >= 0 && p[j] >= 0.0f && p[j] <= 1.0f;
    if (j > 0) rise_count += p[j] > p[j - 1];
  }
  for (int d = 1; d < m.gamma; ++d) rise_count -= p[d * k] > p[d * k - 1];
  ok &= rise_count == 0;
  for (int d = 0; d < m.gamma && ok; ++d) {
    ok &= RowSumWithinBound(p + d * k, k) && RowTokensDistinct(t + d * k, k);
  }
  return ok;
}

}  // namespace

absl::Status ValidateMarginals(const Marginals& m) {
  if (m.root_token < 0) {
    return Invalid(absl::StrCat("root_token = ", m.root_token, ": token ids must be >= 0"));
  }
  if (m.gamma < 1 || m.gamma > kMaxMarginalsGamma) {
    return Invalid(absl::StrCat("gamma = ", m.gamma, ": must be in [1, ", kMaxMarginalsGamma,
                                "] (rows of tokens/probs)"));
  }
  if (m.k < 1 || m.k > kMaxMarginalsK) {
    return Invalid(
        absl::StrCat("k = ", m.k, ": must be in [1, ", kMaxMarginalsK, "] (entries per row)"));
  }
  const size_t n = static_cast<size_t>(m.gamma) * m.k;
  if (m.tokens.size() != n) {
    return Invalid(absl::StrCat("tokens: ", m.tokens.size(), " entries, expected gamma * k = ", n));
  }
  if (m.probs.size() != n) {
    return Invalid(absl::StrCat("probs: ", m.probs.size(), " entries, expected gamma * k = ", n));
  }
  if (PlainlyValid(m)) return absl::OkStatus();
  for (int d = 0; d < m.gamma; ++d) {
    double sum = 0.0;
    // A 256-bit filter of the row's tokens so far (a multiplicative hash of each): a token whose
    // bit is clear repeats none of them, and only the others are compared with the row (the
    // pairwise check was most of this function's time: PlanBatch validates every request's
    // marginals on every call).
    uint64_t seen[4] = {0, 0, 0, 0};
    for (int r = 0; r < m.k; ++r) {
      const int32_t t = m.token(d, r);
      if (t < 0) {
        return Invalid(absl::StrCat("tokens[", d, "][", r, "] = ", t, ": token ids must be >= 0"));
      }
      const uint32_t h = static_cast<uint32_t>(t) * 0x9E3779B1u >> 24;  // 0..255
      const uint64_t bit = uint64_t{1} << (h & 63);
      const bool maybe_seen = (seen[h >> 6] & bit) != 0;
      seen[h >> 6] |= bit;
      for (int r2 = 0; maybe_seen && r2 < r; ++r2) {
        if (m.token(d, r2) == t) {
          return Invalid(absl::StrCat("tokens[", d, "][", r, "] = ", t, ": repeats tokens[", d,
                                      "][", r2, "] (tokens in a row must be distinct)"));
        }
      }
      const float p = m.prob(d, r);
      if (!(p >= 0.0f && p <= 1.0f)) {
        return Invalid(absl::StrCat("probs[", d, "][", r, "] = ", std::isnan(p) ? "nan" : "",
                                    std::isnan(p) ? "" : absl::StrCat(p),
                                    ": must be a number in [0, 1]"));
      }
      if (r > 0 && p > m.prob(d, r - 1)) {
        return Invalid(absl::StrCat("probs[", d, "][", r, "] = ", p, ": greater than probs[", d,
                                    "][", r - 1, "] = ", m.prob(d, r - 1),
                                    " (rows must be sorted by descending prob)"));
      }
      sum += p;
    }
    if (sum > 1.0 + kMarginalsRowSumTolerance) {
      return Invalid(absl::StrCat("probs[", d, "]: row sums to ", sum, ", must be <= 1"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Marginals> ParseMarginalsJson(const nlohmann::json& j) {
  if (!j.is_object()) return Invalid("marginals: expected a JSON object");
  Marginals m;
  auto rt = j.find("root_token");
  if (rt == j.end()) return Invalid("root_token: missing");
  if (!rt->is_number_integer() || rt->get<int64_t>() < 0 ||
      rt->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
    return Invalid(
        absl::StrCat("root_token = ", json_util::Quote(*rt), ": must be an integer in [0, 2^31)"));
  }
  m.root_token = static_cast<int32_t>(rt->get<int64_t>());

  auto tk = j.find("tokens");
  auto pr = j.find("probs");
  if (tk == j.end()) return Invalid("tokens: missing");
  if (pr == j.end()) return Invalid("probs: missing");
  if (!tk->is_array()) return Invalid("tokens: expected an array of rows");
  if (!pr->is_array()) return Invalid("probs: expected an array of rows");
  const size_t gamma = tk->size();
  if (gamma < 1 || gamma > static_cast<size_t>(kMaxMarginalsGamma)) {
    return Invalid(
        absl::StrCat("tokens: ", gamma, " rows (gamma), must be in [1, ", kMaxMarginalsGamma, "]"));
  }
  if (pr->size() != gamma) {
    return Invalid(
        absl::StrCat("probs: ", pr->size(), " rows, expected ", gamma, " (one per row of tokens)"));
  }
  if (!(*tk)[0].is_array()) return Invalid("tokens[0]: expected an array");
  const size_t k = (*tk)[0].size();
  if (k < 1 || k > static_cast<size_t>(kMaxMarginalsK)) {
    return Invalid(
        absl::StrCat("tokens[0]: ", k, " entries (k), must be in [1, ", kMaxMarginalsK, "]"));
  }
  m.gamma = static_cast<int>(gamma);
  m.k = static_cast<int>(k);
  m.tokens.resize(gamma * k);
  m.probs.resize(gamma * k);
  for (size_t d = 0; d < gamma; ++d) {
    const auto& trow = (*tk)[d];
    const auto& prow = (*pr)[d];
    if (!trow.is_array()) return Invalid(absl::StrCat("tokens[", d, "]: expected an array"));
    if (!prow.is_array()) return Invalid(absl::StrCat("probs[", d, "]: expected an array"));
    if (trow.size() != k) {
      return Invalid(absl::StrCat("tokens[", d, "]: row has ", trow.size(), " entries, expected ",
                                  k, " (ragged rows)"));
    }
    if (prow.size() != k) {
      return Invalid(absl::StrCat("probs[", d, "]: row has ", prow.size(), " entries, expected ", k,
                                  " (ragged rows)"));
    }
    for (size_t r = 0; r < k; ++r) {
      const auto& t = trow[r];
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return Invalid(absl::StrCat("tokens[", d, "][", r, "] = ", json_util::Quote(t),
                                    ": must be an integer in [0, 2^31)"));
      }
      m.tokens[d * k + r] = static_cast<int32_t>(t.get<int64_t>());
      const auto& p = prow[r];
      if (!p.is_number()) {
        return Invalid(absl::StrCat("probs[", d, "][", r, "] = ", json_util::Quote(p),
                                    ": must be a number in [0, 1]"));
      }
      m.probs[d * k + r] = p.get<float>();
    }
  }
  auto status = ValidateMarginals(m);
  if (!status.ok()) return status;
  return m;
}

absl::StatusOr<Marginals> ParseMarginalsJsonText(std::string_view text) {
  // "marginals:<line>:<column>: not valid JSON: <what>"
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json j, json_util::ParseJson(text, "marginals"));
  return ParseMarginalsJson(j);
}

absl::StatusOr<Marginals> LoadMarginalsFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  // "<path>:<line>:<column>: not valid JSON: <what>"
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json j, json_util::ParseJson(*text, path));
  auto m = ParseMarginalsJson(j);
  if (!m.ok()) {
    return absl::Status(m.status().code(), absl::StrCat(path, ": ", m.status().message()));
  }
  return m;
}

nlohmann::json MarginalsToJson(const Marginals& m) {
  nlohmann::json j;
  j["root_token"] = m.root_token;
  nlohmann::json tokens = nlohmann::json::array();
  nlohmann::json probs = nlohmann::json::array();
  for (int d = 0; d < m.gamma; ++d) {
    nlohmann::json trow = nlohmann::json::array();
    nlohmann::json prow = nlohmann::json::array();
    for (int r = 0; r < m.k; ++r) {
      trow.push_back(m.token(d, r));
      prow.push_back(m.prob(d, r));
    }
    tokens.push_back(std::move(trow));
    probs.push_back(std::move(prow));
  }
  j["tokens"] = std::move(tokens);
  j["probs"] = std::move(probs);
  return j;
}

}  // namespace specplan::planner
