#include "planner/acceptance/engine_acceptance.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/enum_names.h"
#include "util/file.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::planner {

namespace {

constexpr EnumEntry<AcceptanceFormat> kAcceptanceFormatNames[] = {
    {AcceptanceFormat::kVllmPrometheus, "vllm-prometheus"},
    {AcceptanceFormat::kVllmLog, "vllm-log"},
    {AcceptanceFormat::kVllmRequests, "vllm-requests"},
    {AcceptanceFormat::kSglangLog, "sglang-log"},
    {AcceptanceFormat::kStepTrace, "step-trace"}};

using OrderedJson = nlohmann::ordered_json;

// One line of the input: its text (no newline) and 1-based number.
struct Line {
  std::string_view text;
  int number = 0;
};

std::vector<Line> SplitLines(const std::string& text) {
  std::vector<Line> lines;
  size_t start = 0;
  int number = 1;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!(end == text.size() && line.empty() && start == text.size())) {
      lines.push_back({line, number});
    }
    start = end + 1;
    ++number;
  }
  return lines;
}

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isspace(uint8_t(c)); });
}

absl::Status Error(const std::string& source, int line, int column, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", column, ": ", what));
}

// A number at the start of `s` (strtod syntax, so "nan" and "inf" parse too); its length in
// *used (0 when there is none).
double LeadingNumber(std::string_view s, size_t* used) {
  std::string buf(s.substr(0, 64));
  char* end = nullptr;
  const double v = std::strtod(buf.c_str(), &end);
  *used = static_cast<size_t>(end - buf.c_str());
  return v;
}

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

// ---- shared validation of survival rates ----

// per_position must lie in [0, 1] and not rise; `where(i)` gives "<source>:<line>:<col>: <field>"
// for position i's value.
template <typename Where>
absl::Status CheckRates(const std::vector<double>& rates, Where where) {
  for (size_t i = 0; i < rates.size(); ++i) {
    if (!std::isfinite(rates[i]) || rates[i] < 0 || rates[i] > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(i), " = ", Num(rates[i]), ": must be a rate in [0, 1]"));
    }
    if (i > 0 && rates[i] > rates[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(i), " = ", Num(rates[i]), " exceeds position ", i - 1, "'s ",
                       Num(rates[i - 1]), ": per-position acceptance must not rise with position"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKMaxOption(const EngineAcceptanceOptions& options, int k_max,
                             const std::string& source) {
  if (options.k_max > 0 && options.k_max != k_max) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": k_max = ", options.k_max, " but the source gives ", k_max, " draft positions"));
  }
  return absl::OkStatus();
}

// ---- vllm-prometheus ----

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
  int value_column = 1;
};

// Parses "name{k="v",...} value [timestamp]". Returns false (no error) for lines that are not
// samples of the form; an error for a malformed label set of a spec-decode metric.
absl::StatusOr<bool> ParsePromSample(std::string_view line, PromSample* out) {
  size_t i = 0;
  while (i < line.size() && std::isspace(uint8_t(line[i]))) ++i;
  const size_t name_start = i;
  while (i < line.size() && (std::isalnum(uint8_t(line[i])) || line[i] == '_' || line[i] == ':')) {
    ++i;
  }
  if (i == name_start) return false;
  out->name = std::string(line.substr(name_start, i - name_start));
  out->labels.clear();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (std::isspace(uint8_t(line[i])) || line[i] == ',')) ++i;
      if (i >= line.size()) return absl::InvalidArgumentError("unterminated label set");
      if (line[i] == '}') {
        ++i;
        break;
      }
      const size_t key_start = i;
      while (i < line.size() && line[i] != '=' && line[i] != '}' && !std::isspace(uint8_t(line[i])))
        ++i;
      std::string key(line.substr(key_start, i - key_start));
      while (i < line.size() && std::isspace(uint8_t(line[i]))) ++i;
      if (i >= line.size() || line[i] != '=') {
        return absl::InvalidArgumentError(absl::StrCat("label '", key, "' has no value"));
      }
      ++i;
      while (i < line.size() && std::isspace(uint8_t(line[i]))) ++i;
      if (i >= line.size() || line[i] != '"') {
        return absl::InvalidArgumentError(absl::StrCat("label '", key, "': value not quoted"));
      }
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '\\' && i < line.size()) {
          const char e = line[i++];
          value += e == 'n' ? '\n' : e;
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      if (!closed) {
        return absl::InvalidArgumentError(absl::StrCat("label '", key, "': unterminated value"));
      }
      out->labels[key] = value;
    }
  }
  while (i < line.size() && std::isspace(uint8_t(line[i]))) ++i;
  if (i >= line.size()) return absl::InvalidArgumentError("no value");
  out->value_column = static_cast<int>(i) + 1;
  std::string_view rest = line.substr(i);
  const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
  std::string token(rest.substr(0, end));
  size_t used = 0;
  out->value = LeadingNumber(token, &used);
  if (used != token.size() || token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("value '", token, "' is not a number"));
  }
  return true;
}

std::string SeriesKey(const PromSample& s) {
  std::string key = s.name + "{";
  bool first = true;
  for (const auto& [k, v] : s.labels) {
    absl::StrAppend(&key, first ? "" : ",", k, "=\"", v, "\"");
    first = false;
  }
  return key + "}";
}

constexpr char kDrafts[] = "vllm:spec_decode_num_drafts_total";
constexpr char kDraftTokens[] = "vllm:spec_decode_num_draft_tokens_total";
constexpr char kAccepted[] = "vllm:spec_decode_num_accepted_tokens_total";
constexpr char kPerPos[] = "vllm:spec_decode_num_accepted_tokens_per_pos_total";

