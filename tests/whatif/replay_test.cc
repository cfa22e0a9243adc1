#include "whatif/replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "planner/policies/best_first.h"
#include "planner/policies/dynatree.h"
#include "planner/policies/fixed_tree.h"
#include "planner/policies/linear_chain.h"
#include "test_util.h"
#include "tests/planner/random_tree.h"
#include "whatif/trace.h"

namespace specplan::whatif {
namespace {

using planner::Tree;

// root(1) -> 5 (1), 6 (2); 5 -> 7 (3), 8 (5); 7 -> 9 (4).
Tree HandTree() {
  return planner::testing::TreeOf(
      1, {{0, 5, 0.6}, {0, 6, 0.3}, {1, 7, 0.3}, {3, 9, 0.27}, {1, 8, 0.24}});
}

TEST(RealizedAcceptedLength, HandWorkedTree) {
  const Tree t = HandTree();
  std::vector<int32_t> scratch;
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{5, 7, 9}, &scratch), 3);
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{5, 7, 9, 4, 4}), 3);  // tree ends
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{5, 7}), 2);  // capped at continuation
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{5, 8, 9}), 2);
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{6, 7}), 1);
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{7, 9}), 0);  // 7 is not a root child
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{4}), 0);
  Tree root_only;
  root_only.ResetRoot(3);
  EXPECT_EQ(RealizedAcceptedLength(root_only, std::vector<int32_t>{3}), 0);
}

TEST(RealizedAcceptedLength, DuplicateSiblingsFollowTheLongerMatch) {
  Tree t;
  t.ResetRoot(0);
  t.AddNode(0, 5, 0.5);  // 1: dead end
  t.AddNode(0, 5, 0.4);  // 2: same token
  t.AddNode(2, 7, 0.2);  // 3 under the second 5
  EXPECT_EQ(RealizedAcceptedLength(t, std::vector<int32_t>{5, 7}), 2);
}

TEST(RealizedAcceptedLength, PerPrefixMatchesRecomputingEachPrefix) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    planner::Marginals m;
    m.root_token = 0;
    m.gamma = 1 + static_cast<int>(rng() % 5);
    m.k = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < m.gamma; ++d) {
      float left = 1.0f;
      std::vector<float> row;
      for (int r = 0; r < m.k; ++r) {
        m.tokens.push_back(r);  // tokens 0..k-1 in every row
        row.push_back(left * std::uniform_real_distribution<float>(0.3f, 0.7f)(rng));
        left -= row.back();
      }
      std::sort(row.begin(), row.end(), std::greater<float>());
      m.probs.insert(m.probs.end(), row.begin(), row.end());
    }
    std::vector<int32_t> cont;
    const int len = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < len; ++i) cont.push_back(static_cast<int32_t>(rng() % (m.k + 1)));
    planner::BestFirstPlanner planner;
    planner::BestFirstPlan plan;
    ASSERT_TRUE(planner.PlanFixed(m, 200, &plan).ok());
    std::vector<int32_t> matched, per_prefix;
    RealizedAcceptedLengthPerPrefix(plan.tree, cont, &matched, &per_prefix);
    ASSERT_EQ(per_prefix.size(), static_cast<size_t>(plan.tree.size()));
    for (int n = 0; n <= plan.tree.num_draft(); ++n) {
      Tree prefix = plan.tree;
      prefix.tokens.resize(n + 1);
      prefix.parents.resize(n + 1);
      prefix.depths.resize(n + 1);
      prefix.path_probs.resize(n + 1);
      ASSERT_EQ(per_prefix[n], RealizedAcceptedLength(prefix, cont))
          << "trial " << trial << " n " << n;
    }
  }
}

class RecordedDrafterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto trace = LoadTrace(testing::FixturePath());
    ASSERT_TRUE(trace.ok()) << trace.status();
    trace_ = std::move(*trace);
  }
  absl::StatusOr<const Tree*> Replay(planner::TreePolicy& policy, const TraceStep& step) {
    drafter_.Reset(*step.nodes);
    return planner::RunPolicy(
        policy, step.root,
        [this](const Tree& t, planner::NodeDistributions& d) { return drafter_.Fill(t, d); },
        &dists_);
  }
  Trace trace_;
  RecordedDrafter drafter_;
  planner::NodeDistributions dists_;
};

