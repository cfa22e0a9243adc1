#include "costmodel/compose/kernel_tables.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;

// A CSV with a header; rows keep their line numbers for errors.
struct CsvRow {
  int line = 0;
  std::vector<std::string> fields;
};
struct Csv {
  std::map<std::string, size_t> columns;
  std::vector<CsvRow> rows;
};

absl::StatusOr<Csv> ParseCsv(const std::string& text, const std::string& source,
                             const std::vector<std::string>& required) {
  Csv csv;
  size_t ncols = 0;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (absl::string_view f : absl::StrSplit(line, ',')) {
      fields.emplace_back(absl::StripAsciiWhitespace(f));
    }
    if (ncols == 0) {
      for (size_t i = 0; i < fields.size(); ++i) {
        csv.columns[absl::AsciiStrToLower(fields[i])] = i;
      }
      for (const std::string& need : required) {
        if (csv.columns.count(need) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": header '", line,
                                                         "': missing column '", need, "'"));
        }
      }
      ncols = fields.size();
      continue;
    }
    if (fields.size() != ncols) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_no, ": expected ", ncols, " fields, got ", fields.size()));
    }
    csv.rows.push_back({line_no, std::move(fields)});
  }
  if (ncols == 0) return absl::InvalidArgumentError(absl::StrCat(source, ": empty (no header)"));
  if (csv.rows.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no rows"));
  return csv;
}

absl::StatusOr<int64_t> IntField(const Csv& csv, const CsvRow& row, const std::string& column,
                                 const std::string& source) {
  const std::string& text = row.fields[csv.columns.at(column)];
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 1) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", row.line, ": ", column, " = '",
                                                   text, "': expected an integer >= 1"));
  }
  return v;
}

// latency_ms, returned in seconds.
absl::StatusOr<double> LatencyField(const Csv& csv, const CsvRow& row, const std::string& source) {
  const std::string& text = row.fields[csv.columns.at("latency_ms")];
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v) || v <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", row.line, ": latency_ms = '", text,
                                                   "': expected a finite number > 0"));
  }
  return v * 1e-3;
}

std::vector<std::string> KernelSources(const Csv& csv) {
  std::set<std::string> names;
  const auto it = csv.columns.find("kernel_source");
  if (it == csv.columns.end()) return {};
  for (const CsvRow& row : csv.rows) names.insert(row.fields[it->second]);
  return {names.begin(), names.end()};
}