absl::StatusOr<EngineAcceptance> ParsePrometheus(const std::string& text, const std::string& src,
                                                 const EngineAcceptanceOptions& options) {
  struct Series {
    PromSample sample;
    int line = 0;
  };
  std::map<std::string, Series> series;  // last value of each series
  for (const Line& line : SplitLines(text)) {
    std::string_view t = line.text;
    if (IsBlank(t) || t.find_first_not_of(" \t") == std::string_view::npos ||
        t[t.find_first_not_of(" \t")] == '#') {
      continue;
    }
    if (t.find("vllm:spec_decode_") == std::string_view::npos) continue;
    PromSample s;
    auto ok = ParsePromSample(t, &s);
    if (!ok.ok()) {
      return Error(src, line.number, 1,
                   absl::StrCat("not a Prometheus sample: ", ok.status().message()));
    }
    if (!*ok) continue;
    if (s.name != kDrafts && s.name != kDraftTokens && s.name != kAccepted && s.name != kPerPos) {
      continue;  // _created gauges and other metrics
    }
    const std::string key = SeriesKey(s);
    if (!std::isfinite(s.value) || s.value < 0) {
      return Error(src, line.number, s.value_column,
                   absl::StrCat(key, " = ", Num(s.value), ": a counter must be finite and >= 0"));
    }
    auto it = series.find(key);
    if (it != series.end() && s.value < it->second.sample.value) {
      return Error(src, line.number, s.value_column,
                   absl::StrCat(key, " = ", Num(s.value), " is below ",
                                Num(it->second.sample.value), " on line ", it->second.line,
                                ": a counter must not decrease between scrapes (engine "
                                "restarted? keep one run's scrapes)"));
    }
    series[key] = {s, line.number};
  }
  double drafts = 0, draft_tokens = 0, accepted = 0;
  bool have_drafts = false, have_accepted = false;
  std::map<int, double> per_pos;
  std::map<int, int> per_pos_line;
  for (const auto& [key, se] : series) {
    const PromSample& s = se.sample;
    if (s.name == kDrafts) {
      drafts += s.value;
      have_drafts = true;
    } else if (s.name == kDraftTokens) {
      draft_tokens += s.value;
    } else if (s.name == kAccepted) {
      accepted += s.value;
      have_accepted = true;
    } else {
      auto pos = s.labels.find("position");
      if (pos == s.labels.end()) {
        return Error(src, se.line, 1, absl::StrCat(key, ": has no position label"));
      }
      char* end = nullptr;
      const long p = std::strtol(pos->second.c_str(), &end, 10);
      if (pos->second.empty() || *end != '\0' || p < 0 || p > 4096) {
        return Error(src, se.line, 1,
                     absl::StrCat(key, ": position = \"", pos->second,
                                  "\": must be an integer in [0, 4096]"));
      }
      per_pos[static_cast<int>(p)] += s.value;
      per_pos_line[static_cast<int>(p)] = std::max(per_pos_line[static_cast<int>(p)], se.line);
    }
  }
  if (!have_drafts || per_pos.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        src, ": vllm-prometheus: needs ", kDrafts, " and ", kPerPos,
        "{position=...} samples (is speculative decoding on? scrape the server's /metrics)"));
  }
  if (drafts <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        src, ": ", kDrafts, " = 0: no drafts counted yet (scrape after some traffic)"));
  }
  EngineAcceptance a;
  const int k = per_pos.rbegin()->first + 1;
  for (int p = 0; p < k; ++p) {
    if (!per_pos.count(p)) {
      return absl::InvalidArgumentError(absl::StrCat(src, ": ", kPerPos, "{position=\"", p,
                                                     "\"}: missing (positions up to ", k - 1,
                                                     " are present)"));
    }
  }
  for (int p = 0; p < k; ++p) {
    const double v = per_pos[p];
    const std::string field = absl::StrCat(src, ":", per_pos_line[p], ":1: ", kPerPos,
                                           "{position=\"", p, "\"} = ", Num(v));
    if (v > drafts) {
      return absl::InvalidArgumentError(absl::StrCat(field, " exceeds ", kDrafts, " = ",
                                                     Num(drafts),
                                                     ": at most one accepted token per draft"));
    }
    if (p > 0 && v > per_pos[p - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " exceeds position ", p - 1, "'s ", Num(per_pos[p - 1]),
                       ": per-position acceptance must not rise with position"));
    }
    a.per_position.push_back(v / drafts);
  }
  a.k_max = k;
  a.drafts = std::llround(drafts);
  a.draft_tokens = std::llround(draft_tokens);
  double sum_pos = 0;
  for (const auto& [p, v] : per_pos) sum_pos += v;
  a.accepted_tokens = std::llround(have_accepted ? accepted : sum_pos);
  a.mean_acceptance_length = 1.0 + (have_accepted ? accepted : sum_pos) / drafts;
  if (absl::Status st = CheckKMaxOption(options, k, src); !st.ok()) return st;
  return a;
}

// ---- vllm-log ----

constexpr char kVllmLogMarker[] = "SpecDecoding metrics:";

// The number after `key` in `line`, starting the search at `from`; its column in *column.
// NOT_FOUND-like false when the key is absent.
bool NumberAfter(std::string_view line, std::string_view key, size_t from, double* value,
                 int* column, bool* parsed) {
  const size_t at = line.find(key, from);
  if (at == std::string_view::npos) return false;
  size_t i = at + key.size();
  while (i < line.size() && line[i] == ' ') ++i;
  *column = static_cast<int>(i) + 1;
  size_t used = 0;
  *value = LeadingNumber(line.substr(i), &used);
  *parsed = used > 0;
  return true;
}

