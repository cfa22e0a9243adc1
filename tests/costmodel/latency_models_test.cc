#include <gtest/gtest.h>

#include <cmath>

#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/ema_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

TEST(LatencyModels, LinearIsAffineInTheRoofline) {
  const RooflineLatency r = H100Qwen8b();
  const LinearCalibratedLatency lin(r, {2.0, 1e-3});
  for (int64_t s : {1, 64, 1024})
    EXPECT_DOUBLE_EQ(lin.VerifySeconds(s, 512), 2 * r.VerifySeconds(s, 512) + 1e-3);
  EXPECT_EQ(lin.Kind(), "linear");
}

TEST(LatencyModels, PerTermIsMaxOfBranches) {
  const RooflineLatency r = H100Qwen8b();
  const PerTermLatency unit(r, {1.0, 0.0, 1.0, 1.0});
  // With unit multipliers the per-term model is exactly the bare roofline.
  for (int64_t s : {1, 16, 256, 4096}) {
    EXPECT_NEAR(unit.VerifySeconds(s, 1024), r.VerifySeconds(s, 1024), 1e-15) << s;
  }
  const PerTermLatency memory_only(r, {0.0, 0.0, 2.0, 0.0});
  const RooflineEstimate e = r.Estimate(7, 100);
  EXPECT_DOUBLE_EQ(memory_only.VerifySeconds(7, 100), 2 * e.terms.weight_bytes / r.gpu().mem_bw);
}

TEST(LatencyModels, EmaTracksObservedRatio) {
  auto base = std::make_shared<RooflineLatency>(H100Qwen8b());
  EmaCorrectedLatency ema(base, 0.5);
  EXPECT_EQ(ema.Kind(), "ema");
  EXPECT_DOUBLE_EQ(ema.bias(), 1.0);
  const double pred = base->VerifySeconds(32, 1024);
  ASSERT_TRUE(ema.Observe(32, 1024, 3 * pred));
  EXPECT_DOUBLE_EQ(ema.bias(), 2.0);  // 0.5 * 1 + 0.5 * 3
  ASSERT_TRUE(ema.Observe(32, 1024, 3 * pred));
  EXPECT_DOUBLE_EQ(ema.bias(), 2.5);
  for (int i = 0; i < 60; ++i) ema.Observe(32, 1024, 3 * pred);
  EXPECT_NEAR(ema.bias(), 3.0, 1e-9);
  EXPECT_NEAR(ema.VerifySeconds(64, 1024), 3 * base->VerifySeconds(64, 1024), 1e-12);
  // Garbage observations are ignored.
  EXPECT_FALSE(ema.Observe(32, 1024, std::nan("")));
  EXPECT_FALSE(ema.Observe(32, 1024, -1.0));
  EXPECT_NEAR(ema.bias(), 3.0, 1e-9);
  EXPECT_EQ(ema.observations(), 62);
}

TEST(LatencyModels, EmaOverCalibrationIsResidual) {
  const RooflineLatency r = H100Qwen8b();
  auto calib = std::make_shared<LinearCalibratedLatency>(r, LinearCoefficients{1.5, 2e-3});
  EmaCorrectedLatency ema(calib, 0.1);
  EXPECT_EQ(ema.Kind(), "ema+linear");
  // Observations matching the calibrated curve leave it unchanged.
  for (int i = 0; i < 10; ++i) ema.Observe(16, 256, calib->VerifySeconds(16, 256));
  EXPECT_NEAR(ema.bias(), 1.0, 1e-12);
}

TEST(CycleCost, DrafterClasses) {
  const RooflineLatency r = H100Qwen8b();
  DrafterCost ar{DrafterClass::kAutoregressive, 5, 1e-3, 0.5e-3, 0};
  EXPECT_DOUBLE_EQ(ar.DraftSeconds(), 5 * 1.5e-3);
  DrafterCost par{DrafterClass::kParallelBlock, 16, 2e-3, 1e-3, 0};
  EXPECT_DOUBLE_EQ(par.DraftSeconds(), 3e-3);
  DrafterCost causal{DrafterClass::kParallelCausal, 16, 2e-3, 1e-3, 0.1e-3};
  EXPECT_DOUBLE_EQ(causal.DraftSeconds(), 3e-3 + 16 * 0.1e-3);
  const CycleCost cc(&r, causal, 0.2e-3, 1024);
  EXPECT_DOUBLE_EQ(cc.Seconds(31), causal.DraftSeconds() + 0.2e-3 + r.VerifySeconds(32, 1024));
  EXPECT_EQ(ParseDrafterClass("ar").value(), DrafterClass::kAutoregressive);
  EXPECT_FALSE(ParseDrafterClass("diffusion").ok());
}

}  // namespace
}  // namespace specplan::costmodel
