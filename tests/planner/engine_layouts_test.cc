#include "planner/tree/engine_layouts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "planner/tree/tree_outputs.h"
#include "tests/planner/random_tree.h"

namespace specplan::planner {
namespace {

using ::testing::HasSubstr;
using testing::IsAncestorOrSelf;
using testing::RandomTree;

// The hand-worked tree of the header's and docs/planner.md's examples (token ids in parentheses):
//
//   0 (50)
//   ├── 1 (51)
//   │   ├── 3 (53)
//   │   └── 4 (54)
//   └── 2 (52)
//
// depths 0 1 1 2 2; leaves 2, 3, 4.
Tree HandTree() {
  return testing::TreeOf(50, {{0, 51, 0.6}, {0, 52, 0.3}, {1, 53, 0.4}, {1, 54, 0.1}});
}

// A request that does not speculate (n = 0): only its root/bonus token.
Tree RootOnly(int32_t token) {
  Tree t;
  t.ResetRoot(token);
  return t;
}

// A chain 0 -> 1 -> 2.
Tree Chain3() {
  Tree t;
  t.ResetRoot(60);
  t.AddNode(0, 61, 0.5);
  t.AddNode(1, 62, 0.25);
  return t;
}

TEST(BatchLayoutTest, HandWorkedBatchOfThree) {
  const std::vector<Tree> trees = {HandTree(), RootOnly(70), Chain3()};
  const std::vector<int64_t> c = {10, 7, 0};
  BatchLayout out;
  ASSERT_TRUE(ComputeBatchLayout(trees, c, &out).ok());
  EXPECT_EQ(out.batch_size, 3);
  EXPECT_EQ(out.total_tokens, 9);
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{50, 51, 52, 53, 54, 70, 60, 61, 62}));
  EXPECT_EQ(out.cu_seqlens, (std::vector<int32_t>{0, 5, 6, 9}));
  EXPECT_EQ(out.positions, (std::vector<int64_t>{10, 11, 11, 12, 12, 7, 0, 1, 2}));
  EXPECT_EQ(out.parents, (std::vector<int32_t>{-1, 0, 0, 1, 1, -1, -1, 0, 1}));
  EXPECT_EQ(out.mask_words, (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(out.mask_offsets, (std::vector<int64_t>{0, 5, 6, 9}));
  EXPECT_EQ(out.mask_packed, (std::vector<uint64_t>{0b1, 0b11, 0b101, 0b1011, 0b10011,  //
                                                    0b1,                                //
                                                    0b1, 0b11, 0b111}));
  EXPECT_EQ(out.num_leaves, (std::vector<int32_t>{3, 1, 1}));
  EXPECT_EQ(out.retrieve_width, (std::vector<int32_t>{3, 1, 3}));
  EXPECT_EQ(out.retrieve_offsets, (std::vector<int64_t>{0, 9, 10, 13}));
  EXPECT_EQ(out.retrieve, (std::vector<int32_t>{0, 2, -1, 0, 1, 3, 0, 1, 4,  //
                                                0,                           //
                                                0, 1, 2}));
  EXPECT_TRUE(out.MaskBit(0, 4, 1));
  EXPECT_FALSE(out.MaskBit(0, 4, 3));
  EXPECT_TRUE(out.MaskBit(2, 2, 1));
}

TEST(BatchLayoutTest, EmptyBatch) {
  BatchLayout out;
  ASSERT_TRUE(ComputeBatchLayout({}, {}, &out).ok());
  EXPECT_EQ(out.batch_size, 0);
  EXPECT_EQ(out.total_tokens, 0);
  EXPECT_EQ(out.cu_seqlens, (std::vector<int32_t>{0}));
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_TRUE(out.mask_packed.empty());
  EXPECT_TRUE(out.retrieve.empty());
}

// Every request's slice equals the single-request outputs of tree_outputs.h, on random batches
// with trees across the 64-bit word boundary.
TEST(BatchLayoutTest, SlicesEqualSingleRequestOutputs) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> size(1, 140);
  std::uniform_int_distribution<int64_t> ctx(0, 5000);
  BatchLayout out;
  TreeOutputs one;
  TreeOutputOptions opt;
  for (int rep = 0; rep < 20; ++rep) {
    const int batch = 1 + rep % 6;
    std::vector<Tree> trees;
    std::vector<int64_t> c;
    for (int b = 0; b < batch; ++b) {
      trees.push_back(RandomTree(rng, rep == 0 ? 1 : size(rng)));
      c.push_back(ctx(rng));
    }
    ASSERT_TRUE(ComputeBatchLayout(trees, c, &out).ok());
    ASSERT_EQ(out.cu_seqlens.size(), static_cast<size_t>(batch + 1));
    for (int b = 0; b < batch; ++b) {
      opt.position_offset = c[b];
      ComputeTreeOutputs(trees[b], opt, &one);
      const int off = out.cu_seqlens[b];
      ASSERT_EQ(out.cu_seqlens[b + 1] - off, trees[b].size());
      for (int i = 0; i < one.size; ++i) {
        ASSERT_EQ(out.tokens[off + i], trees[b].tokens[i]);
        ASSERT_EQ(out.parents[off + i], trees[b].parents[i]);
        ASSERT_EQ(out.positions[off + i], one.positions[i]);
        ASSERT_EQ(out.positions[off + i], c[b] + trees[b].depths[i]);
      }
      ASSERT_EQ(out.mask_words[b], one.mask_words);
      ASSERT_EQ(out.mask_offsets[b + 1] - out.mask_offsets[b],
                static_cast<int64_t>(one.mask_packed.size()));
      ASSERT_TRUE(std::equal(one.mask_packed.begin(), one.mask_packed.end(),
                             out.mask_packed.begin() + out.mask_offsets[b]));
      ASSERT_EQ(out.num_leaves[b], one.num_leaves);
      ASSERT_EQ(out.retrieve_width[b], one.retrieve_width);
      ASSERT_EQ(out.retrieve_offsets[b + 1] - out.retrieve_offsets[b],
                static_cast<int64_t>(one.retrieve.size()));
      ASSERT_TRUE(std::equal(one.retrieve.begin(), one.retrieve.end(),
                             out.retrieve.begin() + out.retrieve_offsets[b]));
      // And against brute force, not only against the shared code.
      for (int i = 0; i < one.size; ++i) {
        for (int j = 0; j < one.size; ++j) {
          ASSERT_EQ(out.MaskBit(b, i, j), IsAncestorOrSelf(trees[b], j, i)) << b << " " << i;
        }
      }
    }
  }
}

TEST(BatchLayoutTest, ReuseKeepsCapacity) {
  std::mt19937 rng(3);
  std::vector<Tree> big, small;
  for (int b = 0; b < 8; ++b) big.push_back(RandomTree(rng, 100));
  for (int b = 0; b < 6; ++b) small.push_back(RandomTree(rng, 60));
  BatchLayout out;
  ASSERT_TRUE(ComputeBatchLayout(big, std::vector<int64_t>(8, 100), &out).ok());
  const auto* tokens = out.tokens.data();
  const auto* mask = out.mask_packed.data();
  const auto* retrieve = out.retrieve.data();
  ASSERT_TRUE(ComputeBatchLayout(small, std::vector<int64_t>(6, 5), &out).ok());
  EXPECT_EQ(out.tokens.data(), tokens);
  EXPECT_EQ(out.mask_packed.data(), mask);
  EXPECT_EQ(out.retrieve.data(), retrieve);
}

// SGLang layout of the header example: HandTree over c = 3 and a root-only request over c = 2,
// D = 5 (the larger tree's size).
class SglangHandTest : public ::testing::Test {
 protected:
  const std::vector<Tree> trees_ = {HandTree(), RootOnly(70)};
  const std::vector<int64_t> c_ = {3, 2};