// Linear interpolation on ascending (x, y) points; x below the first point takes the first y.
// Above the last: the line through the last two points (flagged), or the last y when only one.
double Interpolate(const std::vector<std::pair<int64_t, double>>& pts, double x, bool* above) {
  *above = false;
  if (x <= static_cast<double>(pts.front().first)) return pts.front().second;
  if (x > static_cast<double>(pts.back().first)) {
    *above = true;
    if (pts.size() == 1) return pts.back().second;
    const auto& [x0, y0] = pts[pts.size() - 2];
    const auto& [x1, y1] = pts.back();
    const double slope = std::max(0.0, (y1 - y0) / static_cast<double>(x1 - x0));
    return y1 + slope * (x - static_cast<double>(x1));
  }
  const auto hi = std::lower_bound(pts.begin(), pts.end(), x,
                                   [](const auto& p, double v) { return p.first < v; });
  if (static_cast<double>(hi->first) == x) return hi->second;
  const auto lo = hi - 1;
  const double f =
      (x - static_cast<double>(lo->first)) / static_cast<double>(hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

// Ascending (x, y) points where an x was measured more than once (the source repeats some
// shapes) keep one point with the mean y. Returns how many points were merged away.
size_t AverageRepeats(std::vector<std::pair<int64_t, double>>* pts) {
  std::vector<std::pair<int64_t, double>> out;
  size_t merged = 0, count = 0;
  for (const auto& p : *pts) {
    if (!out.empty() && out.back().first == p.first) {
      out.back().second += p.second;
      ++count;
      ++merged;
    } else {
      if (count > 1) out.back().second /= static_cast<double>(count);
      out.push_back(p);
      count = 1;
    }
  }
  if (count > 1) out.back().second /= static_cast<double>(count);
  *pts = std::move(out);
  return merged;
}

// Makes ascending (x, y) points non-decreasing in y by isotonic regression (pool adjacent
// violators: the least-squares non-decreasing fit): more tokens never cost less, and a dip, which
// is measurement noise, is averaged with its neighbours rather than lifted to the peak before it.
// Returns the largest relative change it made to a point.
double Isotonic(std::vector<std::pair<int64_t, double>>* pts) {
  struct Block {
    double sum;
    size_t count;
    double mean() const { return sum / static_cast<double>(count); }
  };
  std::vector<Block> blocks;
  for (const auto& p : *pts) {
    blocks.push_back({p.second, 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
      blocks[blocks.size() - 2].sum += blocks.back().sum;
      blocks[blocks.size() - 2].count += blocks.back().count;
      blocks.pop_back();
    }
  }
  double change = 0;
  size_t i = 0;
  for (const Block& b : blocks) {
    for (size_t j = 0; j < b.count; ++j, ++i) {
      double& y = (*pts)[i].second;
      change = std::max(change, std::abs(b.mean() / y - 1));
      y = b.mean();
    }
  }
  return change;
}

// The grid values around x (lo <= x <= hi) and the weight of hi; x within [front, back].
struct Bracket {
  int64_t lo, hi;
  double f;
};
Bracket Around(const std::vector<int64_t>& grid, int64_t x) {
  const auto hi = std::lower_bound(grid.begin(), grid.end(), x);
  if (*hi == x || hi == grid.begin()) return {*hi, *hi, 0.0};
  const int64_t lo = *(hi - 1);
  return {lo, *hi, static_cast<double>(x - lo) / static_cast<double>(*hi - lo)};
}

}  // namespace

absl::StatusOr<GemmTable> GemmTable::Parse(const std::string& text, const std::string& source) {
  SPECPLAN_ASSIGN_OR_RETURN(Csv csv, ParseCsv(text, source, {"m", "n", "k", "latency_ms"}));
  GemmTable t;
  std::set<int64_t> ns, ks;
  t.floor_s_ = std::numeric_limits<double>::infinity();
  for (const CsvRow& row : csv.rows) {
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t m, IntField(csv, row, "m", source));
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t n, IntField(csv, row, "n", source));
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t k, IntField(csv, row, "k", source));
    SPECPLAN_ASSIGN_OR_RETURN(const double sec, LatencyField(csv, row, source));
    t.by_nk_[{n, k}].push_back({m, sec});
    ns.insert(n);
    ks.insert(k);
    t.floor_s_ = std::min(t.floor_s_, sec);
    const double md = static_cast<double>(m), nd = static_cast<double>(n),
                 kd = static_cast<double>(k);
    t.peak_flops_ = std::max(t.peak_flops_, 2 * md * nd * kd / sec);
    if (m <= 16 && nd * kd * 2 >= 256.0 * (1 << 20)) {
      t.stream_bw_ = std::max(t.stream_bw_, 2 * (nd * kd + md * kd + md * nd) / sec);
    }
  }
  for (auto& [nk, pts] : t.by_nk_) {
    std::sort(pts.begin(), pts.end());
    t.repeats_ += AverageRepeats(&pts);
    t.max_change_ = std::max(t.max_change_, Isotonic(&pts));
  }
  t.n_grid_.assign(ns.begin(), ns.end());
  t.k_grid_.assign(ks.begin(), ks.end());
  t.rows_ = csv.rows.size();
  t.kernel_sources_ = KernelSources(csv);
  return t;
}

std::vector<GemmTable::Point> GemmTable::Points() const {
  std::vector<Point> out;
  for (const auto& [nk, pts] : by_nk_) {
    for (const auto& [m, sec] : pts) out.push_back({m, nk.first, nk.second, sec});
  }
  return out;
}

absl::StatusOr<double> GemmTable::AtPair(int64_t m, int64_t n, int64_t k) const {
  const auto it = by_nk_.find({n, k});
  if (it == by_nk_.end()) {
    return absl::NotFoundError(
        absl::StrCat("gemm.csv: no rows for n = ", n, ", k = ", k, " (needed to interpolate)"));
  }
  const auto& pts = it->second;
  const int64_t m_max = pts.back().first;
  if (m > m_max) {  // separable in m: whole row blocks of the largest measured m, then the rest
    const int64_t blocks = m / m_max, rest = m % m_max;
    double sec = static_cast<double>(blocks) * pts.back().second;
    if (rest > 0) {
      SPECPLAN_ASSIGN_OR_RETURN(const double r, AtPair(rest, n, k));
      sec += r;
    }
    return sec;
  }
  bool above = false;
  return Interpolate(pts, static_cast<double>(m), &above);
}

