// Fitting latency models to measured samples: non-negative least squares for the linear and
// per-term kinds, Levenberg-Marquardt (Eigen) for the overlap and kernel-sum kinds, k-fold cross
// validation and the measured table. Over 500 lines because the two non-linear fits share the
// solver, the clamping and the multi-start scheme defined in the middle of the file.

#include "costmodel/fit/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::costmodel {

absl::Status ValidateSamples(const std::vector<LatencySample>& samples) {
  for (size_t i = 0; i < samples.size(); ++i) {
    const LatencySample& x = samples[i];
    if (x.s < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples[", i, "].s = ", x.s, ": must be >= 1"));
    }
    if (x.c < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples[", i, "].c = ", x.c, ": must be >= 0"));
    }
    if (!std::isfinite(x.seconds) || x.seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples[", i, "].seconds = ", x.seconds, ": must be finite and > 0"));
    }
    if (x.b < 1 || x.b > kMaxSampleBatch) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples[", i, "].b = ", x.b, ": must be in [1, ", kMaxSampleBatch, "]"));
    }
  }
  return absl::OkStatus();
}

PassTotals SampleTotals(const LatencySample& x) {
  return UniformPass(static_cast<double>(x.b), static_cast<double>(x.s), static_cast<double>(x.c));
}

double PredictSample(const LatencyModel& model, const LatencySample& x) {
  if (x.b == 1) return model.VerifySeconds(x.s, x.c);
  BatchShape batch;
  batch.Reserve(static_cast<size_t>(x.b));
  for (int64_t i = 0; i < x.b; ++i) batch.Add(x.s, x.c);
  return model.VerifyBatchSeconds(batch);
}

namespace {

// Sums prediction errors into FitStats: Evaluate over one set, CrossValidate over every fold.
class ErrorTally {
 public:
  // err = predicted - observed seconds.
  void Add(double err, double observed) {
    se_ += err * err;
    ape_ += std::abs(err) / observed;
    stats_.max_abs_s = std::max(stats_.max_abs_s, std::abs(err));
    ++stats_.n;
  }
  FitStats Stats() const {
    FitStats st = stats_;
    if (st.n > 0) {
      st.rmse_s = std::sqrt(se_ / st.n);
      st.mape = ape_ / st.n;
    }
    return st;
  }

 private:
  FitStats stats_;
  double se_ = 0, ape_ = 0;
};

// What every fit of a latency form checks first: ValidateSamples, and at least two samples.
// `kind` names the form in the error.
absl::Status CheckFitSamples(const std::vector<LatencySample>& samples, const char* kind) {
  SPECPLAN_RETURN_IF_ERROR(ValidateSamples(samples));
  if (samples.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("samples: ", kind, " calibration needs >= 2 samples, got ", samples.size()));
  }
  return absl::OkStatus();
}

}  // namespace

FitStats Evaluate(const LatencyModel& model, const std::vector<LatencySample>& samples) {
  ErrorTally tally;
  for (const LatencySample& x : samples) tally.Add(PredictSample(model, x) - x.seconds, x.seconds);
  return tally.Stats();
}