absl::StatusOr<EngineAcceptance> ParseVllmLog(const std::string& text, const std::string& src,
                                              const EngineAcceptanceOptions& options) {
  EngineAcceptance a;
  std::vector<double> weighted;  // [k] sum of rate * drafts
  double total_drafts = 0, weighted_mean = 0;
  int seen = 0, k_line = 0;
  for (const Line& line : SplitLines(text)) {
    const size_t marker = line.text.find(kVllmLogMarker);
    if (marker == std::string_view::npos) continue;
    ++seen;
    const std::string_view t = line.text;
    const int marker_col = static_cast<int>(marker) + 1;
    struct Field {
      const char* key;
      double value = 0;
      int column = 0;
    };
    Field mean{"Mean acceptance length:"}, accepted{"Accepted: "}, drafted{"Drafted: "};
    for (Field* f : {&drafted, &accepted, &mean}) {
      bool parsed = false;
      if (!NumberAfter(t, f->key, marker, &f->value, &f->column, &parsed)) {
        return Error(src, line.number, marker_col,
                     absl::StrCat("'", f->key, "' missing from the SpecDecoding metrics line"));
      }
      if (!parsed) {
        return Error(src, line.number, f->column,
                     absl::StrCat(f->key, " ", std::string(t.substr(f->column - 1, 12)),
                                  ": expected a number"));
      }
      if (drafted.value == 0) break;  // an interval without drafts says nothing (NaN rates)
      if (!std::isfinite(f->value) || f->value < 0) {
        return Error(src, line.number, f->column,
                     absl::StrCat(f->key, " ", Num(f->value), ": expected a finite number >= 0"));
      }
    }
    if (drafted.value == 0) continue;
    constexpr char kRatesKey[] = "Per-position acceptance rate:";
    const size_t rates_at = t.find(kRatesKey, marker);
    if (rates_at == std::string_view::npos) {
      return Error(src, line.number, marker_col,
                   absl::StrCat("'", kRatesKey,
                                "' missing from the SpecDecoding metrics line (vLLM before "
                                "per-position logging? use the /metrics scrape)"));
    }
    std::vector<double> rates;
    std::vector<int> columns;
    size_t i = rates_at + sizeof(kRatesKey) - 1;
    while (true) {
      while (i < t.size() && t[i] == ' ') ++i;
      size_t used = 0;
      const double r = LeadingNumber(t.substr(i), &used);
      if (used == 0) break;
      rates.push_back(r);
      columns.push_back(static_cast<int>(i) + 1);
      i += used;
      if (i < t.size() && t[i] == ',') {
        ++i;
      } else {
        break;
      }
    }
    if (rates.empty()) {
      return Error(src, line.number, static_cast<int>(rates_at) + 1,
                   absl::StrCat(kRatesKey, " has no rates"));
    }
    const int k = static_cast<int>(rates.size());
    if (k_line != 0 && k != static_cast<int>(weighted.size())) {
      return Error(
          src, line.number, columns[0],
          absl::StrCat("Per-position acceptance rate has ", k, " positions, line ", k_line, " has ",
                       weighted.size(), ": one file must come from one draft length"));
    }
    SPECPLAN_RETURN_IF_ERROR(CheckRates(rates, [&](size_t p) {
      return absl::StrCat(src, ":", line.number, ":", columns[p], ": Per-position acceptance rate[",
                          p, "]");
    }));
    if (!(mean.value >= 1 && mean.value <= k + 1)) {
      return Error(src, line.number, mean.column,
                   absl::StrCat("Mean acceptance length = ", Num(mean.value), ": must be in [1, ",
                                k + 1, "] for ", k, " draft positions"));
    }
    if (k_line == 0) {
      k_line = line.number;
      weighted.assign(k, 0.0);
    }
    const double drafts = drafted.value / k;
    for (int p = 0; p < k; ++p) weighted[p] += rates[p] * drafts;
    weighted_mean += mean.value * drafts;
    total_drafts += drafts;
    a.draft_tokens += std::llround(drafted.value);
    a.accepted_tokens += std::llround(accepted.value);
    ++a.records;
  }
  if (seen == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": vllm-log: no '", kVllmLogMarker,
                     "' line (vLLM logs one every few seconds while speculating; is "
                     "speculative decoding on and stats logging not disabled?)"));
  }
  if (total_drafts <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": vllm-log: every SpecDecoding metrics line has Drafted: 0 tokens"));
  }
  for (double w : weighted) a.per_position.push_back(std::min(1.0, w / total_drafts));
  a.k_max = static_cast<int>(weighted.size());
  a.drafts = std::llround(total_drafts);
  a.mean_acceptance_length = weighted_mean / total_drafts;
  SPECPLAN_RETURN_IF_ERROR(CheckKMaxOption(options, a.k_max, src));
  return a;
}

// ---- sglang-log ----

// a in [0, 1] with sum_{j=1..k} a^j = target (target in [0, k]).
double GeometricRate(int k, double target) {
  auto f = [k](double a) {
    double s = 0, p = 1;
    for (int j = 1; j <= k; ++j) s += (p *= a);
    return s;
  };
  double lo = 0, hi = 1;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

absl::StatusOr<EngineAcceptance> ParseSglangLog(const std::string& text, const std::string& src,
                                                const EngineAcceptanceOptions& options) {
  constexpr char kKey[] = "accept len:";
  EngineAcceptance a;
  double sum = 0;
  for (const Line& line : SplitLines(text)) {
    const size_t at = line.text.find(kKey);
    if (at == std::string_view::npos) continue;
    if (options.k_max <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(src,
                       ": sglang-log: accept len alone does not give the draft length; pass "
                       "k_max (--k-max: SGLang's --speculative-num-steps for a chain)"));
    }
    const int k = options.k_max;
    double v = 0;
    int column = 0;
    bool parsed = false;
    NumberAfter(line.text, kKey, at, &v, &column, &parsed);
    if (!parsed || !std::isfinite(v)) {
      return Error(src, line.number, column,
                   absl::StrCat("accept len = '", std::string(line.text.substr(column - 1, 12)),
                                "': expected a finite number"));
    }
    if (v < 1 || v > k + 1) {
      return Error(src, line.number, column,
                   absl::StrCat("accept len = ", Num(v), ": must be in [1, ", k + 1,
                                "] (tokens per step, bonus included, with k_max = ", k, ")"));
    }
    sum += v;
    ++a.records;
  }
  if (a.records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        src,
        ": sglang-log: no 'accept len:' in any line (SGLang logs it on its 'Decode batch' "
        "lines while speculating)"));
  }
  a.k_max = options.k_max;
  a.mean_acceptance_length = sum / static_cast<double>(a.records);
  const double rate = GeometricRate(a.k_max, a.mean_acceptance_length - 1.0);
  double p = 1;
  for (int i = 0; i < a.k_max; ++i) a.per_position.push_back(p *= rate);
  return a;
}

