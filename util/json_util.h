// Small helpers to read fields out of nlohmann::json with errors that name the field and value, and
// to write numbers that may be NaN or infinite (JSON has no such numbers: they become null).
#ifndef SPECPLAN_UTIL_JSON_UTIL_H_
#define SPECPLAN_UTIL_JSON_UTIL_H_

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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

inline absl::StatusOr<double> GetNumber(const nlohmann::json& obj, const std::string& key,
                                        const std::string& prefix = "") {
  auto v = Get(obj, key, prefix);
  if (!v.ok()) return v.status();
  if (!(*v)->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(prefix, key), " = ", (*v)->dump(), ": expected a number"));
  }
  double d = (*v)->get<double>();
  if (!std::isfinite(d)) {
    return absl::InvalidArgumentError(absl::StrCat(Field(prefix, key), " = ", d, ": not finite"));
  }
  return d;
}

inline absl::StatusOr<int64_t> GetInt(const nlohmann::json& obj, const std::string& key,
                                      const std::string& prefix = "") {
  auto v = Get(obj, key, prefix);
  if (!v.ok()) return v.status();
  if (!(*v)->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(prefix, key), " = ", (*v)->dump(), ": expected an integer"));
  }
  return (*v)->get<int64_t>();
}

inline absl::StatusOr<std::string> GetString(const nlohmann::json& obj, const std::string& key,
                                             const std::string& prefix = "") {
  auto v = Get(obj, key, prefix);
  if (!v.ok()) return v.status();
  if (!(*v)->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(prefix, key), " = ", (*v)->dump(), ": expected a string"));
  }
  return (*v)->get<std::string>();
}

inline absl::StatusOr<bool> GetBool(const nlohmann::json& obj, const std::string& key,
                                    const std::string& prefix = "") {
  auto v = Get(obj, key, prefix);
  if (!v.ok()) return v.status();
  if (!(*v)->is_boolean()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(prefix, key), " = ", (*v)->dump(), ": expected true or false"));
  }
  return (*v)->get<bool>();
}

// Reads and parses a whole JSON file; a parse error is "<path>:<line>:<column>: not valid JSON:
// <what>" (util/json_error.h).
inline absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseJson(*text, path);  // "<path>:<line>:<column>: not valid JSON: <what>"
}

}  // namespace specplan::json_util

#endif  // SPECPLAN_UTIL_JSON_UTIL_H_
