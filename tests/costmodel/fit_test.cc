#include "costmodel/fit/fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

std::vector<LatencySample> Synthetic(const LatencyModel& truth, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> eps(0.0, noise);
  std::vector<LatencySample> out;
  for (int64_t c : {64, 256, 1024, 4096}) {
    for (int64_t s : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}) {
      out.push_back({s, c, truth.VerifySeconds(s, c) * (1 + eps(rng))});
    }
  }
  return out;
}

// A form's coefficients fitted to samples by its fit (FitOverlap, FitKernelSum, ...) over
// H100Qwen8b(), and the fitted model's mean absolute percentage error on those samples.
template <typename Coefficients>
struct Fitted {
  absl::StatusOr<Coefficients> coef;
  double mape = 0;  // when coef.ok()
};

template <typename Latency, typename Coefficients>
Fitted<Coefficients> FitTo(const std::vector<LatencySample>& samples,
                           absl::StatusOr<Coefficients> (*fit)(const RooflineLatency&,
                                                               const std::vector<LatencySample>&)) {
  const RooflineLatency r = H100Qwen8b();
  Fitted<Coefficients> out{fit(r, samples)};
  if (out.coef.ok()) out.mape = Evaluate(Latency(r, *out.coef), samples).mape;
  return out;
}

TEST(Fit, LinearRecoversKnownCoefficients) {
  const RooflineLatency r = H100Qwen8b();
  const LinearCalibratedLatency truth(r, {1.7, 2.5e-3});
  const auto samples = Synthetic(truth, 0.01, 7);
  auto coef = FitLinear(r, samples);
  ASSERT_TRUE(coef.ok()) << coef.status();
  EXPECT_NEAR(coef->a, 1.7, 0.03);
  EXPECT_NEAR(coef->b_s, 2.5e-3, 0.15e-3);
}

// Latency growing faster than the roofline: unconstrained least squares would give a negative
// fixed overhead (b = -2 ms here); the fit keeps b = 0 and refits the slope through the origin.
TEST(Fit, LinearNeverReturnsANegativeOverhead) {
  const RooflineLatency r = H100Qwen8b();
  std::vector<LatencySample> samples;
  for (int64_t s : {1, 64, 512, 2048}) {
    const double roof = r.VerifySeconds(s, 256);
    samples.push_back({s, 256, std::max(1e-6, 3.0 * roof - 2e-3)});
  }
  auto coef = FitLinear(r, samples);
  ASSERT_TRUE(coef.ok()) << coef.status();
  EXPECT_EQ(coef->b_s, 0.0);
  double sxy = 0, sxx = 0;
  for (const auto& x : samples) {
    const double roof = r.VerifySeconds(x.s, x.c);
    sxy += roof * x.seconds;
    sxx += roof * roof;
  }
  EXPECT_NEAR(coef->a, sxy / sxx, 1e-9 * coef->a);
}

TEST(Fit, PerTermRecoversKnownCoefficients) {
  const RooflineLatency r = H100Qwen8b();
  const PerTermCoefficients want{1.6, 1.0e-3, 1.35, 2.0};  // compute (+ overhead), weights, KV
  const PerTermLatency truth(r, want);
  const auto samples = Synthetic(truth, 0.005, 11);
  auto got = FitPerTerm(r, samples);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_NEAR(got->compute, want.compute, 0.05 * want.compute);
  EXPECT_NEAR(got->weights, want.weights, 0.05 * want.weights);
  EXPECT_NEAR(got->kv_attention, want.kv_attention, 0.25 * want.kv_attention);
  const FitStats st = Evaluate(PerTermLatency(r, *got), Synthetic(truth, 0.0, 12));
  EXPECT_LT(st.mape, 0.01);
}

TEST(Fit, PerTermBeatsLinearOnPerTermData) {
  const RooflineLatency r = H100Qwen8b();
  const PerTermLatency truth(r, {2.0, 0.5e-3, 1.3, 3.0});
  const auto samples = Synthetic(truth, 0.01, 3);
  auto lin = FitLinear(r, samples);
  auto pt = FitPerTerm(r, samples);
  ASSERT_TRUE(lin.ok() && pt.ok());
  const auto clean = Synthetic(truth, 0.0, 4);
  EXPECT_LT(Evaluate(PerTermLatency(r, *pt), clean).mape,
            Evaluate(LinearCalibratedLatency(r, *lin), clean).mape);
}

