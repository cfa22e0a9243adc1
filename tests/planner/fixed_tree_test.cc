#include "planner/policies/fixed_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "tests/planner/fake_drafter.h"

namespace specplan::planner {
namespace {

namespace fake = planner::testing;

std::unique_ptr<FixedTreePolicy> MakeFixed(int depth, int branch, double tau, int max_nodes) {
  FixedTreeOptions o;
  o.depth = depth;
  o.branch = branch;
  o.tau = tau;
  o.max_nodes = max_nodes;
  return fake::CreateOk<FixedTreePolicy>(o);
}

// Reference: the definition, node by node from a FIFO queue.
Tree ReferenceFixedTree(const fake::HashDrafter& drafter, int32_t root, int depth, int branch,
                        double tau, int max_nodes) {
  Tree t;
  t.ResetRoot(root);
  std::deque<int> queue = {0};
  std::vector<int32_t> toks;
  std::vector<float> probs;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    if (t.depths[u] >= depth) continue;
    drafter.Row(t, u, toks, probs);
    for (int j = 0; j < branch && j < static_cast<int>(toks.size()); ++j) {
      if (t.num_draft() >= max_nodes) return t;
      if (probs[j] < tau) continue;
      queue.push_back(t.AddNode(u, toks[j], t.path_probs[u] * probs[j]));
    }
  }
  return t;
}

TEST(FixedTreeTest, FullTreeSizes) {
  struct Case {
    int depth, branch, want;
  };
  for (const Case& c : {Case{3, 2, 2 + 4 + 8}, Case{2, 3, 3 + 9}, Case{1, 4, 4}, Case{4, 1, 4},
                        Case{4, 3, 3 + 9 + 27 + 81}}) {
    auto policy = MakeFixed(c.depth, c.branch, 0.0, 1000);
    fake::HashDrafter drafter;
    drafter.k = 4;
    auto tree = RunPolicy(*policy, 0, drafter);
    ASSERT_TRUE(tree.ok()) << tree.status();
    ASSERT_TRUE(ValidateTree(**tree).ok()) << ValidateTree(**tree);
    EXPECT_EQ((*tree)->num_draft(), c.want) << "D=" << c.depth << " B=" << c.branch;
    std::vector<int> per_depth(c.depth + 1, 0);
    for (int d : (*tree)->depths) ++per_depth[d];
    int width = 1;
    for (int d = 0; d <= c.depth; ++d, width *= c.branch) EXPECT_EQ(per_depth[d], width);
    EXPECT_EQ(policy->stats().forwards, c.depth);
    EXPECT_EQ(policy->stats().expansions, c.want - per_depth[c.depth] + 1);  // internal nodes
  }
}

TEST(FixedTreeTest, TauPrunesOnTheChildsOwnDraftProb) {
  auto policy = MakeFixed(2, 3, 0.25, 100);
  auto drafter = fake::Scripted(3, [](const Tree& t, int u) -> fake::Row {
    return {{10 * t.depths[u] + 1, 0.5f}, {10 * t.depths[u] + 2, 0.3f}, {99, 0.2f}};
  });
  auto tree = RunPolicy(*policy, 0, drafter);
  ASSERT_TRUE(tree.ok());
  const Tree& t = **tree;
  // 0.2 < tau is dropped everywhere; 0.3 >= tau is kept even where rho = 0.5 * 0.3 = 0.15 < tau.
  EXPECT_EQ(t.num_draft(), 2 + 4);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{0, 1, 2, 11, 12, 11, 12}));
  EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 0, 1, 1, 2, 2}));
  EXPECT_DOUBLE_EQ(t.path_probs[4], 0.5 * double{0.3f});
  EXPECT_DOUBLE_EQ(t.path_probs[6], double{0.3f} * double{0.3f});
}

TEST(FixedTreeTest, BudgetIsFilledInBfsOrder) {
  auto policy = MakeFixed(3, 2, 0.0, 5);
  fake::HashDrafter drafter;
  auto tree = RunPolicy(*policy, 0, drafter);
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ((*tree)->num_draft(), 5);
  EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 1, 1, 2}));
  EXPECT_EQ(policy->stats().forwards, 2);  // no third level: the budget is spent
}

TEST(FixedTreeTest, MatchesReferenceOverGrid) {
  int cases = 0;
  for (int depth : {1, 2, 3, 4}) {
    for (int branch : {1, 2, 3, 5}) {
      for (double tau : {0.0, 0.05, 0.2}) {
        for (int max_nodes : {1, 7, 40, 2000}) {
          for (int k : {1, 3, 6}) {
            auto policy = MakeFixed(depth, branch, tau, max_nodes);
            fake::HashDrafter drafter;
            drafter.k = k;
            drafter.seed = 1000 + cases;
            drafter.levels = cases % 2 == 0 ? 0 : 20;
            auto tree = RunPolicy(*policy, 5, drafter);
            ASSERT_TRUE(tree.ok()) << tree.status();
            const Tree want = ReferenceFixedTree(drafter, 5, depth, branch, tau, max_nodes);
            ASSERT_TRUE(ValidateTree(**tree).ok());
            ASSERT_EQ((*tree)->tokens, want.tokens) << policy->Name() << " k=" << k;
            ASSERT_EQ((*tree)->parents, want.parents);
            ASSERT_EQ((*tree)->path_probs, want.path_probs);
            EXPECT_LE((*tree)->num_draft(), max_nodes);
            fake::ExpectPathProbsConsistent(**tree);
            ++cases;
          }
        }
      }
    }
  }
}

TEST(FixedTreeTest, ReusesBuffersAcrossSteps) {
  auto policy = MakeFixed(3, 3, 0.0, 30);
  fake::HashDrafter drafter;
  NodeDistributions ws;
  ASSERT_TRUE(RunPolicy(*policy, 0, drafter, &ws).ok());
  const int32_t* tokens = policy->tree().tokens.data();
  const double* probs = policy->tree().path_probs.data();
  for (int step = 1; step < 5; ++step) {
    drafter.seed = step;
    ASSERT_TRUE(RunPolicy(*policy, step, drafter, &ws).ok());
    EXPECT_EQ(policy->tree().tokens.data(), tokens);
    EXPECT_EQ(policy->tree().path_probs.data(), probs);
  }
}

TEST(FixedTreeTest, RejectsBadOptions) {
  struct Case {
    FixedTreeOptions o;
    const char* needle;
  };
  std::vector<Case> cases(4);
  cases[0].o.depth = 0;
  cases[0].needle = "depth = 0";
  cases[1].o.branch = 0;
  cases[1].needle = "branch = 0";
  cases[2].o.tau = 1.5;
  cases[2].needle = "tau = 1.5";
  cases[3].o.max_nodes = kMaxTreeNodes;
  cases[3].needle = "max_nodes = 8192";
  for (const Case& c : cases) {
    auto p = FixedTreePolicy::Create(c.o);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find(c.needle), absl::string_view::npos) << p.status();
  }
}

}  // namespace
}  // namespace specplan::planner