// ---- JSON lines (vllm-requests, step-trace) ----

// 1-based column of `"key"` in `line`, or 1.
int ColumnOf(std::string_view line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\"");
  return at == std::string_view::npos ? 1 : static_cast<int>(at) + 1;
}

// Parses one JSON line; errors name source:line:column from nlohmann's byte position.
template <typename Json>
absl::StatusOr<Json> ParseJsonLine(std::string_view text, int column_offset, const Line& line,
                                   const std::string& src) {
  // util/json_error.h's bounds, checked before anything is built.
  if (const size_t deep = json_util::FindDepthExcess(text, json_util::kMaxJsonDepth);
      deep != std::string_view::npos) {
    return Error(
        src, line.number, column_offset + static_cast<int>(deep) + 1,
        absl::StrCat("JSON nested deeper than ", json_util::kMaxJsonDepth, " levels (the limit)"));
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const size_t colon = what.find("] ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    // nlohmann's own "parse error at line 1, column N: " counts within the line only: drop it.
    if (what.rfind("parse error at line ", 0) == 0) {
      const size_t rest = what.find(": ");
      if (rest != std::string::npos) what = what.substr(rest + 2);
    }
    return Error(src, line.number, column_offset + static_cast<int>(std::max<size_t>(e.byte, 1)),
                 absl::StrCat("not valid JSON: ", what));
  } catch (const nlohmann::json::exception& e) {
    return Error(src, line.number, column_offset + 1, absl::StrCat("not valid JSON: ", e.what()));
  }
}

// The name errors give field `key` of an object at `prefix` ("" = the line's top level).
std::string FieldName(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : absl::StrCat(prefix, ".", key);
}

// A non-negative integer field of `obj` (`prefix` names where obj is).
template <typename Json>
absl::StatusOr<int64_t> CountField(const Json& obj, const std::string& key,
                                   const std::string& prefix, const Line& line,
                                   const std::string& src) {
  const std::string field = FieldName(prefix, key);
  auto it = obj.find(key);
  if (it == obj.end()) return Error(src, line.number, 1, absl::StrCat(field, ": missing"));
  if (!it->is_number_integer() || it->template get<int64_t>() < 0) {
    return Error(src, line.number, ColumnOf(line.text, key),
                 absl::StrCat(field, " = ", json_util::Quote(*it), ": expected an integer >= 0"));
  }
  return it->template get<int64_t>();
}

// An array of non-negative integers.
template <typename Json>
absl::StatusOr<std::vector<int64_t>> CountArray(const Json& obj, const std::string& key,
                                                const std::string& prefix, const Line& line,
                                                const std::string& src) {
  const std::string field = FieldName(prefix, key);
  auto it = obj.find(key);
  if (it == obj.end()) return Error(src, line.number, 1, absl::StrCat(field, ": missing"));
  if (!it->is_array()) {
    return Error(
        src, line.number, ColumnOf(line.text, key),
        absl::StrCat(field, " = ", json_util::Quote(*it), ": expected an array of integers"));
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& v = (*it)[i];
    if (!v.is_number_integer() || v.template get<int64_t>() < 0) {
      return Error(
          src, line.number, ColumnOf(line.text, key),
          absl::StrCat(field, "[", i, "] = ", json_util::Quote(v), ": expected an integer >= 0"));
    }
    out.push_back(v.template get<int64_t>());
  }
  return out;
}

// A count field `obj` may state besides those it is implied by: OK when absent or equal to
// `implied`; else "<field> = <stated> but <implied_by>" at the field.
template <typename Json>
absl::Status CheckStatedCount(const Json& obj, const std::string& key, int64_t implied,
                              const std::string& implied_by, const std::string& prefix,
                              const Line& line, const std::string& src) {
  if (!obj.contains(key)) return absl::OkStatus();
  SPECPLAN_ASSIGN_OR_RETURN(const int64_t stated, CountField(obj, key, prefix, line, src));
  if (stated == implied) return absl::OkStatus();
  return Error(src, line.number, ColumnOf(line.text, key),
               absl::StrCat(FieldName(prefix, key), " = ", stated, " but ", implied_by));
}

// Strips an SSE "data: " prefix; true for lines to skip (blank, "[DONE]").
bool RequestLineBody(std::string_view t, std::string_view* body, int* offset) {
  size_t i = t.find_first_not_of(" \t");
  if (i == std::string_view::npos) return true;
  if (t.substr(i, 5) == "data:") {
    i += 5;
    while (i < t.size() && t[i] == ' ') ++i;
  }
  *body = t.substr(i);
  *offset = static_cast<int>(i);
  return body->empty() || *body == "[DONE]";
}

// The per-request speculative-decoding object of a vllm-requests line, or null; *where names it.
const nlohmann::json* SpecObject(const nlohmann::json& obj, std::string* where) {
  if (!obj.is_object()) return nullptr;
  for (const char* wrap : {"", "data"}) {
    const nlohmann::json* o = &obj;
    std::string prefix;
    if (*wrap) {
      auto it = obj.find(wrap);
      if (it == obj.end() || !it->is_object()) continue;
      o = &*it;
      prefix = std::string(wrap) + ".";
    }
    auto m = o->find("metrics");
    if (m != o->end() && m->is_object()) {
      auto sd = m->find("speculative_decoding");
      if (sd != m->end() && sd->is_object()) {
        *where = prefix + "metrics.speculative_decoding";
        return &*sd;
      }
    }
    auto sd = o->find("speculative_decoding");
    if (sd != o->end() && sd->is_object()) {
      *where = prefix + "speculative_decoding";
      return &*sd;
    }
  }
  return nullptr;
}

absl::StatusOr<EngineAcceptance> ParseVllmRequests(const std::string& text, const std::string& src,
                                                   const EngineAcceptanceOptions& options) {
  EngineAcceptance a;
  std::vector<int64_t> per_pos;  // [k] accepted at position i, summed over requests
  int k_line = 0;
  for (const Line& line : SplitLines(text)) {
    std::string_view body;
    int offset = 0;
    if (RequestLineBody(line.text, &body, &offset)) continue;
    SPECPLAN_ASSIGN_OR_RETURN(nlohmann::json obj,
                              ParseJsonLine<nlohmann::json>(body, offset, line, src));
    if (!obj.is_object()) {
      return Error(src, line.number, offset + 1, "expected one JSON object per line");
    }
    std::string where;
    const nlohmann::json* spec = SpecObject(obj, &where);
    int64_t drafts = 0, draft_tokens = 0, accepted = 0;
    std::vector<int64_t> counts;  // [k] accepted at position i
    if (spec != nullptr) {
      SPECPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> hist,
                                CountArray(*spec, "acceptance_histogram", where, line, src));
      if (hist.size() < 2) {
        return Error(src, line.number, ColumnOf(line.text, "acceptance_histogram"),
                     absl::StrCat(where,
                                  ".acceptance_histogram: needs num_spec_tokens + 1 >= 2 "
                                  "entries, has ",
                                  hist.size()));
      }
      const int k = static_cast<int>(hist.size()) - 1;
      SPECPLAN_RETURN_IF_ERROR(
          CheckStatedCount(*spec, "num_spec_tokens", k,
                           absl::StrCat("acceptance_histogram has ", hist.size(),
                                        " entries (expected num_spec_tokens + 1)"),
                           where, line, src));
      for (int64_t h : hist) drafts += h;
      for (int j = 0; j <= k; ++j) accepted += j * hist[j];
      SPECPLAN_RETURN_IF_ERROR(CheckStatedCount(
          *spec, "num_spec_steps", drafts, absl::StrCat("acceptance_histogram sums to ", drafts),
          where, line, src));
      draft_tokens = drafts * k;
      if (spec->contains("num_draft_tokens")) {
        SPECPLAN_ASSIGN_OR_RETURN(draft_tokens,
                                  CountField(*spec, "num_draft_tokens", where, line, src));
      }
      counts.assign(k, 0);
      for (int i = 0; i < k; ++i) {
        for (int j = i + 1; j <= k; ++j) counts[i] += hist[j];
      }
    } else {
      if (!obj.contains("num_accepted_tokens_per_pos")) {
        return Error(src, line.number, offset + 1,
                     "no metrics.speculative_decoding object (vLLM's "
                     "--per-request-spec-decode-metrics) and no num_accepted_tokens_per_pos");
      }
      SPECPLAN_ASSIGN_OR_RETURN(drafts, CountField(obj, "num_drafts", "", line, src));
      SPECPLAN_ASSIGN_OR_RETURN(draft_tokens, CountField(obj, "num_draft_tokens", "", line, src));
      SPECPLAN_ASSIGN_OR_RETURN(counts,
                                CountArray(obj, "num_accepted_tokens_per_pos", "", line, src));
      if (counts.empty()) {
        return Error(src, line.number, ColumnOf(line.text, "num_accepted_tokens_per_pos"),
                     "num_accepted_tokens_per_pos: empty (needs one count per draft position)");
      }
      for (size_t i = 0; i < counts.size(); ++i) {
        const int col = ColumnOf(line.text, "num_accepted_tokens_per_pos");
        if (counts[i] > drafts) {
          return Error(src, line.number, col,
                       absl::StrCat("num_accepted_tokens_per_pos[", i, "] = ", counts[i],
                                    " exceeds num_drafts = ", drafts,
                                    ": at most one accepted token per draft"));
        }
        if (i > 0 && counts[i] > counts[i - 1]) {
          return Error(src, line.number, col,
                       absl::StrCat("num_accepted_tokens_per_pos[", i, "] = ", counts[i],
                                    " exceeds position ", i - 1, "'s ", counts[i - 1],
                                    ": per-position acceptance must not rise with position"));
        }
        accepted += counts[i];
      }
      SPECPLAN_RETURN_IF_ERROR(CheckStatedCount(
          obj, "num_accepted_tokens", accepted,
          absl::StrCat("num_accepted_tokens_per_pos sums to ", accepted), "", line, src));
    }
    if (k_line == 0) {
      k_line = line.number;
      per_pos.assign(counts.size(), 0);
    } else if (counts.size() != per_pos.size()) {
      return Error(
          src, line.number, offset + 1,
          absl::StrCat("this request has ", counts.size(), " draft positions, line ", k_line,
                       " has ", per_pos.size(), ": one file must come from one draft length"));
    }
    for (size_t i = 0; i < counts.size(); ++i) per_pos[i] += counts[i];
    a.drafts += drafts;
    a.draft_tokens += draft_tokens;
    a.accepted_tokens += accepted;
    ++a.records;
  }
  if (a.records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": vllm-requests: no request lines"));
  }
  if (a.drafts == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": vllm-requests: no verification steps in any request"));
  }
  a.k_max = static_cast<int>(per_pos.size());
  for (int64_t c : per_pos) a.per_position.push_back(double(c) / double(a.drafts));
  a.mean_acceptance_length = 1.0 + double(a.accepted_tokens) / double(a.drafts);
  SPECPLAN_RETURN_IF_ERROR(CheckKMaxOption(options, a.k_max, src));
  return a;
}