absl::StatusOr<double> GemmTable::OnGrid(int64_t m, int64_t n, int64_t k) const {
  const Bracket bn = Around(n_grid_, n), bk = Around(k_grid_, k);
  double sec = 0;
  for (const auto& [nn, wn] : {std::pair{bn.lo, 1 - bn.f}, std::pair{bn.hi, bn.f}}) {
    for (const auto& [kk, wk] : {std::pair{bk.lo, 1 - bk.f}, std::pair{bk.hi, bk.f}}) {
      if (wn * wk == 0) continue;
      SPECPLAN_ASSIGN_OR_RETURN(const double t, AtPair(m, nn, kk));
      sec += wn * wk * t;
    }
  }
  return sec;
}

absl::StatusOr<double> GemmTable::Seconds(int64_t m, int64_t n, int64_t k) const {
  if (m < 1 || n < 1 || k < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GEMM m = ", m, ", n = ", n, ", k = ", k, ": every size must be >= 1"));
  }
  // Above the largest measured width: whole blocks of it, then the rest.
  auto split =
      [](int64_t size, int64_t max,
         const std::function<absl::StatusOr<double>(int64_t)>& part) -> absl::StatusOr<double> {
    SPECPLAN_ASSIGN_OR_RETURN(const double full, part(max));
    double sec = static_cast<double>(size / max) * full;
    if (size % max > 0) {
      SPECPLAN_ASSIGN_OR_RETURN(const double rest, part(size % max));
      sec += rest;
    }
    return sec;
  };
  if (n > n_grid_.back()) {
    return split(n, n_grid_.back(), [&](int64_t w) { return Seconds(m, w, k); });
  }
  if (k > k_grid_.back()) {
    return split(k, k_grid_.back(), [&](int64_t w) { return Seconds(m, n, w); });
  }
  // Below the smallest measured width: the smallest width's time (launch-bound).
  return OnGrid(m, std::max(n, n_grid_.front()), std::max(k, k_grid_.front()));
}

bool AttentionHeads::operator<(const AttentionHeads& o) const {
  return std::tie(num_heads, num_kv_heads, head_dim) <
         std::tie(o.num_heads, o.num_kv_heads, o.head_dim);
}

std::string AttentionHeads::ToString() const {
  return absl::StrCat(num_heads, "/", num_kv_heads, "/", head_dim);
}

