#include "planner/batch/batch_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "tests/planner/brute_force.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

using ::testing::HasSubstr;
using testing::ParallelDrafter;
using testing::RandomMarginalsWith;

Marginals Random(std::mt19937& rng, int gamma, int k, int32_t root = 7) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return RandomMarginalsWith(
      rng, root, gamma, k, [&] { return std::pow(u(rng), 3.0); },
      [&](int d) {
        std::vector<int32_t> t(k);
        for (int r = 0; r < k; ++r) t[r] = 100 * (d + 1) + r;
        return t;
      });
}

// Every row [p, p/2, p/4, ...] scaled so the row sums to `mass`.
Marginals Geometric(int gamma, int k, double mass) {
  Marginals m;
  m.root_token = 1;
  m.gamma = gamma;
  m.k = k;
  double norm = 0;
  for (int r = 0; r < k; ++r) norm += std::pow(0.5, r);
  for (int d = 0; d < gamma; ++d) {
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(10 * d + r);
      m.probs.push_back(static_cast<float>(mass * std::pow(0.5, r) / norm));
    }
  }
  return m;
}

costmodel::RooflineLatency H100Qwen8b() {
  return costmodel::RooflineLatency(*costmodel::LookupModel("qwen3-8b"),
                                    *costmodel::LookupGpu("h100"));
}

// With one request, PlanBatch is BestFirstPlanner node for node, in every mode.
TEST(PlanBatch, OneRequestIsTheSingleRequestPlanner) {
  std::mt19937 rng(11);
  const costmodel::RooflineLatency roofline = H100Qwen8b();
  const testing::SteppedLatency stepped;
  const costmodel::LatencyModel* models[] = {&roofline, &stepped};
  BatchPlanner batch;
  BestFirstPlanner single;
  int switched_off = 0;
  for (int rep = 0; rep < 30; ++rep) {
    const Marginals m = Random(rng, 1 + rep % 8, 1 + rep % 5);
    const int64_t c = 100 * rep;
    const costmodel::LatencyModel* model = models[rep % 2];
    // Every fifth request has a drafter too slow to pay for itself.
    const costmodel::DrafterCost drafter = ParallelDrafter(rep % 5 == 4 ? 3e-2 : 4e-4);
    const costmodel::CycleCost cost1(model, drafter, 1e-4, c);
    const costmodel::BatchCycleCost costb(model, drafter, 1e-4);
    // The surrogate's calibration s is the same rule in both planners.
    const double scale = rep % 3 == 0 ? 1.0 : (rep % 3 == 1 ? 1.8 : 0.6);
    for (BudgetMode mode : {BudgetMode::kFixed, BudgetMode::kController, BudgetMode::kScan}) {
      BestFirstOptions o1;
      o1.mode = mode;
      o1.n_max = 5 + 7 * rep;
      o1.acceptance_scale = scale;
      BestFirstPlan want;
      ASSERT_TRUE(single.Plan(m, o1, &cost1, &want).ok());
      BatchPlanOptions ob;
      ob.mode = mode;
      ob.n_max = o1.n_max;
      ob.acceptance_scale = scale;
      BatchPlan got;
      ASSERT_TRUE(batch.Plan({{&m, c}}, ob, &costb, &got).ok());
      SCOPED_TRACE(::testing::Message() << "rep " << rep << " mode " << static_cast<int>(mode));
      ASSERT_EQ(got.trees.size(), 1u);
      // n = 0 is the plain step (S(0) = 1), so the single-request planner declines a tree that
      // is slower than plain decoding itself; the batch planner's off switch agrees.
      if (mode != BudgetMode::kFixed && want.n == 0) {
        ++switched_off;
        EXPECT_FALSE(got.speculation_pays);
        EXPECT_EQ(got.n_total, 0);
        EXPECT_EQ(got.trees[0].size(), 1);
      } else {
        EXPECT_TRUE(got.speculation_pays);
      }
      EXPECT_EQ(got.trees[0].tokens, want.tree.tokens);
      EXPECT_EQ(got.trees[0].parents, want.tree.parents);
      EXPECT_EQ(got.trees[0].path_probs, want.tree.path_probs);
      EXPECT_EQ(got.n[0], want.n);
      EXPECT_EQ(got.n_total, want.n);
      EXPECT_EQ(got.expected_accepted[0], want.expected_accepted);
      EXPECT_EQ(got.cycle_s, want.cycle_s);
      // goodput is Â' / C; S = Â' L_AR / C.
      EXPECT_NEAR(got.goodput * want.l_ar_s, want.speedup, 1e-12 * want.speedup);
      if (mode != BudgetMode::kFixed) {
        ASSERT_EQ(got.curve.size(), want.curve.size());
        for (size_t j = 0; j < want.curve.size(); ++j) {
          EXPECT_EQ(got.curve[j].expected_accepted, want.curve[j].expected_accepted);
          EXPECT_EQ(got.curve[j].cycle_s, want.curve[j].cycle_s);
        }
      }
    }
  }
  EXPECT_GT(switched_off, 0);   // the slow drafters
  EXPECT_LT(switched_off, 20);  // most of these plans pay for themselves
}