// ---- step-trace ----

// Walks every request with chains of k; returns {tokens, steps} and, when `accepted_at_least` is
// given, counts in [i] the steps that accepted >= i + 1 drafts (i < k).
std::pair<int64_t, int64_t> WalkTrace(const std::vector<AcceptanceTraceRequest>& requests, int k,
                                      std::vector<int64_t>* accepted_at_least,
                                      int64_t* draft_tokens = nullptr) {
  int64_t tokens = 0, steps = 0;
  if (draft_tokens != nullptr) *draft_tokens = 0;
  if (accepted_at_least != nullptr) accepted_at_least->assign(k, 0);
  for (const AcceptanceTraceRequest& r : requests) {
    size_t i = 1;
    while (i < r.acc_len.size()) {
      const int emitted = r.EmittedAt(i, k);
      tokens += emitted;
      ++steps;
      if (draft_tokens != nullptr) *draft_tokens += r.DraftAt(i, k);
      if (accepted_at_least != nullptr) {
        for (int p = 0; p < emitted - 1; ++p) ++(*accepted_at_least)[p];
      }
      i += static_cast<size_t>(emitted);
    }
  }
  return {tokens, steps};
}

// A line's token ids: `field` must be an array of integers in [0, 2^31).
absl::StatusOr<std::vector<int32_t>> TokenIds(const OrderedJson& obj, const Line& line,
                                              const std::string& src, const char* field) {
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_array()) {
    return Error(src, line.number, it == obj.end() ? 1 : ColumnOf(line.text, field),
                 absl::StrCat(field, it == obj.end() ? ": missing" : ": expected an array",
                              " (prompt_lookup_min/max match the request's tokens)"));
  }
  std::vector<int32_t> ids;
  ids.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const OrderedJson& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return Error(src, line.number, ColumnOf(line.text, field),
                   absl::StrCat(field, "[", i, "] = ", json_util::Quote(v),
                                ": expected a token id, an integer >= 0"));
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

