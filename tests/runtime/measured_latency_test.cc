#include "runtime/measured_latency.h"

#include <gtest/gtest.h>

#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

TEST(MeasuredLatencyTest, InterpolatesAndClamps) {
  const costmodel::GridLatency m({1, 4, 8}, {1.0, 2.0, 4.0}, costmodel::GridSource::kMeasured);
  EXPECT_DOUBLE_EQ(m.VerifySeconds(1, 0), 1.0);
  EXPECT_DOUBLE_EQ(m.VerifySeconds(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(m.VerifySeconds(2, 100), 1.0 + 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.VerifySeconds(6, 0), 3.0);
  EXPECT_DOUBLE_EQ(m.VerifySeconds(12, 0), 6.0);  // linear extrapolation of the last segment
  EXPECT_EQ(m.Kind(), "measured");
}

TEST(MeasuredLatencyTest, MeasuresTheModel) {
  auto model = testing::TinyModel("tiny", 1);
  auto m = MeasureVerifyLatency(*model, {1, 8, 32}, 16, 2);
  ASSERT_TRUE(m.ok()) << m.status();
  for (double s : m->seconds()) EXPECT_GT(s, 0);
  EXPECT_FALSE(MeasureVerifyLatency(*model, {4, 2}, 16).ok());
  EXPECT_FALSE(MeasureVerifyLatency(*model, {}, 16).ok());
}

}  // namespace
}  // namespace specplan::runtime