TEST(Fit, CalibrationCutsErrorVersusBareRoofline) {
  const RooflineLatency r = H100Qwen8b();
  const LinearCalibratedLatency truth(r, {1.5, 3e-3});
  const auto samples = Synthetic(truth, 0.01, 5);
  auto lin = FitLinear(r, samples);
  ASSERT_TRUE(lin.ok());
  EXPECT_LT(Evaluate(LinearCalibratedLatency(r, *lin), samples).rmse_s,
            0.2 * Evaluate(r, samples).rmse_s);
}

TEST(Fit, NonNegativeLeastSquaresMatchesBruteForce) {
  // y = 2 x0 - 1 x1 exactly; the constrained optimum sets x1 = 0.
  std::vector<std::vector<double>> a;
  std::vector<double> y;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 40; ++i) {
    const double x0 = u(rng), x1 = u(rng);
    a.push_back({x0, x1});
    y.push_back(2 * x0 - 1 * x1);
  }
  const auto x = SolveNonNegativeLeastSquares(a, y);
  EXPECT_GE(x[0], 0);
  EXPECT_EQ(x[1], 0);
  // Brute force over a fine grid of non-negative x0 with x1 = 0 and small x1 > 0.
  auto sse = [&](double b0, double b1) {
    double e = 0;
    for (size_t i = 0; i < y.size(); ++i) e += std::pow(a[i][0] * b0 + a[i][1] * b1 - y[i], 2);
    return e;
  };
  const double best = sse(x[0], x[1]);
  for (double b0 = 0; b0 <= 3; b0 += 0.01) {
    for (double b1 = 0; b1 <= 0.5; b1 += 0.01) EXPECT_GE(sse(b0, b1), best - 1e-9);
  }
  // Unconstrained problems are solved exactly.
  std::vector<double> y2;
  for (auto& row : a) y2.push_back(0.5 * row[0] + 3 * row[1]);
  const auto x2 = SolveNonNegativeLeastSquares(a, y2);
  EXPECT_NEAR(x2[0], 0.5, 1e-9);
  EXPECT_NEAR(x2[1], 3, 1e-9);
}

TEST(Fit, TableInterpolatesAndExtrapolatesWithRoofline) {
  const RooflineLatency r = H100Qwen8b();
  std::vector<LatencySample> samples = {{1, 0, 1.0}, {1, 0, 3.0},   {1, 0, 2.0},  // median 2
                                        {9, 0, 4.0}, {1, 100, 6.0}, {9, 100, 10.0}};
  auto table = BuildTable(samples);
  ASSERT_TRUE(table.ok()) << table.status();
  const TableLatency t(r, *table);
  EXPECT_DOUBLE_EQ(t.VerifySeconds(1, 0), 2.0);
  EXPECT_DOUBLE_EQ(t.VerifySeconds(9, 100), 10.0);
  EXPECT_DOUBLE_EQ(t.VerifySeconds(5, 0), 3.0);   // halfway in s
  EXPECT_DOUBLE_EQ(t.VerifySeconds(5, 50), 5.5);  // bilinear centre: (2+4+6+10)/4
  // Outside: nearest value times the roofline ratio.
  EXPECT_DOUBLE_EQ(t.VerifySeconds(9, 400),
                   10.0 * r.VerifySeconds(9, 400) / r.VerifySeconds(9, 100));

  samples.pop_back();
  EXPECT_THAT(BuildTable(samples).status().message(), HasSubstr("s = 9, c = 100"));
}

TEST(Fit, RejectsBadSamples) {
  const RooflineLatency r = H100Qwen8b();
  EXPECT_THAT(FitLinear(r, {{1, 0, 1e-3}, {0, 0, 1e-3}}).status().message(),
              HasSubstr("samples[1].s = 0"));
  EXPECT_THAT(FitLinear(r, {{1, 0, 1e-3}, {2, 0, std::nan("")}}).status().message(),
              HasSubstr("samples[1].seconds = nan"));
  EXPECT_THAT(FitPerTerm(r, {{1, -1, 1e-3}, {2, 0, 1e-3}}).status().message(),
              HasSubstr("samples[0].c = -1"));
  EXPECT_FALSE(FitLinear(r, {{4, 8, 1e-3}}).ok());
  EXPECT_FALSE(FitLinear(r, {{4, 8, 1e-3}, {4, 8, 2e-3}}).ok());  // no spread in R
}