// Best Σ ρ over prefix-closed subtrees of the marginals lattice with exactly n draft nodes, for
// every n, by enumerating every subset of the (small) lattice.
std::vector<double> BruteBestByCount(const Marginals& m) {
  return testing::BruteBestByCount(testing::MarginalsLattice(m));
}

TEST(PlanBatch, FixedBudgetAllocationMaximisesWeightedAcceptanceAgainstBruteForce) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> w(0.5, 3.0);
  BatchPlanner planner;
  for (int rep = 0; rep < 12; ++rep) {
    const int B = 2 + rep % 2;
    std::vector<Marginals> ms;
    std::vector<std::vector<double>> best;
    std::vector<BatchRequest> reqs;
    for (int i = 0; i < B; ++i) {
      ms.push_back(Random(rng, 2 + (rep + i) % 2, 2));  // lattices of 6 or 14 nodes
      best.push_back(BruteBestByCount(ms.back()));
    }
    for (int i = 0; i < B; ++i) reqs.push_back({&ms[i], 0, -1, rep % 3 == 0 ? 1.0 : w(rng)});
    int total = 0;
    for (const auto& b : best) total += static_cast<int>(b.size()) - 1;
    for (int N = 0; N <= total; ++N) {
      // Brute force over every allocation n_1 + ... + n_B = N.
      double want = -1;
      std::function<void(int, int, double)> go = [&](int i, int left, double acc) {
        if (i == B) {
          if (left == 0) want = std::max(want, acc);
          return;
        }
        for (int n = 0; n <= left && n < static_cast<int>(best[i].size()); ++n) {
          go(i + 1, left - n, acc + reqs[i].weight * (1.0 + best[i][n]));
        }
      };
      go(0, N, 0.0);
      BatchPlanOptions o;
      o.mode = BudgetMode::kFixed;
      o.n_max = N;
      BatchPlan plan;
      ASSERT_TRUE(planner.Plan(reqs, o, nullptr, &plan).ok());
      ASSERT_EQ(plan.n_total, N);
      EXPECT_NEAR(plan.weighted_accepted, want, 1e-9) << "rep " << rep << " N " << N;
      int sum = 0;
      for (int i = 0; i < B; ++i) {
        EXPECT_TRUE(ValidateTree(plan.trees[i]).ok());
        EXPECT_EQ(plan.trees[i].num_draft(), plan.n[i]);
        sum += plan.n[i];
      }
      EXPECT_EQ(sum, N);
    }
  }
}

