#include "planner/policies/best_first.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

using planner::testing::RandomMarginalsWith;
using ::testing::HasSubstr;

// Fake verification latency: any function of s (context ignored).
class FakeLatency : public costmodel::LatencyModel {
 public:
  explicit FakeLatency(std::function<double(int64_t)> f) : f_(std::move(f)) {}
  double VerifySeconds(int64_t s, int64_t /*c*/) const override { return f_(s); }
  std::string Kind() const override { return "fake"; }

 private:
  std::function<double(int64_t)> f_;
};

// Tokens of position d are a random permutation of 10d .. 10d+k-1; with `zero_frac` > 0 about
// that fraction of the probabilities are 0.
Marginals RandomMarginals(std::mt19937& rng, int gamma, int k, double zero_frac = 0.0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return RandomMarginalsWith(
      rng, /*root_token=*/3, gamma, k, [&] { return u(rng) < zero_frac ? 0.0 : u(rng); },
      [&](int d) {
        std::vector<int32_t> toks(k);
        std::iota(toks.begin(), toks.end(), 10 * d);
        std::shuffle(toks.begin(), toks.end(), rng);
        return toks;
      });
}

// Explicit lattice: node 0 = root, parent/rho per node. Brute force over all subsets.
struct ExplicitLattice {
  std::vector<int> parent;
  std::vector<double> rho;
};

ExplicitLattice BuildLattice(const Marginals& m) {
  ExplicitLattice l;
  l.parent = {-1};
  l.rho = {1.0};
  std::vector<int> level = {0};
  for (int d = 0; d < m.gamma; ++d) {
    std::vector<int> next;
    for (int v : level) {
      for (int r = 0; r < m.k; ++r) {
        l.parent.push_back(v);
        l.rho.push_back(l.rho[v] * static_cast<double>(m.prob(d, r)));
        next.push_back(static_cast<int>(l.parent.size()) - 1);
      }
    }
    level = next;
  }
  return l;
}

// best[n] = max over prefix-closed trees with n draft nodes of sum rho (root included).
std::vector<double> BruteForceBest(const ExplicitLattice& l) {
  const int m = static_cast<int>(l.parent.size()) - 1;  // draft nodes
  std::vector<double> best(m + 1, -1.0);
  for (uint32_t mask = 0; mask < (1u << m); ++mask) {
    bool closed = true;
    double a = 1.0;
    for (int i = 1; i <= m && closed; ++i) {
      if (!(mask >> (i - 1) & 1)) continue;
      const int p = l.parent[i];
      if (p != 0 && !(mask >> (p - 1) & 1)) closed = false;
      a += l.rho[i];
    }
    if (!closed) continue;
    const int n = __builtin_popcount(mask);
    best[n] = std::max(best[n], a);
  }
  return best;
}

void ExpectWellFormed(const Marginals& m, const BestFirstPlan& plan) {
  ASSERT_TRUE(ValidateTree(plan.tree).ok()) << ValidateTree(plan.tree);
  ASSERT_EQ(plan.tree.num_draft(), plan.n);
  double a = 1.0;
  for (int i = 1; i < plan.tree.size(); ++i) {
    const int p = plan.tree.parents[i];
    const int d = plan.tree.depths[p];  // row of the child's candidates
    // Token is a candidate of row d, and rho = rho(parent) * its prob.
    int rank = -1;
    for (int r = 0; r < m.k; ++r) {
      if (m.token(d, r) == plan.tree.tokens[i]) rank = r;
    }
    ASSERT_GE(rank, 0);
    EXPECT_DOUBLE_EQ(plan.tree.path_probs[i], plan.tree.path_probs[p] * m.prob(d, rank));
    if (i > 1) {
      EXPECT_LE(plan.tree.path_probs[i], plan.tree.path_probs[i - 1]);  // pop order
    }
    a += plan.tree.path_probs[i];
  }
  EXPECT_NEAR(plan.expected_accepted, a, 1e-12);
  // No two siblings share a token.
  for (int i = 1; i < plan.tree.size(); ++i) {
    for (int j = 1; j < i; ++j) {
      if (plan.tree.parents[i] == plan.tree.parents[j]) {
        EXPECT_NE(plan.tree.tokens[i], plan.tree.tokens[j]);
      }
    }
  }
}

