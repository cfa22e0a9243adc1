// A verification-latency model measured on the running machine: times the target's forward of s
// tree tokens over c cached tokens on a grid of s; the result interpolates linearly in s
// (costmodel/latency/grid_latency.h, GridSource::kMeasured: kind "measured", seconds[0] at and
// below the grid, the last segment extrapolated above it). Used by the best-first strategy when no
// calibrated profile is given (e.g. the tiny CPU models, which have no GPU roofline).
#ifndef SPECPLAN_RUNTIME_MEASURED_LATENCY_H_
#define SPECPLAN_RUNTIME_MEASURED_LATENCY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency/grid_latency.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

// Times `model` (median of `reps` after one warm-up) for each s in s_grid over c cached tokens
// with a chain-shaped mask. Errors when s_grid is empty or not increasing.
absl::StatusOr<costmodel::GridLatency> MeasureVerifyLatency(const Transformer& model,
                                                            const std::vector<int64_t>& s_grid,
                                                            int64_t c, int reps = 5);

// MeasureVerifyLatency on s = 1, 2, 4, ..., max_s (max_s included) over 64 cached tokens, median
// of 3: what the best-first and batch strategies use when no calibrated profile is given.
absl::StatusOr<costmodel::GridLatency> MeasureVerifyLatencyUpTo(const Transformer& model,
                                                                int64_t max_s);

// Seconds of one single-token forward of `model` over 64 cached tokens (median of 3): the cost of
// a draft level before the speculation gate has timed one itself.
absl::StatusOr<double> MeasureSingleTokenSeconds(const Transformer& model);

// `given` when non-null; otherwise MeasureVerifyLatencyUpTo(model, max_s), kept alive in *owned.
// MakeStrategyContext (decode_sequence.h) resolves every strategy's T_verify model this way, once
// per decoder.
absl::StatusOr<const costmodel::LatencyModel*> GivenOrMeasuredLatency(
    const costmodel::LatencyModel* given, const Transformer& model, int64_t max_s,
    std::unique_ptr<costmodel::LatencyModel>* owned);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_MEASURED_LATENCY_H_
