#include "planner/tree/tree_outputs.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/planner/random_tree.h"

namespace specplan::planner {
namespace {

using testing::IsAncestorOrSelf;
using testing::RandomTree;

TEST(TreeOutputsTest, MatchesReferenceOnRandomTrees) {
  std::mt19937 rng(1);
  TreeOutputs out;
  TreeOutputOptions opt;
  opt.dense_mask = true;
  for (int s : {1, 2, 3, 5, 63, 64, 65, 130, 300}) {
    for (int rep = 0; rep < 3; ++rep) {
      const Tree t = RandomTree(rng, s);
      opt.position_offset = rep * 1000;
      ComputeTreeOutputs(t, opt, &out);
      ASSERT_EQ(out.size, s);
      ASSERT_EQ(out.mask_words, (s + 63) / 64);
      ASSERT_EQ(out.parents, t.parents);
      int max_depth = 0;
      for (int i = 0; i < s; ++i) {
        EXPECT_EQ(out.positions[i], t.depths[i] + opt.position_offset) << i;
        max_depth = std::max(max_depth, t.depths[i]);
        for (int j = 0; j < s; ++j) {
          const bool want = IsAncestorOrSelf(t, j, i);
          ASSERT_EQ(out.MaskBit(i, j), want) << "packed " << i << "," << j;
          ASSERT_EQ(out.mask_dense[static_cast<size_t>(i) * s + j], want ? 1 : 0)
              << "dense " << i << "," << j;
        }
      }
      ASSERT_EQ(out.max_depth, max_depth);
      ASSERT_EQ(out.retrieve_width, max_depth + 1);
      // Retrieve rows: leaves in ascending order, root-to-leaf, -1 padded.
      std::vector<int> leaves;
      for (int i = 0; i < s; ++i) {
        bool has_child = false;
        for (int j = 1; j < s; ++j) has_child |= t.parents[j] == i;
        if (!has_child) leaves.push_back(i);
      }
      ASSERT_EQ(out.num_leaves, static_cast<int>(leaves.size()));
      ASSERT_EQ(out.retrieve.size(), leaves.size() * out.retrieve_width);
      for (size_t r = 0; r < leaves.size(); ++r) {
        const int32_t* row = &out.retrieve[r * out.retrieve_width];
        const int leaf = leaves[r];
        const int d = t.depths[leaf];
        EXPECT_EQ(row[d], leaf);
        EXPECT_EQ(row[0], 0);
        for (int k = d; k > 0; --k) EXPECT_EQ(t.parents[row[k]], row[k - 1]);
        for (int k = d + 1; k < out.retrieve_width; ++k) EXPECT_EQ(row[k], -1);
      }
    }
  }
}

// WriteRetrieve with scratch (leaves copy the part of their path an earlier row holds) writes
// exactly what the plain root walk writes, on random trees and on deep ones (chains with side
// branches, so that copied prefixes are long and short).
TEST(TreeOutputsTest, RetrieveWithScratchEqualsThePlainWalk) {
  std::mt19937 rng(3);
  std::vector<Tree> trees;
  for (int s : {1, 2, 7, 64, 300, 1025}) trees.push_back(RandomTree(rng, s));
  for (int branch : {1, 3, 17}) {
    Tree t;
    t.ResetRoot(0);
    for (int i = 1; i < 600; ++i) {
      const int p = i % branch == 0 ? static_cast<int>(rng() % i) : i - 1;
      t.AddNode(p, i, 1.0);
    }
    trees.push_back(t);
  }
  for (const Tree& t : trees) {
    const int s = t.size();
    std::vector<int64_t> depths(s);
    std::vector<int32_t> children(s), row_of(s);
    const int width = ScanTree(t.parents, depths.data(), children.data()) + 1;
    const size_t n = static_cast<size_t>(CountLeaves(children)) * width;
    std::vector<int32_t> plain(n, -7), fast(n, -9);
    WriteRetrieve(t.parents, depths.data(), children.data(), width, plain.data());
    WriteRetrieve(t.parents, depths.data(), children.data(), width, fast.data(), row_of.data());
    EXPECT_EQ(plain, fast) << "size " << s;
  }
}

TEST(TreeOutputsTest, SmallExampleByHand) {
  // 0 -> {1, 2}, 1 -> {3}
  const Tree t = testing::TreeOf(1, {{0, 2, 0.5}, {0, 3, 0.4}, {1, 4, 0.3}});
  TreeOutputs out;
  TreeOutputOptions opt;
  opt.dense_mask = true;
  opt.position_offset = 10;
  ComputeTreeOutputs(t, opt, &out);
  EXPECT_EQ(out.positions, (std::vector<int64_t>{10, 11, 11, 12}));
  EXPECT_EQ(out.mask_packed, (std::vector<uint64_t>{0b1, 0b11, 0b101, 0b1011}));
  EXPECT_EQ(out.mask_dense, (std::vector<uint8_t>{1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1}));
  EXPECT_EQ(out.num_leaves, 2);
  EXPECT_EQ(out.retrieve_width, 3);
  EXPECT_EQ(out.retrieve, (std::vector<int32_t>{0, 2, -1, 0, 1, 3}));
}

TEST(TreeOutputsTest, ReuseKeepsCapacityAndOptionalOutputsCanBeSkipped) {
  std::mt19937 rng(2);
  TreeOutputs out;
  TreeOutputOptions opt;
  opt.dense_mask = true;
  ComputeTreeOutputs(RandomTree(rng, 200), opt, &out);
  const auto* packed = out.mask_packed.data();
  const auto* retrieve = out.retrieve.data();
  const auto* dense = out.mask_dense.data();
  ComputeTreeOutputs(RandomTree(rng, 150), opt, &out);
  EXPECT_EQ(out.mask_packed.data(), packed);
  EXPECT_EQ(out.retrieve.data(), retrieve);
  EXPECT_EQ(out.mask_dense.data(), dense);
  opt.dense_mask = false;
  opt.packed_mask = false;
  opt.retrieve = false;
  ComputeTreeOutputs(RandomTree(rng, 20), opt, &out);
  EXPECT_TRUE(out.mask_dense.empty());
  EXPECT_TRUE(out.mask_packed.empty());
  EXPECT_TRUE(out.retrieve.empty());
  EXPECT_EQ(out.positions.size(), 20u);
}

}  // namespace
}  // namespace specplan::planner