TEST(BestFirstTest, FixedBudgetMatchesBruteForceOptimum) {
  std::mt19937 rng(11);
  const std::vector<std::pair<int, int>> shapes = {{1, 1}, {1, 3}, {2, 2}, {2, 3},
                                                   {3, 2}, {4, 1}, {1, 8}, {3, 1}};
  BestFirstPlanner planner;
  BestFirstPlan plan;
  for (auto [gamma, k] : shapes) {
    for (int rep = 0; rep < 6; ++rep) {
      const Marginals m = RandomMarginals(rng, gamma, k, rep % 3 == 2 ? 0.3 : 0.0);
      const ExplicitLattice l = BuildLattice(m);
      const std::vector<double> best = BruteForceBest(l);
      const int lattice = static_cast<int>(l.parent.size()) - 1;
      ASSERT_EQ(LatticeSize(gamma, k), lattice);
      for (int n = 0; n <= lattice + 2; ++n) {
        ASSERT_TRUE(planner.PlanFixed(m, n, &plan).ok());
        const int want_n = std::min(n, lattice);
        ASSERT_EQ(plan.n, want_n) << "gamma=" << gamma << " k=" << k << " n=" << n;
        EXPECT_EQ(plan.lattice_exhausted, n > lattice);
        EXPECT_NEAR(plan.expected_accepted, best[want_n], 1e-9)
            << "gamma=" << gamma << " k=" << k << " n=" << n;
        EXPECT_TRUE(std::isnan(plan.speedup));
        EXPECT_TRUE(plan.curve.empty());
        ExpectWellFormed(m, plan);
      }
    }
  }
}

TEST(BestFirstTest, NestedChainAndHandExample) {
  Marginals m;
  m.root_token = 1;
  m.gamma = 2;
  m.k = 2;
  m.tokens = {10, 11, 20, 21};
  m.probs = {0.6f, 0.3f, 0.9f, 0.05f};
  BestFirstPlanner planner;
  BestFirstPlan plan;
  ASSERT_TRUE(planner.PlanFixed(m, 3, &plan).ok());
  // rho: [10]=.6, [10,20]=.54, [11]=.3, [11,20]=.27, [10,21]=.03, [11,21]=.015
  EXPECT_EQ(plan.tree.tokens, (std::vector<int32_t>{1, 10, 20, 11}));
  EXPECT_EQ(plan.tree.parents, (std::vector<int32_t>{-1, 0, 1, 0}));
  EXPECT_EQ(plan.tree.depths, (std::vector<int32_t>{0, 1, 2, 1}));
  EXPECT_NEAR(plan.expected_accepted, 1 + 0.6 + 0.54 + 0.3, 1e-6);
  // T_n is a prefix of T_{n+1}.
  BestFirstPlan big;
  ASSERT_TRUE(planner.PlanFixed(m, 6, &big).ok());
  EXPECT_EQ(big.tree.tokens, (std::vector<int32_t>{1, 10, 20, 11, 20, 21, 21}));
  EXPECT_TRUE(
      std::equal(plan.tree.parents.begin(), plan.tree.parents.end(), big.tree.parents.begin()));
}

TEST(BestFirstTest, ControllerEqualsScanArgmaxForConvexCost) {
  std::mt19937 rng(12);
  BestFirstPlanner planner;
  BestFirstPlan ctl, scan;
  int nontrivial = 0;
  for (int rep = 0; rep < 40; ++rep) {
    const double a = 0.01 + 0.01 * (rep % 5);
    const double b = 1e-5 * (1 + rep % 7);
    const double q = 1e-7 * (rep % 4);
    FakeLatency lat([=](int64_t s) { return a + b * s + q * s * s; });  // convex in s
    const costmodel::CycleCost cost(&lat, testing::ParallelDrafter(0.002 * (rep % 3)), 0.0005,
                                    1024);
    const Marginals m = RandomMarginals(rng, 8 + rep % 9, 2 + rep % 7);
    BestFirstOptions o = testing::BudgetOptions(BudgetMode::kController, 512);
    ASSERT_TRUE(planner.Plan(m, o, &cost, &ctl).ok());
    o.mode = BudgetMode::kScan;
    ASSERT_TRUE(planner.Plan(m, o, &cost, &scan).ok());
    ExpectWellFormed(m, ctl);
    ASSERT_EQ(scan.curve.size(),
              static_cast<size_t>(std::min<int64_t>(513, LatticeSize(m.gamma, m.k) + 1)));
    double best = -1;
    int best_n = -1;
    for (const auto& p : scan.curve) {
      EXPECT_NEAR(p.cycle_s, cost.TreeSeconds(p.n, 0), 1e-15);  // n = 0: the plain step
      EXPECT_NEAR(p.speedup, p.expected_accepted * lat.VerifySeconds(1, 0) / p.cycle_s, 1e-12);
      if (p.speedup > best) {
        best = p.speedup;
        best_n = p.n;
      }
    }
    EXPECT_EQ(scan.n, best_n);
    EXPECT_EQ(ctl.n, best_n) << "rep " << rep;
    EXPECT_DOUBLE_EQ(ctl.speedup, best);
    EXPECT_EQ(ctl.tree.tokens, scan.tree.tokens);
    // Controller curve: 0..n*+1 with the last point decreasing (unless it hit the end).
    ASSERT_GE(ctl.curve.size(), static_cast<size_t>(ctl.n + 1));
    for (size_t i = 0; i < ctl.curve.size(); ++i) EXPECT_EQ(ctl.curve[i].n, static_cast<int>(i));
    if (ctl.curve.size() == static_cast<size_t>(ctl.n + 2)) {
      EXPECT_LT(ctl.curve.back().speedup, ctl.curve[ctl.n].speedup);
    }
    nontrivial += ctl.n > 0 && ctl.n < 512;
  }
  EXPECT_GT(nontrivial, 10);  // the grid exercises interior optima
}

