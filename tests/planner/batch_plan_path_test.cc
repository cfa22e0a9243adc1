// PlanBatch with path-conditioned requests (BatchRequest::provider): against
// PathConditionedPlanner with one request, against the same batch with marginals, against brute
// force on a small mixed batch, and the errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "planner/batch/batch_plan.h"
#include "planner/policies/path_conditioned.h"
#include "tests/planner/brute_force.h"
#include "tests/planner/fake_drafter.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

using testing::BruteBestByCount;
using ::testing::HasSubstr;
using testing::Lattice;
using testing::MarginalsLattice;
using testing::ParallelDrafter;

Marginals Random(std::mt19937& rng, int gamma, int k, int32_t root = 7) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return testing::RandomMarginalsWith(
      rng, root, gamma, k, [&] { return std::pow(u(rng), 3.0); },
      [&](int d) {
        std::vector<int32_t> t(k);
        for (int r = 0; r < k; ++r) t[r] = 100 * (d + 1) + r;
        return t;
      });
}

// Path-dependent provider: the hashed rows of testing::HashDrafter (a row depends on the token
// path root..u). Counts its calls.
class HashProvider : public DistributionProvider {
 public:
  explicit HashProvider(testing::HashDrafter d) : d_(d) {}
  absl::Status Expand(const Tree& tree, absl::Span<const int32_t> nodes, int k,
                      absl::Span<TokenProb> out, absl::Span<int32_t> counts) override {
    ++calls;
    std::vector<int32_t> t;
    std::vector<float> p;
    for (size_t i = 0; i < nodes.size(); ++i) {
      d_.Row(tree, nodes[i], t, p);
      counts[i] = std::min(k, d_.k);
      for (int r = 0; r < counts[i]; ++r) out[i * k + r] = {t[r], p[r]};
    }
    expanded += static_cast<int>(nodes.size());
    return absl::OkStatus();
  }
  const testing::HashDrafter& drafter() const { return d_; }
  int calls = 0;
  int expanded = 0;

 private:
  testing::HashDrafter d_;
};

// With one provider request, PlanBatch is PathConditionedPlanner node for node, in every mode,
// and asks the provider for the same nodes (one call per round but the last).
TEST(PlanBatchPath, OneProviderRequestIsThePathConditionedPlanner) {
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  const testing::SteppedLatency stepped;
  const costmodel::LatencyModel* models[] = {&roofline, &stepped};
  BatchPlanner batch;
  PathConditionedPlanner single;
  int switched_off = 0, compared = 0;
  for (int rep = 0; rep < 30; ++rep) {
    testing::HashDrafter d;
    d.k = 1 + rep % 5;
    d.seed = 100 + rep;
    d.levels = rep % 3 == 0 ? 8 : 0;  // quantized probabilities: ties
    const int gamma = 1 + rep % 7;
    const int64_t c = 150 * rep;
    const costmodel::LatencyModel* model = models[rep % 2];
    const costmodel::DrafterCost drafter = ParallelDrafter(rep % 5 == 4 ? 3e-2 : 4e-4);
    const costmodel::CycleCost cost1(model, drafter, 1e-4, c);
    const costmodel::BatchCycleCost costb(model, drafter, 1e-4);
    for (BudgetMode mode : {BudgetMode::kFixed, BudgetMode::kController, BudgetMode::kScan}) {
      SCOPED_TRACE(::testing::Message() << "rep " << rep << " mode " << static_cast<int>(mode));
      PathConditionedOptions po;
      po.budget.mode = mode;
      po.budget.n_max = 3 + 11 * rep;
      po.gamma = gamma;
      po.k = d.k;
      HashProvider p1(d), pb(d);
      BestFirstPlan want;
      ASSERT_TRUE(single.Run(/*root_token=*/9, po, &cost1, p1, &want).ok());
      BatchRequest r;
      r.c = c;
      r.provider = &pb;
      r.root_token = 9;
      r.gamma = gamma;
      r.k = d.k;
      BatchPlanOptions ob;
      ob.mode = mode;
      ob.n_max = po.budget.n_max;
      BatchPlan got;
      const absl::Status st = batch.Plan({r}, ob, &costb, &got);
      ASSERT_TRUE(st.ok()) << st;
      EXPECT_EQ(pb.expanded, p1.expanded);
      EXPECT_EQ(pb.calls, p1.calls);
      EXPECT_EQ(got.provider_rounds, p1.calls + 1);
      // n = 0 is the plain step, so the path-conditioned planner declines a tree slower than
      // plain decoding itself, as the batch planner's off switch does.
      if (mode != BudgetMode::kFixed && want.n == 0) {
        ++switched_off;
        EXPECT_EQ(got.n_total, 0);
        EXPECT_EQ(got.trees[0].size(), 1);
      }
      ++compared;
      EXPECT_EQ(got.trees[0].tokens, want.tree.tokens);
      EXPECT_EQ(got.trees[0].parents, want.tree.parents);
      EXPECT_EQ(got.trees[0].depths, want.tree.depths);
      EXPECT_EQ(got.trees[0].path_probs, want.tree.path_probs);
      EXPECT_EQ(got.n[0], want.n);
      EXPECT_EQ(got.expected_accepted[0], want.expected_accepted);
      EXPECT_EQ(got.cycle_s, want.cycle_s);
      EXPECT_EQ(got.lattice_exhausted, want.lattice_exhausted);
      if (mode != BudgetMode::kFixed) {
        ASSERT_EQ(got.curve.size(), want.curve.size());
        for (size_t j = 0; j < want.curve.size(); ++j) {
          EXPECT_EQ(got.curve[j].expected_accepted, want.curve[j].expected_accepted);
          EXPECT_EQ(got.curve[j].cycle_s, want.curve[j].cycle_s);
        }
      }
    }
  }
  EXPECT_GT(switched_off, 0);
  EXPECT_GT(compared, 60);
}