// Runs the n-gram matcher over the line's tokens (prompt_lookup.h) into req->draft_room, and checks
// the trace against it: no step may accept more drafts than the matcher proposes there.
absl::Status MatchPromptLookup(const OrderedJson& obj, const Line& line, const std::string& src,
                               const std::string& field, const PromptLookup& lookup,
                               AcceptanceTraceRequest* req, EngineAcceptance* a) {
  SPECPLAN_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                            TokenIds(obj, line, src, "prompt_token_ids"));
  SPECPLAN_ASSIGN_OR_RETURN(std::vector<int32_t> generated,
                            TokenIds(obj, line, src, "generated_token_ids"));
  if (req->acc_len.size() > generated.size() + 1) {
    return Error(src, line.number, ColumnOf(line.text, "generated_token_ids"),
                 absl::StrCat(field, " has ", req->acc_len.size(),
                              " positions but generated_token_ids only ", generated.size(),
                              " tokens: the matcher needs the tokens of every position"));
  }
  constexpr int32_t kRoomCap = 1 << 20;                                      // acc_len's own bound
  const int column = ColumnOf(line.text, field.substr(0, field.find('.')));  // the acc_* key
  req->draft_room = PromptLookupRooms(prompt, generated, lookup, kRoomCap);
  req->draft_room.resize(req->acc_len.size());
  for (size_t i = 1; i < req->acc_len.size(); ++i) {
    ++a->positions;
    if (req->draft_room[i] == 0) ++a->unmatched_positions;
    if (req->acc_len[i] - 1 > req->draft_room[i]) {
      return Error(
          src, line.number, column,
          absl::StrCat(field, "[", i, "] = ", req->acc_len[i], " accepts ", req->acc_len[i] - 1,
                       " drafts, but prompt_lookup_min = ", lookup.min_n,
                       ", prompt_lookup_max = ", lookup.max_n, " proposes ", req->draft_room[i],
                       " there: the trace was recorded with other prompt_lookup settings (or "
                       "another drafter)"));
    }
  }
  return absl::OkStatus();
}

std::string DrafterKey(const std::string& drafter) {
  return drafter.rfind("acc_", 0) == 0 ? drafter : "acc_" + drafter;
}

std::string AccKeys(const OrderedJson& obj) {
  std::string keys;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key().rfind("acc_", 0) == 0 && it.value().is_object()) {
      absl::StrAppend(&keys, keys.empty() ? "" : ", ", it.key());
    }
  }
  return keys.empty() ? "none" : keys;
}