  SglangLayout Run(SglangTreeMaskMode mode) {
    SglangLayoutOptions opt;
    opt.mode = mode;
    opt.pad_token = -7;
    SglangLayout out;
    const absl::Status st = ComputeSglangLayout(trees_, c_, opt, &out);
    EXPECT_TRUE(st.ok()) << st;
    return out;
  }

  // The mode-independent arrays.
  static void ExpectLinks(const SglangLayout& out) {
    EXPECT_EQ(out.batch_size, 2);
    EXPECT_EQ(out.draft_token_num, 5);
    EXPECT_EQ(out.draft_tokens, (std::vector<int64_t>{50, 51, 52, 53, 54, 70, -7, -7, -7, -7}));
    EXPECT_EQ(out.positions, (std::vector<int64_t>{3, 4, 4, 5, 5, 2, 2, 2, 2, 2}));
    EXPECT_EQ(out.retrive_index, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    // Node 0's first child is 1, node 1's is 3; 1's next sibling is 2, 3's is 4.
    EXPECT_EQ(out.retrive_next_token, (std::vector<int64_t>{1, 3, -1, -1, -1,  //
                                                            -1, -1, -1, -1, -1}));
    EXPECT_EQ(out.retrive_next_sibling, (std::vector<int64_t>{-1, 2, -1, 4, -1,  //
                                                              -1, -1, -1, -1, -1}));
  }
};

TEST_F(SglangHandTest, QlenOnly) {
  const SglangLayout out = Run(SglangTreeMaskMode::kQlenOnly);
  ExpectLinks(out);
  EXPECT_EQ(out.tree_mask_bytes_per_row, 0);
  EXPECT_EQ(out.tree_mask_offsets, (std::vector<int64_t>{0, 25, 50}));
  EXPECT_EQ(out.tree_mask, (std::vector<uint8_t>{
                               1, 0, 0, 0, 0,  // request 0, node 0
                               1, 1, 0, 0, 0,  // node 1
                               1, 0, 1, 0, 0,  // node 2
                               1, 1, 0, 1, 0,  // node 3
                               1, 1, 0, 0, 1,  // node 4
                               1, 0, 0, 0, 0,  // request 1, root
                               0, 1, 0, 0, 0,  // padded slots see only themselves
                               0, 0, 1, 0, 0,  //
                               0, 0, 0, 1, 0,  //
                               0, 0, 0, 0, 1,  //
                           }));
}

TEST_F(SglangHandTest, FullMask) {
  const SglangLayout out = Run(SglangTreeMaskMode::kFullMask);
  ExpectLinks(out);
  // Request 0: 5 rows of 3 + 5; request 1: 5 rows of 2 + 5.
  EXPECT_EQ(out.tree_mask_offsets, (std::vector<int64_t>{0, 40, 75}));
  EXPECT_EQ(out.tree_mask, (std::vector<uint8_t>{
                               1, 1, 1,      /**/ 1, 0, 0, 0, 0,  // request 0, node 0
                               1, 1, 1,      /**/ 1, 1, 0, 0, 0,  //
                               1, 1, 1,      /**/ 1, 0, 1, 0, 0,  //
                               1, 1, 1,      /**/ 1, 1, 0, 1, 0,  //
                               1, 1, 1,      /**/ 1, 1, 0, 0, 1,  //
                               1, 1, /**/ 1, 0,      0, 0, 0,     // request 1, root
                               1, 1, /**/ 0, 1,      0, 0, 0,     // padded slots
                               1, 1, /**/ 0, 0,      1, 0, 0,     //
                               1, 1, /**/ 0, 0,      0, 1, 0,     //
                               1, 1, /**/ 0, 0,      0, 0, 1,     //
                           }));
}

TEST_F(SglangHandTest, Bitpacking) {
  const SglangLayout out = Run(SglangTreeMaskMode::kQlenOnlyBitpacking);
  ExpectLinks(out);
  EXPECT_EQ(out.tree_mask_bytes_per_row, 1);  // D = 5 <= 8: uint8
  EXPECT_EQ(out.tree_mask_offsets, (std::vector<int64_t>{0, 5, 10}));
  EXPECT_EQ(out.tree_mask, (std::vector<uint8_t>{0b1, 0b11, 0b101, 0b1011, 0b10011,  //
                                                 0b1, 0b10, 0b100, 0b1000, 0b10000}));
}

TEST_F(SglangHandTest, SingleRequestEqualsBatchOfOne) {
  SglangLayoutOptions opt;
  SglangLayout one, batch;
  ASSERT_TRUE(ComputeSglangLayout(HandTree(), 3, opt, &one).ok());
  const std::vector<Tree> trees = {HandTree()};
  const std::vector<int64_t> c = {3};
  ASSERT_TRUE(ComputeSglangLayout(trees, c, opt, &batch).ok());
  EXPECT_EQ(one.draft_token_num, 5);
  EXPECT_EQ(one.positions, batch.positions);
  EXPECT_EQ(one.retrive_next_token, (std::vector<int64_t>{1, 3, -1, -1, -1}));
  EXPECT_EQ(one.retrive_next_sibling, (std::vector<int64_t>{-1, 2, -1, 4, -1}));
  EXPECT_EQ(one.tree_mask, batch.tree_mask);
}

TEST(SglangLayoutTest, BitpackingWidthFollowsDraftTokenNum) {
  EXPECT_EQ(SglangBitpackingBytes(1), 1);
  EXPECT_EQ(SglangBitpackingBytes(8), 1);
  EXPECT_EQ(SglangBitpackingBytes(9), 2);
  EXPECT_EQ(SglangBitpackingBytes(16), 2);
  EXPECT_EQ(SglangBitpackingBytes(17), 4);
  EXPECT_EQ(SglangBitpackingBytes(32), 4);
  EXPECT_EQ(SglangBitpackingBytes(33), 0);

  // D = 9 (padded from 5): uint16 rows, little-endian; padded slot 8 sets bit 8 = byte 1, bit 0.
  SglangLayoutOptions opt;
  opt.mode = SglangTreeMaskMode::kQlenOnlyBitpacking;
  opt.draft_token_num = 9;
  SglangLayout out;
  ASSERT_TRUE(ComputeSglangLayout(HandTree(), 0, opt, &out).ok());
  EXPECT_EQ(out.tree_mask_bytes_per_row, 2);
  EXPECT_EQ(out.tree_mask, (std::vector<uint8_t>{0b1, 0, 0b11, 0, 0b101, 0, 0b1011, 0, 0b10011, 0,
                                                 0b100000, 0, 0b1000000, 0, 0b10000000, 0, 0, 1}));
  EXPECT_EQ(out.PackedRow(0, 8), 1u << 8);

  // A 20-node chain: uint32 rows; the last node's row has bits 0..19 set.
  Tree chain;
  chain.ResetRoot(1);
  for (int i = 1; i < 20; ++i) chain.AddNode(i - 1, 1 + i, 0.5);
  opt.draft_token_num = 0;
  ASSERT_TRUE(ComputeSglangLayout(chain, 0, opt, &out).ok());
  EXPECT_EQ(out.draft_token_num, 20);
  EXPECT_EQ(out.tree_mask_bytes_per_row, 4);
  EXPECT_EQ(out.tree_mask.size(), 80u);
  EXPECT_EQ(out.PackedRow(0, 19), (1u << 20) - 1);
  EXPECT_EQ(std::vector<uint8_t>(out.tree_mask.end() - 4, out.tree_mask.end()),
            (std::vector<uint8_t>{0xff, 0xff, 0x0f, 0x00}));

  // 32 slots fit, 33 do not.
  opt.draft_token_num = 32;
  ASSERT_TRUE(ComputeSglangLayout(chain, 0, opt, &out).ok());
  EXPECT_EQ(out.PackedRow(0, 31), 1u << 31);
  opt.draft_token_num = 33;
  const absl::Status st = ComputeSglangLayout(chain, 0, opt, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("draft_token_num = 33"));
}

// The next_token / next_sibling walk from slot 0 visits exactly the tree's nodes, each once,
// reaching every child from its parent, siblings in ascending order; the masks equal brute force
// in all three modes; padded slots are never reached.
TEST(SglangLayoutTest, WalkVisitsExactlyTheTreeOnRandomBatches) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> size(1, 32);
  std::uniform_int_distribution<int64_t> ctx(0, 40);
  SglangLayout full, qlen, packed;
  for (int rep = 0; rep < 200; ++rep) {
    const int batch = 1 + rep % 5;
    std::vector<Tree> trees;
    std::vector<int64_t> c;
    for (int b = 0; b < batch; ++b) {
      trees.push_back(RandomTree(rng, size(rng)));
      c.push_back(ctx(rng));
    }
    SglangLayoutOptions opt;
    opt.draft_token_num = rep % 3 == 0 ? 32 : 0;
    opt.mode = SglangTreeMaskMode::kFullMask;
    ASSERT_TRUE(ComputeSglangLayout(trees, c, opt, &full).ok());
    opt.mode = SglangTreeMaskMode::kQlenOnly;
    ASSERT_TRUE(ComputeSglangLayout(trees, c, opt, &qlen).ok());
    opt.mode = SglangTreeMaskMode::kQlenOnlyBitpacking;
    ASSERT_TRUE(ComputeSglangLayout(trees, c, opt, &packed).ok());
    const int d = qlen.draft_token_num;
    ASSERT_EQ(full.positions, qlen.positions);
    ASSERT_EQ(packed.retrive_next_token, qlen.retrive_next_token);
    ASSERT_EQ(full.retrive_next_sibling, qlen.retrive_next_sibling);
    for (int b = 0; b < batch; ++b) {
      const Tree& t = trees[b];
      const int s = t.size();
      const size_t base = static_cast<size_t>(b) * d;
      const int64_t* next = qlen.retrive_next_token.data() + base;
      const int64_t* sib = qlen.retrive_next_sibling.data() + base;
      // Depth-first walk with an explicit stack; `from` is the node a child was reached from.
      std::vector<int> seen(d, 0);
      std::vector<std::pair<int, int>> stack = {{0, -1}};
      int visited = 0;
      while (!stack.empty()) {
        const auto [v, from] = stack.back();
        stack.pop_back();
        ASSERT_LT(v, s) << "reached a padded slot";
        ASSERT_EQ(seen[v]++, 0) << "visited twice: " << v;
        ASSERT_EQ(t.parents[v], from);
        ++visited;
        int prev = -1;
        for (int64_t ch = next[v]; ch != -1; ch = sib[ch]) {
          ASSERT_GT(ch, prev) << "siblings out of order";
          prev = static_cast<int>(ch);
          stack.push_back({static_cast<int>(ch), v});
        }
      }
      ASSERT_EQ(visited, s);
      for (int i = 0; i < d; ++i) {
        ASSERT_EQ(qlen.retrive_index[base + i], static_cast<int64_t>(base + i));
        ASSERT_EQ(qlen.positions[base + i], c[b] + (i < s ? t.depths[i] : 0));
        if (i >= s) {
          ASSERT_EQ(next[i], -1);
          ASSERT_EQ(sib[i], -1);
        }
        const uint8_t* frow = full.tree_mask.data() + full.tree_mask_offsets[b] + i * (c[b] + d);
        for (int k = 0; k < c[b]; ++k) ASSERT_EQ(frow[k], 1);
        for (int j = 0; j < d; ++j) {
          const bool want = i < s ? (j < s && IsAncestorOrSelf(t, j, i)) : i == j;
          ASSERT_EQ(qlen.tree_mask[qlen.tree_mask_offsets[b] + i * d + j], want) << i << "," << j;
          ASSERT_EQ(frow[c[b] + j], want);
          ASSERT_EQ((packed.PackedRow(b, i) >> j) & 1u, want ? 1u : 0u);
        }
      }
    }
  }
}

TEST(EngineLayoutsTest, BadInputNamesTheField) {
  Tree bad = HandTree();
  bad.parents[3] = 3;
  Tree empty;
  Tree uneven = HandTree();
  uneven.parents.pop_back();
  Tree rootless = HandTree();
  rootless.parents[0] = 0;
  struct Case {
    std::vector<Tree> trees;
    std::vector<int64_t> c;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {{HandTree(), HandTree()}, {1}, "context_lens.size() = 1: must equal trees.size() = 2"},
      {{HandTree(), HandTree()}, {1, -3}, "context_lens[1] = -3"},
      {{HandTree(), bad}, {1, 1}, "trees[1].parents[3] = 3: must be in [0, 3)"},
      {{empty}, {0}, "trees[0].tokens is empty"},
      {{uneven}, {0}, "trees[0].parents.size() = 4: must equal tokens.size() = 5"},
      {{rootless}, {0}, "trees[0].parents[0] = 0"},
  };
  BatchLayout batch;
  SglangLayout sglang;
  for (const Case& k : cases) {
    absl::Status st = ComputeBatchLayout(k.trees, k.c, &batch);
    EXPECT_FALSE(st.ok()) << k.expect;
    EXPECT_THAT(std::string(st.message()), HasSubstr(k.expect));
    st = ComputeSglangLayout(k.trees, k.c, SglangLayoutOptions{}, &sglang);
    EXPECT_FALSE(st.ok()) << k.expect;
    EXPECT_THAT(std::string(st.message()), HasSubstr(k.expect));
  }
  SglangLayoutOptions opt;
  opt.draft_token_num = 4;
  absl::Status st = ComputeSglangLayout({RootOnly(1), HandTree()}, {0, 0}, opt, &sglang);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("draft_token_num = 4: must be >= the size of trees[1] = 5"));
  opt.draft_token_num = -1;
  st = ComputeSglangLayout(HandTree(), 0, opt, &sglang);
  EXPECT_THAT(std::string(st.message()), HasSubstr("draft_token_num = -1"));
}

