// costmodel/latency/grid_latency.h: the one grid interpolator, under both edge rules.
#include "costmodel/latency/grid_latency.h"

#include <gtest/gtest.h>

namespace specplan::costmodel {
namespace {

TEST(GridLatency, ExactAtPointsLinearBetweenExtrapolatedAbove) {
  for (GridSource source : {GridSource::kCaller, GridSource::kMeasured}) {
    const GridLatency g({1, 4, 8}, {1.0, 2.0, 4.0}, source);
    EXPECT_DOUBLE_EQ(g.VerifySeconds(1, 0), 1.0);
    EXPECT_DOUBLE_EQ(g.VerifySeconds(4, 0), 2.0);
    EXPECT_DOUBLE_EQ(g.VerifySeconds(8, 0), 4.0);
    EXPECT_DOUBLE_EQ(g.VerifySeconds(2, 100), 1.0 + 1.0 / 3.0);  // independent of c
    EXPECT_DOUBLE_EQ(g.VerifySeconds(6, 0), 3.0);
    EXPECT_DOUBLE_EQ(g.VerifySeconds(12, 0), 6.0);
  }
  EXPECT_EQ(GridLatency({1}, {1.0}, GridSource::kCaller).Kind(), "grid");
  EXPECT_EQ(GridLatency({1}, {1.0}, GridSource::kMeasured).Kind(), "measured");
}

TEST(GridLatency, EdgeRuleAtTheFirstPointFollowsTheSource) {
  // One point: constant. Below 1 ns: the caller's grid is floored, a measured one is not.
  const GridLatency caller({2, 4}, {1e-12, 3e-9}, GridSource::kCaller);
  const GridLatency measured({2, 4}, {1e-12, 3e-9}, GridSource::kMeasured);
  EXPECT_DOUBLE_EQ(caller.VerifySeconds(1, 0), 1e-9);
  EXPECT_DOUBLE_EQ(caller.VerifySeconds(2, 0), 1e-9);
  EXPECT_DOUBLE_EQ(measured.VerifySeconds(1, 0), 1e-12);
  EXPECT_DOUBLE_EQ(measured.VerifySeconds(2, 0), 1e-12);
  // Extrapolated values are floored under both rules.
  const GridLatency falling({1, 2}, {2e-9, 1e-9}, GridSource::kMeasured);
  EXPECT_DOUBLE_EQ(falling.VerifySeconds(10, 0), 1e-9);
  const GridLatency one({5}, {0.25}, GridSource::kCaller);
  EXPECT_DOUBLE_EQ(one.VerifySeconds(1, 0), 0.25);
  EXPECT_DOUBLE_EQ(one.VerifySeconds(50, 0), 0.25);
}

}  // namespace
}  // namespace specplan::costmodel