absl::StatusOr<EngineAcceptance> ParseStepTrace(const std::string& text, const std::string& src,
                                                const EngineAcceptanceOptions& options) {
  EngineAcceptance a;
  bool chosen = false;
  int stated_k = 0;  // smallest "k_max" a line states; 0 = none
  int max_acc = 1;
  for (const Line& line : SplitLines(text)) {
    if (IsBlank(line.text)) continue;
    SPECPLAN_ASSIGN_OR_RETURN(OrderedJson obj, ParseJsonLine<OrderedJson>(line.text, 0, line, src));
    if (!obj.is_object()) return Error(src, line.number, 1, "expected one JSON object per line");
    if (!chosen) {
      if (!options.drafter.empty()) {
        a.drafter = DrafterKey(options.drafter);
      } else {
        for (auto it = obj.begin(); it != obj.end(); ++it) {
          if (it.key().rfind("acc_", 0) == 0 && it.value().is_object()) {
            a.drafter = it.key();
            break;
          }
        }
      }
      chosen = true;
    }
    AcceptanceTraceRequest req;
    // id
    if (auto it = obj.find("id"); it != obj.end()) {
      req.id = it->is_string() ? it->get<std::string>() : json_util::Quote(*it);
    } else {
      req.id = absl::StrCat("line ", line.number);
    }
    // prompt
    if (auto it = obj.find("prompt_tokens"); it != obj.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0) {
        return Error(
            src, line.number, ColumnOf(line.text, "prompt_tokens"),
            absl::StrCat("prompt_tokens = ", json_util::Quote(*it), ": expected an integer >= 0"));
      }
      req.prompt_tokens = it->get<int64_t>();
    } else if (auto ids = obj.find("prompt_token_ids"); ids != obj.end()) {
      if (!ids->is_array()) {
        return Error(src, line.number, ColumnOf(line.text, "prompt_token_ids"),
                     "prompt_token_ids: expected an array");
      }
      req.prompt_tokens = static_cast<int64_t>(ids->size());
    } else {
      return Error(src, line.number, 1,
                   "prompt_tokens: missing (give prompt_tokens or prompt_token_ids)");
    }
    // k_max stated by the line
    if (auto it = obj.find("k_max"); it != obj.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 4096) {
        return Error(
            src, line.number, ColumnOf(line.text, "k_max"),
            absl::StrCat("k_max = ", json_util::Quote(*it), ": expected an integer in [1, 4096]"));
      }
      const int k = static_cast<int>(it->get<int64_t>());
      stated_k = stated_k == 0 ? k : std::min(stated_k, k);
    }
    // acc_len
    const OrderedJson* holder = &obj;
    std::string field = "acc_len";
    int column = ColumnOf(line.text, "acc_len");
    if (!a.drafter.empty()) {
      auto it = obj.find(a.drafter);
      if (it == obj.end() || !it->is_object()) {
        return Error(
            src, line.number, 1,
            absl::StrCat(a.drafter, ": missing (this line's drafters: ", AccKeys(obj), ")"));
      }
      holder = &*it;
      field = a.drafter + ".acc_len";
      column = ColumnOf(line.text, a.drafter);
    }
    auto acc = holder->find("acc_len");
    if (acc == holder->end()) {
      return Error(src, line.number, column,
                   absl::StrCat(field, ": missing (drafters on this line: ", AccKeys(obj), ")"));
    }
    if (!acc->is_array() || acc->empty()) {
      return Error(src, line.number, column,
                   absl::StrCat(field, ": expected a non-empty array of integers >= 1"));
    }
    for (size_t i = 0; i < acc->size(); ++i) {
      const OrderedJson& v = (*acc)[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1 << 20) {
        return Error(src, line.number, column,
                     absl::StrCat(field, "[", i, "] = ", json_util::Quote(v),
                                  ": must be an integer >= 1 (1 + leading drafts accepted)"));
      }
      const int32_t n = static_cast<int32_t>(v.get<int64_t>());
      if (stated_k > 0 && n > stated_k + 1) {
        return Error(src, line.number, column,
                     absl::StrCat(field, "[", i, "] = ", n, " exceeds k_max + 1 = ", stated_k + 1));
      }
      if (i >= 1) max_acc = std::max<int>(max_acc, n);
      req.acc_len.push_back(n);
    }
    if (options.prompt_lookup.has_value()) {
      SPECPLAN_RETURN_IF_ERROR(
          MatchPromptLookup(obj, line, src, field, *options.prompt_lookup, &req, &a));
    }
    a.requests.push_back(std::move(req));
  }
  if (a.requests.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": step-trace: no request lines"));
  }
  int k = options.k_max > 0 ? options.k_max : std::max(1, max_acc - 1);
  if (stated_k > 0) k = std::min(k, stated_k);
  a.k_max = k;
  std::vector<int64_t> at_least;
  int64_t draft_tokens = 0;
  const auto [tokens, steps] = WalkTrace(a.requests, k, &at_least, &draft_tokens);
  if (steps == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src,
                     ": step-trace: no decoding steps (every acc_len holds only the prefill "
                     "entry)"));
  }
  for (int64_t c : at_least) a.per_position.push_back(double(c) / double(steps));
  a.drafts = steps;
  a.draft_tokens = draft_tokens;
  a.prompt_lookup = options.prompt_lookup;
  a.accepted_tokens = tokens - steps;
  a.mean_acceptance_length = double(tokens) / double(steps);
  a.records = static_cast<int64_t>(a.requests.size());
  return a;
}

// ---- detection ----

absl::StatusOr<AcceptanceFormat> DetectFormat(const std::string& text, const std::string& src) {
  // The first non-blank line.
  std::string_view first;
  for (const Line& line : SplitLines(text)) {
    if (!IsBlank(line.text)) {
      first = line.text;
      break;
    }
  }
  const size_t lead = first.find_first_not_of(" \t");
  std::string_view body = lead == std::string_view::npos ? first : first.substr(lead);
  if (body.substr(0, 5) == "data:") body = body.substr(5);
  body = body.substr(std::min(body.size(), body.find_first_not_of(" \t")));
  if (!body.empty() && body[0] == '{' &&
      json_util::FindDepthExcess(body, json_util::kMaxJsonDepth) == std::string_view::npos) {
    try {
      const nlohmann::json j = nlohmann::json::parse(body.begin(), body.end());
      std::string where;
      if (j.is_object()) {
        if (j.contains("acc_len")) return AcceptanceFormat::kStepTrace;
        for (auto it = j.begin(); it != j.end(); ++it) {
          if (it.key().rfind("acc_", 0) == 0 && it->is_object())
            return AcceptanceFormat::kStepTrace;
        }
        if (SpecObject(j, &where) != nullptr || j.contains("num_accepted_tokens_per_pos")) {
          return AcceptanceFormat::kVllmRequests;
        }
      }
    } catch (const nlohmann::json::exception&) {
      // Broken JSON: guess from the keys so that the format's parser reports where it breaks.
      if (body.find("acc_len") != std::string_view::npos) return AcceptanceFormat::kStepTrace;
      if (body.find("speculative_decoding") != std::string_view::npos ||
          body.find("num_accepted_tokens_per_pos") != std::string_view::npos) {
        return AcceptanceFormat::kVllmRequests;
      }
    }
  } else {
    if (text.find(kVllmLogMarker) != std::string::npos) return AcceptanceFormat::kVllmLog;
    if (text.find("vllm:spec_decode_") != std::string::npos) {
      return AcceptanceFormat::kVllmPrometheus;
    }
    if (text.find("accept len:") != std::string::npos) return AcceptanceFormat::kSglangLog;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      src,
      ": cannot tell the acceptance format: tried step-trace and vllm-requests (a first line that "
      "is a JSON object with acc_len / acc_* or metrics.speculative_decoding / "
      "num_accepted_tokens_per_pos), vllm-log ('",
      kVllmLogMarker,
      "'), vllm-prometheus (vllm:spec_decode_* counters), sglang-log ('accept len:'); name the "
      "format (--format)"));
}

