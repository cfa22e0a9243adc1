#include "planner/policies/dynatree.h"

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

std::unique_ptr<DynaTreePolicy> MakeDyna(const DynaTreeOptions& o) {
  return fake::CreateOk<DynaTreePolicy>(o);
}

// Sets the confidence thresholds, the three breadths and the two depths of `o`.
void SetShape(DynaTreeOptions* o, double tau_h, double tau_l, int32_t b_min, int32_t b_mid,
              int32_t b_max, int32_t d0, int32_t d_max) {
  o->tau_h = tau_h;
  o->tau_l = tau_l;
  o->b_min = b_min;
  o->b_mid = b_mid;
  o->b_max = b_max;
  o->d0 = d0;
  o->d_max = d_max;
}

// Options that isolate one rule: no pruning, no early stop, no history.
DynaTreeOptions Quiet() {
  DynaTreeOptions o;
  o.tau = 1e-12;
  o.rho_stop = 1e-9;
  o.rho_deep = 1e-6;
  o.history_adaptation = false;
  return o;
}

// Every node gets the same row: `probs` (descending), tokens 100 * depth + j.
DrafterFn Uniform(std::vector<float> probs) {
  return fake::Scripted(static_cast<int>(probs.size()), [probs](const Tree& t, int u) -> fake::Row {
    fake::Row row;
    for (size_t j = 0; j < probs.size(); ++j) {
      row.push_back({100 * t.depths[u] + static_cast<int32_t>(j), probs[j]});
    }
    return row;
  });
}

// Reference: Algorithm 1 DRAFTTREE (DynaTree (docs/references.md) App. B), node by node from a FIFO
// queue, with the parameters the policy used for the step.
Tree ReferenceAlgorithm1(const fake::HashDrafter& drafter, int32_t root, const DynaTreeOptions& o,
                         int32_t d0, double tau_h, double tau_l) {
  Tree t;
  t.ResetRoot(root);
  std::deque<int> a = {0};  // line 11
  std::vector<int32_t> toks;
  std::vector<float> probs;
  while (!a.empty() && t.num_draft() < o.n_max) {  // line 12 (|T| counts draft nodes)
    const int u = a.front();                       // line 13 (FIFO: breadth-first)
    a.pop_front();
    const double p = t.path_probs[u];
    if (p < o.tau) continue;                             // lines 14-16
    if (t.depths[u] >= o.d_max) continue;                // lines 17-19
    if (p < o.rho_stop) continue;                        // lines 20-22
    if (t.depths[u] >= d0 && p <= o.rho_deep) continue;  // lines 23-25
    drafter.Row(t, u, toks, probs);                      // line 26
    const double c = probs[0];
    const int b = c >= tau_h ? o.b_min : (c < tau_l ? o.b_max : o.b_mid);  // line 27
    for (int j = 0; j < b && j < static_cast<int>(toks.size()); ++j) {     // line 28
      if (t.num_draft() >= o.n_max) break;
      const double rho = p * probs[j];
      if (o.prune_mode == DynaTreePruneMode::kRemoveLeaf && rho < o.tau) continue;  // §3.3
      a.push_back(t.AddNode(u, toks[j], rho));
    }
  }
  return t;
}

