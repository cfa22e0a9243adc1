// The stream frontier (planner/marginals/marginals_frontier.h) against a naive oracle: at every
// step, scan every child of every tree node not yet in the tree and take the largest key (score,
// then smaller depth, request, parent, rank). Probabilities come from a set of powers of two, so
// that equal scores are everywhere and the tie-breaking is exercised, not just the ordering by
// score.
#include "planner/marginals/marginals_frontier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "planner/batch/batch_plan.h"
#include "planner/policies/best_first.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

// Rows of values from {1/4, 1/8, 1/16, 0}, sorted descending, with repeats (k <= 4, so a row sums
// to at most 1); distinct tokens.
Marginals TiedMarginals(std::mt19937& rng, int gamma, int k, int32_t root) {
  static const float kValues[] = {0.25f, 0.125f, 0.0625f, 0.0f};
  std::uniform_int_distribution<int> pick(0, 3);
  Marginals m;
  m.root_token = root;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    std::vector<float> row(k);
    for (float& x : row) x = kValues[pick(rng)];
    std::sort(row.begin(), row.end(), std::greater<float>());
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(1000 * d + r);
      m.probs.push_back(row[r]);
    }
  }
  return m;
}

struct OracleRequest {
  const Marginals* m = nullptr;
  double scale = 1.0;
  int cap = -1;  // draft nodes at most; -1 = none
  Tree tree;
  std::vector<int> children;  // children added so far, per node (ranks 0..children-1)
};

// Grows every request's tree by `n` pops over the batch, or until no candidate is left.
void OraclePops(std::vector<OracleRequest>* reqs, int n) {
  for (OracleRequest& r : *reqs) {
    r.tree.ResetRoot(r.m->root_token);
    r.children.assign(1, 0);
  }
  for (int step = 0; step < n; ++step) {
    bool found = false;
    double best_score = 0;
    std::tuple<int, int, int, int> best_tie;  // depth, request, parent, rank
    for (int i = 0; i < static_cast<int>(reqs->size()); ++i) {
      const OracleRequest& r = (*reqs)[i];
      if (r.cap >= 0 && r.tree.num_draft() >= r.cap) continue;
      for (int p = 0; p < r.tree.size(); ++p) {
        const int depth = r.tree.depths[p] + 1;
        const int rank = r.children[p];
        if (depth > r.m->gamma || rank >= r.m->k) continue;
        // Child `rank` is the best child of p not yet added (rows are sorted descending and ties
        // go to the smaller rank), so it is the only candidate of p that can win.
        const double score = r.scale * (r.tree.path_probs[p] * r.m->prob(depth - 1, rank));
        const auto tie = std::make_tuple(depth, i, p, rank);
        if (!found || score > best_score || (score == best_score && tie < best_tie)) {
          found = true;
          best_score = score;
          best_tie = tie;
        }
      }
    }
    if (!found) return;
    const auto [depth, i, p, rank] = best_tie;
    OracleRequest& r = (*reqs)[i];
    r.tree.AddNode(p, r.m->token(depth - 1, rank),
                   r.tree.path_probs[p] * r.m->prob(depth - 1, rank));
    ++r.children[p];
    r.children.push_back(0);
  }
}

TEST(MarginalsFrontierTest, BestFirstEqualsOracleUnderHeavyTies) {
  std::mt19937 rng(99);
  BestFirstPlanner planner;
  BestFirstPlan plan;
  for (int rep = 0; rep < 60; ++rep) {
    const Marginals m = TiedMarginals(rng, 1 + rep % 7, 1 + rep % 4, 3);
    const int n_max = 1 + (rep * 37) % 160;
    const absl::Status st = planner.PlanFixed(m, n_max, &plan);
    ASSERT_TRUE(st.ok()) << st;
    std::vector<OracleRequest> oracle(1);
    oracle[0].m = &m;
    OraclePops(&oracle, n_max);
    const Tree& want = oracle[0].tree;
    ASSERT_EQ(plan.tree.parents, want.parents) << "rep " << rep;
    ASSERT_EQ(plan.tree.tokens, want.tokens) << "rep " << rep;
    ASSERT_EQ(plan.tree.path_probs, want.path_probs) << "rep " << rep;
  }
}

