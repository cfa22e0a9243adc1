#include "planner/policies/linear_chain.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "planner/policies/dynatree.h"
#include "planner/policies/eagle2.h"
#include "planner/policies/fixed_tree.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "tests/planner/fake_drafter.h"

namespace specplan::planner {
namespace {

namespace fake = planner::testing;

std::unique_ptr<LinearChainPolicy> MakeChain(int k) {
  LinearChainOptions o;
  o.k = k;
  return fake::CreateOk<LinearChainPolicy>(o);
}

TEST(LinearChainTest, BuildsGreedyTopOneChain) {
  for (int k_chain : {1, 3, 8}) {
    auto policy = MakeChain(k_chain);
    fake::HashDrafter drafter;
    drafter.k = 4;
    auto tree = RunPolicy(*policy, 42, drafter);
    ASSERT_TRUE(tree.ok()) << tree.status();
    const Tree& t = **tree;
    ASSERT_TRUE(ValidateTree(t).ok()) << ValidateTree(t);
    ASSERT_EQ(t.num_draft(), k_chain);
    EXPECT_EQ(t.tokens[0], 42);
    std::vector<int32_t> row_t;
    std::vector<float> row_p;
    double rho = 1.0;
    for (int i = 1; i < t.size(); ++i) {
      EXPECT_EQ(t.parents[i], i - 1);
      EXPECT_EQ(t.depths[i], i);
      drafter.Row(t, i - 1, row_t, row_p);  // the parent's distribution
      EXPECT_EQ(t.tokens[i], row_t[0]) << "node " << i << " is not the top-1 candidate";
      rho *= row_p[0];
      EXPECT_DOUBLE_EQ(t.path_probs[i], rho);
    }
    EXPECT_EQ(policy->stats().forwards, k_chain);
    EXPECT_EQ(policy->stats().expansions, k_chain);
    EXPECT_EQ(policy->stats().drafted_nodes, k_chain);
    EXPECT_EQ(policy->stats().last_depth, k_chain);
  }
}

TEST(LinearChainTest, StopsWhenARowHasNoCandidate) {
  auto policy = MakeChain(6);
  // Depth-2 node gets an all-padding row: the chain ends at depth 2.
  auto drafter = fake::Scripted(3, [](const Tree& t, int u) -> fake::Row {
    if (t.depths[u] == 2) return {};
    return {{7 + t.depths[u], 0.5f}, {100, 0.25f}};
  });
  auto tree = RunPolicy(*policy, 1, drafter);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)->num_draft(), 2);
  EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{1, 7, 8}));
  EXPECT_DOUBLE_EQ((*tree)->path_probs[2], 0.25);
  EXPECT_EQ(policy->stats().forwards, 3);  // the third forward returned nothing
}

TEST(LinearChainTest, CountersAccumulateAcrossSteps) {
  auto policy = MakeChain(5);
  fake::HashDrafter drafter;
  NodeDistributions ws;
  const int accepted[] = {2, 5, 0};
  for (int step = 0; step < 3; ++step) {
    auto tree = RunPolicy(*policy, step, drafter, &ws);
    ASSERT_TRUE(tree.ok());
    ASSERT_TRUE(policy->ObserveAcceptance(accepted[step]).ok());
  }
  const PolicyStats& s = policy->stats();
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.forwards, 15);
  EXPECT_EQ(s.tree_nodes, 15);
  EXPECT_EQ(s.drafted_nodes, 15);
  EXPECT_EQ(s.observed_steps, 3);
  EXPECT_EQ(s.accepted, 7);
  EXPECT_EQ(s.last_accepted, 0);
  EXPECT_DOUBLE_EQ(s.mean_accepted(), 7.0 / 3.0);
  policy->ResetStats();
  EXPECT_EQ(policy->stats().steps, 0);
}

TEST(LinearChainTest, RejectsBadOptions) {
  LinearChainOptions o;
  o.k = 0;
  auto p = LinearChainPolicy::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("k = 0"), absl::string_view::npos) << p.status();
  EXPECT_EQ(MakeChain(8)->Name(), "linear_chain(K=8)");
}

// ---- Shared interface behaviour (policy.h), exercised through the simplest policy. ----

NodeDistributions GoodRow(int node) {
  NodeDistributions d;
  d.nodes = {node};
  d.ResizeRows(3);
  d.Set(0, 0, 5, 0.5f);
  d.Set(0, 1, 6, 0.3f);
  d.Set(0, 2, 7, 0.1f);
  return d;
}

void ExpectError(TreePolicy& policy, const NodeDistributions& d, const std::string& needle) {
  const absl::Status s = policy.Provide(d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), absl::string_view::npos)
      << "message '" << s.message() << "' lacks '" << needle << "'";
}