TEST(DynaTreeTest, BreadthFollowsConfidenceThresholds) {
  DynaTreeOptions o = Quiet();
  SetShape(&o, 0.75, 0.25, 1, 2, 3, 1, 2);  // thresholds exactly representable: exact boundaries
  o.rho_deep = 0.999;  // depth-1 nodes stop (d >= D_0 and p <= rho_deep): only the root expands
  struct Case {
    float c;
    int want;
  };
  for (const Case& cs : {Case{0.875f, 1}, Case{0.75f, 1}, Case{0.5f, 2}, Case{0.25f, 2},
                         Case{0.125f, 3}, Case{0.0625f, 3}}) {
    auto policy = MakeDyna(o);
    const float rest = std::min(cs.c, 0.03f);
    auto tree = RunPolicy(*policy, 0, Uniform({cs.c, rest, rest, rest}));
    ASSERT_TRUE(tree.ok()) << tree.status();
    ASSERT_TRUE(ValidateTree(**tree).ok());
    EXPECT_EQ((*tree)->num_draft(), cs.want) << "c(root) = " << cs.c;
    const DynaTreeStepTrace& tr = policy->last_trace();
    EXPECT_EQ(tr.expanded, 1);
    EXPECT_EQ(tr.breadth_min, cs.want == 1 ? 1 : 0);
    EXPECT_EQ(tr.breadth_mid, cs.want == 2 ? 1 : 0);
    EXPECT_EQ(tr.breadth_max, cs.want == 3 ? 1 : 0);
    EXPECT_EQ(tr.stopped_depth_gate, cs.want);
    EXPECT_EQ(policy->stats().forwards, 1);
  }
}

// Chain drafter: top-1 prob 1/2 everywhere and tau_h = 1/2, so B = B_min = 1 and p(depth d) = 2^-d.
int ChainLength(DynaTreeOptions o, DynaTreeStepTrace* trace = nullptr) {
  o.tau_h = 0.5;
  o.tau_l = 0.25;
  auto policy = MakeDyna(o);
  if (policy == nullptr) return -1;
  auto tree = RunPolicy(*policy, 0, Uniform({0.5f, 0.25f, 0.125f}));
  EXPECT_TRUE(tree.ok());
  EXPECT_TRUE(ValidateTree(**tree).ok());
  EXPECT_EQ((*tree)->num_draft(), policy->stats().last_depth);  // it is a chain
  if (trace != nullptr) *trace = policy->last_trace();
  return (*tree)->num_draft();
}

TEST(DynaTreeTest, DepthGatingStopsAtDmaxAndGoesPastD0OnlyAboveRhoDeep) {
  DynaTreeOptions o = Quiet();
  DynaTreeStepTrace tr;
  // Below D_0 only rho_stop gates: with rho_deep near 1 the chain ends exactly at D_0.
  o.d0 = 5;
  o.d_max = 8;
  o.rho_deep = 0.999;
  EXPECT_EQ(ChainLength(o, &tr), 5);
  EXPECT_EQ(tr.stopped_depth_gate, 1);
  // Past D_0 = 2 only while p(u) > rho_deep: p(2) = 0.25 > 0.2 expands, p(3) = 0.125 stops.
  o.d0 = 2;
  o.d_max = 6;
  o.rho_deep = 0.2;
  EXPECT_EQ(ChainLength(o), 3);
  // Strict: p(2) = 0.25 is not > rho_deep = 0.25.
  o.rho_deep = 0.25;
  EXPECT_EQ(ChainLength(o), 2);
  o.rho_deep = 0.1;  // p(3) = 0.125 > 0.1 expands, p(4) = 0.0625 stops
  EXPECT_EQ(ChainLength(o), 4);
  // Hard limit: every node passes the other gates; the chain ends at D_max.
  o.rho_deep = 1e-6;
  EXPECT_EQ(ChainLength(o, &tr), 6);
  EXPECT_EQ(tr.stopped_depth_max, 1);
  EXPECT_EQ(tr.stopped_depth_gate, 0);
  o.d_max = 3;
  EXPECT_EQ(ChainLength(o), 3);
  // Early stopping, non-strict: p(3) = 0.125 >= rho_stop = 0.125 expands, p(4) < it stops.
  o.d0 = 7;
  o.d_max = 8;
  o.rho_stop = 0.125;
  o.rho_deep = 0.5;
  EXPECT_EQ(ChainLength(o, &tr), 4);
  EXPECT_EQ(tr.stopped_rho_stop, 1);
}