// Nodes of path-conditioned requests are ordered by the same rule as marginals nodes: a batch in
// which some requests bring a provider that answers with their marginals' rows plans exactly as
// the all-marginals batch, with weights, caps, per-request prices (different contexts) and every
// mode and objective.
TEST(PlanBatchPath, ProviderOfTheMarginalsPlansAsTheMarginals) {
  std::mt19937 rng(3);
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  const testing::SmoothLatency smooth;
  BatchPlanner planner;
  BatchPlan want, got;
  int with_providers = 0;
  for (int rep = 0; rep < 24; ++rep) {
    const int B = 1 + rep % 6;
    std::vector<Marginals> ms;
    for (int i = 0; i < B; ++i) ms.push_back(Random(rng, 1 + (rep + i) % 6, 1 + (rep + i) % 4));
    std::vector<testing::MarginalsProvider> providers;
    providers.reserve(B);
    for (int i = 0; i < B; ++i) providers.emplace_back(ms[i]);
    std::vector<BatchRequest> plain(B), mixed(B);
    for (int i = 0; i < B; ++i) {
      plain[i].marginals = &ms[i];
      plain[i].c = 256 * (1 + (i * 7 + rep) % 9);
      plain[i].n_max = (rep + i) % 5 == 0 ? 4 : -1;
      plain[i].weight = (rep + i) % 3 == 0 ? 2.0 : 1.0;
      mixed[i] = plain[i];
      if ((rep + i) % 2 == 0) {
        mixed[i].marginals = nullptr;
        mixed[i].provider = &providers[i];
        mixed[i].root_token = ms[i].root_token;
        mixed[i].gamma = ms[i].gamma;
        mixed[i].k = ms[i].k;
        ++with_providers;
      }
    }
    const costmodel::LatencyModel* model =
        rep % 2 ? static_cast<const costmodel::LatencyModel*>(&roofline) : &smooth;
    const costmodel::BatchCycleCost cost(model, ParallelDrafter(3e-4), 1e-4);
    struct Setting {
      BudgetMode mode;
      BatchObjective objective;
    };
    for (const Setting s : {Setting{BudgetMode::kFixed, BatchObjective::kGoodput},
                            Setting{BudgetMode::kController, BatchObjective::kGoodput},
                            Setting{BudgetMode::kScan, BatchObjective::kGoodput},
                            Setting{BudgetMode::kScan, BatchObjective::kLatencyBound}}) {
      SCOPED_TRACE(::testing::Message() << "rep " << rep << " mode " << static_cast<int>(s.mode)
                                        << " objective " << static_cast<int>(s.objective));
      BatchPlanOptions o;
      o.mode = s.mode;
      o.objective = s.objective;
      o.n_max = 5 + 13 * rep;
      if (s.objective == BatchObjective::kLatencyBound) o.max_seconds_per_token = 4e-3;
      ASSERT_TRUE(planner.Plan(plain, o, &cost, &want).ok());
      const absl::Status st = planner.Plan(mixed, o, &cost, &got);
      ASSERT_TRUE(st.ok()) << st;
      EXPECT_EQ(got.n, want.n);
      EXPECT_EQ(got.n_total, want.n_total);
      EXPECT_EQ(got.price, want.price);
      EXPECT_EQ(got.expected_accepted, want.expected_accepted);
      EXPECT_EQ(got.speculation_pays, want.speculation_pays);
      EXPECT_EQ(got.bound_met, want.bound_met);
      EXPECT_EQ(got.lattice_exhausted, want.lattice_exhausted);
      EXPECT_TRUE(testing::SameDouble(got.cycle_s, want.cycle_s));
      for (int i = 0; i < B; ++i) {
        EXPECT_EQ(got.trees[i].tokens, want.trees[i].tokens) << "request " << i;
        EXPECT_EQ(got.trees[i].parents, want.trees[i].parents) << "request " << i;
        EXPECT_EQ(got.trees[i].path_probs, want.trees[i].path_probs) << "request " << i;
      }
      ASSERT_EQ(got.curve.size(), want.curve.size());
      for (size_t j = 0; j < want.curve.size(); ++j) {
        EXPECT_EQ(got.curve[j].weighted_accepted, want.curve[j].weighted_accepted);
        EXPECT_EQ(got.curve[j].cycle_s, want.curve[j].cycle_s);
      }
    }
  }
  EXPECT_GT(with_providers, 20);
}