TEST(Fit, HoldoutSplitIsDeterministicAndDisjoint) {
  std::vector<LatencySample> s;
  for (int i = 1; i <= 20; ++i) s.push_back({i, 0, i * 1e-3});
  std::vector<LatencySample> f1, h1, f2, h2;
  SplitHoldout(s, 0.25, 9, &f1, &h1);
  SplitHoldout(s, 0.25, 9, &f2, &h2);
  EXPECT_EQ(h1.size(), 5u);
  EXPECT_EQ(f1.size(), 15u);
  ASSERT_EQ(h1.size(), h2.size());
  for (size_t i = 0; i < h1.size(); ++i) EXPECT_EQ(h1[i].s, h2[i].s);
  for (const auto& h : h1) {
    for (const auto& f : f1) EXPECT_NE(h.s, f.s);
  }
}

TEST(Fit, EvaluateComputesRmseAndMape) {
  const RooflineLatency r = H100Qwen8b();
  const double t1 = r.VerifySeconds(1, 0), t2 = r.VerifySeconds(8, 0);
  const FitStats st = Evaluate(r, {{1, 0, t1 * 2}, {8, 0, t2}});  // predictions t1, t2
  EXPECT_EQ(st.n, 2);
  EXPECT_NEAR(st.mape, 0.25, 1e-12);  // (0.5 + 0) / 2
  EXPECT_NEAR(st.rmse_s, std::sqrt(t1 * t1 / 2), 1e-15);
  EXPECT_NEAR(st.max_abs_s, t1, 1e-15);
}

TEST(Fit, OverlapFeaturesMatchHandComputedValues) {
  // qwen3-8b (L = 36, h = 4096, h_q = 4096, h_kv = 1024, h_ffn = 12288, V = 151936) on h100-sxm
  // (989.4 TFLOP/s), s = 3 over c = 5.
  const ModelSpec m = *LookupModel("qwen3-8b");
  const GpuSpec g = *LookupGpu("h100");
  const double L = 36, h = 4096, hq = 4096, hkv = 1024, hf = 12288, V = 151936;
  const double gemm_per_token = L * (4 * h * hq + 4 * h * hkv + 6 * h * hf) + 2 * h * V;
  const OverlapFeatures exact = ComputeOverlapFeatures(m, g, 3, 5, 1);
  EXPECT_NEAR(exact.gemm_s, 3 * gemm_per_token / 989.4e12, 1e-18);
  EXPECT_NEAR(exact.attention_s, L * 4 * 3 * (5 + 3) * hq / 989.4e12, 1e-20);
  // A tile of 64 pads the 3 GEMM rows to 64; attention is not padded.
  const OverlapFeatures tiled = ComputeOverlapFeatures(m, g, 3, 5, 64);
  EXPECT_NEAR(tiled.gemm_s, 64 * gemm_per_token / 989.4e12, 1e-18);
  EXPECT_DOUBLE_EQ(tiled.attention_s, exact.attention_s);
  EXPECT_DOUBLE_EQ(tiled.weights_s, exact.weights_s);
  EXPECT_EQ(ComputeOverlapFeatures(m, g, 128, 0, 64).gemm_s,
            ComputeOverlapFeatures(m, g, 128, 0, 1).gemm_s);
}

TEST(Fit, OverlapPredictIsASmoothMaxPlusOverhead) {
  OverlapFeatures f;
  f.gemm_s = 3e-3;
  f.attention_s = 1e-3;
  f.weights_s = 2e-3;
  f.kv_attention_s = 4e-3;
  OverlapCoefficients c{2, 1, 1.5, 0.5, 2, 1e-4, 1};
  // compute = 2*3 + 1*1 = 7 ms, memory = 1.5*2 + 0.5*4 = 5 ms; p = 2: sqrt(49 + 25) ms.
  EXPECT_NEAR(c.Predict(f), 1e-4 + std::sqrt(49.0 + 25.0) * 1e-3, 1e-15);
  c.p = 1;  // the branches add up
  EXPECT_NEAR(c.Predict(f), 1e-4 + 12e-3, 1e-15);
  c.p = 64;  // close to the bare max
  EXPECT_NEAR(c.Predict(f), 1e-4 + 7e-3, 1e-6);
}