void SplitHoldout(const std::vector<LatencySample>& samples, double heldout_fraction, uint64_t seed,
                  std::vector<LatencySample>* fit, std::vector<LatencySample>* heldout) {
  fit->clear();
  heldout->clear();
  std::vector<size_t> idx(samples.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(idx.begin(), idx.end(), rng);
  size_t n_held = static_cast<size_t>(std::lround(heldout_fraction * samples.size()));
  if (heldout_fraction > 0 && samples.size() >= 2) n_held = std::max<size_t>(n_held, 1);
  n_held = std::min(n_held, samples.size() > 0 ? samples.size() - 1 : 0);
  std::vector<bool> is_held(samples.size(), false);
  for (size_t k = 0; k < n_held; ++k) is_held[idx[k]] = true;
  for (size_t i = 0; i < samples.size(); ++i) (is_held[i] ? heldout : fit)->push_back(samples[i]);
}

std::vector<double> SolveNonNegativeLeastSquares(const std::vector<std::vector<double>>& a,
                                                 const std::vector<double>& y) {
  SPECPLAN_CHECK(!a.empty() && a.size() == y.size());
  const int cols = static_cast<int>(a[0].size());
  SPECPLAN_CHECK(cols >= 1 && cols <= 8);
  const int rows = static_cast<int>(a.size());
  Eigen::MatrixXd A(rows, cols);
  Eigen::VectorXd Y(rows);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < cols; ++k) A(r, k) = a[r][k];
    Y(r) = y[r];
  }
  // Scale columns so the solve is well conditioned whatever the units.
  Eigen::VectorXd scale(cols);
  for (int k = 0; k < cols; ++k) {
    const double norm = A.col(k).norm();
    scale(k) = norm > 0 ? norm : 1.0;
    A.col(k) /= scale(k);
  }
  std::vector<double> best(cols, 0.0);
  double best_err = Y.squaredNorm();  // all-zero solution
  for (unsigned mask = 1; mask < (1u << cols); ++mask) {
    std::vector<int> active;
    for (int k = 0; k < cols; ++k) {
      if (mask & (1u << k)) active.push_back(k);
    }
    Eigen::MatrixXd sub(rows, active.size());
    for (size_t j = 0; j < active.size(); ++j) sub.col(j) = A.col(active[j]);
    Eigen::VectorXd x = sub.completeOrthogonalDecomposition().solve(Y);
    if ((x.array() < 0).any() || !x.allFinite()) continue;
    const double err = (sub * x - Y).squaredNorm();
    if (err < best_err * (1 - 1e-12)) {
      best_err = err;
      std::fill(best.begin(), best.end(), 0.0);
      for (size_t j = 0; j < active.size(); ++j) best[active[j]] = x(j) / scale(active[j]);
    }
  }
  return best;
}

absl::StatusOr<LinearCoefficients> FitLinear(const RooflineLatency& roofline,
                                             const std::vector<LatencySample>& samples) {
  SPECPLAN_RETURN_IF_ERROR(CheckFitSamples(samples, "linear"));
  std::vector<std::vector<double>> a(samples.size());
  std::vector<double> y(samples.size());
  double r_min = std::numeric_limits<double>::infinity(), r_max = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double r = roofline.Estimate(SampleTotals(samples[i])).seconds;
    a[i] = {r, 1.0};
    y[i] = samples[i].seconds;
    r_min = std::min(r_min, r);
    r_max = std::max(r_max, r);
  }
  if (!(r_max > r_min * (1 + 1e-12))) {
    return absl::InvalidArgumentError(
        "samples: linear calibration needs samples at different (s, c, b) points");
  }
  // a, b >= 0: a negative slope or fixed overhead is not a latency (unconstrained least squares
  // gives b < 0 when the measured cost grows faster than the roofline, e.g. attention on a CPU).
  const std::vector<double> x = SolveNonNegativeLeastSquares(a, y);
  return LinearCoefficients{x[0], x[1]};
}

absl::StatusOr<PerTermCoefficients> FitPerTerm(const RooflineLatency& roofline,
                                               const std::vector<LatencySample>& samples) {
  SPECPLAN_RETURN_IF_ERROR(CheckFitSamples(samples, "per-term"));
  const size_t n = samples.size();
  std::vector<PerTermFeatures> f(n);
  std::vector<bool> compute_bound(n);
  for (size_t i = 0; i < n; ++i) {
    const RooflineEstimate e = roofline.Estimate(SampleTotals(samples[i]));
    f[i] = ComputePerTermFeatures(e, roofline.gpu());
    compute_bound[i] = e.bound == Bound::kCompute;
  }
  PerTermCoefficients coef;
  double best_sse = std::numeric_limits<double>::infinity();
  PerTermCoefficients best = coef;
  for (int iter = 0; iter < 50; ++iter) {
    std::vector<std::vector<double>> am, ac;
    std::vector<double> ym, yc;
    for (size_t i = 0; i < n; ++i) {
      if (compute_bound[i]) {
        // The all-reduce time (0 at tp = 1) is known, not fitted: each branch fits the rest.
        ac.push_back({f[i].compute_s, 1.0});
        yc.push_back(samples[i].seconds - f[i].comm_s);
      } else {
        am.push_back({f[i].weights_s, f[i].kv_attention_s});
        ym.push_back(samples[i].seconds - f[i].comm_s);
      }
    }
    if (!am.empty()) {
      const std::vector<double> x = SolveNonNegativeLeastSquares(am, ym);
      coef.weights = x[0];
      coef.kv_attention = x[1];
    }
    if (ac.size() >= 2) {
      const std::vector<double> x = SolveNonNegativeLeastSquares(ac, yc);
      coef.compute = x[0];
      coef.compute_overhead_s = x[1];
    } else if (ac.size() == 1) {
      coef.compute = yc[0] / ac[0][0];
      coef.compute_overhead_s = 0;
    } else {
      coef.compute = coef.kv_attention;
      coef.compute_overhead_s = 0;
    }
    if (am.empty()) {
      // Everything compute-bound: the memory branch must not win anywhere in the sample range.
      coef.weights = 0;
      coef.kv_attention = 0;
    }
    double sse = 0;
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      const double err = coef.Predict(f[i]) - samples[i].seconds;
      sse += err * err;
      const bool cb = coef.compute * f[i].compute_s + coef.compute_overhead_s >
                      coef.weights * f[i].weights_s + coef.kv_attention * f[i].kv_attention_s;
      if (cb != compute_bound[i]) changed = true;
      compute_bound[i] = cb;
    }
    if (sse < best_sse) {
      best_sse = sse;
      best = coef;
    }
    if (!changed) break;
  }
  return best;
}

