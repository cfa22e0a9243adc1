#include "planner/policies/path_conditioned.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "tests/planner/fake_drafter.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

using planner::testing::MarginalsProvider;
using planner::testing::RandomMarginalsWith;
using ::testing::HasSubstr;

class LinearLatency : public costmodel::LatencyModel {
 public:
  LinearLatency(double a, double b, double q = 0) : a_(a), b_(b), q_(q) {}
  double VerifySeconds(int64_t s, int64_t) const override { return a_ + b_ * s + q_ * s * s; }
  std::string Kind() const override { return "fake"; }

 private:
  double a_, b_, q_;
};

// Tokens of position d are 1000d + 7r + 3 for rank r.
Marginals RandomMarginals(std::mt19937& rng, int gamma, int k) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return RandomMarginalsWith(
      rng, /*root_token=*/1, gamma, k, [&] { return u(rng); },
      [k](int d) {
        std::vector<int32_t> toks(k);
        for (int r = 0; r < k; ++r) toks[r] = 1000 * d + 7 * r + 3;
        return toks;
      });
}

// Path-dependent: a deterministic pseudo-random top-k distribution keyed by the path's tokens.
void HashedDistribution(const std::vector<int32_t>& path, int k, uint32_t seed,
                        std::vector<TokenProb>* out) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (int32_t t : path) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  std::mt19937 rng(static_cast<uint32_t>(h ^ (h >> 32)));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> p(k);
  double sum = 0;
  for (auto& x : p) sum += (x = u(rng) * u(rng));
  const double total = 0.2 + 0.8 * u(rng);
  for (auto& x : p) x = x / sum * total;
  std::sort(p.begin(), p.end(), std::greater<double>());
  out->clear();
  for (int r = 0; r < k; ++r) {
    out->push_back({static_cast<int32_t>(10 * r + (h % 7)), static_cast<float>(p[r])});
  }
}

class HashedProvider : public DistributionProvider {
 public:
  explicit HashedProvider(uint32_t seed) : seed_(seed) {}
  absl::Status Expand(const Tree& tree, absl::Span<const int32_t> nodes, int k,
                      absl::Span<TokenProb> out, absl::Span<int32_t> counts) override {
    std::vector<TokenProb> dist;
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::vector<int32_t> path;
      for (int v = nodes[i]; v >= 0; v = tree.parents[v]) path.push_back(tree.tokens[v]);
      std::reverse(path.begin(), path.end());
      HashedDistribution(path, k, seed_, &dist);
      counts[i] = k;
      for (int r = 0; r < k; ++r) out[i * k + r] = dist[r];
    }
    return absl::OkStatus();
  }

 private:
  uint32_t seed_;
};

TEST(PathConditionedTest, PathIndependentProviderReproducesMarginalsBestFirst) {
  std::mt19937 rng(21);
  BestFirstPlanner bf;
  PathConditionedPlanner pc;
  BestFirstPlan want, got;
  for (int rep = 0; rep < 24; ++rep) {
    const Marginals m = RandomMarginals(rng, 1 + rep % 10, 1 + rep % 6);
    LinearLatency lat(0.01, 2e-5 * (1 + rep % 3), 1e-8 * (rep % 2));
    const costmodel::CycleCost cost(&lat, testing::ParallelDrafter(0.001), 0.0, 512);
    for (auto mode : {BudgetMode::kFixed, BudgetMode::kController, BudgetMode::kScan}) {
      const BestFirstOptions bo = testing::BudgetOptions(mode, 3 + 17 * (rep % 5));
      ASSERT_TRUE(bf.Plan(m, bo, &cost, &want).ok());
      PathConditionedOptions po;
      po.budget = bo;
      po.gamma = m.gamma;
      po.k = m.k;
      MarginalsProvider provider(m);
      ASSERT_TRUE(pc.Run(m.root_token, po, &cost, provider, &got).ok());
      ASSERT_EQ(got.tree.tokens, want.tree.tokens) << "rep " << rep;
      ASSERT_EQ(got.tree.parents, want.tree.parents);
      ASSERT_EQ(got.tree.path_probs, want.tree.path_probs);
      EXPECT_EQ(got.n, want.n);
      EXPECT_DOUBLE_EQ(got.expected_accepted, want.expected_accepted);
      EXPECT_DOUBLE_EQ(got.speedup, want.speedup);
      ASSERT_EQ(got.curve.size(), want.curve.size());
      if (mode != BudgetMode::kController) {
        // One depth level per request, in increasing depth; at most gamma requests.
        ASSERT_LE(static_cast<int>(provider.request_depths.size()), m.gamma);
        for (size_t r = 0; r < provider.request_depths.size(); ++r) {
          for (int d : provider.request_depths[r]) EXPECT_EQ(d, static_cast<int>(r));
        }
        // A request never holds more than the budget's worth of nodes.
        for (const auto& req : provider.request_depths) {
          EXPECT_LE(static_cast<int>(req.size()), std::max(1, bo.n_max));
        }
      }
    }
  }
}

