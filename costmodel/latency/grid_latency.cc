#include "costmodel/latency/grid_latency.h"

#include <algorithm>
#include <utility>

#include "util/check.h"

namespace specplan::costmodel {
namespace {
constexpr double kFloorSeconds = 1e-9;
}  // namespace

GridLatency::GridLatency(std::vector<int64_t> s, std::vector<double> seconds, GridSource source)
    : s_(std::move(s)), seconds_(std::move(seconds)), source_(source) {
  SPECPLAN_CHECK(!s_.empty() && s_.size() == seconds_.size());
}

double GridLatency::VerifySeconds(int64_t s, int64_t /*c*/) const {
  const size_t n = s_.size();
  const size_t i = static_cast<size_t>(std::lower_bound(s_.begin(), s_.end(), s) - s_.begin());
  if (i == 0 || n == 1) {  // at or below the first point, or a single point
    return source_ == GridSource::kMeasured ? seconds_[0] : std::max(seconds_[0], kFloorSeconds);
  }
  if (i < n && s_[i] == s) return std::max(seconds_[i], kFloorSeconds);  // exact at grid points
  const size_t hi = std::min(i, n - 1);  // above the grid: the last segment, extended
  const double x0 = static_cast<double>(s_[hi - 1]), x1 = static_cast<double>(s_[hi]);
  const double t = (static_cast<double>(s) - x0) / (x1 - x0);
  return std::max(seconds_[hi - 1] + t * (seconds_[hi] - seconds_[hi - 1]), kFloorSeconds);
}

std::string GridLatency::Kind() const {
  return source_ == GridSource::kMeasured ? "measured" : "grid";
}

}  // namespace specplan::costmodel