TEST(DynaTreeTest, PruningRemovesLowProbabilityLeaves) {
  // Root and every node: (1/2, 1/4, 1/8). c = 1/2 < tau_l = 0.6 -> B_max = 3 children.
  DynaTreeOptions o = Quiet();
  o.tau_h = 0.75;
  o.tau_l = 0.6;
  o.tau = 0.25;  // boundary: p = tau is kept (the rule is p < tau => prune)
  o.d0 = 1;
  o.d_max = 2;
  o.rho_stop = 0.01;
  o.rho_deep = 0.3;  // depth-1: a (p = 1/2) expands, b (1/4) is depth-gated
  {
    auto policy = MakeDyna(o);
    auto tree = RunPolicy(*policy, 0, Uniform({0.5f, 0.25f, 0.125f}));
    ASSERT_TRUE(tree.ok());
    const Tree& t = **tree;
    ASSERT_TRUE(ValidateTree(t).ok());
    // Kept: a (1/2), b (1/4), aa (1/4). Pruned (p < 1/4): c (1/8), ab (1/8), ac (1/16).
    EXPECT_EQ(t.tokens, (std::vector<int32_t>{0, 0, 1, 100}));
    EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 0, 1}));
    EXPECT_EQ(t.path_probs, (std::vector<double>{1.0, 0.5, 0.25, 0.25}));
    EXPECT_EQ(policy->last_trace().pruned, 3);
    for (double rho : t.path_probs) EXPECT_GE(rho, o.tau);
  }
  {
    // Algorithm 1 read literally: pruned candidates stay as never-expanded leaves.
    o.prune_mode = DynaTreePruneMode::kKeepAsLeaf;
    auto policy = MakeDyna(o);
    auto tree = RunPolicy(*policy, 0, Uniform({0.5f, 0.25f, 0.125f}));
    ASSERT_TRUE(tree.ok());
    const Tree& t = **tree;
    EXPECT_EQ(t.tokens, (std::vector<int32_t>{0, 0, 1, 2, 100, 101, 102}));
    EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 0, 0, 1, 1, 1}));
    EXPECT_EQ(policy->last_trace().pruned, 3);
    for (int i = 1; i < t.size(); ++i) {
      if (t.path_probs[t.parents[i]] < o.tau) ADD_FAILURE() << "node below tau was expanded";
    }
  }
}

TEST(DynaTreeTest, NodeBudgetIsNeverExceeded) {
  DynaTreeOptions o = Quiet();
  o.b_min = o.b_mid = o.b_max = 3;
  o.d0 = 3;
  o.d_max = 4;
  o.n_max = 7;
  auto policy = MakeDyna(o);
  auto tree = RunPolicy(*policy, 0, Uniform({0.3f, 0.3f, 0.3f}));
  ASSERT_TRUE(tree.ok());
  // BFS: 3 children of the root, then the first 4 of level 2 (all from node 1, one from node 2).
  EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 0, 1, 1, 1, 2}));
  EXPECT_TRUE(policy->last_trace().budget_hit);
  EXPECT_EQ(policy->stats().forwards, 2);  // no forward for a level that cannot add nodes

  for (int n_max : {1, 2, 5, 13, 40, 100}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      DynaTreeOptions w = DynaTreeOptions();
      w.n_max = n_max;
      w.b_min = 2;
      w.b_mid = 3;
      w.b_max = 4;
      w.tau = 1e-6;
      w.rho_stop = 1e-5;
      w.rho_deep = 1e-4;
      auto p = MakeDyna(w);
      fake::HashDrafter drafter;
      drafter.k = 5;
      drafter.seed = seed;
      auto t = RunPolicy(*p, 1, drafter);
      ASSERT_TRUE(t.ok());
      EXPECT_LE((*t)->num_draft(), n_max);
      EXPECT_TRUE(ValidateTree(**t).ok());
    }
  }
}