TEST_F(RecordedDrafterTest, FixedTreeExpandsExactlyTheRecordedNodes) {
  planner::FixedTreeOptions o;
  o.depth = 3;
  o.branch = 2;
  o.tau = 0;
  auto policy = planner::FixedTreePolicy::Create(o);
  ASSERT_TRUE(policy.ok());
  auto tree = Replay(**policy, trace_.steps[0]);
  ASSERT_TRUE(tree.ok()) << tree.status();
  // Root -> 5, 6; 5 -> 7, 8; 6 and 8 are not expanded (padding rows); 7 -> 9, 10 (its row is
  // recorded, the children are not), and 9, 10 are not recorded: no depth-3 expansion.
  EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{1, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 1, 1, 3, 3}));
  EXPECT_NEAR((*tree)->path_probs[5], 0.6 * 0.5 * 0.9, 1e-6);
  EXPECT_EQ(drafter_.RecordedIndex(3), 3);
  EXPECT_EQ(drafter_.RecordedIndex(4), 4);
  EXPECT_EQ(drafter_.RecordedIndex(5), -1);  // 9 under 7 was never recorded as a node
  EXPECT_EQ(RealizedAcceptedLength(**tree, trace_.steps[0].continuation), 3);
  EXPECT_TRUE((*policy)->ObserveAcceptance(3).ok());
}

TEST_F(RecordedDrafterTest, LinearChainStopsWhereTheRecordingEnds) {
  auto policy = planner::LinearChainPolicy::Create({/*k=*/8});
  ASSERT_TRUE(policy.ok());
  auto tree = Replay(**policy, trace_.steps[0]);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{1, 5, 7, 9}));
  EXPECT_EQ((*policy)->stats().last_forwards, 4);  // the 4th forward (at 9) found no row
  // The same policy object continues on another step (workspaces reused).
  auto tree2 = Replay(**policy, trace_.steps[2]);
  ASSERT_TRUE(tree2.ok()) << tree2.status();
  EXPECT_EQ((*tree2)->tokens, (std::vector<int32_t>{2, 3}));
}

TEST_F(RecordedDrafterTest, DynaTreeHistoryAdaptsFromObservedLengths) {
  planner::DynaTreeOptions o;
  o.window = 2;
  o.eta_d = 2.0;
  auto policy = planner::DynaTreePolicy::Create(o);
  ASSERT_TRUE(policy.ok());
  const double d0 = (*policy)->state().d0;
  for (int rep = 0; rep < 4; ++rep) {
    for (int s : {0, 2}) {
      auto tree = Replay(**policy, trace_.steps[s]);
      ASSERT_TRUE(tree.ok()) << tree.status();
      // Every node of the replayed tree is a candidate the recording offered.
      for (int i = 1; i < (*tree)->size(); ++i) {
        const int parent_rec = drafter_.RecordedIndex((*tree)->parents[i]);
        ASSERT_GE(parent_rec, 0);
        ASSERT_TRUE(trace_.steps[s].nodes->Expanded(parent_rec));
      }
      const int l = RealizedAcceptedLength(**tree, trace_.steps[s].continuation);
      ASSERT_TRUE((*policy)->ObserveAcceptance(l).ok());
    }
  }
  EXPECT_EQ((*policy)->stats().observed_steps, 8);
  EXPECT_GT((*policy)->state().adjustments, 0);
  EXPECT_NE((*policy)->state().d0, d0);  // full-length acceptance pushes D_0 up
}

TEST_F(RecordedDrafterTest, RootMismatchIsAnError) {
  auto policy = planner::LinearChainPolicy::Create({2});
  ASSERT_TRUE(policy.ok());
  drafter_.Reset(*trace_.steps[0].nodes);
  auto tree = planner::RunPolicy(
      **policy, /*root_token=*/7,
      [this](const Tree& t, planner::NodeDistributions& d) { return drafter_.Fill(t, d); });
  ASSERT_FALSE(tree.ok());
  EXPECT_THAT(std::string(tree.status().message()), ::testing::HasSubstr("root"));
}

}  // namespace
}  // namespace specplan::whatif