// The hashed drafter's whole lattice to depth gamma, grown as a Tree so that HashDrafter::Row
// sees the same token paths as in planning.
Lattice HashLattice(const testing::HashDrafter& d, int32_t root_token, int gamma) {
  Tree t;
  t.ResetRoot(root_token);
  std::vector<int32_t> tok;
  std::vector<float> p;
  for (int v = 0; v < t.size(); ++v) {
    if (t.depths[v] >= gamma) continue;
    d.Row(t, v, tok, p);
    for (int r = 0; r < d.k; ++r) t.AddNode(v, tok[r], t.path_probs[v] * p[r]);
  }
  Lattice l;
  for (int v = 1; v < t.size(); ++v) {
    l.parent.push_back(t.parents[v] - 1);  // the root (0) becomes -1
    l.rho.push_back(t.path_probs[v]);
  }
  return l;
}

// A small mixed batch (two marginals requests, two path-dependent providers, weights): for every
// total budget N, the fixed-budget plan reaches the brute-force maximum of Σ w_i Â_i over all
// allocations n_1 + ... + n_4 = N and all prefix-closed trees, and each provider tree's path
// scores are products of the provider's own probabilities along the path.
TEST(PlanBatchPath, MixedBatchFixedBudgetMatchesBruteForce) {
  std::mt19937 rng(17);
  BatchPlanner planner;
  for (int rep = 0; rep < 6; ++rep) {
    const Marginals m0 = Random(rng, 2, 2 + rep % 2);  // 6 or 12 nodes
    const Marginals m1 = Random(rng, 3, 2);            // 14 nodes
    testing::HashDrafter d2, d3;
    d2.k = 2;
    d2.seed = 7 + rep;
    d3.k = 3;
    d3.seed = 70 + rep;
    d3.levels = rep % 2 ? 16 : 0;
    HashProvider p2(d2), p3(d3);
    std::vector<BatchRequest> reqs(4);
    reqs[0].marginals = &m0;
    reqs[1].marginals = &m1;
    reqs[1].weight = 1.5;
    reqs[2].provider = &p2;
    reqs[2].root_token = 11;
    reqs[2].gamma = 3;
    reqs[2].k = 2;  // 14 nodes
    reqs[2].weight = 0.75;
    reqs[3].provider = &p3;
    reqs[3].root_token = 12;
    reqs[3].gamma = 2;
    reqs[3].k = 3;  // 12 nodes
    const std::vector<std::vector<double>> best = {
        BruteBestByCount(MarginalsLattice(m0)), BruteBestByCount(MarginalsLattice(m1)),
        BruteBestByCount(HashLattice(d2, 11, 3)), BruteBestByCount(HashLattice(d3, 12, 2))};
    int total = 0;
    for (const auto& b : best) total += static_cast<int>(b.size()) - 1;
    for (int N = 0; N <= total + 1; ++N) {
      SCOPED_TRACE(::testing::Message() << "rep " << rep << " N " << N);
      double want = -1;
      std::function<void(size_t, int, double)> go = [&](size_t i, int left, double acc) {
        if (i == best.size()) {
          if (left == 0) want = std::max(want, acc);
          return;
        }
        for (int n = 0; n <= left && n < static_cast<int>(best[i].size()); ++n) {
          go(i + 1, left - n, acc + reqs[i].weight * (1.0 + best[i][n]));
        }
      };
      go(0, std::min(N, total), 0.0);
      BatchPlanOptions o;
      o.mode = BudgetMode::kFixed;
      o.n_max = N;
      BatchPlan plan;
      const absl::Status st = planner.Plan(reqs, o, nullptr, &plan);
      ASSERT_TRUE(st.ok()) << st;
      EXPECT_EQ(plan.n_total, std::min(N, total));
      EXPECT_EQ(plan.lattice_exhausted, N > total);
      EXPECT_NEAR(plan.weighted_accepted, want, 1e-9);
      for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(ValidateTree(plan.trees[i]).ok());
        EXPECT_EQ(plan.trees[i].num_draft(), plan.n[i]);
      }
      for (int i : {2, 3}) {
        const Tree& t = plan.trees[i];
        EXPECT_EQ(t.tokens[0], reqs[i].root_token);
        const testing::HashDrafter& d = i == 2 ? d2 : d3;
        std::vector<int32_t> tok;
        std::vector<float> p;
        for (int v = 1; v < t.size(); ++v) {
          d.Row(t, t.parents[v], tok, p);
          const auto it = std::find(tok.begin(), tok.end(), t.tokens[v]);
          ASSERT_NE(it, tok.end()) << "request " << i << " node " << v;
          EXPECT_EQ(t.path_probs[v], t.path_probs[t.parents[v]] * p[it - tok.begin()]);
        }
      }
    }
  }
}