absl::StatusOr<AttentionTable> AttentionTable::Parse(const std::string& text,
                                                     const std::string& source,
                                                     const std::string& length_column) {
  SPECPLAN_ASSIGN_OR_RETURN(Csv csv, ParseCsv(text, source,
                                              {"batch_size", length_column, "num_heads",
                                               "num_key_value_heads", "head_dim", "latency_ms"}));
  std::vector<Point> points;
  for (const CsvRow& row : csv.rows) {
    Point p;
    SPECPLAN_ASSIGN_OR_RETURN(p.heads.num_heads, IntField(csv, row, "num_heads", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.heads.num_kv_heads,
                              IntField(csv, row, "num_key_value_heads", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.heads.head_dim, IntField(csv, row, "head_dim", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.b, IntField(csv, row, "batch_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.x, IntField(csv, row, length_column, source));
    SPECPLAN_ASSIGN_OR_RETURN(p.seconds, LatencyField(csv, row, source));
    points.push_back(p);
  }
  return Build(source, length_column, points, KernelSources(csv));
}

AttentionTable AttentionTable::Build(const std::string& source, const std::string& length_column,
                                     const std::vector<Point>& points,
                                     std::vector<std::string> kernel_sources) {
  AttentionTable t;
  t.source_ = source;
  t.length_column_ = length_column;
  for (const Point& p : points) t.by_heads_[p.heads][p.b].push_back({p.x, p.seconds});
  for (auto& [heads, by_b] : t.by_heads_) {
    for (auto& [b, pts] : by_b) {
      std::sort(pts.begin(), pts.end());
      t.repeats_ += AverageRepeats(&pts);
      t.max_change_ = std::max(t.max_change_, Isotonic(&pts));
    }
  }
  t.kernel_sources_ = std::move(kernel_sources);
  return t;
}

std::vector<AttentionHeads> AttentionTable::HeadConfigs() const {
  std::vector<AttentionHeads> out;
  for (const auto& [h, unused] : by_heads_) out.push_back(h);
  return out;
}

std::vector<AttentionTable::MeasuredPoint> AttentionTable::Points() const {
  std::vector<MeasuredPoint> out;
  for (const auto& [heads, by_b] : by_heads_) {
    for (const auto& [b, pts] : by_b) {
      for (const auto& [x, sec] : pts) out.push_back({heads, b, x, sec});
    }
  }
  return out;
}

AttentionLookup AttentionTable::AtBatch(const std::vector<std::pair<int64_t, double>>& points,
                                        double x, int64_t b) const {
  AttentionLookup r;
  r.seconds = Interpolate(points, x, &r.extrapolated);
  if (r.extrapolated) {
    r.why =
        absl::StrCat(source_, ": ", length_column_, " ", x, " at batch_size ", b,
                     " is past the largest measured ", length_column_, " ", points.back().first);
  }
  return r;
}

absl::StatusOr<AttentionLookup> AttentionTable::Seconds(const AttentionHeads& heads, double b,
                                                        double x) const {
  const auto it = by_heads_.find(heads);
  if (it == by_heads_.end()) {
    std::vector<std::string> held;
    for (const AttentionHeads& h : HeadConfigs()) held.push_back(h.ToString());
    return absl::NotFoundError(absl::StrCat(
        source_, ": no rows for num_heads/num_key_value_heads/head_dim = ", heads.ToString(),
        " (held: ", absl::StrJoin(held, ", "), ")"));
  }
  const auto& by_b = it->second;
  const int64_t b_max = by_b.rbegin()->first;
  if (b > static_cast<double>(b_max)) {  // past the largest batch: per-sequence work adds up
    AttentionLookup r = AtBatch(by_b.rbegin()->second, x, b_max);
    r.seconds *= b / static_cast<double>(b_max);
    r.why = absl::StrCat(source_, ": batch_size ", b, " is past the largest measured batch_size ",
                         b_max, r.extrapolated ? absl::StrCat("; ", r.why) : "");
    r.extrapolated = true;
    return r;
  }
  auto hi = by_b.lower_bound(static_cast<int64_t>(std::ceil(b)));
  if (hi == by_b.begin() || static_cast<double>(hi->first) == b) {
    return AtBatch(hi->second, x, hi->first);
  }
  auto lo = std::prev(hi);
  const AttentionLookup a = AtBatch(lo->second, x, lo->first);
  const AttentionLookup c = AtBatch(hi->second, x, hi->first);
  const double f =
      (b - static_cast<double>(lo->first)) / static_cast<double>(hi->first - lo->first);
  AttentionLookup r;
  r.seconds = (1 - f) * a.seconds + f * c.seconds;
  r.extrapolated = a.extrapolated || c.extrapolated;
  r.why = a.extrapolated ? a.why : c.why;
  return r;
}

absl::StatusOr<TreeAttentionTable> TreeAttentionTable::Parse(const std::string& text,
                                                             const std::string& source) {
  SPECPLAN_ASSIGN_OR_RETURN(Csv csv, ParseCsv(text, source,
                                              {"batch_size", "s", "kv_len", "num_heads",
                                               "num_key_value_heads", "head_dim", "latency_ms"}));
  std::map<int64_t, std::vector<AttentionTable::Point>> by_s;
  for (const CsvRow& row : csv.rows) {
    AttentionTable::Point p;
    SPECPLAN_ASSIGN_OR_RETURN(p.heads.num_heads, IntField(csv, row, "num_heads", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.heads.num_kv_heads,
                              IntField(csv, row, "num_key_value_heads", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.heads.head_dim, IntField(csv, row, "head_dim", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.b, IntField(csv, row, "batch_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t s, IntField(csv, row, "s", source));
    SPECPLAN_ASSIGN_OR_RETURN(p.x, IntField(csv, row, "kv_len", source));
    if (p.x < s) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", row.line, ": kv_len = ", p.x,
                                                     " < s = ", s,
                                                     ": kv_len counts the s new tokens too"));
    }
    SPECPLAN_ASSIGN_OR_RETURN(p.seconds, LatencyField(csv, row, source));
    by_s[s].push_back(p);
  }
  TreeAttentionTable t;
  t.source_ = source;
  t.kernel_sources_ = KernelSources(csv);
  for (const auto& [s, points] : by_s) {
    t.by_s_.emplace(s, AttentionTable::Build(absl::StrCat(source, " (s = ", s, ")"), "kv_len",
                                             points, t.kernel_sources_));
  }
  return t;
}

bool TreeAttentionTable::Holds(const AttentionHeads& heads) const {
  return std::all_of(by_s_.begin(), by_s_.end(),
                     [&](const auto& entry) { return entry.second.Holds(heads); });
}

absl::StatusOr<AttentionLookup> TreeAttentionTable::Seconds(const AttentionHeads& heads, double b,
                                                            int64_t s, double kv_len) const {
  if (s < min_s() || s > max_s()) {
    return absl::OutOfRangeError(absl::StrCat(source_, ": s = ", s, " is outside the measured s ",
                                              min_s(), " .. ", max_s()));
  }
  auto hi = by_s_.lower_bound(s);
  if (hi->first == s) return hi->second.Seconds(heads, b, kv_len);
  auto lo = std::prev(hi);
  SPECPLAN_ASSIGN_OR_RETURN(const AttentionLookup a, lo->second.Seconds(heads, b, kv_len));
  SPECPLAN_ASSIGN_OR_RETURN(const AttentionLookup c, hi->second.Seconds(heads, b, kv_len));
  const double f = static_cast<double>(s - lo->first) / static_cast<double>(hi->first - lo->first);
  AttentionLookup r;
  r.seconds = (1 - f) * a.seconds + f * c.seconds;
  r.extrapolated = a.extrapolated || c.extrapolated;
  r.why = a.extrapolated ? a.why : c.why;
  return r;
}

double TreeAttentionTable::max_change() const {
  double m = 0;
  for (const auto& [s, t] : by_s_) m = std::max(m, t.max_change());
  return m;
}

size_t TreeAttentionTable::repeats() const {
  size_t n = 0;
  for (const auto& [s, t] : by_s_) n += t.repeats();
  return n;
}

namespace {

// "Source: `owner/repo`, commit <sha>" and the licence from a README.md or NOTICE.
void ReadSourceAndLicence(const std::string& text, std::string* source, std::string* licence) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (source->empty()) {
      const size_t at = line.find("Source: `");
      if (at != absl::string_view::npos) {
        absl::string_view rest = line.substr(at + 9);
        const size_t tick = rest.find('`');
        if (tick != absl::string_view::npos) {
          std::string repo(rest.substr(0, tick));
          rest = rest.substr(tick + 1);
          const size_t commit = rest.find("commit ");
          if (commit != absl::string_view::npos) {
            absl::string_view sha = rest.substr(commit + 7);
            sha = sha.substr(0, sha.find_first_of(" ,;)`\t"));
            absl::StrAppend(&repo, "@", sha);
          }
          *source = repo;
        }
      }
    }
    if (licence->empty()) {
      const size_t lic = line.find(" License ");
      const size_t paren = line.rfind('(', lic);
      if (lic != absl::string_view::npos && paren != absl::string_view::npos) {
        absl::string_view name = line.substr(paren + 1);
        name = name.substr(0, name.find_first_of("):"));
        *licence = std::string(absl::StripAsciiWhitespace(name));
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& ElementwiseTable::OpNames() {
  static const std::vector<std::string> names = {"add_norm", "qk_norm", "rope",
                                                 "kv_store", "act_mul", "embedding"};
  return names;
}

int64_t ElementwiseWidth(const ModelSpec& m, const std::string& op) {
  const int64_t qk = m.n_q * m.head_dim / m.tp + m.kv_heads_per_gpu() * m.head_dim;
  if (op == "add_norm" || op == "embedding") return m.hidden;
  if (op == "qk_norm") return m.model_type == "qwen3" || m.model_type == "qwen3_moe" ? qk : 0;
  if (op == "rope") return qk;
  if (op == "kv_store") return 2 * m.kv_heads_per_gpu() * m.head_dim;
  if (op == "act_mul") return m.ffn / m.tp;
  return 0;
}

absl::StatusOr<ElementwiseTable> ElementwiseTable::Parse(const std::string& text,
                                                         const std::string& source) {
  SPECPLAN_ASSIGN_OR_RETURN(Csv csv, ParseCsv(text, source, {"op", "m", "width", "latency_ms"}));
  ElementwiseTable t;
  t.source_ = source;
  const std::vector<std::string>& known = OpNames();
  for (const CsvRow& row : csv.rows) {
    const std::string& op = row.fields[csv.columns.at("op")];
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", row.line, ": op = '", op,
                                                     "': expected one of ",
                                                     absl::StrJoin(known, ", ")));
    }
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t m, IntField(csv, row, "m", source));
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t width, IntField(csv, row, "width", source));
    SPECPLAN_ASSIGN_OR_RETURN(const double sec, LatencyField(csv, row, source));
    t.by_op_[{op, width}].push_back({m, sec});
  }
  for (auto& [key, pts] : t.by_op_) {
    std::sort(pts.begin(), pts.end());
    AverageRepeats(&pts);
    t.max_change_ = std::max(t.max_change_, Isotonic(&pts));
  }
  t.kernel_sources_ = KernelSources(csv);
  return t;
}

std::optional<double> ElementwiseTable::Seconds(const std::string& op, int64_t m,
                                                int64_t width) const {
  const auto it = by_op_.find({op, width});
  if (it == by_op_.end()) return std::nullopt;
  bool above = false;
  return Interpolate(it->second, static_cast<double>(std::max<int64_t>(m, 1)), &above);
}

bool MoeShape::operator<(const MoeShape& o) const {
  return std::tie(dtype, hidden, inter, topk, experts, moe_tp, moe_ep, distribution) <
         std::tie(o.dtype, o.hidden, o.inter, o.topk, o.experts, o.moe_tp, o.moe_ep,
                  o.distribution);
}

std::string MoeShape::ToString() const {
  return absl::StrCat(dtype, " ", hidden, "/", inter, " ", experts, "x", topk, " tp", moe_tp, " ep",
                      moe_ep, " ", distribution);
}

namespace {

std::string FieldText(const Csv& csv, const CsvRow& row, const std::string& column) {
  return row.fields[csv.columns.at(column)];
}

// Sorts, averages repeats and fits each series isotonically; returns the largest change.
template <typename Key>
double FinishSeries(std::map<Key, std::vector<std::pair<int64_t, double>>>* series,
                    size_t* repeats) {
  double change = 0;
  for (auto& [key, pts] : *series) {
    std::sort(pts.begin(), pts.end());
    *repeats += AverageRepeats(&pts);
    change = std::max(change, Isotonic(&pts));
  }
  return change;
}

}  // namespace

absl::StatusOr<MoeTable> MoeTable::Parse(const std::string& text, const std::string& source) {
  SPECPLAN_ASSIGN_OR_RETURN(Csv csv, ParseCsv(text, source,
                                              {"moe_dtype", "num_tokens", "hidden_size",
                                               "inter_size", "topk", "num_experts", "moe_tp_size",
                                               "moe_ep_size", "distribution", "latency_ms"}));
  std::map<MoeShape, std::vector<std::pair<int64_t, double>>> series;
  std::map<std::pair<MoeShape, int64_t>, std::pair<int, double>> first;  // -> (line, seconds)
  MoeTable t;
  const auto kernel_col = csv.columns.find("kernel_source");
  for (const CsvRow& row : csv.rows) {
    MoeShape shape;
    shape.dtype = FieldText(csv, row, "moe_dtype");
    shape.distribution = FieldText(csv, row, "distribution");
    for (const auto& [column, text] :
         {std::pair{"moe_dtype", shape.dtype}, std::pair{"distribution", shape.distribution}}) {
      if (text.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ":", row.line, ": ", column, " = '': expected a name"));
      }
    }
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t tokens, IntField(csv, row, "num_tokens", source));
    SPECPLAN_ASSIGN_OR_RETURN(shape.hidden, IntField(csv, row, "hidden_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(shape.inter, IntField(csv, row, "inter_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(shape.topk, IntField(csv, row, "topk", source));
    SPECPLAN_ASSIGN_OR_RETURN(shape.experts, IntField(csv, row, "num_experts", source));
    SPECPLAN_ASSIGN_OR_RETURN(shape.moe_tp, IntField(csv, row, "moe_tp_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(shape.moe_ep, IntField(csv, row, "moe_ep_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(const double sec, LatencyField(csv, row, source));
    if (shape.topk > shape.experts) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", row.line, ": topk = ", shape.topk,
                                                     ": more than num_experts = ", shape.experts));
    }
    const auto [it, inserted] = first.try_emplace({shape, tokens}, row.line, sec);
    if (!inserted) {
      const double ratio = std::max(sec, it->second.second) / std::min(sec, it->second.second);
      if (ratio > kMoeRepeatTolerance) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d: num_tokens = %d: repeats line %d's token count of %s with a time %.2fx "
            "apart (%.6g vs %.6g ms); the token axis needs one time per token count (repeats "
            "within %.1fx are averaged)",
            source, row.line, tokens, it->second.first, shape.ToString(), ratio, sec * 1e3,
            it->second.second * 1e3, kMoeRepeatTolerance));
      }
    }
    series[shape].push_back({tokens, sec});
    if (kernel_col != csv.columns.end() && t.kernel_of_.count(shape) == 0) {
      t.kernel_of_[shape] = row.fields[kernel_col->second];
    }
  }
  t.source_ = source;
  t.by_shape_ = std::move(series);
  t.max_change_ = FinishSeries(&t.by_shape_, &t.repeats_);
  t.kernel_sources_ = KernelSources(csv);
  return t;
}

