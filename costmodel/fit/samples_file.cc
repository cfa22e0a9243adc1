#include "costmodel/fit/samples_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/file.h"
#include "util/json_util.h"

namespace specplan::costmodel {
namespace {

// A latency column and the factor that turns its values into seconds.
struct LatencyColumn {
  const char* name;
  double to_seconds;
};
constexpr LatencyColumn kLatencyColumns[] = {
    {"seconds", 1.0}, {"latency_s", 1.0}, {"latency_ms", 1e-3}, {"latency_us", 1e-6}};
constexpr const char* kLatencyNames = "seconds, latency_s, latency_ms or latency_us";

// Checks s and c, and the latency as given (`value` in the column's own units).
absl::Status CheckSample(const LatencySample& x, const std::string& where,
                         const std::string& latency_name, double value) {
  if (x.s < 1)
    return absl::InvalidArgumentError(absl::StrCat(where, "s = ", x.s, ": must be >= 1"));
  if (x.c < 0)
    return absl::InvalidArgumentError(absl::StrCat(where, "c = ", x.c, ": must be >= 0"));
  if (x.b < 1 || x.b > kMaxSampleBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "b = ", x.b, ": must be in [1, ", kMaxSampleBatch, "]"));
  }
  if (!(std::isfinite(value) && value > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, latency_name, " = ", value, ": must be finite and > 0"));
  }
  return absl::OkStatus();
}

// Finds the one latency column among `present` names; errors when none or several are there.
template <typename Has>
absl::StatusOr<LatencyColumn> FindLatencyColumn(const Has& has, const std::string& where,
                                                const std::string& what) {
  std::optional<LatencyColumn> found;
  for (const LatencyColumn& col : kLatencyColumns) {
    if (!has(col.name)) continue;
    if (found) {
      return absl::InvalidArgumentError(absl::StrCat(where, what, ": both '", found->name,
                                                     "' and '", col.name,
                                                     "' give the latency; keep one"));
    }
    found = col;
  }
  if (!found) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, what, ": missing a latency column (", kLatencyNames, ")"));
  }
  return *found;
}

// strtod accepts "nan" / "inf": they parse, then fail CheckSample with a clear message.
bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

}  // namespace

absl::StatusOr<std::vector<LatencySample>> ParseSamplesCsv(const std::string& text,
                                                           const std::string& source) {
  std::vector<LatencySample> out;
  std::map<std::string, size_t> col;
  LatencyColumn latency = kLatencyColumns[0];
  size_t ncols = 0;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const std::string line(absl::StripAsciiWhitespace(raw));
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (absl::string_view f : absl::StrSplit(line, ',')) {
      fields.emplace_back(absl::StripAsciiWhitespace(f));
    }
    const std::string where = absl::StrCat(source, ":", line_no, ": ");
    if (col.empty()) {
      for (size_t i = 0; i < fields.size(); ++i) {
        const std::string name = absl::AsciiStrToLower(fields[i]);
        if (col.count(name) != 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "header: column '", name, "' appears twice"));
        }
        col[name] = i;
      }
      for (const char* need : {"s", "c"}) {
        if (col.count(need) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "header '", line, "': missing column '", need, "' (need s,c,seconds)"));
        }
      }
      absl::StatusOr<LatencyColumn> lat =
          FindLatencyColumn([&col](const char* name) { return col.count(name) != 0; }, where,
                            absl::StrCat("header '", line, "'"));
      if (!lat.ok()) return lat.status();
      latency = *lat;
      ncols = fields.size();
      continue;
    }
    if (fields.size() != ncols) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected ", ncols, " comma-separated fields, got ", fields.size()));
    }
    LatencySample x;
    const std::string& s = fields[col["s"]];
    const std::string& c = fields[col["c"]];
    const std::string& sec = fields[col[latency.name]];
    if (!absl::SimpleAtoi(s, &x.s)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "s = '", s, "': expected an integer"));
    }
    if (!absl::SimpleAtoi(c, &x.c)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "c = '", c, "': expected an integer"));
    }
    if (auto it = col.find("b"); it != col.end() && !absl::SimpleAtoi(fields[it->second], &x.b)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "b = '", fields[it->second], "': expected an integer"));
    }
    double value = 0;
    if (!ParseDouble(sec, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, latency.name, " = '", sec, "': expected a number"));
    }
    absl::Status st = CheckSample(x, where, latency.name, value);
    if (!st.ok()) return st;
    x.seconds = value * latency.to_seconds;
    out.push_back(x);
  }
  if (col.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": empty (expected a header line 's,c,seconds')"));
  }
  if (out.empty())
    return absl::InvalidArgumentError(absl::StrCat(source, ": no samples after the header"));
  return out;
}

absl::StatusOr<std::vector<LatencySample>> ParseSamplesJson(const std::string& text,
                                                            const std::string& source) {
  absl::StatusOr<nlohmann::json> parsed = json_util::ParseJson(text, source);
  if (!parsed.ok()) return parsed.status();  // "<source>:<line>:<column>: not valid JSON: ..."
  const nlohmann::json j = *std::move(parsed);
  if (!j.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected an array of {\"s\", \"c\", \"seconds\"} objects"));
  }
  std::vector<LatencySample> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& e = j[i];
    const std::string where = absl::StrCat(source, ": [", i, "].");
    if (!e.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": [", i, "] = ", json_util::Quote(e), ": expected an object"));
    }
    LatencySample x;
    for (const char* key : {"s", "c"}) {
      if (!e.contains(key)) {
        return absl::InvalidArgumentError(absl::StrCat(where, key, ": missing"));
      }
    }
    absl::StatusOr<LatencyColumn> lat =
        FindLatencyColumn([&e](const char* name) { return e.contains(name); },
                          absl::StrCat(source, ": "), absl::StrCat("[", i, "]"));
    if (!lat.ok()) return lat.status();
    const char* key = lat->name;
    if (!e["s"].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "s = ", json_util::Quote(e["s"]), ": expected an integer"));
    }
    if (!e["c"].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "c = ", json_util::Quote(e["c"]), ": expected an integer"));
    }
    if (!e[key].is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, key, " = ", json_util::Quote(e[key]), ": expected a number"));
    }
    if (e.contains("b") && !e["b"].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "b = ", json_util::Quote(e["b"]), ": expected an integer"));
    }
    x.s = e["s"].get<int64_t>();
    x.c = e["c"].get<int64_t>();
    if (e.contains("b")) x.b = e["b"].get<int64_t>();
    const double value = e[key].get<double>();
    absl::Status st = CheckSample(x, where, key, value);
    if (!st.ok()) return st;
    x.seconds = value * lat->to_seconds;
    out.push_back(x);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no samples"));
  return out;
}

absl::StatusOr<std::vector<LatencySample>> ReadSamplesFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  const std::string stripped(absl::StripLeadingAsciiWhitespace(*text));
  if (absl::EndsWith(path, ".json") || (!stripped.empty() && stripped[0] == '[')) {
    return ParseSamplesJson(*text, path);
  }
  return ParseSamplesCsv(*text, path);
}

}  // namespace specplan::costmodel