// The headline of batch-aware planning: on the H100 x Qwen3-8B roofline at c = 1024, the tokens
// planned per request shrink as the batch grows (memory-bound at B = 1, compute-bound at 64).
TEST(PlanBatch, TokensPerRequestShrinkAsTheBatchGrowsOnTheH100Roofline) {
  const costmodel::RooflineLatency roofline = H100Qwen8b();
  const costmodel::BatchCycleCost cost(&roofline, ParallelDrafter(5e-4), 0);
  const Marginals m = Geometric(16, 8, 0.9);
  BatchPlanner planner;
  double prev = 1e9;
  std::vector<double> per_request;
  for (int B : {1, 2, 4, 8, 16, 32, 64}) {
    std::vector<BatchRequest> reqs(B, BatchRequest{&m, 1024});
    BatchPlanOptions o;
    o.mode = BudgetMode::kScan;
    o.n_max = 4096;
    BatchPlan plan;
    ASSERT_TRUE(planner.Plan(reqs, o, &cost, &plan).ok());
    const double tokens = static_cast<double>(plan.n_total) / B;
    per_request.push_back(tokens);
    EXPECT_LE(tokens, prev + 1) << "B=" << B;  // equal requests share nodes to within one
    prev = tokens;
  }
  EXPECT_GT(per_request.front(), 64);  // free at batch 1: a big tree
  EXPECT_LT(per_request.back(), per_request.front() / 4) << ::testing::PrintToString(per_request);
}

// A compute-bound target (a GPU with 1/100 of an H100's FLOPs) and a weak drafter: speculation
// cannot pay for itself, so no request drafts.
TEST(PlanBatch, ComputeBoundProfileAndWeakDrafterSpeculateNothing) {
  costmodel::GpuSpec slow = *costmodel::LookupGpu("h100");
  slow.peak_flops /= 100;
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"), slow);
  const costmodel::BatchCycleCost cost(&roofline, ParallelDrafter(5e-4), 0);
  const Marginals weak = Geometric(8, 4, 0.1);
  std::vector<BatchRequest> reqs(16, BatchRequest{&weak, 2048});
  for (BudgetMode mode : {BudgetMode::kController, BudgetMode::kScan}) {
    BatchPlanOptions o;
    o.mode = mode;
    o.n_max = 512;
    BatchPlan plan;
    ASSERT_TRUE(BatchPlanner().Plan(reqs, o, &cost, &plan).ok());
    EXPECT_EQ(plan.n_total, 0);
    for (int i = 0; i < 16; ++i) {
      EXPECT_EQ(plan.n[i], 0);
      EXPECT_EQ(plan.trees[i].size(), 1);
    }
    // No request drafts: the step is a plain decoding step, whose goodput it reports (N = 0 pays
    // no drafter), and every N > 0 is slower.
    EXPECT_EQ(plan.goodput, plan.ar_goodput);
    for (size_t j = 1; j < plan.curve.size(); ++j)
      EXPECT_LT(plan.curve[j].goodput, plan.ar_goodput);
  }
}