MoeTable MoeTable::FromSeries(const std::string& source,
                              std::map<MoeShape, std::vector<std::pair<int64_t, double>>> series) {
  MoeTable t;
  t.source_ = source;
  t.by_shape_ = std::move(series);
  t.max_change_ = FinishSeries(&t.by_shape_, &t.repeats_);
  return t;
}

std::vector<MoeShape> MoeTable::Shapes() const {
  std::vector<MoeShape> out;
  for (const auto& [shape, unused] : by_shape_) out.push_back(shape);
  return out;
}

const std::vector<std::pair<int64_t, double>>& MoeTable::Series(const MoeShape& shape) const {
  return by_shape_.at(shape);
}

std::string MoeTable::KernelSource(const MoeShape& shape) const {
  const auto it = kernel_of_.find(shape);
  return it == kernel_of_.end() ? "" : it->second;
}

absl::StatusOr<AttentionLookup> MoeTable::Seconds(const MoeShape& shape, double tokens) const {
  const auto it = by_shape_.find(shape);
  if (it == by_shape_.end()) {
    return absl::NotFoundError(
        absl::StrCat(source_, ": no rows for the MoE block ", shape.ToString()));
  }
  AttentionLookup r;
  r.seconds = Interpolate(it->second, std::max(tokens, 1.0), &r.extrapolated);
  if (r.extrapolated) {
    r.why = absl::StrCat(source_, ": num_tokens ", tokens, " of ", shape.ToString(),
                         " is past the largest measured num_tokens ", it->second.back().first);
  }
  return r;
}

