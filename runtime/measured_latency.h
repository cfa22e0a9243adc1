// A verification-latency model measured on the running machine: times the target's forward of s
// tree tokens over c cached tokens on a grid of s and interpolates linearly in s (clamped at the
// ends, extrapolated linearly above the grid). Used by the best-first strategy when no calibrated
// profile is given (e.g. the tiny CPU models, which have no GPU roofline).
#ifndef SPECPLAN_RUNTIME_MEASURED_LATENCY_H_
#define SPECPLAN_RUNTIME_MEASURED_LATENCY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency_model.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

class MeasuredLatency : public costmodel::LatencyModel {
 public:
  // s_grid strictly increasing, >= 1; seconds[i] = T_verify(s_grid[i]) (at the measured c).
  MeasuredLatency(std::vector<int64_t> s_grid, std::vector<double> seconds);
  double VerifySeconds(int64_t s, int64_t c) const override;
  std::string Kind() const override { return "measured"; }
  const std::vector<int64_t>& s_grid() const { return s_grid_; }
  const std::vector<double>& seconds() const { return seconds_; }

 private:
  std::vector<int64_t> s_grid_;
  std::vector<double> seconds_;
};

// Times `model` (median of `reps` after one warm-up) for each s in s_grid over c cached tokens
// with a chain-shaped mask. Errors when s_grid is empty or not increasing.
absl::StatusOr<MeasuredLatency> MeasureVerifyLatency(const Transformer& model,
                                                     const std::vector<int64_t>& s_grid, int64_t c,
                                                     int reps = 5);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_MEASURED_LATENCY_H_
