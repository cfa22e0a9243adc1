// util/percentile.h: the nearest-rank percentile behind GetStats and specplan-loadgen.
#include "util/percentile.h"

#include <gtest/gtest.h>

#include <vector>

namespace specplan {
namespace {

TEST(Percentile, IsNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(Percentile(v, 0.5), 50);
  EXPECT_EQ(Percentile(v, 0.9), 90);
  EXPECT_EQ(Percentile(v, 0.99), 99);
  EXPECT_EQ(Percentile(v, 1.0), 100);
  EXPECT_EQ(Percentile({7}, 0.99), 7);
  EXPECT_EQ(Percentile({}, 0.5), 0);
}

}  // namespace
}  // namespace specplan