absl::StatusOr<AllReduceTable> AllReduceTable::Parse(const std::string& text,
                                                     const std::string& source) {
  SPECPLAN_ASSIGN_OR_RETURN(Csv csv,
                            ParseCsv(text, source, {"num_gpus", "message_size", "latency_ms"}));
  const auto kernel_col = csv.columns.find("kernel_source");
  bool any_graph = false;
  if (kernel_col != csv.columns.end()) {
    for (const CsvRow& row : csv.rows) {
      any_graph = any_graph ||
                  absl::StrContains(absl::AsciiStrToLower(row.fields[kernel_col->second]), "graph");
    }
  }
  AllReduceTable t;
  t.source_ = source;
  std::set<std::string> kernels;
  for (const CsvRow& row : csv.rows) {
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t gpus, IntField(csv, row, "num_gpus", source));
    SPECPLAN_ASSIGN_OR_RETURN(const int64_t size, IntField(csv, row, "message_size", source));
    SPECPLAN_ASSIGN_OR_RETURN(const double sec, LatencyField(csv, row, source));
    if (gpus < 2) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", row.line, ": num_gpus = ", gpus,
                                                     ": an all-reduce needs >= 2 GPUs"));
    }
    if (any_graph) {
      const std::string& kernel = row.fields[kernel_col->second];
      if (!absl::StrContains(absl::AsciiStrToLower(kernel), "graph")) continue;
    }
    if (kernel_col != csv.columns.end()) kernels.insert(row.fields[kernel_col->second]);
    t.by_gpus_[gpus].push_back({size, sec});
  }
  size_t repeats = 0;
  FinishSeries(&t.by_gpus_, &repeats);
  t.kernel_sources_.assign(kernels.begin(), kernels.end());
  return t;
}