TEST(BestFirstTest, ScanFindsArgmaxUnderSteppedCostWhereControllerStopsEarly) {
  // Verification cost jumps every 16 tokens (tile quantisation); flat in between.
  FakeLatency lat([](int64_t s) { return 0.010 + 0.001 * ((s - 1) / 16); });
  const costmodel::CycleCost cost(&lat, costmodel::DrafterCost{}, 0.0, 0);
  // A confident chain: Â keeps growing fast enough to pay for later steps.
  Marginals m;
  m.root_token = 0;
  m.gamma = 48;
  m.k = 4;
  for (int d = 0; d < m.gamma; ++d) {
    for (int r = 0; r < m.k; ++r) m.tokens.push_back(100 * d + r);
    for (float p : {0.98f, 0.01f, 0.005f, 0.005f}) m.probs.push_back(p);
  }
  BestFirstPlanner planner;
  BestFirstPlan ctl, scan;
  BestFirstOptions o = testing::BudgetOptions(BudgetMode::kController, 128);
  ASSERT_TRUE(planner.Plan(m, o, &cost, &ctl).ok());
  o.mode = BudgetMode::kScan;
  ASSERT_TRUE(planner.Plan(m, o, &cost, &scan).ok());
  double best = -1;
  for (const auto& p : scan.curve) best = std::max(best, p.speedup);
  EXPECT_DOUBLE_EQ(scan.speedup, best);
  EXPECT_EQ(ctl.n, 15);  // stops right before the first step (s = 17)
  EXPECT_GT(scan.n, ctl.n);
  EXPECT_GT(scan.speedup, ctl.speedup);
  EXPECT_EQ(scan.curve[scan.n].speedup, scan.speedup);
}

TEST(BestFirstTest, ControllerCanDeclineToDraftAndHonoursLarOverride) {
  FakeLatency lat([](int64_t s) { return 0.01 + 0.01 * s; });  // very expensive per token
  const costmodel::CycleCost cost(&lat, costmodel::DrafterCost{}, 0.0, 0);
  std::mt19937 rng(5);
  Marginals m = RandomMarginals(rng, 4, 4);
  for (auto& p : m.probs) p *= 0.1f;
  BestFirstPlanner planner;
  BestFirstPlan plan;
  BestFirstOptions o;
  o.n_max = 32;
  ASSERT_TRUE(planner.Plan(m, o, &cost, &plan).ok());
  EXPECT_EQ(plan.n, 0);
  EXPECT_EQ(plan.tree.size(), 1);
  // The first decrease runs over n >= 1 (S(2) < S(1)), then n* = 1 is compared with n = 0.
  EXPECT_EQ(plan.curve.size(), 3u);
  EXPECT_DOUBLE_EQ(plan.expected_accepted, 1.0);
  EXPECT_DOUBLE_EQ(plan.l_ar_s, 0.02);  // T_verify(1, c)
  EXPECT_DOUBLE_EQ(plan.speedup, 1.0);  // n = 0 is the plain step: S(0) = 1
  o.l_ar_s = 0.04;
  ASSERT_TRUE(planner.Plan(m, o, &cost, &plan).ok());
  EXPECT_DOUBLE_EQ(plan.l_ar_s, 0.04);
  // n = 0 drafts nothing: its cycle is the plain step L_AR, whatever L_AR is given.
  EXPECT_DOUBLE_EQ(plan.curve[0].cycle_s, 0.04);
  EXPECT_DOUBLE_EQ(plan.curve[0].speedup, 1.0);
  // Fixed mode with a cost fills the summary for the chosen n.
  o.mode = BudgetMode::kFixed;
  o.n_max = 5;
  o.l_ar_s = 0;
  ASSERT_TRUE(planner.Plan(m, o, &cost, &plan).ok());
  EXPECT_EQ(plan.n, 5);
  EXPECT_DOUBLE_EQ(plan.cycle_s, cost.Seconds(5));
  EXPECT_NEAR(plan.speedup, plan.expected_accepted * 0.02 / cost.Seconds(5), 1e-15);
}

