// Nearest-rank percentiles of latency samples (the service's GetStats and specplan-loadgen).
#ifndef SPECPLAN_UTIL_PERCENTILE_H_
#define SPECPLAN_UTIL_PERCENTILE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace specplan {

// The nearest-rank q-quantile (q in [0, 1]) of `sorted` (ascending): the value at rank
// ceil(q * n), at least the first; 0 when empty.
inline double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::max(1.0, rank)) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_PERCENTILE_H_