TEST(Fit, OverlapRecoversKnownCoefficients) {
  const OverlapCoefficients truth{1.6, 3.0, 1.3, 0.8, 2.5, 2e-4, 1};
  const auto fit =
      FitTo<OverlapLatency>(Synthetic(OverlapLatency(H100Qwen8b(), truth), 0.0, 1), FitOverlap);
  ASSERT_TRUE(fit.coef.ok()) << fit.coef.status();
  EXPECT_EQ(fit.coef->tile, 1);
  EXPECT_NEAR(fit.coef->gemm, truth.gemm, 0.02 * truth.gemm);
  EXPECT_NEAR(fit.coef->attention, truth.attention, 0.05 * truth.attention);
  EXPECT_NEAR(fit.coef->weights, truth.weights, 0.02 * truth.weights);
  EXPECT_NEAR(fit.coef->p, truth.p, 0.1 * truth.p);
  EXPECT_LT(fit.mape, 1e-3);
}

TEST(Fit, OverlapBeatsPerTermWhereComputeAndMemoryOverlapImperfectly) {
  const RooflineLatency r = H100Qwen8b();
  const OverlapLatency truth(r, {1.6, 3.0, 1.3, 0.8, 1.5, 0, 1});
  const std::vector<LatencySample> samples = Synthetic(truth, 0.01, 3);
  const auto overlap = FitTo<OverlapLatency>(samples, FitOverlap);
  const auto per_term = FitTo<PerTermLatency>(samples, FitPerTerm);
  ASSERT_TRUE(overlap.coef.ok() && per_term.coef.ok());
  EXPECT_LT(overlap.mape, per_term.mape);
}

TEST(Fit, KernelSumFeaturesMatchHandComputedValues) {
  // qwen3-8b (L = 36, h = 4096, h_q = 4096, h_kv = 1024, n_q = 32, bf16) on h100-sxm
  // (3.35 TB/s), s = 3 over c = 5, GEMM tile 64, attention tile 2.
  const ModelSpec m = *LookupModel("qwen3-8b");
  const GpuSpec g = *LookupGpu("h100");
  const double L = 36, hkv = 1024, nq = 32, bp = 2;
  const KernelSumFeatures f = ComputeKernelSumFeatures(m, g, 3, 5, 64, 2);
  const OverlapFeatures o = ComputeOverlapFeatures(m, g, 3, 5, 64);
  EXPECT_EQ(f.s, 3);
  EXPECT_EQ(f.waves, 2);  // ceil(3 / 2)
  EXPECT_DOUBLE_EQ(f.gemm_s, o.gemm_s);
  EXPECT_DOUBLE_EQ(f.weights_s, o.weights_s);
  EXPECT_DOUBLE_EQ(f.attention_s, o.attention_s);
  EXPECT_NEAR(f.kv_s, bp * L * 2 * 5 * hkv / 3.35e12, 1e-20);
  // Everything else the roofline streams, less the cache read and the score matrix.
  const RooflineTerms t = ComputeRooflineTerms(m, 3, 5);
  EXPECT_NEAR(
      f.elementwise_s,
      (t.kv_bytes + t.activation_bytes - bp * L * 2 * 5 * hkv - bp * L * 2 * nq * 3 * 8) / 3.35e12,
      1e-20);
  // The elementwise term does not depend on c.
  EXPECT_NEAR(ComputeKernelSumFeatures(m, g, 3, 5000, 64, 2).elementwise_s, f.elementwise_s, 1e-18);
}

TEST(Fit, KernelSumPredictAddsTheKernelClasses) {
  KernelSumFeatures f;
  f.gemm_s = 3e-3;
  f.weights_s = 4e-3;
  f.kv_s = 1e-3;
  f.attention_s = 2e-4;
  f.elementwise_s = 5e-4;
  KernelSumCoefficients c;
  c.overhead_s = 1e-3;
  c.gemm = 1;
  c.weights = 1;
  c.p = 2;  // GEMMs: sqrt(3^2 + 4^2) = 5 ms
  c.decode = 1.5;
  c.verify = 10;
  c.verify_overhead_s = 2e-4;
  c.attention = 2;
  c.elementwise = 4;
  f.s = 1;  // decode kernel: 1.5 * 1 ms
  EXPECT_NEAR(c.Predict(f), 1e-3 + 5e-3 + 1.5e-3 + 4e-4 + 2e-3, 1e-15);
  f.s = 5;  // verify kernel, 3 waves: 0.2 ms + 10 * 3 * 1 ms
  f.waves = 3;
  EXPECT_NEAR(c.Predict(f), 1e-3 + 5e-3 + 2e-4 + 30e-3 + 4e-4 + 2e-3, 1e-15);
}