// acceptance_scale s prices Â' = 1 + s (Â - 1): the pop order stays, S(n) is computed from Â',
// the reported Â is the raw surrogate, and s > 1 (an under-confident drafter) stops later.
TEST(BestFirstTest, AcceptanceScaleMovesOnlyTheStop) {
  std::mt19937 rng(31);
  BestFirstPlanner planner;
  BestFirstPlan raw, cal;
  int later = 0;
  for (int rep = 0; rep < 30; ++rep) {
    FakeLatency lat([=](int64_t s) { return 0.01 + 2e-4 * s + 2e-6 * s * s; });
    const costmodel::CycleCost cost(&lat, testing::ParallelDrafter(0.001), 0.0, 512);
    const Marginals m = RandomMarginals(rng, 6 + rep % 5, 3 + rep % 4);
    BestFirstOptions o = testing::BudgetOptions(BudgetMode::kScan, 256);
    ASSERT_TRUE(planner.Plan(m, o, &cost, &raw).ok());
    o.acceptance_scale = 2.0;
    ASSERT_TRUE(planner.Plan(m, o, &cost, &cal).ok());
    ASSERT_EQ(raw.curve.size(), cal.curve.size());
    for (size_t i = 0; i < cal.curve.size(); ++i) {
      const CurvePoint& p = cal.curve[i];
      EXPECT_DOUBLE_EQ(p.expected_accepted, raw.curve[i].expected_accepted);
      EXPECT_NEAR(p.speedup, (1 + 2.0 * (p.expected_accepted - 1)) * cal.l_ar_s / p.cycle_s, 1e-12);
    }
    EXPECT_EQ(std::vector<TokenId>(cal.tree.tokens.begin(), cal.tree.tokens.begin() + raw.n + 1),
              std::vector<TokenId>(raw.tree.tokens.begin(), raw.tree.tokens.begin() + raw.n + 1))
        << "rep " << rep;
    EXPECT_GE(cal.n, raw.n);
    EXPECT_DOUBLE_EQ(cal.expected_accepted, cal.curve[cal.n].expected_accepted);
    later += cal.n > raw.n;
    // s = 1 is the default, bit for bit.
    o.acceptance_scale = 1.0;
    ASSERT_TRUE(planner.Plan(m, o, &cost, &cal).ok());
    EXPECT_EQ(cal.n, raw.n);
    EXPECT_EQ(cal.speedup, raw.speedup);
  }
  EXPECT_GT(later, 10);
}

TEST(BestFirstTest, RejectsBadInput) {
  std::mt19937 rng(6);
  Marginals m = RandomMarginals(rng, 2, 2);
  BestFirstPlanner planner;
  BestFirstPlan plan;
  BestFirstOptions o;
  EXPECT_THAT(std::string(planner.Plan(m, o, nullptr, &plan).message()), HasSubstr("cost"));
  o.mode = BudgetMode::kFixed;
  o.n_max = -1;
  EXPECT_THAT(std::string(planner.Plan(m, o, nullptr, &plan).message()), HasSubstr("n_max = -1"));
  o.n_max = 4;
  for (double s : {0.0, -1.0, 65.0, std::nan("")}) {
    o.acceptance_scale = s;
    EXPECT_THAT(std::string(planner.Plan(m, o, nullptr, &plan).message()),
                HasSubstr("acceptance_scale = "))
        << s;
  }
  o.acceptance_scale = 1;
  m.probs[3] = 2.0f;
  EXPECT_THAT(std::string(planner.Plan(m, o, nullptr, &plan).message()),
              HasSubstr("probs[1][1] = 2"));
}

TEST(BestFirstTest, ReuseDoesNotReallocate) {
  std::mt19937 rng(7);
  const Marginals m = RandomMarginals(rng, 16, 8);
  FakeLatency lat([](int64_t s) { return 0.02 + 1e-6 * s; });
  const costmodel::CycleCost cost(&lat, costmodel::DrafterCost{}, 0.0, 0);
  BestFirstPlanner planner;
  BestFirstPlan plan;
  BestFirstOptions o = testing::BudgetOptions(BudgetMode::kScan, 1024);
  ASSERT_TRUE(planner.Plan(m, o, &cost, &plan).ok());
  const auto* tokens = plan.tree.tokens.data();
  const auto* curve = plan.curve.data();
  for (auto mode : {BudgetMode::kController, BudgetMode::kScan, BudgetMode::kFixed}) {
    o.mode = mode;
    ASSERT_TRUE(planner.Plan(m, o, &cost, &plan).ok());
    EXPECT_EQ(plan.tree.tokens.data(), tokens);
    if (mode != BudgetMode::kFixed) {
      EXPECT_EQ(plan.curve.data(), curve);
    }
  }
}

}  // namespace
}  // namespace specplan::planner
