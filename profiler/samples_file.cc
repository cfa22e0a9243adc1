#include "profiler/samples_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/file.h"

namespace specplan::profiler {
namespace {

using costmodel::LatencySample;

absl::Status CheckSample(const LatencySample& x, const std::string& where) {
  if (x.s < 1)
    return absl::InvalidArgumentError(absl::StrCat(where, "s = ", x.s, ": must be >= 1"));
  if (x.c < 0)
    return absl::InvalidArgumentError(absl::StrCat(where, "c = ", x.c, ": must be >= 0"));
  if (!(std::isfinite(x.seconds) && x.seconds > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "seconds = ", x.seconds, ": must be finite and > 0"));
  }
  return absl::OkStatus();
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
      for (const char* need : {"s", "c", "seconds"}) {
        if (col.count(need) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "header '", line, "': missing column '", need, "' (need s,c,seconds)"));
        }
      }
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
    const std::string& sec = fields[col["seconds"]];
    if (!absl::SimpleAtoi(s, &x.s)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "s = '", s, "': expected an integer"));
    }
    if (!absl::SimpleAtoi(c, &x.c)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "c = '", c, "': expected an integer"));
    }
    if (!ParseDouble(sec, &x.seconds)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "seconds = '", sec, "': expected a number"));
    }
    absl::Status st = CheckSample(x, where);
    if (!st.ok()) return st;
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
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not valid JSON"));
  }
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
          absl::StrCat(source, ": [", i, "] = ", e.dump(), ": expected an object"));
    }
    LatencySample x;
    for (const char* key : {"s", "c", "seconds"}) {
      if (!e.contains(key)) {
        return absl::InvalidArgumentError(absl::StrCat(where, key, ": missing"));
      }
    }
    if (!e["s"].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "s = ", e["s"].dump(), ": expected an integer"));
    }
    if (!e["c"].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "c = ", e["c"].dump(), ": expected an integer"));
    }
    if (!e["seconds"].is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "seconds = ", e["seconds"].dump(), ": expected a number"));
    }
    x.s = e["s"].get<int64_t>();
    x.c = e["c"].get<int64_t>();
    x.seconds = e["seconds"].get<double>();
    absl::Status st = CheckSample(x, where);
    if (!st.ok()) return st;
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

}  // namespace specplan::profiler