TEST(DynaTreeTest, MatchesAlgorithm1ReferenceOverGrid) {
  struct Thr {
    double h, l;
  };
  struct Br {
    int mn, md, mx;
  };
  struct Dep {
    int d0, dmax;
  };
  struct Rho {
    double stop, deep;
  };
  int cases = 0;
  NodeDistributions ws;
  for (Thr thr : {Thr{0.9, 0.4}, Thr{0.6, 0.2}, Thr{0.3, 0.1}}) {
    for (Br br : {Br{1, 2, 3}, Br{1, 1, 4}, Br{2, 2, 2}}) {
      for (Dep dep : {Dep{1, 2}, Dep{2, 4}, Dep{5, 8}}) {
        for (Rho rho : {Rho{0.01, 0.3}, Rho{1e-4, 0.05}}) {
          for (double tau : {1e-3, 0.02}) {
            for (auto mode : {DynaTreePruneMode::kRemoveLeaf, DynaTreePruneMode::kKeepAsLeaf}) {
              for (int n_max : {1, 10, 256}) {
                DynaTreeOptions o;
                SetShape(&o, thr.h, thr.l, br.mn, br.md, br.mx, dep.d0, dep.dmax);
                o.rho_stop = rho.stop;
                o.rho_deep = rho.deep;
                o.tau = tau;
                o.prune_mode = mode;
                o.n_max = n_max;
                o.window = 1;  // adjust after every step, so step 2 runs on adapted parameters
                o.eta_d = 1.5;
                o.eta_h = 0.2;
                o.eta_l = 0.1;
                auto policy = MakeDyna(o);
                ASSERT_NE(policy, nullptr);
                fake::HashDrafter drafter;
                drafter.k = 1 + cases % 5;
                drafter.seed = 500 + cases;
                drafter.levels = cases % 3 == 0 ? 16 : 0;
                for (int step = 0; step < 2; ++step) {
                  const DynaTreeState st = policy->state();
                  auto tree = RunPolicy(*policy, step, drafter, &ws);
                  ASSERT_TRUE(tree.ok()) << tree.status();
                  const Tree want =
                      ReferenceAlgorithm1(drafter, step, o, st.d0_used, st.tau_h, st.tau_l);
                  ASSERT_TRUE(ValidateTree(**tree).ok()) << ValidateTree(**tree);
                  ASSERT_EQ((*tree)->tokens, want.tokens) << "case " << cases << " step " << step;
                  ASSERT_EQ((*tree)->parents, want.parents);
                  ASSERT_EQ((*tree)->path_probs, want.path_probs);
                  ASSERT_LE((*tree)->num_draft(), n_max);
                  fake::ExpectPathProbsConsistent(**tree);
                  const int len = step == 0 ? policy->stats().last_depth : 0;
                  ASSERT_TRUE(policy->ObserveAcceptance(len).ok());
                }
                ++cases;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 3 * 3 * 2 * 2 * 2 * 3);
}

TEST(DynaTreeTest, HistoryAdaptationHandWorked) {
  DynaTreeOptions o;  // d0 = 5, d_max = 8, tau_h = 0.9, tau_l = 0.4
  o.window = 2;
  o.target_acceptance = 0.5;
  o.eta_d = 1.0;
  o.eta_h = 0.1;
  o.eta_l = 0.1;
  auto policy = MakeDyna(o);
  // Chain: c = 0.95 >= tau_h -> B_min = 1; p(d) = 0.95^d > rho_deep up to D_max = 8.
  const DrafterFn chain = Uniform({0.95f, 0.04f});
  auto step = [&](int accepted) {
    ASSERT_TRUE(RunPolicy(*policy, 0, chain).ok());
    ASSERT_EQ(policy->stats().last_depth, 8);
    ASSERT_TRUE(policy->ObserveAcceptance(accepted).ok());
  };
  step(8);  // a = 8 / 8 = 1; window not full yet: no adjustment
  EXPECT_EQ(policy->state().adjustments, 0);
  EXPECT_EQ(policy->state().d0, 5.0);
  step(8);  // a_bar = 1, a_bar - a* = 0.5
  EXPECT_EQ(policy->state().adjustments, 1);
  EXPECT_DOUBLE_EQ(policy->state().d0, 5.5);
  EXPECT_EQ(policy->state().d0_used, 6);
  EXPECT_DOUBLE_EQ(policy->state().tau_h, 0.85);
  EXPECT_DOUBLE_EQ(policy->state().tau_l, 0.35);
  step(0);  // window {1, 0}: a_bar = a*, nothing moves
  EXPECT_DOUBLE_EQ(policy->state().window_mean, 0.5);
  EXPECT_DOUBLE_EQ(policy->state().d0, 5.5);
  step(0);  // window {0, 0}: a_bar - a* = -0.5
  EXPECT_DOUBLE_EQ(policy->state().d0, 5.0);
  EXPECT_EQ(policy->state().d0_used, 5);
  EXPECT_NEAR(policy->state().tau_h, 0.9, 1e-12);
  EXPECT_NEAR(policy->state().tau_l, 0.4, 1e-12);
  EXPECT_EQ(policy->state().adjustments, 3);

  policy->ResetHistory();
  EXPECT_EQ(policy->state().window_fill, 0);
  EXPECT_EQ(policy->state().tau_h, 0.9);

  // kNodeFraction: a = L / n.
  o.statistic = DynaTreeAcceptanceStatistic::kNodeFraction;
  o.window = 1;
  auto nodes = MakeDyna(o);
  ASSERT_TRUE(RunPolicy(*nodes, 0, chain).ok());
  ASSERT_TRUE(nodes->ObserveAcceptance(2).ok());
  EXPECT_DOUBLE_EQ(nodes->state().window_mean, 2.0 / 8.0);
  EXPECT_DOUBLE_EQ(nodes->state().d0, 5.0 + (0.25 - 0.5));
}

TEST(DynaTreeTest, HistoryAdaptationMovesInTheRightDirection) {
  DynaTreeOptions o;
  o.b_min = o.b_mid = o.b_max = 1;  // chains, whatever the thresholds do
  o.tau = 1e-6;                     // no pruning: p(7) = 1/128 would fall below the default tau
  o.rho_stop = 1e-4;
  o.rho_deep = 0.3;  // p(d) = 2^-d: only depth 1 passes the gate past D_0
  o.window = 4;
  const DrafterFn chain = Uniform({0.5f, 0.25f});
  auto policy = MakeDyna(o);
  ASSERT_TRUE(RunPolicy(*policy, 0, chain).ok());
  EXPECT_EQ(policy->tree().num_draft(), 5);  // = D_0
  // A window of full acceptances: more aggressive (deeper, lower thresholds).
  double last_d0 = policy->state().d0, last_h = policy->state().tau_h;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(RunPolicy(*policy, 0, chain).ok());
    ASSERT_TRUE(policy->ObserveAcceptance(policy->stats().last_depth).ok());
    EXPECT_GE(policy->state().d0, last_d0);
    EXPECT_LE(policy->state().tau_h, last_h);
    last_d0 = policy->state().d0;
    last_h = policy->state().tau_h;
  }
  EXPECT_EQ(policy->state().d0_used, o.d_max - 1);  // clipped at D_max - 1
  EXPECT_LT(policy->state().tau_h, o.tau_h);
  EXPECT_LT(policy->state().tau_l, o.tau_l);
  ASSERT_TRUE(RunPolicy(*policy, 0, chain).ok());
  EXPECT_EQ(policy->tree().num_draft(), o.d_max - 1);
  ASSERT_TRUE(policy->ObserveAcceptance(0).ok());
  // A window of rejections: more conservative.
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(RunPolicy(*policy, 0, chain).ok());
    ASSERT_TRUE(policy->ObserveAcceptance(0).ok());
  }
  EXPECT_EQ(policy->state().d0_used, 1);  // clipped at 1
  EXPECT_GT(policy->state().tau_h, o.tau_h);
  EXPECT_LE(policy->state().tau_h, 1.0);
  EXPECT_LE(policy->state().tau_l, policy->state().tau_h);
  ASSERT_TRUE(RunPolicy(*policy, 0, chain).ok());
  EXPECT_EQ(policy->tree().num_draft(), 2);  // depth 1 always passes p = 0.5 > rho_deep

  // Disabled: nothing moves.
  o.history_adaptation = false;
  auto frozen = MakeDyna(o);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(RunPolicy(*frozen, 0, chain).ok());
    ASSERT_TRUE(frozen->ObserveAcceptance(frozen->stats().last_depth).ok());
  }
  EXPECT_EQ(frozen->state().d0, 5.0);
  EXPECT_EQ(frozen->state().adjustments, 0);
}

TEST(DynaTreeTest, CountersAndDefaults) {
  auto policy = MakeDyna(DynaTreeOptions());
  fake::HashDrafter drafter;
  drafter.k = 8;
  NodeDistributions ws;
  int64_t nodes = 0, expansions = 0;
  for (int s = 0; s < 10; ++s) {
    drafter.seed = s;
    auto tree = RunPolicy(*policy, s, drafter, &ws);
    ASSERT_TRUE(tree.ok());
    ASSERT_TRUE(ValidateTree(**tree).ok());
    nodes += (*tree)->num_draft();
    expansions += policy->last_trace().expanded;
    EXPECT_LE(policy->stats().last_depth, 8);
    ASSERT_TRUE(policy->ObserveAcceptance(std::min(2, policy->stats().last_depth)).ok());
  }
  EXPECT_EQ(policy->stats().steps, 10);
  EXPECT_EQ(policy->stats().tree_nodes, nodes);
  EXPECT_EQ(policy->stats().drafted_nodes, nodes);
  EXPECT_GE(policy->stats().expansions, expansions);
  EXPECT_GT(nodes, 10);
}

TEST(DynaTreeTest, RejectsOptionsOutsideThePapersRanges) {
  struct Case {
    std::function<void(DynaTreeOptions&)> set;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {[](DynaTreeOptions& o) { o.b_min = 0; }, "b_min = 0"},
      {[](DynaTreeOptions& o) { o.b_mid = 4; }, "b_max = 3: must be in [b_mid = 4"},
      {[](DynaTreeOptions& o) { o.tau_l = 0.95; }, "tau_l = 0.95: must be in (0, tau_h = 0.9)"},
      {[](DynaTreeOptions& o) { o.tau_h = 1.0; }, "tau_h = 1: must be in (0, 1)"},
      {[](DynaTreeOptions& o) { o.d0 = 8; }, "d0 = 8: must be in [1, d_max = 8)"},
      {[](DynaTreeOptions& o) { o.d_max = 1; }, "d_max = 1"},
      {[](DynaTreeOptions& o) { o.rho_stop = 0.5; }, "rho_stop = 0.5: must be in (0, rho_deep"},
      {[](DynaTreeOptions& o) { o.tau = 0; }, "tau = 0: must be in (0, 1)"},
      {[](DynaTreeOptions& o) { o.n_max = 0; }, "n_max = 0"},
      {[](DynaTreeOptions& o) { o.window = 0; }, "window = 0"},
      {[](DynaTreeOptions& o) { o.target_acceptance = 1; }, "target_acceptance = 1"},
      {[](DynaTreeOptions& o) { o.eta_h = -1; }, "eta_h = -1"},
  };
  for (const Case& c : cases) {
    DynaTreeOptions o;
    c.set(o);
    const absl::Status s = ValidateDynaTreeOptions(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.needle;
    EXPECT_NE(s.message().find(c.needle), absl::string_view::npos) << s;
  }
  EXPECT_TRUE(ValidateDynaTreeOptions(DynaTreeOptions()).ok());
}

}  // namespace
}  // namespace specplan::planner