TEST(Fit, KernelSumRecoversKnownCoefficients) {
  const KernelSumCoefficients truth = KernelSumTruth();
  const auto fit = FitTo<KernelSumLatency>(Synthetic(KernelSumLatency(H100Qwen8b(), truth), 0.0, 1),
                                           FitKernelSum);
  ASSERT_TRUE(fit.coef.ok()) << fit.coef.status();
  EXPECT_EQ(fit.coef->attention_tile, 512);
  EXPECT_NEAR(fit.coef->verify, truth.verify, 0.05 * truth.verify);
  EXPECT_NEAR(fit.coef->decode, truth.decode, 0.05 * truth.decode);
  EXPECT_LT(fit.mape, 2e-3);
}

// The decode/verify split is what the overlap form lacks: on data with a steep verify attention
// term the kernel sum fits far better.
TEST(Fit, KernelSumBeatsOverlapWhenDecodeAndVerifyAttentionDiffer) {
  const RooflineLatency r = H100Qwen8b();
  KernelSumCoefficients truth = KernelSumTruth();  // without the p, verify-overhead and score terms
  truth.p = KernelSumCoefficients{}.p;
  truth.verify_overhead_s = 0;
  truth.attention = 0;
  const std::vector<LatencySample> samples = Synthetic(KernelSumLatency(r, truth), 0.01, 3);
  const auto kernel_sum = FitTo<KernelSumLatency>(samples, FitKernelSum);
  const auto overlap = FitTo<OverlapLatency>(samples, FitOverlap);
  ASSERT_TRUE(kernel_sum.coef.ok() && overlap.coef.ok());
  EXPECT_LT(kernel_sum.mape, 0.5 * overlap.mape);
}

// A fitter whose model predicts the mean of its fit set: leave-one-out by hand.
TEST(Fit, CrossValidateLeaveOneOutMatchesHandComputedErrors) {
  struct Constant : LatencyModel {
    double v;
    explicit Constant(double x) : v(x) {}
    double VerifySeconds(int64_t, int64_t) const override { return v; }
    std::string Kind() const override { return "constant"; }
  };
  LatencyFitter mean =
      [](const std::vector<LatencySample>& fit) -> absl::StatusOr<std::unique_ptr<LatencyModel>> {
    double sum = 0;
    for (const LatencySample& x : fit) sum += x.seconds;
    return std::make_unique<Constant>(sum / fit.size());
  };
  const std::vector<LatencySample> samples = {{1, 0, 1.0}, {2, 0, 2.0}, {3, 0, 4.0}};
  auto st = CrossValidate(mean, samples, 3, 7);
  ASSERT_TRUE(st.ok()) << st.status();
  // Left out 1: predicts 3 (err 2); left out 2: predicts 2.5 (err 0.5); left out 4: 1.5 (err 2.5).
  EXPECT_EQ(st->n, 3);
  EXPECT_NEAR(st->mape, (2.0 / 1 + 0.5 / 2 + 2.5 / 4) / 3, 1e-12);
  EXPECT_NEAR(st->rmse_s, std::sqrt((4 + 0.25 + 6.25) / 3), 1e-12);
  EXPECT_NEAR(st->max_abs_s, 2.5, 1e-12);
  // Leave-one-out does not depend on the seed; k-fold covers every sample once.
  EXPECT_NEAR(CrossValidate(mean, samples, 3, 99)->mape, st->mape, 1e-15);
  EXPECT_EQ(CrossValidate(mean, samples, 2, 1)->n, 3);
  auto bad = CrossValidate(mean, samples, 4, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("folds = 4"));
  LatencyFitter failing =
      [](const std::vector<LatencySample>&) -> absl::StatusOr<std::unique_ptr<LatencyModel>> {
    return absl::InvalidArgumentError("no");
  };
  auto failed = CrossValidate(failing, samples, 3, 1);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("fold 1 of 3: no"));
}

}  // namespace
}  // namespace specplan::costmodel