namespace {

// Levenberg-Marquardt on *u, which `clamp` keeps in range after every step; returns the final cost
// (sum of squared residuals). residuals(u) -> VectorXd; jacobian(u, r, &J) fills J = d r / d u,
// where r = residuals(u). Stops after max_iters or when an accepted step gains no more than
// rel_tol of the cost. One driver for every nonlinear form (overlap, kernel_sum).
template <int N, typename Residuals, typename Jacobian, typename Clamp>
double LevenbergMarquardt(Eigen::Matrix<double, N, 1>* u, const Residuals& residuals,
                          const Jacobian& jacobian, const Clamp& clamp, int max_iters,
                          double rel_tol) {
  clamp(u);
  Eigen::VectorXd r = residuals(*u);
  double cost = r.squaredNorm();
  double lambda = 1e-3;
  Eigen::MatrixXd J(r.size(), N);
  for (int iter = 0; iter < max_iters && std::isfinite(cost); ++iter) {
    jacobian(*u, r, &J);
    const Eigen::MatrixXd jtj = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 12; ++tries) {
      Eigen::MatrixXd a = jtj;
      for (int k = 0; k < N; ++k) a(k, k) += lambda * (jtj(k, k) + 1e-12);
      const Eigen::Matrix<double, N, 1> step = a.ldlt().solve(-g);
      if (!step.allFinite()) {
        lambda *= 10;
        continue;
      }
      Eigen::Matrix<double, N, 1> v = *u + step;
      clamp(&v);
      const Eigen::VectorXd rv = residuals(v);
      const double cv = rv.squaredNorm();
      if (std::isfinite(cv) && cv < cost) {
        const double gain = cost - cv;
        *u = v;
        r = rv;
        cost = cv;
        lambda = std::max(lambda / 3, 1e-12);
        improved = gain > rel_tol * std::max(cost, 1e-30);
        break;
      }
      lambda *= 4;
    }
    if (!improved) break;
  }
  return cost;
}

// Keeps the log-space parameters of a non-linear fit in range: each in [-40, 10], and log(p - 1),
// at p_index, in [-12, log 63] (1 < p <= 64).
template <int N>
void ClampLogParams(Eigen::Matrix<double, N, 1>* u, int p_index) {
  for (int k = 0; k < N; ++k) (*u)(k) = std::clamp((*u)(k), -40.0, 10.0);
  (*u)(p_index) = std::clamp((*u)(p_index), -12.0, std::log(63.0));
}

// The fastest sampled pass, seconds: the scale of the non-linear fits' overhead parameters.
double FastestSeconds(const std::vector<LatencySample>& samples) {
  double y = std::numeric_limits<double>::infinity();
  for (const LatencySample& x : samples) y = std::min(y, x.seconds);
  return y;
}

// GEMM row tiles the non-linear fits try (OverlapCoefficients::tile, KernelSumCoefficients::tile).
constexpr int64_t kGemmTiles[] = {1, 16, 32, 64, 128};

