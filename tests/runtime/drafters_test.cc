// Drafters: n-gram marginals, the draft model's level-batched tree expansion against a
// per-node reference, and its AR-chain lattice.
#include "runtime/drafters.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "planner/marginals/marginals.h"
#include "planner/policies/fixed_tree.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

using testing::TinyModel;

TEST(NgramTest, MarginalsFromContext) {
  // Suffix "1 2" occurred twice before, followed by 3 4 and 3 5.
  std::vector<planner::TokenId> ctx = {1, 2, 3, 4, 9, 1, 2, 3, 5, 7, 1, 2};
  NgramOptions o;
  o.max_ngram = 2;
  o.gamma = 3;
  o.k = 2;
  planner::Marginals m;
  ASSERT_TRUE(NgramMarginals(ctx, 256, o, &m));
  ASSERT_TRUE(planner::ValidateMarginals(m).ok()) << planner::ValidateMarginals(m);
  EXPECT_EQ(m.root_token, 2);
  EXPECT_EQ(m.gamma, 3);
  EXPECT_EQ(m.token(0, 0), 3);
  EXPECT_NEAR(m.prob(0, 0), 1.0, 1e-5);
  EXPECT_EQ(m.prob(0, 1), 0.0f);  // padding
  EXPECT_EQ(m.token(1, 0), 4);    // tie 4 vs 5 broken by lower token id
  EXPECT_NEAR(m.prob(1, 0), 0.5, 1e-5);
  EXPECT_EQ(m.token(1, 1), 5);
  EXPECT_FALSE(NgramMarginals({1, 2, 3}, 256, o, &m));  // nothing repeats
}

// Level-batched drafting gives every node the same distribution as running the draft model on
// the node's path alone.
// last_level_seconds: the seconds per level of the last call, without a catch-up chunk of more
// than the root (the speculation gate prices draft levels with it).
TEST(DraftModelTest, LevelSecondsLeaveOutTheCatchUp) {
  auto model = TinyModel("tiny", 6);
  DraftModelDrafter drafter(model.get(), 128, 3);
  EXPECT_EQ(drafter.last_level_seconds(), 0.0);
  std::vector<planner::TokenId> committed = {4, 8, 15, 16, 23, 42};
  planner::Marginals m;
  // Six tokens to catch up and a single level: nothing to measure.
  ASSERT_TRUE(drafter.DraftChain(committed, 1, &m).ok());
  EXPECT_EQ(drafter.last_level_seconds(), 0.0);
  drafter.Commit({});
  // Four levels after a catch-up chunk: the three single-token levels are measured.
  committed.push_back(m.tokens[0]);
  committed.push_back(7);
  ASSERT_TRUE(drafter.DraftChain(committed, 4, &m).ok());
  const double after_catch_up = drafter.last_level_seconds();
  EXPECT_GT(after_catch_up, 0.0);
  drafter.Commit({m.tokens[0]});
  // In sync (only the root is new): every level counts, the first included.
  committed.push_back(m.tokens[0]);
  committed.push_back(9);
  ASSERT_TRUE(drafter.DraftChain(committed, 2, &m).ok());
  EXPECT_GT(drafter.last_level_seconds(), 0.0);
  // A level costs less than the whole call.
  EXPECT_LT(drafter.last_level_seconds(), drafter.counters().seconds);
}

TEST(DraftModelTest, LevelBatchedTreeMatchesPerPathDistributions) {
  auto model = TinyModel("tiny", 6);
  DraftModelDrafter drafter(model.get(), 128, 3);
  planner::FixedTreeOptions fo;
  fo.depth = 3;
  fo.branch = 3;
  fo.tau = 0;
  fo.max_nodes = 39;
  auto policy = *planner::FixedTreePolicy::Create(fo);
  std::vector<planner::TokenId> committed = {4, 8, 15, 16, 23, 42};
  auto tree = drafter.DraftTree(*policy, committed);
  ASSERT_TRUE(tree.ok()) << tree.status();
  const planner::Tree& t = **tree;
  EXPECT_EQ(t.size(), 1 + 3 + 9 + 27);
  EXPECT_EQ(drafter.counters().forwards, 3);  // catch-up (incl. root) + 2 levels
  // Children of node u must be the top-3 of the draft model on path(u).
  for (int u = 0; u < t.size(); ++u) {
    if (t.depths[u] >= 3) continue;
    std::vector<planner::TokenId> seq = committed;
    std::vector<planner::TokenId> path;
    for (int x = u; x > 0; x = t.parents[x]) path.insert(path.begin(), t.tokens[x]);
    seq.insert(seq.end(), path.begin(), path.end());
    KvCache cache = model->NewCache(static_cast<int64_t>(seq.size()));
    torch::Tensor logits = model->ForwardCausal(seq, 0, &cache);
    auto top = logits[logits.size(0) - 1].topk(3);
    std::vector<planner::TokenId> expect(std::get<1>(top).data_ptr<int64_t>(),
                                         std::get<1>(top).data_ptr<int64_t>() + 3);
    std::vector<planner::TokenId> got;
    for (int c = 0; c < t.size(); ++c) {
      if (t.parents[c] == u) got.push_back(t.tokens[c]);
    }
    EXPECT_EQ(got, expect) << "node " << u;
  }
  // Commit the path 0 -> first child -> its first child: two rows reused, next Sync feeds 1.
  const int a1 = 1;
  int a2 = -1;
  for (int c = 0; c < t.size(); ++c) {
    if (t.parents[c] == a1) {
      a2 = c;
      break;
    }
  }
  ASSERT_GT(a2, 0);
  drafter.Commit({t.tokens[a1], t.tokens[a2]});
  EXPECT_EQ(drafter.counters().reused_rows, 2);
  committed.push_back(t.tokens[a1]);
  committed.push_back(t.tokens[a2]);
  committed.push_back(7);  // bonus
  planner::Marginals m;
  const int64_t fed_before = drafter.counters().fed_tokens;
  ASSERT_TRUE(drafter.DraftChain(committed, 4, &m).ok());
  EXPECT_EQ(drafter.counters().fed_tokens - fed_before, 1 + 3);  // bonus + 3 chain steps
  ASSERT_TRUE(planner::ValidateMarginals(m).ok()) << planner::ValidateMarginals(m);
  // The chain's rows equal the model's distributions along the greedy path.
  std::vector<planner::TokenId> seq = committed;
  for (int d = 0; d < 4; ++d) {
    KvCache cache = model->NewCache(static_cast<int64_t>(seq.size()));
    torch::Tensor logits = model->ForwardCausal(seq, 0, &cache);
    const auto best =
        static_cast<planner::TokenId>(logits[logits.size(0) - 1].argmax().item<int64_t>());
    EXPECT_EQ(m.token(d, 0), best) << "depth " << d;
    seq.push_back(best);
  }
}

}  // namespace
}  // namespace specplan::runtime
