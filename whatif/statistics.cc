#include "whatif/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/check.h"

namespace specplan::whatif {
namespace {
constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double PearsonCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
  SPECPLAN_CHECK(x.size() == y.size(), "paired samples must have equal sizes");
  const size_t n = x.size();
  if (n < 2) return kNoValue;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (!(sxx > 0) || !(syy > 0)) return kNoValue;
  return sxy / std::sqrt(sxx * syy);
}

namespace {
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t t = i; t <= j; ++t) rank[idx[t]] = avg;
    i = j + 1;
  }
  return rank;
}
}  // namespace

double SpearmanCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
  SPECPLAN_CHECK(x.size() == y.size(), "paired samples must have equal sizes");
  return PearsonCorrelation(Ranks(x), Ranks(y));
}

}  // namespace specplan::whatif
