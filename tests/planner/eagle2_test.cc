#include "planner/policies/eagle2.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "tests/planner/fake_drafter.h"

namespace specplan::planner {
namespace {

namespace fake = planner::testing;

std::unique_ptr<Eagle2Policy> MakeEagle(int top_k, int depth, int total) {
  Eagle2Options o;
  o.top_k = top_k;
  o.depth = depth;
  o.total_tokens = total;
  return fake::CreateOk<Eagle2Policy>(o);
}

// (rho desc, index asc) over all of `ids`, fully sorted.
void SortByScore(const Tree& t, std::vector<int>& ids) {
  std::sort(ids.begin(), ids.end(), [&t](int a, int b) {
    return t.path_probs[a] != t.path_probs[b] ? t.path_probs[a] > t.path_probs[b] : a < b;
  });
}

// Reference candidate tree, straight from the description.
Tree ReferenceCandidates(const fake::HashDrafter& drafter, int32_t root, int top_k, int depth) {
  Tree c;
  c.ResetRoot(root);
  std::vector<int> frontier = {0};
  std::vector<int32_t> toks;
  std::vector<float> probs;
  for (int level = 0; level < depth && !frontier.empty(); ++level) {
    const int begin = c.size();
    for (int u : frontier) {
      drafter.Row(c, u, toks, probs);
      for (int j = 0; j < top_k && j < static_cast<int>(toks.size()); ++j) {
        c.AddNode(u, toks[j], c.path_probs[u] * probs[j]);
      }
    }
    std::vector<int> ids(c.size() - begin);
    std::iota(ids.begin(), ids.end(), begin);
    SortByScore(c, ids);
    if (static_cast<int>(ids.size()) > top_k) ids.resize(top_k);
    std::sort(ids.begin(), ids.end());
    frontier = ids;
  }
  return c;
}

TEST(Eagle2Test, HandWorkedRerankWithTieBreakByIndex) {
  // root -> a (1/2), b (1/4); a -> aa (1/2), ab (1/4); b -> ba (3/4), bb (1/8).
  auto drafter = fake::Scripted(2, [](const Tree& t, int u) -> fake::Row {
    if (u == 0) return {{1, 0.5f}, {2, 0.25f}};
    if (t.tokens[u] == 1) return {{11, 0.5f}, {12, 0.25f}};
    if (t.tokens[u] == 2) return {{21, 0.75f}, {22, 0.125f}};
    return {};
  });
  {
    auto policy = MakeEagle(2, 2, 3);
    auto tree = RunPolicy(*policy, 0, drafter);
    ASSERT_TRUE(tree.ok()) << tree.status();
    // rho: a .5, b .25, aa .25, ab .125, ba .1875, bb .03125. b and aa tie; b has the lower index.
    EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{0, 1, 2, 11}));
    EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 1}));
    EXPECT_EQ(policy->kept(), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(policy->candidates().num_draft(), 6);
    EXPECT_EQ(policy->stats().drafted_nodes, 6);
    EXPECT_EQ(policy->stats().tree_nodes, 3);
    EXPECT_EQ(policy->stats().forwards, 2);
  }
  {
    auto policy = MakeEagle(2, 2, 4);
    auto tree = RunPolicy(*policy, 0, drafter);
    ASSERT_TRUE(tree.ok());
    // + ba (0.1875): candidate index 5 becomes final index 4, child of b (final index 2).
    EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{0, 1, 2, 11, 21}));
    EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 1, 2}));
    EXPECT_EQ(policy->kept(), (std::vector<int32_t>{0, 1, 2, 3, 5}));
    EXPECT_DOUBLE_EQ((*tree)->path_probs[4], 0.1875);
  }
}

TEST(Eagle2Test, MatchesBruteForceOverGrid) {
  int cases = 0;
  for (int top_k : {1, 2, 3, 4}) {
    for (int depth : {1, 2, 3, 5}) {
      for (int total : {1, 4, 15, 1000}) {
        for (int levels : {0, 8}) {  // 8: coarse probs, many exact ties
          fake::HashDrafter drafter;
          drafter.k = 1 + cases % 5;
          drafter.seed = 77 + cases;
          drafter.levels = levels;
          auto policy = MakeEagle(top_k, depth, total);
          auto tree = RunPolicy(*policy, 3, drafter);
          ASSERT_TRUE(tree.ok()) << tree.status();
          const Tree& t = **tree;
          ASSERT_TRUE(ValidateTree(t).ok()) << ValidateTree(t);
          fake::ExpectPathProbsConsistent(**tree);

          const Tree cand = ReferenceCandidates(drafter, 3, top_k, depth);
          ASSERT_EQ(policy->candidates().tokens, cand.tokens) << policy->Name();
          ASSERT_EQ(policy->candidates().parents, cand.parents);
          ASSERT_EQ(policy->candidates().path_probs, cand.path_probs);

          // Brute force: the kept set is the N best candidates by (rho desc, index asc).
          std::vector<int> ids(cand.num_draft());
          std::iota(ids.begin(), ids.end(), 1);
          SortByScore(cand, ids);
          if (static_cast<int>(ids.size()) > total) ids.resize(total);
          std::sort(ids.begin(), ids.end());
          ids.insert(ids.begin(), 0);
          ASSERT_EQ(policy->kept(), std::vector<int32_t>(ids.begin(), ids.end()));

          // The final tree is the kept candidates, reindexed.
          const std::vector<int32_t>& kept = policy->kept();
          ASSERT_EQ(t.size(), static_cast<int>(kept.size()));
          for (int i = 1; i < t.size(); ++i) {
            EXPECT_EQ(t.tokens[i], cand.tokens[kept[i]]);
            EXPECT_EQ(kept[t.parents[i]], cand.parents[kept[i]]);
            EXPECT_EQ(t.path_probs[i], cand.path_probs[kept[i]]);
            EXPECT_EQ(t.depths[i], cand.depths[kept[i]]);
          }
          EXPECT_EQ(policy->stats().drafted_nodes, cand.num_draft());
          EXPECT_LE(policy->stats().forwards, depth);
          ++cases;
        }
      }
    }
  }
}

TEST(Eagle2Test, ReusesItsPolicyAcrossSteps) {
  auto policy = MakeEagle(4, 4, 20);
  NodeDistributions ws;
  for (int step = 0; step < 6; ++step) {
    fake::HashDrafter drafter;
    drafter.seed = step;
    auto tree = RunPolicy(*policy, step, drafter, &ws);
    ASSERT_TRUE(tree.ok());
    EXPECT_TRUE(ValidateTree(**tree).ok());
    EXPECT_EQ((*tree)->num_draft(), 20);
    EXPECT_EQ(policy->stats().last_forwards, 4);
    ASSERT_TRUE(policy->ObserveAcceptance(1).ok());
  }
  EXPECT_EQ(policy->stats().tree_nodes, 6 * 20);
  EXPECT_EQ(policy->stats().drafted_nodes, 6 * (4 + 3 * 16));
  EXPECT_EQ(policy->stats().expansions, 6 * (1 + 3 * 4));
}

TEST(Eagle2Test, RejectsBadOptions) {
  Eagle2Options o;
  o.top_k = 0;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("top_k = 0"), absl::string_view::npos);
  o = Eagle2Options();
  o.depth = 0;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("depth = 0"), absl::string_view::npos);
  o = Eagle2Options();
  o.total_tokens = 0;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("total_tokens = 0"),
            absl::string_view::npos);
  o = Eagle2Options();
  o.top_k = 256;
  o.depth = 256;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("candidates exceed"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace specplan::planner
