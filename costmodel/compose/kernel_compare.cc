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

KernelTableComparison CompareGemm(const GemmTable& ours, const GemmTable& theirs,
                                  double tolerance) {
  KernelTableComparison t;
  t.table = "gemm";
  const std::vector<GemmTable::Point> a = ours.Points(), b = theirs.Points();
  t.ours_points = a.size();
  t.theirs_points = b.size();
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> by_shape;
  for (const GemmTable::Point& p : b) by_shape[{p.m, p.n, p.k}] = p.seconds;
  for (const GemmTable::Point& p : a) {
    const auto it = by_shape.find({p.m, p.n, p.k});
    if (it == by_shape.end()) continue;
    t.shared.push_back(
        {absl::StrCat("m = ", p.m, ", n = ", p.n, ", k = ", p.k), p.m, p.seconds, it->second});
  }
  t.all = SummarizeRatios(t.shared, tolerance);
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
  KernelTableComparison t;
  t.table = name;
  const auto a = ours.Points(), b = theirs.Points();
  t.ours_points = a.size();
  t.theirs_points = b.size();
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
  std::map<Key, double> by_shape;
  for (const auto& p : b) {
    by_shape[{p.heads.num_heads, p.heads.num_kv_heads, p.heads.head_dim, p.b, p.x}] = p.seconds;
  }
  for (const auto& p : a) {
    const auto it =
        by_shape.find({p.heads.num_heads, p.heads.num_kv_heads, p.heads.head_dim, p.b, p.x});
    if (it == by_shape.end()) continue;
    t.shared.push_back(
        {absl::StrCat(p.heads.ToString(), ", b = ", p.b, ", ", ours.length_column(), " = ", p.x), 0,
         p.seconds, it->second});
  }
  t.all = SummarizeRatios(t.shared, tolerance);
  return t;
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