// The parser of format f. Each fills what it reads; ParseEngineAcceptance sets format and source.
absl::StatusOr<EngineAcceptance> ParseFormat(AcceptanceFormat f, const std::string& text,
                                             const std::string& src,
                                             const EngineAcceptanceOptions& options) {
  switch (f) {
    case AcceptanceFormat::kVllmPrometheus:
      return ParsePrometheus(text, src, options);
    case AcceptanceFormat::kVllmLog:
      return ParseVllmLog(text, src, options);
    case AcceptanceFormat::kVllmRequests:
      return ParseVllmRequests(text, src, options);
    case AcceptanceFormat::kSglangLog:
      return ParseSglangLog(text, src, options);
    case AcceptanceFormat::kStepTrace:
      return ParseStepTrace(text, src, options);
  }
  return absl::InternalError("unknown acceptance format");
}

}  // namespace

const char* AcceptanceFormatName(AcceptanceFormat f) { return EnumName(kAcceptanceFormatNames, f); }

absl::StatusOr<AcceptanceFormat> ParseAcceptanceFormat(const std::string& name) {
  return ParseEnum(kAcceptanceFormatNames, "format", name);
}

double EngineAcceptance::TokensPerStep(int k) const {
  SPECPLAN_CHECK(k >= 0 && k <= k_max, "TokensPerStep: k outside [0, k_max]");
  if (has_trace()) {
    const auto [tokens, steps] = WalkTrace(requests, k, nullptr);
    return steps == 0 ? 1.0 : double(tokens) / double(steps);
  }
  double t = 1.0;
  for (int i = 0; i < k; ++i) t += per_position[i];
  return t;
}

absl::StatusOr<EngineAcceptance> ParseEngineAcceptance(const std::string& text,
                                                       const std::string& source,
                                                       std::optional<AcceptanceFormat> format,
                                                       const EngineAcceptanceOptions& options) {
  if (options.k_max < 0 || options.k_max > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("k_max = ", options.k_max, ": must be in [0, 4096] (0 = not given)"));
  }
  AcceptanceFormat f;
  if (format.has_value()) {
    f = *format;
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(f, DetectFormat(text, source));
  }
  if (!options.drafter.empty() && f != AcceptanceFormat::kStepTrace) {
    return absl::InvalidArgumentError(absl::StrCat("drafter = '", options.drafter,
                                                   "': only a step-trace names drafters (", source,
                                                   " is ", AcceptanceFormatName(f), ")"));
  }
  if (options.prompt_lookup.has_value()) {
    const PromptLookup& p = *options.prompt_lookup;
    if (p.min_n < 1 || p.max_n < p.min_n || p.max_n > kMaxPromptLookup) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt_lookup_min = ", p.min_n, ", prompt_lookup_max = ", p.max_n,
                       ": need 1 <= prompt_lookup_min <= prompt_lookup_max <= ", kMaxPromptLookup));
    }
    if (f != AcceptanceFormat::kStepTrace) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt_lookup_min/max: only a step-trace holds the tokens to match (",
                       source, " is ", AcceptanceFormatName(f), ")"));
    }
  }
  absl::StatusOr<EngineAcceptance> a = ParseFormat(f, text, source, options);
  if (a.ok()) {
    a->format = f;
    a->source = source;
  }
  return a;
}

absl::StatusOr<EngineAcceptance> LoadEngineAcceptance(const std::string& path,
                                                      std::optional<AcceptanceFormat> format,
                                                      const EngineAcceptanceOptions& options) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return ParseEngineAcceptance(text, "<stdin>", format, options);
  }
  SPECPLAN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseEngineAcceptance(text, path, format, options);
}

nlohmann::json EngineAcceptanceToJson(const EngineAcceptance& a) {
  nlohmann::json j = {{"format", AcceptanceFormatName(a.format)},
                      {"source", a.source},
                      {"per_position", a.per_position},
                      {"mean_acceptance_length", a.mean_acceptance_length},
                      {"k_max", a.k_max},
                      {"drafts", a.drafts},
                      {"draft_tokens", a.draft_tokens},
                      {"accepted_tokens", a.accepted_tokens},
                      {"records", a.records}};
  const bool per_request =
      a.format == AcceptanceFormat::kStepTrace || a.format == AcceptanceFormat::kVllmRequests;
  j["requests"] = per_request ? a.records : 0;
  if (a.format == AcceptanceFormat::kStepTrace) {
    j["drafter"] = a.drafter;
    j["steps"] = a.drafts;
    if (a.prompt_lookup.has_value()) {
      j["prompt_lookup"] = {{"prompt_lookup_min", a.prompt_lookup->min_n},
                            {"prompt_lookup_max", a.prompt_lookup->max_n},
                            {"positions", a.positions},
                            {"unmatched_positions", a.unmatched_positions}};
    }
  }
  return j;
}

}  // namespace specplan::planner