// The best candidate of a multi-start fit. A candidate replaces the best only when it lowers the
// cost by more than a relative 1e-9, so that of two equal fits the one tried first (the smaller
// tile) stays. `make` () -> Coefficients builds the candidate's coefficients only when it wins.
template <typename Coefficients>
class BestStart {
 public:
  template <typename Make>
  void Offer(double cost, const Make& make) {
    if (cost < cost_ * (1 - 1e-9)) {
      cost_ = cost;
      coef_ = make();
    }
  }
  // The best coefficients, or an error naming the form (`kind`) when no start converged.
  absl::StatusOr<Coefficients> Result(const char* kind) const {
    if (!std::isfinite(cost_)) {
      return absl::InternalError(absl::StrCat(kind, " fit: no start converged to a finite error"));
    }
    return coef_;
  }

 private:
  Coefficients coef_;
  double cost_ = std::numeric_limits<double>::infinity();
};

// The multi-start fit of a GEMM-tiled form (`kind`: "overlap", "kernel_sum"): checks the samples,
// then for each tile of kGemmTiles, smallest first, `fit_tile`(tile, y_scale, &best) runs its
// starts (y_scale = FastestSeconds(samples)) and offers their results to `best`. Returns the best
// coefficients, or an error naming `kind` when no start converged.
template <typename Coefficients, typename FitTile>
absl::StatusOr<Coefficients> FitOverGemmTiles(const std::vector<LatencySample>& samples,
                                              const char* kind, const FitTile& fit_tile) {
  SPECPLAN_RETURN_IF_ERROR(CheckFitSamples(samples, kind));
  const double y_scale = FastestSeconds(samples);
  BestStart<Coefficients> best;
  for (int64_t tile : kGemmTiles) fit_tile(tile, y_scale, &best);
  return best.Result(kind);
}

// Parameters of the overlap fit in log space: u = [log(overhead / y_min), log k_g, log k_a,
// log k_w, log k_kv, log(p - 1)].
constexpr int kOverlapParams = 6;
using OverlapParams = Eigen::Matrix<double, kOverlapParams, 1>;

OverlapCoefficients OverlapFromParams(const OverlapParams& u, double y_scale, int64_t tile) {
  OverlapCoefficients c;
  c.overhead_s = std::exp(u(0)) * y_scale;
  c.gemm = std::exp(u(1));
  c.attention = std::exp(u(2));
  c.weights = std::exp(u(3));
  c.kv_attention = std::exp(u(4));
  c.p = 1 + std::exp(u(5));
  c.tile = tile;
  return c;
}

void ClampParams(OverlapParams* u) { ClampLogParams(u, 5); }  // u(5) = log(p - 1)

// Relative residuals pred / y - 1.
Eigen::VectorXd OverlapResiduals(const OverlapParams& u, double y_scale, int64_t tile,
                                 const std::vector<OverlapFeatures>& f,
                                 const std::vector<LatencySample>& samples) {
  const OverlapCoefficients c = OverlapFromParams(u, y_scale, tile);
  Eigen::VectorXd r(static_cast<Eigen::Index>(f.size()));
  for (size_t i = 0; i < f.size(); ++i) r(i) = c.Predict(f[i]) / samples[i].seconds - 1;
  return r;
}

// Fits the overlap form from `u` (forward-difference Jacobian); returns the final cost.
double FitOverlapFrom(OverlapParams* u, double y_scale, int64_t tile,
                      const std::vector<OverlapFeatures>& f,
                      const std::vector<LatencySample>& samples) {
  auto residuals = [&](const OverlapParams& v) {
    return OverlapResiduals(v, y_scale, tile, f, samples);
  };
  auto jacobian = [&](const OverlapParams& at, const Eigen::VectorXd& r, Eigen::MatrixXd* J) {
    for (int k = 0; k < kOverlapParams; ++k) {
      OverlapParams v = at;
      const double h = 1e-6 * std::max(1.0, std::abs(v(k)));
      v(k) += h;
      J->col(k) = (residuals(v) - r) / h;
    }
  };
  return LevenbergMarquardt<kOverlapParams>(u, residuals, jacobian, ClampParams, 300, 1e-14);
}

}  // namespace

