// Small helpers to read fields out of nlohmann::json with errors that name the field and value, and
// to write numbers that may be NaN or infinite (JSON has no such numbers: they become null).
#ifndef SPECPLAN_UTIL_JSON_UTIL_H_
#define SPECPLAN_UTIL_JSON_UTIL_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "util/file.h"
#include "util/json_error.h"

namespace specplan::json_util {

// x as a JSON number, or null when x is NaN or infinite.
inline nlohmann::json NumberOrNull(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

// How error messages show a JSON value: its compact dump (dump()'s text) when that is at most
// `max_chars` long, else its first `max_chars` characters and "...". Only that prefix is ever
// built, whatever the value's size or depth, so a message about a value of 64 MiB costs what one
// about a number does. Strings are escaped as dump() escapes them (invalid UTF-8 replaced).
inline constexpr size_t kQuoteChars = 64;

namespace internal {
// Appends v's compact text to *out until out->size() reaches `limit`.
inline void AppendQuoted(const nlohmann::json& v, size_t limit, std::string* out) {
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  auto append_string = [&](const std::string& str) {
    const size_t room = limit > out->size() ? limit - out->size() : 0;
    *out += nlohmann::json(str.substr(0, room)).dump(-1, ' ', false, kReplace);
  };
  if (v.is_object() || v.is_array()) {
    const bool object = v.is_object();
    *out += object ? '{' : '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (out->size() >= limit) return;
      if (!first) *out += ',';
      first = false;
      if (object) {
        append_string(it.key());
        *out += ':';
      }
      AppendQuoted(it.value(), limit, out);
    }
    if (out->size() < limit) *out += object ? '}' : ']';
  } else if (v.is_string()) {
    append_string(v.get_ref<const std::string&>());
  } else if (v.is_binary()) {
    *out += "<binary>";
  } else {
    *out += v.dump();  // a number, true, false, null: a few characters
  }
}
}  // namespace internal

inline std::string Quote(const nlohmann::json& v, size_t max_chars = kQuoteChars) {
  std::string out;
  internal::AppendQuoted(v, max_chars + 1, &out);
  if (out.size() > max_chars) {
    out.resize(max_chars);
    // Not inside a UTF-8 sequence: drop its continuation bytes and its lead byte.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    out += "...";
  }
  return out;
}

inline std::string Field(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : absl::StrCat(prefix, ".", key);
}

inline absl::StatusOr<const nlohmann::json*> Get(const nlohmann::json& obj, const std::string& key,
                                                 const std::string& prefix = "") {
  if (!obj.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix.empty() ? "document" : prefix, ": expected a JSON object"));
  }
  auto it = obj.find(key);
  if (it == obj.end()) {
    return absl::InvalidArgumentError(absl::StrCat(Field(prefix, key), ": missing"));
  }
  return &*it;
}

namespace internal {
// The value at `key` as a T, when `is_kind` (const nlohmann::json& -> bool) accepts it; else
// "<field> = <value>: expected <what>". The typed getters below share it.
template <typename T, typename IsKind>
absl::StatusOr<T> GetKind(const nlohmann::json& obj, const std::string& key,
                          const std::string& prefix, const IsKind& is_kind, const char* what) {
  auto v = Get(obj, key, prefix);
  if (!v.ok()) return v.status();
  if (!is_kind(**v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(prefix, key), " = ", Quote(**v), ": expected ", what));
  }
  return (*v)->get<T>();
}
}  // namespace internal

// A finite number.
inline absl::StatusOr<double> GetNumber(const nlohmann::json& obj, const std::string& key,
                                        const std::string& prefix = "") {
  auto d = internal::GetKind<double>(
      obj, key, prefix, [](const nlohmann::json& x) { return x.is_number(); }, "a number");
  if (d.ok() && !std::isfinite(*d)) {
    return absl::InvalidArgumentError(absl::StrCat(Field(prefix, key), " = ", *d, ": not finite"));
  }
  return d;
}

inline absl::StatusOr<int64_t> GetInt(const nlohmann::json& obj, const std::string& key,
                                      const std::string& prefix = "") {
  return internal::GetKind<int64_t>(
      obj, key, prefix, [](const nlohmann::json& x) { return x.is_number_integer(); },
      "an integer");
}

inline absl::StatusOr<std::string> GetString(const nlohmann::json& obj, const std::string& key,
                                             const std::string& prefix = "") {
  return internal::GetKind<std::string>(
      obj, key, prefix, [](const nlohmann::json& x) { return x.is_string(); }, "a string");
}

inline absl::StatusOr<bool> GetBool(const nlohmann::json& obj, const std::string& key,
                                    const std::string& prefix = "") {
  return internal::GetKind<bool>(
      obj, key, prefix, [](const nlohmann::json& x) { return x.is_boolean(); }, "true or false");
}

// Reads and parses a whole JSON file: ReadFileToString's errors and limit (util/file.h), then
// ParseJson's ("<path>:<line>:<column>: not valid JSON: <what>", its depth and size limits;
// util/json_error.h).
inline absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseJson(*text, path);  // "<path>:<line>:<column>: not valid JSON: <what>"
}

// Reads the JSON file at `path` (ReadJsonFile) and converts it with `from_json`
// (const nlohmann::json& -> absl::StatusOr<T>); an error of the conversion is prefixed "<path>: ".
template <typename FromJson>
auto ReadJsonFileAs(const std::string& path, const FromJson& from_json)
    -> decltype(from_json(std::declval<const nlohmann::json&>())) {
  auto j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  auto value = from_json(*j);
  if (!value.ok()) {
    return absl::Status(value.status().code(), absl::StrCat(path, ": ", value.status().message()));
  }
  return value;
}

}  // namespace specplan::json_util

#endif  // SPECPLAN_UTIL_JSON_UTIL_H_