TEST(MarginalsFrontierTest, BatchEqualsOracleUnderHeavyTiesWeightsAndCaps) {
  std::mt19937 rng(7);
  BatchPlanner planner;
  BatchPlan plan;
  int capped = 0;
  for (int rep = 0; rep < 40; ++rep) {
    const int B = 1 + rep % 6;
    std::vector<Marginals> ms;
    for (int i = 0; i < B; ++i) {
      ms.push_back(TiedMarginals(rng, 1 + (rep + i) % 6, 1 + (rep + 2 * i) % 4, i));
    }
    std::vector<BatchRequest> reqs(B);
    std::vector<OracleRequest> oracle(B);
    for (int i = 0; i < B; ++i) {
      reqs[i].marginals = &ms[i];
      reqs[i].weight = (rep + i) % 3 == 0 ? 0.5 : 1.0;  // powers of two: ties across requests
      reqs[i].n_max = (rep + i) % 4 == 0 ? 3 : -1;
      oracle[i].m = &ms[i];
      oracle[i].scale = reqs[i].weight;
      oracle[i].cap = reqs[i].n_max;
    }
    BatchPlanOptions o;
    o.mode = BudgetMode::kFixed;
    o.n_max = 1 + (rep * 29) % 120;
    const absl::Status st = planner.Plan(reqs, o, nullptr, &plan);
    ASSERT_TRUE(st.ok()) << st;
    OraclePops(&oracle, o.n_max);
    for (int i = 0; i < B; ++i) {
      const Tree& want = oracle[i].tree;
      ASSERT_EQ(plan.trees[i].parents, want.parents) << "rep " << rep << " request " << i;
      ASSERT_EQ(plan.trees[i].tokens, want.tokens) << "rep " << rep << " request " << i;
      ASSERT_EQ(plan.trees[i].path_probs, want.path_probs) << "rep " << rep << " request " << i;
      capped += reqs[i].n_max >= 0 && want.num_draft() == reqs[i].n_max;
    }
  }
  EXPECT_GT(capped, 10);  // the caps were reached, not only declared
}

// Large batches and budgets, where a fixed budget takes most pops in bulk above thresholds that
// every request has been popped past (BatchPlanner::TakeLeveled) and the merge makes only the last
// few: random rows of very different shapes (near-greedy, flat, tied powers of two), weights and
// caps, against the oracle pop by pop.
TEST(MarginalsFrontierTest, BatchEqualsOracleWithBulkTakes) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  BatchPlanner planner;
  BatchPlan plan;
  struct Case {
    int batch;
    int n_max;
  };
  for (const Case c :
       {Case{64, 2048}, Case{40, 1500}, Case{17, 900}, Case{64, 300}, Case{9, 2000}}) {
    std::vector<Marginals> ms;
    for (int i = 0; i < c.batch; ++i) {
      if (i % 5 == 4) {
        ms.push_back(TiedMarginals(rng, 3 + i % 9, 1 + i % 4, i));
        continue;
      }
      const double power = i % 3 == 0 ? 0.5 : i % 3 == 1 ? 3.0 : 8.0;  // flat .. near-greedy
      ms.push_back(testing::RandomMarginalsWith(
          rng, i, 4 + i % 13, 2 + i % 7, [&] { return std::pow(u(rng), power); },
          [&](int d) {
            std::vector<int32_t> t(static_cast<size_t>(2 + i % 7));
            for (size_t r = 0; r < t.size(); ++r) t[r] = 100 * d + static_cast<int32_t>(r);
            return t;
          }));
    }
    std::vector<BatchRequest> reqs(static_cast<size_t>(c.batch));
    std::vector<OracleRequest> oracle(static_cast<size_t>(c.batch));
    for (int i = 0; i < c.batch; ++i) {
      reqs[i].marginals = &ms[i];
      reqs[i].weight = i % 4 == 0 ? 0.5 : i % 7 == 0 ? 3.0 : 1.0;
      reqs[i].n_max = i % 6 == 0 ? 5 + i : -1;
      oracle[i].m = &ms[i];
      oracle[i].scale = reqs[i].weight;
      oracle[i].cap = reqs[i].n_max;
    }
    BatchPlanOptions o;
    o.mode = BudgetMode::kFixed;
    o.n_max = c.n_max;
    const absl::Status st = planner.Plan(reqs, o, nullptr, &plan);
    ASSERT_TRUE(st.ok()) << st;
    OraclePops(&oracle, o.n_max);
    int total = 0;
    for (int i = 0; i < c.batch; ++i) {
      const Tree& want = oracle[i].tree;
      ASSERT_EQ(plan.trees[i].parents, want.parents) << "B " << c.batch << " request " << i;
      ASSERT_EQ(plan.trees[i].tokens, want.tokens) << "B " << c.batch << " request " << i;
      ASSERT_EQ(plan.trees[i].path_probs, want.path_probs) << "B " << c.batch << " request " << i;
      total += want.num_draft();
    }
    EXPECT_EQ(plan.n_total, total);
  }
}

}  // namespace
}  // namespace specplan::planner