absl::StatusOr<OverlapCoefficients> FitOverlap(const RooflineLatency& roofline,
                                               const std::vector<LatencySample>& samples) {
  return FitOverGemmTiles<OverlapCoefficients>(
      samples, "overlap", [&](int64_t tile, double y_scale, BestStart<OverlapCoefficients>* best) {
        std::vector<OverlapFeatures> f(samples.size());
        for (size_t i = 0; i < samples.size(); ++i) {
          f[i] = ComputeOverlapFeatures(roofline.model(), roofline.gpu(), SampleTotals(samples[i]),
                                        tile);
        }
        // Starts: overhead 1 % or 20 % of the fastest pass, efficiencies 1 or 2, p = 2 or 8.
        for (double b0 : {0.01, 0.2}) {
          for (double k0 : {1.0, 2.0}) {
            for (double p0 : {2.0, 8.0}) {
              OverlapParams u;
              u << std::log(b0), std::log(k0), std::log(k0), std::log(k0), std::log(k0),
                  std::log(p0 - 1);
              const double cost = FitOverlapFrom(&u, y_scale, tile, f, samples);
              best->Offer(cost, [&] { return OverlapFromParams(u, y_scale, tile); });
            }
          }
        }
      });
}

namespace {

// Parameters of the kernel_sum fit: u = [log(overhead / y_min), log gemm, log weights, log(p - 1),
// log decode, log verify, log(verify_overhead / y_min), log attention, log elementwise].
constexpr int kKernelSumParams = 9;
using KernelSumParams = Eigen::Matrix<double, kKernelSumParams, 1>;

KernelSumCoefficients KernelSumFromParams(const KernelSumParams& u, double y_scale, int64_t tile,
                                          int64_t attention_tile) {
  KernelSumCoefficients c;
  c.overhead_s = std::exp(u(0)) * y_scale;
  c.gemm = std::exp(u(1));
  c.weights = std::exp(u(2));
  c.p = 1 + std::exp(u(3));
  c.decode = std::exp(u(4));
  c.verify = std::exp(u(5));
  c.verify_overhead_s = std::exp(u(6)) * y_scale;
  c.attention = std::exp(u(7));
  c.elementwise = std::exp(u(8));
  c.tile = tile;
  c.attention_tile = attention_tile;
  return c;
}

void ClampKernelSumParams(KernelSumParams* u) { ClampLogParams(u, 3); }  // u(3) = log(p - 1)

struct KernelSumProblem {
  double y_scale;
  int64_t tile;
  int64_t attention_tile;
  std::vector<KernelSumFeatures> f;
  const std::vector<LatencySample>* samples;

  Eigen::VectorXd Residuals(const KernelSumParams& u) const {
    const KernelSumCoefficients c = KernelSumFromParams(u, y_scale, tile, attention_tile);
    Eigen::VectorXd r(static_cast<Eigen::Index>(f.size()));
    for (size_t i = 0; i < f.size(); ++i) r(i) = c.Predict(f[i]) / (*samples)[i].seconds - 1;
    return r;
  }