// Explicit lattice from the hashed provider; brute force over prefix-closed subsets.
void BuildHashedLattice(int gamma, int k, uint32_t seed, int32_t root_token,
                        std::vector<int>* parent, std::vector<double>* rho) {
  std::vector<std::vector<int32_t>> paths = {{root_token}};
  *parent = {-1};
  *rho = {1.0};
  std::vector<TokenProb> dist;
  for (size_t v = 0; v < paths.size(); ++v) {
    if (static_cast<int>(paths[v].size()) - 1 >= gamma) continue;
    HashedDistribution(paths[v], k, seed, &dist);
    for (int r = 0; r < k; ++r) {
      auto p = paths[v];
      p.push_back(dist[r].token);
      paths.push_back(p);
      parent->push_back(static_cast<int>(v));
      rho->push_back((*rho)[v] * static_cast<double>(dist[r].prob));
    }
  }
}

TEST(PathConditionedTest, PathDependentProviderMatchesBruteForce) {
  PathConditionedPlanner pc;
  BestFirstPlan plan;
  const std::vector<std::pair<int, int>> shapes = {{1, 3}, {2, 2}, {2, 3}, {3, 2}, {4, 1}};
  for (auto [gamma, k] : shapes) {
    for (uint32_t seed = 0; seed < 6; ++seed) {
      std::vector<int> parent;
      std::vector<double> rho;
      BuildHashedLattice(gamma, k, seed, /*root_token=*/5, &parent, &rho);
      const int m = static_cast<int>(parent.size()) - 1;
      std::vector<double> best(m + 1, -1.0);
      for (uint32_t mask = 0; mask < (1u << m); ++mask) {
        bool closed = true;
        double a = 1.0;
        for (int i = 1; i <= m; ++i) {
          if (!(mask >> (i - 1) & 1)) continue;
          if (parent[i] != 0 && !(mask >> (parent[i] - 1) & 1)) closed = false;
          a += rho[i];
        }
        if (closed) best[__builtin_popcount(mask)] = std::max(best[__builtin_popcount(mask)], a);
      }
      for (int n = 0; n <= m + 1; ++n) {
        PathConditionedOptions po;
        po.budget.mode = BudgetMode::kFixed;
        po.budget.n_max = n;
        po.gamma = gamma;
        po.k = k;
        HashedProvider provider(seed);
        ASSERT_TRUE(pc.Run(5, po, nullptr, provider, &plan).ok());
        ASSERT_TRUE(ValidateTree(plan.tree).ok());
        ASSERT_EQ(plan.n, std::min(n, m));
        EXPECT_NEAR(plan.expected_accepted, best[plan.n], 1e-9)
            << "gamma=" << gamma << " k=" << k << " seed=" << seed << " n=" << n;
        // rho is the product of the path-conditioned probabilities.
        std::vector<TokenProb> dist;
        for (int i = 1; i < plan.tree.size(); ++i) {
          std::vector<int32_t> path;
          for (int v = plan.tree.parents[i]; v >= 0; v = plan.tree.parents[v]) {
            path.push_back(plan.tree.tokens[v]);
          }
          std::reverse(path.begin(), path.end());
          HashedDistribution(path, k, seed, &dist);
          double q = -1;
          for (const auto& e : dist) {
            if (e.token == plan.tree.tokens[i]) q = e.prob;
          }
          EXPECT_DOUBLE_EQ(plan.tree.path_probs[i], plan.tree.path_probs[plan.tree.parents[i]] * q);
        }
      }
    }
  }
}