TEST(PolicyTest, ProvideValidatesAndNamesTheField) {
  auto policy = MakeChain(2);
  policy->Begin(3);
  ASSERT_EQ(policy->PendingExpansions(), std::vector<int32_t>{0});

  // Each bad answer: a good row for a node, changed one way, and the error naming the field.
  struct Bad {
    int node;
    std::function<void(NodeDistributions&)> change;
    std::string error;
  };
  const Bad bad[] = {
      {0, [](NodeDistributions& r) { r.k = 0; }, "k = 0"},
      {1, [](NodeDistributions&) {}, "nodes[0] = 1: expected pending node 0"},
      {0, [](NodeDistributions& r) { r.nodes.push_back(0); }, "nodes: length 2"},
      {0, [](NodeDistributions& r) { r.tokens.pop_back(); }, "tokens: length 2"},
      {0, [](NodeDistributions& r) { r.probs.push_back(0); }, "probs: length 4"},
      {0, [](NodeDistributions& r) { r.Set(0, 1, 6, 1.5f); },
       "probs[0][1] = 1.5: must be in [0, 1]"},
      {0, [](NodeDistributions& r) { r.Set(0, 2, 7, std::nanf("")); }, "probs[0][2] = nan"},
      {0, [](NodeDistributions& r) { r.Set(0, 2, 7, 0.4f); },
       "probs[0][2] = 0.4: exceeds probs[0][1] = 0.3"},
      {0, [](NodeDistributions& r) { r.Set(0, 1, -2, 0.3f); }, "tokens[0][1] = -2"},
      {0,
       [](NodeDistributions& r) {
         r.Set(0, 1, -1, 0.0f);
         r.Set(0, 2, 9, 0.0f);
       },
       "tokens[0][2] = 9: follows padding"},
      {0, [](NodeDistributions& r) { r.Set(0, 2, -1, 0.1f); },
       "padding (tokens[0][2] = -1) must have probability 0"},
      {0,
       [](NodeDistributions& r) {
         r.Set(0, 0, 5, 0.6f);
         r.Set(0, 1, 6, 0.5f);
       },
       "probs[0]: row sums to"},
  };
  for (const Bad& b : bad) {
    NodeDistributions d = GoodRow(b.node);
    b.change(d);
    ExpectError(*policy, d, b.error);
  }

  // Nothing changed: the root is still pending and a good answer is accepted.
  EXPECT_EQ(policy->tree().size(), 1);
  EXPECT_EQ(policy->stats().forwards, 0);
  ASSERT_EQ(policy->PendingExpansions(), std::vector<int32_t>{0});
  ASSERT_TRUE(policy->Provide(GoodRow(0)).ok());
  EXPECT_EQ(policy->tree().tokens, (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(policy->PendingExpansions(), std::vector<int32_t>{1});
}

TEST(PolicyTest, StateMachineRejectsOutOfOrderCalls) {
  auto policy = MakeChain(2);
  EXPECT_TRUE(policy->PendingExpansions().empty());
  EXPECT_EQ(policy->Provide(GoodRow(0)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(policy->ObserveAcceptance(0).code(), absl::StatusCode::kFailedPrecondition);
  policy->Begin(3);
  EXPECT_EQ(policy->ObserveAcceptance(0).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(policy->Provide(GoodRow(0)).ok());
  ASSERT_TRUE(policy->Provide(GoodRow(1)).ok());
  EXPECT_TRUE(policy->PendingExpansions().empty());
  EXPECT_EQ(policy->Provide(GoodRow(2)).code(), absl::StatusCode::kFailedPrecondition);
  const absl::Status too_long = policy->ObserveAcceptance(3);
  EXPECT_EQ(too_long.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("accepted_length = 3: must be in [0, 2]"),
            absl::string_view::npos)
      << too_long;
  EXPECT_EQ(policy->ObserveAcceptance(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(policy->ObserveAcceptance(2).ok());
  EXPECT_EQ(policy->ObserveAcceptance(2).code(), absl::StatusCode::kFailedPrecondition);
  // A new step may begin while one is unfinished; the old one is abandoned.
  policy->Begin(4);
  ASSERT_TRUE(policy->Provide(GoodRow(0)).ok());
  policy->Begin(5);
  EXPECT_EQ(policy->tree().size(), 1);
  EXPECT_EQ(policy->stats().steps, 1);
}

TEST(PolicyTest, RunPolicyPropagatesDrafterAndValidationErrors) {
  auto policy = MakeChain(3);
  DrafterFn failing = [](const Tree&, NodeDistributions&) {
    return absl::UnavailableError("draft model down");
  };
  auto r = RunPolicy(*policy, 1, failing);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  DrafterFn bad = [](const Tree&, NodeDistributions& d) {
    d.ResizeRows(1);
    d.Set(0, 0, 1, 2.0f);
    return absl::OkStatus();
  };
  r = RunPolicy(*policy, 1, bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(policy->stats().steps, 0);
}

TEST(PolicyTest, EveryPolicyBuildsValidTreesThroughTheLoop) {
  std::vector<std::unique_ptr<TreePolicy>> policies;
  policies.push_back(MakeChain(4));
  policies.push_back(*FixedTreePolicy::Create(FixedTreeOptions()));
  policies.push_back(*Eagle2Policy::Create(Eagle2Options()));
  policies.push_back(*DynaTreePolicy::Create(DynaTreeOptions()));
  NodeDistributions ws;
  for (auto& policy : policies) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      fake::HashDrafter drafter;
      drafter.seed = seed;
      drafter.k = 1 + static_cast<int>(seed % 5);
      auto tree = RunPolicy(*policy, static_cast<int32_t>(seed), drafter, &ws);
      ASSERT_TRUE(tree.ok()) << policy->Name() << ": " << tree.status();
      EXPECT_TRUE(ValidateTree(**tree).ok()) << policy->Name() << ": " << ValidateTree(**tree);
      fake::ExpectPathProbsConsistent(**tree);
      ASSERT_TRUE(policy->ObserveAcceptance(policy->stats().last_depth).ok());
    }
    EXPECT_EQ(policy->stats().steps, 5) << policy->Name();
  }
}

}  // namespace
}  // namespace specplan::planner
