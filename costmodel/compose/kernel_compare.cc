#include "costmodel/compose/kernel_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::costmodel {
namespace {

// The shapes of `ours` that `theirs` measured too (the same key(point)), in the order of `ours`,
// each named by describe(point), and their summary.
template <typename Point, typename Key, typename Describe>
KernelTableComparison Join(const std::string& table, const std::vector<Point>& ours,
                           const std::vector<Point>& theirs, Key key, Describe describe,
                           double tolerance) {
  KernelTableComparison t;
  t.table = table;
  t.ours_points = ours.size();
  t.theirs_points = theirs.size();
  std::map<decltype(key(ours.front())), double> by_shape;
  for (const Point& p : theirs) by_shape[key(p)] = p.seconds;
  for (const Point& p : ours) {
    const auto it = by_shape.find(key(p));
    if (it != by_shape.end()) t.shared.push_back(describe(p, it->second));
  }
  t.all = SummarizeRatios(t.shared, tolerance);
  return t;
}

KernelTableComparison CompareGemm(const GemmTable& ours, const GemmTable& theirs,
                                  double tolerance) {
  using Point = GemmTable::Point;
  KernelTableComparison t = Join(
      "gemm", ours.Points(), theirs.Points(),
      [](const Point& p) {
        return std::tuple{p.m, p.n, p.k};
      },
      [](const Point& p, double theirs_s) {
        return SharedKernelShape{absl::StrCat("m = ", p.m, ", n = ", p.n, ", k = ", p.k), p.m,
                                 p.seconds, theirs_s};
      },
      tolerance);
  const std::pair<const char*, std::pair<int64_t, int64_t>> bands[] = {
      {"m <= 16", {1, 16}},
      {"16 < m <= 512", {17, 512}},
      {"m > 512", {513, std::numeric_limits<int64_t>::max()}}};
  for (const auto& [name, range] : bands) {
    std::vector<SharedKernelShape> in;
    for (const SharedKernelShape& s : t.shared) {
      if (s.m >= range.first && s.m <= range.second) in.push_back(s);
    }
    if (!in.empty()) t.bands.emplace_back(name, SummarizeRatios(in, tolerance));
  }
  return t;
}

KernelTableComparison CompareAttention(const std::string& name, const AttentionTable& ours,
                                       const AttentionTable& theirs, double tolerance) {
  using Point = AttentionTable::MeasuredPoint;
  return Join(
      name, ours.Points(), theirs.Points(),
      [](const Point& p) {
        return std::tuple{p.heads.num_heads, p.heads.num_kv_heads, p.heads.head_dim, p.b, p.x};
      },
      [&](const Point& p, double theirs_s) {
        return SharedKernelShape{
            absl::StrCat(p.heads.ToString(), ", b = ", p.b, ", ", ours.length_column(), " = ", p.x),
            0, p.seconds, theirs_s};
      },
      tolerance);
}

}  // namespace

RatioSummary SummarizeRatios(const std::vector<SharedKernelShape>& shapes, double tolerance) {
  RatioSummary r;
  r.count = shapes.size();
  if (shapes.empty()) return r;
  std::vector<double> ratios;
  ratios.reserve(shapes.size());
  double log_sum = 0;
  size_t within = 0;
  for (const SharedKernelShape& s : shapes) {
    const double q = s.ratio();
    ratios.push_back(q);
    log_sum += std::log(q);
    // A small slack so that a ratio written as exactly 1 +- tolerance counts as within.
    if (std::abs(q - 1) <= tolerance * (1 + 1e-12)) ++within;
    if (std::abs(q - 1) > std::abs(r.worst_error)) r.worst_error = q - 1;
  }
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  r.median = n % 2 == 1 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
  r.geomean = std::exp(log_sum / static_cast<double>(n));
  r.within = static_cast<double>(within) / static_cast<double>(n);
  return r;
}

KernelComparison CompareKernelTables(const EngineKernelTables& ours,
                                     const EngineKernelTables& theirs, double tolerance) {
  SPECPLAN_CHECK(tolerance > 0);
  KernelComparison c;
  c.tolerance = tolerance;
  c.tables.push_back(CompareGemm(ours.gemm, theirs.gemm, tolerance));
  c.tables.push_back(
      CompareAttention("generation_attention", ours.generation, theirs.generation, tolerance));
  c.tables.push_back(
      CompareAttention("context_attention", ours.context, theirs.context, tolerance));
  return c;
}

}  // namespace specplan::costmodel
