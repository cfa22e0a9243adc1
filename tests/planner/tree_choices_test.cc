#include "planner/tree/tree_choices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/planner/random_tree.h"

namespace specplan::planner {
namespace {

using ::testing::HasSubstr;

TEST(TreeOutputsChoicesTest, ExportByHand) {
  // 0 -> {1, 2}, 1 -> {3, 4}, 2 -> {5}
  const Tree t = testing::TreeOf(0, {{0, 1, 1}, {0, 1, 1}, {1, 1, 1}, {1, 1, 1}, {2, 1, 1}});
  TreeChoices paths;
  ExportTreeChoices(t, &paths);
  EXPECT_EQ(paths, (TreeChoices{{0}, {1}, {0, 0}, {0, 1}, {1, 0}}));
}

TEST(TreeOutputsChoicesTest, ImportMedusaStyle) {
  const TreeChoices paths = {{0, 1}, {1}, {0}, {0, 0}, {0, 0, 0}};
  Tree t;
  ASSERT_TRUE(ImportTreeChoices(paths, &t, /*root_token=*/42, /*placeholder_token=*/9).ok());
  ASSERT_TRUE(ValidateTree(t).ok());
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.tokens[0], 42);
  EXPECT_EQ(t.tokens[3], 9);
  // Medusa order: [0], [1], [0,0], [0,1], [0,0,0].
  EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 0, 1, 1, 3}));
  EXPECT_EQ(t.path_probs, std::vector<double>(6, 1.0));
  TreeChoices back;
  ExportTreeChoices(t, &back);
  EXPECT_EQ(back, (TreeChoices{{0}, {1}, {0, 0}, {0, 1}, {0, 0, 0}}));
}

TEST(TreeOutputsChoicesTest, RoundTripRandomTrees) {
  std::mt19937 rng(3);
  for (int s : {1, 2, 5, 20, 80}) {
    for (int rep = 0; rep < 5; ++rep) {
      Tree t;
      t.ResetRoot(0);
      for (int i = 1; i < s; ++i)
        t.AddNode(std::uniform_int_distribution<int>(0, i - 1)(rng), 1, 1);
      TreeChoices paths;
      ExportTreeChoices(t, &paths);
      ASSERT_TRUE(ValidateTreeChoices(paths).ok());
      std::shuffle(paths.begin(), paths.end(), rng);
      Tree u;
      ASSERT_TRUE(ImportTreeChoices(paths, &u).ok());
      ASSERT_TRUE(ValidateTree(u).ok());
      ASSERT_EQ(u.size(), s);
      TreeChoices again;
      ExportTreeChoices(u, &again);
      std::sort(paths.begin(), paths.end());
      TreeChoices sorted_again = again;
      std::sort(sorted_again.begin(), sorted_again.end());
      EXPECT_EQ(sorted_again, paths);  // same topology
      // Depth profile preserved.
      for (int i = 1; i < s; ++i) EXPECT_EQ(u.depths[i], static_cast<int>(again[i - 1].size()));
    }
  }
}

TEST(TreeOutputsChoicesTest, ValidationNamesThePath) {
  auto msg = [](const TreeChoices& p) { return std::string(ValidateTreeChoices(p).message()); };
  EXPECT_THAT(msg({{0}, {0, 1}, {1, 0}}),
              HasSubstr("paths[1] = [0, 1]: rank 1 but sibling rank 0"));
  EXPECT_THAT(msg({{0}, {1, 0}}), HasSubstr("paths[1] = [1, 0]"));
  EXPECT_THAT(msg({{0}, {0, 0, 0}}), HasSubstr("paths[1] = [0, 0, 0]: prefix [0, 0] is missing"));
  EXPECT_THAT(msg({{0}, {0}}), HasSubstr("paths[1] = [0]: duplicate of paths[0]"));
  EXPECT_THAT(msg({{0}, {}}), HasSubstr("paths[1] = []"));
  EXPECT_THAT(msg({{-1}}), HasSubstr("paths[0] = [-1]"));
  EXPECT_THAT(msg({{2}, {0}}), HasSubstr("paths[0] = [2]: rank 2 but sibling rank 1"));
  EXPECT_TRUE(ValidateTreeChoices({}).ok());
  Tree t;
  EXPECT_FALSE(ImportTreeChoices({{1}}, &t).ok());
}

}  // namespace
}  // namespace specplan::planner
