// JSON parse errors that point somewhere: "<source>:<line>:<column>: not valid JSON: <what>", the
// line and column computed from nlohmann's byte position of the last character read. Every JSON
// and JSONL reader (marginals, trees, traces, profiles, GPU specs, HF configs) parses through
// ParseJson, so a NaN, a trailing comma or a cut-off file is named where it is.
#ifndef SPECPLAN_UTIL_JSON_ERROR_H_
#define SPECPLAN_UTIL_JSON_ERROR_H_

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace specplan::json_util {

struct TextPosition {
  size_t line = 1;    // 1-based
  size_t column = 1;  // 1-based, in bytes
};

// Where the `chars_read`-th byte of `text` is (nlohmann's parse_error::byte: 1 = the first byte);
// past the end: the last byte; 0 (nothing read): line 1, column 1.
inline TextPosition PositionOfByte(std::string_view text, size_t chars_read) {
  TextPosition pos;
  if (text.empty() || chars_read == 0) return pos;
  const size_t offset = std::min(chars_read, text.size()) - 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 4: " preamble (which ParseJson replaces by its own position).
inline std::string JsonExceptionText(const std::string& what) {
  std::string text = what;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find("] ");
    if (close != std::string::npos) text = text.substr(close + 2);
  }
  if (text.rfind("parse error", 0) == 0) {
    const size_t colon = text.find(": ");
    if (colon != std::string::npos) text = text.substr(colon + 2);
  }
  return text;
}

namespace internal {
// The DOM builder, keeping the position of a parse error (an out-of-range number too, which the
// plain parser reports without one).
class PositionedDomParser : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  explicit PositionedDomParser(nlohmann::json& result)
      : nlohmann::detail::json_sax_dom_parser<nlohmann::json>(result, /*allow_exceptions_=*/false) {
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    failed = true;
    error_position = position;
    error_text = JsonExceptionText(ex.what());
    return false;
  }
  bool failed = false;
  size_t error_position = 0;
  std::string error_text;
};
}  // namespace internal

// Parses `text` as one JSON value. INVALID_ARGUMENT
//   "<source>:<line>:<column>: not valid JSON: <what>"
// when it is not; `first_line` is the line number of the text's first line (a JSONL reader passes
// the line it is on).
inline absl::StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view source,
                                                size_t first_line = 1) {
  nlohmann::json result;
  internal::PositionedDomParser sax(result);
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  if (!sax.failed) return result;
  const TextPosition pos = PositionOfByte(text, sax.error_position);
  return absl::InvalidArgumentError(absl::StrCat(std::string(source), ":",
                                                 first_line + pos.line - 1, ":", pos.column,
                                                 ": not valid JSON: ", sax.error_text));
}

}  // namespace specplan::json_util

#endif  // SPECPLAN_UTIL_JSON_ERROR_H_
