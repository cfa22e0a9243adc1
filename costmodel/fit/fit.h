// Fitting latency models to measured verification passes, and scoring them on held-out samples.
#ifndef SPECPLAN_COSTMODEL_FIT_H_
#define SPECPLAN_COSTMODEL_FIT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"

namespace specplan::costmodel {

// One measured pass: b sequences in one ragged pass (b = 1: a single sequence), each verifying s
// tokens over c cached tokens.
struct LatencySample {
  int64_t s = 1;       // tokens verified per sequence
  int64_t c = 0;       // cached context tokens per sequence
  double seconds = 0;  // measured latency of the pass
  int64_t b = 1;       // sequences in the pass (calibrate --b-grid)
};

// Largest b a sample may have (larger batches are not a verification pass any engine runs).
inline constexpr int64_t kMaxSampleBatch = 65536;

// Checks s >= 1, c >= 0, seconds finite and > 0, 1 <= b <= kMaxSampleBatch; errors name
// samples[i].field and the value.
absl::Status ValidateSamples(const std::vector<LatencySample>& samples);

// The roofline sums of the pass a sample measured (b times the single sequence's).
PassTotals SampleTotals(const LatencySample& x);
// What `model` predicts for the sample: VerifySeconds(s, c) when b = 1, else VerifyBatchSeconds
// of b sequences of (s, c). Every fit, score and cross-validation prices samples this way.
double PredictSample(const LatencyModel& model, const LatencySample& x);

struct FitStats {
  int64_t n = 0;         // samples scored
  double rmse_s = 0;     // seconds, root mean squared error
  double mape = 0;       // mean absolute percentage error, as a fraction (0.023 = 2.3 %)
  double max_abs_s = 0;  // seconds, worst absolute error
};
FitStats Evaluate(const LatencyModel& model, const std::vector<LatencySample>& samples);

// Deterministic split: shuffles indices with `seed`, puts round(fraction * n) samples (at least one
// when n >= 2 and fraction > 0) into *heldout and the rest into *fit.
void SplitHoldout(const std::vector<LatencySample>& samples, double heldout_fraction, uint64_t seed,
                  std::vector<LatencySample>* fit, std::vector<LatencySample>* heldout);

// Least squares a * R + b against the bare roofline R with a, b >= 0 (non-negative least squares).
// Needs >= 2 samples with distinct R.
absl::StatusOr<LinearCoefficients> FitLinear(const RooflineLatency& roofline,
                                             const std::vector<LatencySample>& samples);

// Fits PerTermCoefficients with every coefficient >= 0: alternates between assigning each sample
// to the branch (compute or memory) that bounds it and non-negative least squares per branch.
// Needs >= 2 samples. With no compute-bound samples the compute branch keeps the memory branch's
// efficiency (compute = kv_attention multiplier, overhead 0).
absl::StatusOr<PerTermCoefficients> FitPerTerm(const RooflineLatency& roofline,
                                               const std::vector<LatencySample>& samples);

// Fits OverlapCoefficients by minimising the summed squared relative error (pred / measured - 1),
// which is what MAPE scores: Levenberg-Marquardt over log-parameters (so every multiplier stays
// >= 0 and p >= 1) from several starts, for each GEMM tile in {1, 16, 32, 64, 128}; keeps the best.
// Needs >= 2 samples. Deterministic.
absl::StatusOr<OverlapCoefficients> FitOverlap(const RooflineLatency& roofline,
                                               const std::vector<LatencySample>& samples);

// Fits KernelSumCoefficients by minimising the summed squared relative error, as FitOverlap does:
// Levenberg-Marquardt over log-parameters (every multiplier and overhead >= 0, p >= 1) for each
// GEMM tile in {1, 16, 32, 64, 128} and attention tile in {2048, 1024, 512, 256, 128, 64} (each
// attention tile warm-started from the next larger one); keeps the best, preferring the larger
// attention tile on ties (no wave step is predicted beyond the sampled s). Needs >= 2 samples.
// Deterministic.
absl::StatusOr<KernelSumCoefficients> FitKernelSum(const RooflineLatency& roofline,
                                                   const std::vector<LatencySample>& samples);

// A fitting procedure under test: fits on `fit` and returns the fitted model.
using LatencyFitter = std::function<absl::StatusOr<std::unique_ptr<LatencyModel>>(
    const std::vector<LatencySample>& fit)>;

// k-fold cross-validation: shuffles the samples with `seed`, splits them into `folds` groups of
// near-equal size (folds = samples.size() is leave-one-out, which does not depend on the seed),
// fits on all groups but one and predicts the one left out. Stats pool every left-out prediction
// (n = samples.size()). Needs 2 <= folds <= samples.size(); a fold whose fit fails fails the call,
// naming the fold.
absl::StatusOr<FitStats> CrossValidate(const LatencyFitter& fitter,
                                       const std::vector<LatencySample>& samples, int folds,
                                       uint64_t seed);

// Builds a table from samples on a full (s, c) grid (median of repeats per cell). Samples with
// b > 1 add batch layers (LatencyTable::b_grid), each of which must cover the same (s, c) grid.
// Errors if a grid cell has no sample, naming the missing (s, c) (and b).
absl::StatusOr<LatencyTable> BuildTable(const std::vector<LatencySample>& samples);

// Non-negative least squares min ||A x - y|| s.t. x >= 0 for a handful of columns (<= 8): exact, by
// enumerating active sets. A is [rows][cols] row-major.
std::vector<double> SolveNonNegativeLeastSquares(const std::vector<std::vector<double>>& a,
                                                 const std::vector<double>& y);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_FIT_H_