// The batch pop order against an oracle: each request planned alone (BestFirstPlanner, its whole
// lattice), its pops keyed as PlanBatch keys them (w_i rho, then depth, request, parent, rank), and
// the first N of all requests' pops by key. Identical marginals in several requests tie on every
// score, so the request tie-breaker decides; budgets cross the planner's pop-ahead chunks, caps
// and the exhausted lattice.
TEST(PlanBatch, FixedBudgetPopOrderIsTheMergeOfTheRequestsOwnOrders) {
  std::mt19937 rng(11);
  const Marginals geo = Geometric(4, 3, 0.9);
  std::vector<Marginals> ms = {geo, Random(rng, 4, 3), geo, Random(rng, 3, 4), geo};
  for (Marginals& m : ms) {
    for (size_t j = 0; j < m.tokens.size(); ++j) m.tokens[j] = static_cast<int32_t>(j % m.k);
  }
  std::vector<BatchRequest> reqs;
  const double weights[] = {1.0, 2.0, 1.0, 0.5, 1.0};
  const int caps[] = {-1, -1, 17, -1, 3};
  for (size_t i = 0; i < ms.size(); ++i) reqs.push_back({&ms[i], 0, caps[i], weights[i]});
  struct Pop {
    FrontierKey key;
    int request;
  };
  std::vector<Pop> pops;
  std::vector<BestFirstPlan> alone(ms.size());
  BestFirstPlanner single;
  for (size_t i = 0; i < ms.size(); ++i) {
    const int lattice = static_cast<int>(LatticeSize(ms[i].gamma, ms[i].k));
    const int n = caps[i] < 0 ? lattice : std::min(caps[i], lattice);
    ASSERT_TRUE(single.PlanFixed(ms[i], n, &alone[i]).ok());
    const Tree& t = alone[i].tree;
    for (int v = 1; v < t.size(); ++v) {
      pops.push_back({FrontierKey::Make(weights[i] * t.path_probs[v],
                                        FrontierTie(t.depths[v], static_cast<uint32_t>(i),
                                                    t.parents[v], t.tokens[v])),
                      static_cast<int>(i)});
    }
  }
  std::sort(pops.begin(), pops.end(),
            [](const Pop& a, const Pop& b) { return FrontierKeyLess(b.key, a.key); });
  BatchPlanner planner;
  BatchPlan plan;
  BatchPlanOptions fixed;
  fixed.mode = BudgetMode::kFixed;
  const int total = static_cast<int>(pops.size());
  for (int budget = 0; budget <= total + 3; ++budget) {
    SCOPED_TRACE(budget);
    fixed.n_max = budget;
    ASSERT_TRUE(planner.Plan(reqs, fixed, nullptr, &plan).ok());
    std::vector<int> want(ms.size(), 0);
    for (int j = 0; j < std::min(budget, total); ++j) ++want[pops[j].request];
    EXPECT_EQ(plan.n, want);
    EXPECT_EQ(plan.n_total, std::min(budget, total));
    EXPECT_EQ(plan.lattice_exhausted, budget > total);
    for (size_t i = 0; i < ms.size(); ++i) {
      const Tree& got = plan.trees[i];
      const Tree& ref = alone[i].tree;
      ASSERT_EQ(got.size(), want[i] + 1);
      for (int v = 0; v < got.size(); ++v) {
        EXPECT_EQ(got.parents[v], ref.parents[v]);
        EXPECT_EQ(got.tokens[v], ref.tokens[v]);
        EXPECT_EQ(got.path_probs[v], ref.path_probs[v]);
      }
    }
  }
}

TEST(PlanBatch, CapsWeightsAndContextsShapeTheAllocation) {
  const costmodel::RooflineLatency roofline = H100Qwen8b();
  const costmodel::BatchCycleCost cost(&roofline, ParallelDrafter(2e-4), 0);
  const Marginals m = Geometric(8, 4, 0.8);
  BatchPlanner planner;
  BatchPlanOptions fixed;
  fixed.mode = BudgetMode::kFixed;
  fixed.n_max = 60;
  BatchPlan plan;
  // A cap binds; the rest of the budget goes to the others.
  ASSERT_TRUE(planner.Plan({{&m, 0, 5}, {&m, 0}, {&m, 0, 0}}, fixed, nullptr, &plan).ok());
  EXPECT_EQ(plan.n[0], 5);
  EXPECT_EQ(plan.n[1], 55);
  EXPECT_EQ(plan.n[2], 0);
  // A heavier request gets more nodes.
  ASSERT_TRUE(planner.Plan({{&m, 0, -1, 1.0}, {&m, 0, -1, 3.0}}, fixed, nullptr, &plan).ok());
  EXPECT_GT(plan.n[1], plan.n[0]);
  // With a cost, a long-context request's tokens are dearer (attention), so it gets fewer nodes
  // than an identical short-context one.
  BatchPlanOptions scan;
  scan.mode = BudgetMode::kScan;
  scan.n_max = 400;
  std::vector<BatchRequest> reqs = {{&m, 128}, {&m, 131072}};
  ASSERT_TRUE(planner.Plan(reqs, scan, &cost, &plan).ok());
  EXPECT_GT(plan.price[1], plan.price[0]);
  EXPECT_GT(plan.n[0], plan.n[1]);
}