  // d r_i / d u_k, analytically (KernelSumCoefficients::Predict term by term).
  void Jacobian(const KernelSumParams& u, Eigen::MatrixXd* J) const {
    const KernelSumCoefficients c = KernelSumFromParams(u, y_scale, tile, attention_tile);
    for (size_t i = 0; i < f.size(); ++i) {
      const KernelSumFeatures& x = f[i];
      const double inv_y = 1 / (*samples)[i].seconds;
      const double a = c.gemm * x.gemm_s, b = c.weights * x.weights_s;
      const double hi = std::max(a, b);
      double da = 0, db = 0, dp = 0;
      if (hi > 0) {
        const double xa = a / hi, xb = b / hi;
        const double pa = std::pow(xa, c.p), pb = std::pow(xb, c.p), sum = pa + pb;
        const double gemms = hi * std::pow(sum, 1 / c.p);
        da = a * std::pow(a / gemms, c.p - 1);
        db = b * std::pow(b / gemms, c.p - 1);
        const double log_terms =
            (pa > 0 ? pa * std::log(xa) : 0) + (pb > 0 ? pb * std::log(xb) : 0);
        dp = gemms * (log_terms / (c.p * sum) - std::log(sum) / (c.p * c.p)) * (c.p - 1);
      }
      const bool decode = x.s == 1;
      const Eigen::Index r = static_cast<Eigen::Index>(i);
      (*J)(r, 0) = c.overhead_s * inv_y;
      (*J)(r, 1) = da * inv_y;
      (*J)(r, 2) = db * inv_y;
      (*J)(r, 3) = dp * inv_y;
      (*J)(r, 4) = decode ? c.decode * x.kv_s * inv_y : 0;
      (*J)(r, 5) = decode ? 0 : c.verify * static_cast<double>(x.waves) * x.kv_s * inv_y;
      (*J)(r, 6) = decode ? 0 : c.verify_overhead_s * inv_y;
      (*J)(r, 7) = c.attention * x.attention_s * inv_y;
      (*J)(r, 8) = c.elementwise * x.elementwise_s * inv_y;
    }
  }
};

// Fits the kernel_sum form from `u` (analytic Jacobian); returns the final cost.
double FitKernelSumFrom(KernelSumParams* u, const KernelSumProblem& prob) {
  auto residuals = [&](const KernelSumParams& v) { return prob.Residuals(v); };
  auto jacobian = [&](const KernelSumParams& at, const Eigen::VectorXd&, Eigen::MatrixXd* J) {
    prob.Jacobian(at, J);
  };
  return LevenbergMarquardt<kKernelSumParams>(u, residuals, jacobian, ClampKernelSumParams, 200,
                                              1e-10);
}

}  // namespace

absl::StatusOr<KernelSumCoefficients> FitKernelSum(const RooflineLatency& roofline,
                                                   const std::vector<LatencySample>& samples) {
  return FitOverGemmTiles<KernelSumCoefficients>(
      samples, "kernel_sum",
      [&](int64_t tile, double y_scale, BestStart<KernelSumCoefficients>* best) {
        KernelSumParams warm;
        bool have_warm = false;
        std::vector<int64_t> last_waves;
        for (int64_t attention_tile : {2048, 1024, 512, 256, 128, 64}) {
          KernelSumProblem prob{y_scale, tile, attention_tile, {}, &samples};
          prob.f.resize(samples.size());
          std::vector<int64_t> waves(samples.size());
          for (size_t i = 0; i < samples.size(); ++i) {
            prob.f[i] = ComputeKernelSumFeatures(roofline.model(), roofline.gpu(), samples[i].s,
                                                 samples[i].c, tile, attention_tile, samples[i].b);
            waves[i] = prob.f[i].waves;
          }
          // A tile that splits no sampled s differently from the larger one fits the same.
          if (waves == last_waves) continue;
          last_waves = waves;
          // Starts: the next larger attention tile's optimum and one cold start, or two cold starts
          // for the largest tile (overhead 30 % or 5 % of the fastest pass; efficiencies 1 or 2;
          // p = 8 or 2; score FLOPs 0.1 or 1).
          std::vector<KernelSumParams> starts;
          if (have_warm) starts.push_back(warm);
          for (int k = have_warm ? 1 : 0; k < 2; ++k) {
            const double b0 = k == 0 ? 0.3 : 0.05, k0 = k == 0 ? 1.0 : 2.0, p0 = k == 0 ? 8 : 2,
                         a0 = k == 0 ? 0.1 : 1.0;
            KernelSumParams u;
            u << std::log(b0), std::log(k0), std::log(k0), std::log(p0 - 1), std::log(k0),
                std::log(k0), std::log(b0 / 10), std::log(a0), std::log(k0);
            starts.push_back(u);
          }
          double tile_cost = std::numeric_limits<double>::infinity();
          for (KernelSumParams u : starts) {
            const double cost = FitKernelSumFrom(&u, prob);
            if (cost < tile_cost) {
              tile_cost = cost;
              warm = u;
              have_warm = true;
            }
          }
          best->Offer(tile_cost,
                      [&] { return KernelSumFromParams(warm, y_scale, tile, attention_tile); });
        }
      });
}