// A hand-worked mixed batch: request 0 brings marginals, request 1 a provider whose root row is
// {5: 0.5, 6: 0.3} and whose rows below are {x + 1: 0.9}. Priorities (w = 1, fixed budget):
// request 0's lattice (one row, {1: 0.6, 2: 0.2}) gives 0.6 and 0.2; request 1's gives 0.5, 0.45
// (5 -> 6), 0.3, 0.27 (6 -> 7). With N = 4 the pops are 0.6 (request 0), then 0.5, 0.45 and 0.3
// (request 1).
TEST(PlanBatchPath, HandWorkedMixedBatch) {
  Marginals m;
  m.root_token = 3;
  m.gamma = 1;
  m.k = 2;
  m.tokens = {1, 2};
  m.probs = {0.6f, 0.2f};
  class Scripted : public DistributionProvider {
   public:
    absl::Status Expand(const Tree& tree, absl::Span<const int32_t> nodes, int k,
                        absl::Span<TokenProb> out, absl::Span<int32_t> counts) override {
      for (size_t i = 0; i < nodes.size(); ++i) {
        const int32_t v = nodes[i];
        if (v == 0) {
          out[i * k] = {5, 0.5f};
          out[i * k + 1] = {6, 0.3f};
          counts[i] = 2;
        } else {
          out[i * k] = {tree.tokens[v] + 1, 0.9f};
          counts[i] = 1;
        }
        asked.push_back(tree.tokens[v]);
      }
      return absl::OkStatus();
    }
    std::vector<int32_t> asked;  // tokens of the nodes asked for, in order
  } provider;
  std::vector<BatchRequest> reqs(2);
  reqs[0].marginals = &m;
  reqs[1].provider = &provider;
  reqs[1].root_token = 4;
  reqs[1].gamma = 2;
  reqs[1].k = 2;
  BatchPlanOptions o;
  o.mode = BudgetMode::kFixed;
  o.n_max = 4;
  BatchPlan plan;
  BatchPlanner planner;
  ASSERT_TRUE(planner.Plan(reqs, o, nullptr, &plan).ok());
  EXPECT_EQ(plan.n, (std::vector<int>{1, 3}));
  EXPECT_EQ(plan.trees[0].tokens, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(plan.trees[1].tokens, (std::vector<int32_t>{4, 5, 6, 6}));
  EXPECT_EQ(plan.trees[1].parents, (std::vector<int32_t>{-1, 0, 1, 0}));
  EXPECT_NEAR(plan.expected_accepted[0], 1.6, 1e-6);
  EXPECT_NEAR(plan.expected_accepted[1], 1 + 0.5 + 0.45 + 0.3, 1e-6);
  // Round 1 knows nothing of request 1 and asks for its root. Round 2 treats 5 and 6 as leaves
  // and takes 0.6, 0.5 (5), 0.3 (6), 0.2: it asks for 5 and 6 (depth 1, by node index). Round 3
  // takes the true order; 5 -> 6 is at depth gamma = 2 and needs nothing, so it is the plan.
  EXPECT_EQ(provider.asked, (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(plan.provider_rounds, 3);
}

TEST(PlanBatchPath, ErrorsNameTheRequestAndField) {
  std::mt19937 rng(1);
  const Marginals good = Random(rng, 2, 2);
  testing::HashDrafter d;
  d.k = 2;
  HashProvider provider(d);
  BatchPlanner planner;
  BatchPlan plan;
  BatchPlanOptions o;
  o.mode = BudgetMode::kFixed;
  o.n_max = 8;
  BatchRequest with_provider;
  with_provider.provider = &provider;
  with_provider.gamma = 2;
  with_provider.k = 2;
  BatchRequest both = with_provider;
  both.marginals = &good;
  BatchRequest neither;
  auto message = [&](const std::vector<BatchRequest>& reqs) {
    return std::string(planner.Plan(reqs, o, nullptr, &plan).message());
  };
  EXPECT_THAT(message({{&good, 0}, both}),
              HasSubstr("requests[1].provider: given together with marginals"));
  EXPECT_THAT(message({{&good, 0}, with_provider, neither}),
              HasSubstr("requests[2].marginals: missing (give exactly one of marginals and "
                        "provider)"));
  BatchRequest bad = with_provider;
  bad.gamma = 0;
  EXPECT_THAT(message({bad}), HasSubstr("requests[0].gamma = 0: must be in [1, 64]"));
  bad = with_provider;
  bad.k = 65;
  EXPECT_THAT(message({bad}), HasSubstr("requests[0].k = 65"));
  bad = with_provider;
  bad.root_token = -2;
  EXPECT_THAT(message({bad}), HasSubstr("requests[0].root_token = -2"));

  // A bad reply and a failing provider name the request.
  class BadProvider : public DistributionProvider {
   public:
    absl::Status Expand(const Tree&, absl::Span<const int32_t> nodes, int k,
                        absl::Span<TokenProb> out, absl::Span<int32_t> counts) override {
      if (fail) return absl::UnavailableError("draft model down");
      for (size_t i = 0; i < nodes.size(); ++i) {
        out[i * k] = {1, 0.5f};
        out[i * k + 1] = {2, 1.5f};
        counts[i] = 2;
      }
      return absl::OkStatus();
    }
    bool fail = false;
  } bad_provider;
  BatchRequest r = with_provider;
  r.provider = &bad_provider;
  EXPECT_THAT(message({{&good, 0}, r}),
              HasSubstr("requests[1].provider: dists[0][1].prob = 1.5: must be in [0, 1]"));
  bad_provider.fail = true;
  const absl::Status st = planner.Plan({{&good, 0}, r}, o, nullptr, &plan);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(st.message()), HasSubstr("requests[1].provider: draft model down"));
}

}  // namespace
}  // namespace specplan::planner