std::vector<int64_t> AllReduceTable::GpuCounts() const {
  std::vector<int64_t> out;
  for (const auto& [gpus, unused] : by_gpus_) out.push_back(gpus);
  return out;
}

absl::StatusOr<AttentionLookup> AllReduceTable::Seconds(int64_t gpus, double elements) const {
  const auto it = by_gpus_.find(gpus);
  if (it == by_gpus_.end()) {
    return absl::NotFoundError(absl::StrCat(source_, ": no rows for num_gpus = ", gpus,
                                            " (held: ", absl::StrJoin(GpuCounts(), ", "), ")"));
  }
  AttentionLookup r;
  r.seconds = Interpolate(it->second, std::max(elements, 1.0), &r.extrapolated);
  if (r.extrapolated) {
    r.why =
        absl::StrCat(source_, ": message_size ", elements, " over ", gpus,
                     " GPUs is past the largest measured message_size ", it->second.back().first);
  }
  return r;
}

absl::StatusOr<EngineKernelTables> LoadEngineKernelTables(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("--kernels ", dir, ": not a directory"));
  }
  EngineKernelTables t;
  const fs::path path = fs::absolute(dir, ec).lexically_normal();
  fs::path folder = path;
  if (folder.filename().empty()) folder = folder.parent_path();
  t.dir = dir;
  t.gpu_folder = folder.parent_path().filename().string();
  const std::string name = folder.filename().string();
  const size_t dash = name.find('-');
  t.engine = name.substr(0, dash);
  t.engine_version = dash == std::string::npos ? "" : name.substr(dash + 1);
  auto read = [&](const char* file) -> absl::StatusOr<std::pair<std::string, std::string>> {
    const std::string p = (folder / file).string();
    if (!fs::is_regular_file(p, ec)) {
      return absl::NotFoundError(
          absl::StrCat(p,
                       ": missing (an engine folder holds gemm.csv, context_attention.csv "
                       "and generation_attention.csv)"));
    }
    SPECPLAN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(p));
    // Named in errors and notes as <gpu folder>/<engine folder>/<file>: no machine's paths.
    return std::pair{(fs::path(t.gpu_folder) / name / file).string(), std::move(text)};
  };
  SPECPLAN_ASSIGN_OR_RETURN(auto gemm, read("gemm.csv"));
  SPECPLAN_ASSIGN_OR_RETURN(auto ctx, read("context_attention.csv"));
  SPECPLAN_ASSIGN_OR_RETURN(auto gen, read("generation_attention.csv"));
  SPECPLAN_ASSIGN_OR_RETURN(t.gemm, GemmTable::Parse(gemm.second, gemm.first));
  SPECPLAN_ASSIGN_OR_RETURN(t.context, AttentionTable::Parse(ctx.second, ctx.first, "isl"));
  SPECPLAN_ASSIGN_OR_RETURN(t.generation, AttentionTable::Parse(gen.second, gen.first, "kv_len"));
  if (fs::is_regular_file(folder / "tree_attention.csv", ec)) {
    SPECPLAN_ASSIGN_OR_RETURN(auto tree, read("tree_attention.csv"));
    SPECPLAN_ASSIGN_OR_RETURN(t.tree, TreeAttentionTable::Parse(tree.second, tree.first));
  }
  if (fs::is_regular_file(folder / "elementwise.csv", ec)) {
    SPECPLAN_ASSIGN_OR_RETURN(auto elementwise, read("elementwise.csv"));
    SPECPLAN_ASSIGN_OR_RETURN(t.elementwise,
                              ElementwiseTable::Parse(elementwise.second, elementwise.first));
  }
  if (fs::is_regular_file(folder / "moe.csv", ec)) {
    SPECPLAN_ASSIGN_OR_RETURN(auto moe, read("moe.csv"));
    SPECPLAN_ASSIGN_OR_RETURN(t.moe, MoeTable::Parse(moe.second, moe.first));
  }
  if (fs::is_regular_file(folder / "allreduce.csv", ec)) {
    SPECPLAN_ASSIGN_OR_RETURN(auto allreduce, read("allreduce.csv"));
    SPECPLAN_ASSIGN_OR_RETURN(t.allreduce,
                              AllReduceTable::Parse(allreduce.second, allreduce.first));
  }
  if (auto text = ReadFileToString((folder / "SOURCE.txt").string()); text.ok()) {
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      if (absl::StartsWith(line, "dtype ")) {
        const std::string dtype_name(absl::StripAsciiWhitespace(line.substr(6)));
        auto dtype = ParseDType(dtype_name);
        if (!dtype.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat((fs::path(t.gpu_folder) / name / "SOURCE.txt").string(), ": dtype '",
                           dtype_name, "': ", dtype.status().message()));
        }
        t.dtype = *dtype;
        continue;
      }
      const size_t at = line.find("device ");
      if (at != absl::string_view::npos && t.device.empty()) {
        t.device = std::string(absl::StripAsciiWhitespace(line.substr(at + 7)));
      }
    }
  }
  for (const fs::path& d : {folder, folder.parent_path(), folder.parent_path().parent_path()}) {
    for (const char* file : {"README.md", "NOTICE"}) {
      if (auto text = ReadFileToString((d / file).string()); text.ok()) {
        ReadSourceAndLicence(*text, &t.source, &t.licence);
      }
    }
    if (!t.source.empty()) break;
  }
  return t;
}

}  // namespace specplan::costmodel