absl::StatusOr<FitStats> CrossValidate(const LatencyFitter& fitter,
                                       const std::vector<LatencySample>& samples, int folds,
                                       uint64_t seed) {
  const size_t n = samples.size();
  if (folds < 2 || static_cast<size_t>(folds) > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("folds = ", folds, ": must be in [2, samples (", n, ")]"));
  }
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  if (static_cast<size_t>(folds) < n) {
    std::mt19937_64 rng(seed);
    std::shuffle(idx.begin(), idx.end(), rng);
  }
  std::vector<int> fold_of(n);
  for (size_t k = 0; k < n; ++k) fold_of[idx[k]] = static_cast<int>(k % folds);
  ErrorTally tally;
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<LatencySample> fit, held;
    for (size_t i = 0; i < n; ++i) (fold_of[i] == fold ? held : fit).push_back(samples[i]);
    absl::StatusOr<std::unique_ptr<LatencyModel>> m = fitter(fit);
    if (!m.ok()) {
      return absl::Status(m.status().code(), absl::StrCat("fold ", fold + 1, " of ", folds, ": ",
                                                          m.status().message()));
    }
    for (const LatencySample& x : held) {
      const double err = PredictSample(**m, x) - x.seconds;
      if (!std::isfinite(err)) {
        return absl::InvalidArgumentError(absl::StrCat("fold ", fold + 1, " of ", folds,
                                                       ": non-finite prediction at (s = ", x.s,
                                                       ", c = ", x.c, ", b = ", x.b, ")"));
      }
      tally.Add(err, x.seconds);
    }
  }
  return tally.Stats();
}

absl::StatusOr<LatencyTable> BuildTable(const std::vector<LatencySample>& samples) {
  if (auto st = ValidateSamples(samples); !st.ok()) return st;
  if (samples.empty()) return absl::InvalidArgumentError("samples: empty");
  // The single-sequence grid and the batch layers' grid, each from its own samples.
  std::set<int64_t> ss, cs, batch_ss, batch_cs, bs;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<double>> cells;  // (b, c, s)
  for (const LatencySample& x : samples) {
    (x.b == 1 ? ss : batch_ss).insert(x.s);
    (x.b == 1 ? cs : batch_cs).insert(x.c);
    bs.insert(x.b);
    cells[{x.b, x.c, x.s}].push_back(x.seconds);
  }
  if (bs.count(1) == 0) {
    return absl::InvalidArgumentError("samples: no b = 1 measurement; a table needs b = 1");
  }
  LatencyTable t;
  t.s_grid.assign(ss.begin(), ss.end());
  t.c_grid.assign(cs.begin(), cs.end());
  // One [c][s] layer of medians on the grids (sg, cg), or the first missing cell.
  auto build_layer =
      [&](int64_t b, const std::vector<int64_t>& sg,
          const std::vector<int64_t>& cg) -> absl::StatusOr<std::vector<std::vector<double>>> {
    std::vector<std::vector<double>> layer(cg.size(), std::vector<double>(sg.size()));
    for (size_t ci = 0; ci < cg.size(); ++ci) {
      for (size_t si = 0; si < sg.size(); ++si) {
        auto it = cells.find({b, cg[ci], sg[si]});
        if (it == cells.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "samples: no measurement at (s = ", sg[si], ", c = ", cg[ci],
              b == 1 ? "" : absl::StrCat(", b = ", b), "); a table needs a full grid"));
        }
        std::vector<double>& v = it->second;
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        layer[ci][si] = v[v.size() / 2];
      }
    }
    return layer;
  };
  SPECPLAN_ASSIGN_OR_RETURN(t.seconds, build_layer(1, t.s_grid, t.c_grid));
  if (bs.size() == 1) return t;
  t.batch_s_grid.assign(batch_ss.begin(), batch_ss.end());
  t.batch_c_grid.assign(batch_cs.begin(), batch_cs.end());
  for (int64_t b : bs) {
    if (b == 1) continue;
    t.b_grid.push_back(b);
    SPECPLAN_ASSIGN_OR_RETURN(std::vector<std::vector<double>> layer,
                              build_layer(b, t.batch_s_grid, t.batch_c_grid));
    t.batch_seconds.push_back(std::move(layer));
  }
  // Batch layers on the single-sequence grid need no grid of their own.
  if (t.batch_s_grid == t.s_grid && t.batch_c_grid == t.c_grid) {
    t.batch_s_grid.clear();
    t.batch_c_grid.clear();
  }
  return t;
}

}  // namespace specplan::costmodel