// The layouts' sizes from the shapes alone, and the refusal past kMaxLayoutBytes before anything is
// allocated (the CLI's and the Python module's layouts all go through these).
TEST(LayoutBudgetTest, SizesFromShapesAndRefusalPastTheLimit) {
  // SGLang, B = 2, D = 5, contexts 3 and 2: five int64 arrays of 10 slots (400 bytes), then the
  // mask: FULL_MASK 5 x (3 + 5) + 5 x (2 + 5) = 75; QLEN_ONLY 10 x 5 = 50; bit-packed 10 x 4.
  const std::vector<int64_t> c = {3, 2};
  EXPECT_EQ(SglangLayoutBytes(2, 5, c, SglangTreeMaskMode::kFullMask), 400 + 75);
  EXPECT_EQ(SglangLayoutBytes(2, 5, c, SglangTreeMaskMode::kQlenOnly), 400 + 50);
  EXPECT_EQ(SglangLayoutBytes(2, 5, c, SglangTreeMaskMode::kQlenOnlyBitpacking), 400 + 40);
  // Ragged, the hand tree (5 nodes, leaves 2, 3, 4, depth 2): 100 bytes per token, 5 mask words,
  // retrieve 3 x 3 int32.
  const Tree hand = HandTree();
  EXPECT_EQ(BatchLayoutBytes({&hand, 1}), 100 + 40 + 36);
  // Saturates instead of overflowing.
  EXPECT_EQ(SglangLayoutBytes(1 << 30, 1 << 30, {}, SglangTreeMaskMode::kQlenOnly),
            std::numeric_limits<int64_t>::max());

  // A FULL_MASK of one 3-node tree with D = 8192 over c = 2^17: 8192 x (131072 + 8192) bytes, over
  // 1 GiB: refused, nothing built.
  const Tree chain = Chain3();
  SglangLayoutOptions o;
  o.mode = SglangTreeMaskMode::kFullMask;
  o.draft_token_num = 8192;
  SglangLayout layout;
  absl::Status st = ComputeSglangLayout(chain, int64_t{1} << 17, o, &layout);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("layout: FULL_MASK for 1 requests x draft_token_num 8192 (contexts up to "
                        "131072) takes 1.14e+09 bytes, over the limit of 1073741824 bytes"));
  EXPECT_TRUE(layout.tree_mask.empty());
  // The same shape in QLEN_ONLY fits.
  o.mode = SglangTreeMaskMode::kQlenOnly;
  EXPECT_TRUE(ComputeSglangLayout(chain, int64_t{1} << 17, o, &layout).ok());

  // Ragged: 128 chains of 8192 nodes take 128 x (8192 x 128 words x 8 + ...) > 1 GiB.
  Tree big;
  big.ResetRoot(1);
  for (int i = 1; i < kMaxTreeNodes; ++i) big.AddNode(i - 1, 2, 0.5);
  const std::vector<Tree> trees(128, big);
  const std::vector<int64_t> contexts(128, 0);
  BatchLayout ragged;
  st = ComputeBatchLayout(trees, contexts, &ragged);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("the ragged layout of 128 trees takes"));
  EXPECT_TRUE(ragged.mask_packed.empty());
}

}  // namespace
}  // namespace specplan::planner
