// JSON parse errors that point somewhere: "<source>:<line>:<column>: not valid JSON: <what>", the
// line and column computed from nlohmann's byte position of the last character read. Every JSON
// and JSONL reader (marginals, trees, traces, profiles, GPU specs, HF configs, the service's
// profile_json) parses through ParseJson, so a NaN, a trailing comma or a cut-off file is named
// where it is.
//
// ParseJson is also where input is bounded (JsonLimits): a value nested deeper than 64 arrays and
// objects, or a text over 64 MiB, is refused before any of it is built, with the position and the
// limit ("<source>:1:66: JSON nested deeper than 64 levels (the limit)"). Everything that walks a
// parsed value recursively (dump(), comparisons, the readers) therefore recurses at most 64 deep.
// Error messages quote a value through Quote (util/json_util.h), a bounded prefix, never dump().
#ifndef SPECPLAN_UTIL_JSON_ERROR_H_
#define SPECPLAN_UTIL_JSON_ERROR_H_

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "util/file.h"

namespace specplan::json_util {

// The bounds ParseJson enforces. Shipped inputs nest at most 8 deep and weigh at most about 1 MB.
inline constexpr size_t kMaxJsonDepth = 64;                // arrays and objects, one inside another
inline constexpr size_t kMaxJsonBytes = size_t{64} << 20;  // bytes of one JSON text (64 MiB)
struct JsonLimits {
  size_t max_depth = kMaxJsonDepth;
  size_t max_bytes = kMaxJsonBytes;
};

// The most bytes of a parser's own message (its "last read" token) an error keeps.
inline constexpr size_t kMaxErrorDetailBytes = 160;

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

// `text` with every byte that is not printable ASCII written as \xNN and cut to `max_bytes` (then
// "..." follows): safe to put in a message (a Python str, a gRPC status) whatever the input held.
inline std::string PrintableText(std::string_view text, size_t max_bytes = kMaxErrorDetailBytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

// The byte offset (0-based) of the array or object opening that makes `text` nested deeper than
// `max_depth`, or npos when it is not. Strings (with their escapes) are skipped; a malformed text
// is scanned as far as it goes (the parser then names its own error).
inline size_t FindDepthExcess(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) return i;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
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
// the line it is on). Past `limits` (checked before anything is built):
//   RESOURCE_EXHAUSTED "<source>:<line>:<column>: JSON text longer than 64 MiB (67108864 bytes)
//                       (the limit)"    (the position is the first byte past the limit)
//   INVALID_ARGUMENT   "<source>:<line>:<column>: JSON nested deeper than 64 levels (the limit)"
//                      (the position is the opening bracket one level too deep)
// `source` is printed as given (PrintableText'ed).
inline absl::StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view source,
                                                size_t first_line = 1,
                                                const JsonLimits& limits = JsonLimits());

// ParseJson's limit checks alone (the two errors above, OK within them), for a reader that parses
// into another JSON type (nlohmann::ordered_json) or with its own parser.
inline absl::Status CheckJsonLimits(std::string_view text, std::string_view source,
                                    size_t first_line = 1,
                                    const JsonLimits& limits = JsonLimits()) {
  auto at = [&](size_t byte) {  // "<source>:<line>:<column>: ", byte 0-based
    const TextPosition pos = PositionOfByte(text, byte + 1);
    return absl::StrCat(PrintableText(source, 4 * kMaxErrorDetailBytes), ":",
                        first_line + pos.line - 1, ":", pos.column, ": ");
  };
  if (text.size() > limits.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(at(limits.max_bytes), "JSON text longer than ",
                                                     DescribeBytes(limits.max_bytes),
                                                     " (the limit)"));
  }
  if (const size_t deep = FindDepthExcess(text, limits.max_depth); deep != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(at(deep), "JSON nested deeper than ",
                                                   limits.max_depth, " levels (the limit)"));
  }
  return absl::OkStatus();
}

inline absl::StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view source,
                                                size_t first_line, const JsonLimits& limits) {
  if (absl::Status st = CheckJsonLimits(text, source, first_line, limits); !st.ok()) return st;
  nlohmann::json result;
  internal::PositionedDomParser sax(result);
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  if (!sax.failed) return result;
  const TextPosition pos = PositionOfByte(text, sax.error_position);
  return absl::InvalidArgumentError(
      absl::StrCat(PrintableText(source, 4 * kMaxErrorDetailBytes), ":", first_line + pos.line - 1,
                   ":", pos.column, ": not valid JSON: ", PrintableText(sax.error_text)));
}

}  // namespace specplan::json_util

#endif  // SPECPLAN_UTIL_JSON_ERROR_H_