TEST(PlanBatch, LatencyBoundKeepsEveryRequestUnderItsTimePerToken) {
  const costmodel::RooflineLatency roofline = H100Qwen8b();
  const costmodel::BatchCycleCost cost(&roofline, ParallelDrafter(5e-4), 0);
  const Marginals strong = Geometric(12, 4, 0.9);
  const Marginals weak = Geometric(12, 4, 0.2);
  std::vector<BatchRequest> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back({i % 2 ? &weak : &strong, 1024});
  BatchPlanOptions o;
  o.mode = BudgetMode::kScan;
  o.n_max = 1024;
  BatchPlan free_plan;
  BatchPlanner planner;
  ASSERT_TRUE(planner.Plan(reqs, o, &cost, &free_plan).ok());
  double worst = 0;
  for (double a : free_plan.expected_accepted) worst = std::max(worst, free_plan.cycle_s / a);
  // A bound tighter than the goodput plan's worst request, but met by some N.
  o.objective = BatchObjective::kLatencyBound;
  o.max_seconds_per_token = worst * 0.97;
  BatchPlan bound;
  ASSERT_TRUE(planner.Plan(reqs, o, &cost, &bound).ok());
  ASSERT_TRUE(bound.bound_met);
  for (double a : bound.expected_accepted) EXPECT_LE(bound.cycle_s / a, o.max_seconds_per_token);
  EXPECT_LE(bound.weighted_accepted / bound.cycle_s,
            free_plan.weighted_accepted / free_plan.cycle_s);
  // An impossible bound: the plan with the smallest worst time per token, flagged.
  o.max_seconds_per_token = 1e-6;
  ASSERT_TRUE(planner.Plan(reqs, o, &cost, &bound).ok());
  EXPECT_FALSE(bound.bound_met);
  ASSERT_FALSE(bound.curve.empty());
  // The goodput plan's N was a candidate, so the chosen worst time per token is no larger.
  double got_worst = 0;
  for (double a : bound.expected_accepted) got_worst = std::max(got_worst, bound.cycle_s / a);
  EXPECT_LE(got_worst, worst);
}

TEST(PlanBatch, ErrorsNameTheRequestAndField) {
  const Marginals good = Geometric(2, 2, 0.5);
  Marginals bad = good;
  bad.probs[3] = std::nanf("");
  const costmodel::RooflineLatency roofline = H100Qwen8b();
  const costmodel::BatchCycleCost cost(&roofline, ParallelDrafter(1e-4), 0);
  BatchPlanner planner;
  BatchPlan plan;
  BatchPlanOptions o;
  struct Case {
    std::vector<BatchRequest> reqs;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {{}, "requests: empty batch"},
      {{{&good, 0}, {&bad, 0}}, "requests[1].marginals.probs[1][1] = nan"},
      {{{&good, 0}, {nullptr, 0}}, "requests[1].marginals: missing"},
      {{{&good, -4}}, "requests[0].c = -4: must be >= 0"},
      {{{&good, 0, -2}}, "requests[0].n_max = -2"},
      {{{&good, 0}, {&good, 0, -1, 0.0}}, "requests[1].weight = 0"},
  };
  for (const Case& c : cases) {
    const absl::Status st = planner.Plan(c.reqs, o, &cost, &plan);
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.expect));
  }
  o.n_max = kMaxBatchNodes + 1;
  EXPECT_THAT(std::string(planner.Plan({{&good, 0}}, o, &cost, &plan).message()),
              HasSubstr("n_max = 1048577"));
  o.n_max = 8;
  o.acceptance_scale = 0;
  EXPECT_THAT(std::string(planner.Plan({{&good, 0}}, o, &cost, &plan).message()),
              HasSubstr("acceptance_scale = 0: must be in (0, 64]"));
  o.acceptance_scale = 1;
  o.n_max = 8;
  EXPECT_THAT(std::string(planner.Plan({{&good, 0}}, o, nullptr, &plan).message()),
              HasSubstr("cost: a batch cycle cost is required"));
  o.objective = BatchObjective::kLatencyBound;
  EXPECT_THAT(std::string(planner.Plan({{&good, 0}}, o, &cost, &plan).message()),
              HasSubstr("max_seconds_per_token = 0"));
}

}  // namespace
}  // namespace specplan::planner
