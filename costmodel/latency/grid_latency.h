// T_verify(s) interpolated on a grid of s: the one measured-latency interpolator, for a caller's
// v1.LatencyGrid (service/) and for a grid timed on this machine (runtime/measured_latency.h).
// Independent of c.
//
// Rules: exact at the grid points; linear in s between them; seconds[0] below the grid; linear
// extrapolation of the last segment above it (one point: constant). Interpolated and
// extrapolated values are floored at 1 ns. The edge rule at and below the first point depends on
// the grid's source (GridSource). Thread-safe (immutable).
#ifndef SPECPLAN_COSTMODEL_GRID_LATENCY_H_
#define SPECPLAN_COSTMODEL_GRID_LATENCY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/latency/latency_model.h"

namespace specplan::costmodel {

// Where a grid comes from decides its edge rule and its Kind().
enum class GridSource {
  kCaller,    // Kind() "grid": sent by a caller; every value is floored at 1 ns, grid points
              // included, so that no step is free
  kMeasured,  // Kind() "measured": timed here; at and below the first point, seconds[0] as
              // measured
};

class GridLatency final : public LatencyModel {
 public:
  // s strictly increasing, >= 1; seconds.size() == s.size() >= 1 (CHECKed); seconds[i] =
  // T_verify(s[i]) in seconds.
  GridLatency(std::vector<int64_t> s, std::vector<double> seconds, GridSource source);
  double VerifySeconds(int64_t s, int64_t c) const override;
  std::string Kind() const override;
  const std::vector<int64_t>& s() const { return s_; }
  const std::vector<double>& seconds() const { return seconds_; }
  GridSource source() const { return source_; }

 private:
  std::vector<int64_t> s_;
  std::vector<double> seconds_;
  GridSource source_;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_GRID_LATENCY_H_
