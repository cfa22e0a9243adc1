// Tree operations: dropping zero-probability nodes keeps a prefix-closed tree in order.
#include "planner/tree/tree_ops.h"

#include <gtest/gtest.h>

#include "tests/planner/random_tree.h"

namespace specplan::planner {
namespace {

TEST(TreeOpsTest, DropZeroProbabilityNodes) {
  Tree t = testing::TreeOf(1, {{0, 2, 0.5}, {0, 3, 0.0}, {2, 4, 0.0}, {1, 5, 0.25}});
  DropZeroProbabilityNodes(&t);
  ASSERT_EQ(t.size(), 3);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{1, 2, 5}));
  EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 1}));
}

}  // namespace
}  // namespace specplan::planner