TEST(PathConditionedTest, ControllerOnPathDependentProviderEqualsScanArgmax) {
  LinearLatency lat(0.01, 1e-4, 2e-7);
  const costmodel::CycleCost cost(&lat, costmodel::DrafterCost{}, 0.0, 0);
  PathConditionedPlanner pc;
  BestFirstPlan ctl, scan;
  for (uint32_t seed = 0; seed < 10; ++seed) {
    PathConditionedOptions po;
    po.budget.n_max = 200;
    po.gamma = 12;
    po.k = 4;
    HashedProvider provider(seed);
    po.budget.mode = BudgetMode::kController;
    ASSERT_TRUE(pc.Run(3, po, &cost, provider, &ctl).ok());
    const int ctl_expanded = pc.num_expanded();
    po.budget.mode = BudgetMode::kScan;
    ASSERT_TRUE(pc.Run(3, po, &cost, provider, &scan).ok());
    EXPECT_EQ(ctl.n, scan.n) << seed;
    EXPECT_EQ(ctl.tree.tokens, scan.tree.tokens);
    EXPECT_DOUBLE_EQ(ctl.speedup, scan.speedup);
    EXPECT_LE(ctl_expanded, pc.num_expanded());
  }
}

TEST(PathConditionedTest, StepLoopValidatesReplies) {
  PathConditionedPlanner pc;
  PathConditionedOptions po;
  po.budget.mode = BudgetMode::kFixed;
  po.budget.n_max = 4;
  po.gamma = 2;
  po.k = 2;
  ASSERT_TRUE(pc.Begin(9, po, nullptr).ok());
  ASSERT_FALSE(pc.done());
  const PathRequest& req = pc.NextRequest();
  ASSERT_EQ(req.nodes.size(), 1u);
  EXPECT_EQ(req.nodes[0], 0);
  EXPECT_EQ(req.k, 2);
  BestFirstPlan plan;
  EXPECT_FALSE(pc.Finish(&plan).ok());
  std::vector<TokenProb> d = {{4, 0.5f}, {6, 0.6f}};
  std::vector<int32_t> c = {2};
  EXPECT_THAT(std::string(pc.Provide(d, c).message()), HasSubstr("dists[0][1].prob = 0.6"));
  d = {{4, 0.5f}, {4, 0.2f}};
  EXPECT_THAT(std::string(pc.Provide(d, c).message()), HasSubstr("dists[0][1].token = 4"));
  d = {{4, 0.5f}, {6, 1.5f}};
  c = {1};  // entries beyond counts are ignored
  ASSERT_TRUE(pc.Provide(d, c).ok());
  EXPECT_THAT(std::string(pc.Provide(d, std::vector<int32_t>{1, 1}).message()),
              HasSubstr("counts: 2 entries, expected 1"));
  // Root has one child (token 4); now its distribution is requested.
  ASSERT_FALSE(pc.done());
  ASSERT_EQ(pc.NextRequest().nodes.size(), 1u);
  EXPECT_EQ(pc.NextRequest().tree->tokens[pc.NextRequest().nodes[0]], 4);
  d = {{8, 0.9f}, {2, 0.1f}};
  c = {2};
  ASSERT_TRUE(pc.Provide(d, c).ok());
  ASSERT_TRUE(pc.done());  // depth 2 = gamma: leaves
  ASSERT_TRUE(pc.Finish(&plan).ok());
  EXPECT_EQ(plan.tree.tokens, (std::vector<int32_t>{9, 4, 8, 2}));
  EXPECT_EQ(plan.n, 3);
  EXPECT_TRUE(plan.lattice_exhausted);
  EXPECT_NEAR(plan.expected_accepted, 1 + 0.5 + 0.45 + 0.05, 1e-6);
  EXPECT_EQ(pc.num_requests(), 2);
  // Bad options.
  po.gamma = 0;
  EXPECT_THAT(std::string(pc.Begin(9, po, nullptr).message()), HasSubstr("gamma = 0"));
}

}  // namespace
}  // namespace specplan::planner
