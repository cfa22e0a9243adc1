#include "whatif/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/policies/best_first.h"
#include "test_util.h"
#include "util/check.h"
#include "whatif/replay.h"
#include "whatif/trace.h"

namespace specplan::whatif {
namespace {

using testing::AffineLatency;
using ::testing::HasSubstr;

Trace Fixture() {
  auto trace = LoadTrace(testing::FixturePath());
  SPECPLAN_CHECK(trace.ok());
  return std::move(*trace);
}

const WhatIfRow* FindRow(const WhatIfReport& r, Strategy s, int budget) {
  for (const WhatIfRow& row : r.rows) {
    if (row.strategy == s && row.budget == budget) return &row;
  }
  return nullptr;
}

// Hand-worked on the fixture (tests/whatif/data/small.jsonl). Best-first pop orders:
//   step 0: 5 (.6), 6 (.3), 5>7 (.3), 5>7>9 (.27); continuation 5 7 9 -> L = 1, 1, 2, 3
//   step 1: 14 (.5), 12 (.4), 14>13 (.35), 12>13 (.28); continuation 12 13 -> L = 0, 1, 1, 2
//   step 2: no marginals (skipped).
TEST(WhatIf, BestFirstAggregationByHand) {
  const Trace trace = Fixture();
  const AffineLatency latency(0.01, 0.001, 1e-5);
  WhatIfOptions o;
  o.budgets = {1, 2, 3, 4};
  o.strategies = {Strategy::kBestFirst};
  o.drafter.t_net_s = 0.002;  // parallel block: T_draft = 2 ms per step
  o.t_aux_s = 0.0005;
  o.per_step = true;
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 4u);
  const int l0[] = {1, 1, 2, 3}, l1[] = {0, 1, 1, 2};
  const double p0[] = {0.6, 0.9, 1.2, 1.47}, p1[] = {0.5, 0.9, 1.25, 1.53};
  auto t_verify = [&](int s, int c) { return latency.VerifySeconds(s, c); };
  for (int b = 1; b <= 4; ++b) {
    const WhatIfRow* row = FindRow(*report, Strategy::kBestFirst, b);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->steps_used, 2);
    EXPECT_EQ(row->steps_skipped, 1);
    EXPECT_DOUBLE_EQ(row->mean_tree_size, b);
    EXPECT_DOUBLE_EQ(row->accepted_per_step, (l0[b - 1] + l1[b - 1]) / 2.0);
    EXPECT_NEAR(row->predicted_accepted_per_step, (p0[b - 1] + p1[b - 1]) / 2.0, 1e-6);
    const double c0 = 0.0025 + t_verify(b + 1, 100), c1 = 0.0025 + t_verify(b + 1, 104);
    const double ar0 = t_verify(1, 100), ar1 = t_verify(1, 104);
    EXPECT_NEAR(row->cycle_s, (c0 + c1) / 2, 1e-12);
    EXPECT_NEAR(row->t_ar_s, (ar0 + ar1) / 2, 1e-12);
    EXPECT_NEAR(row->speedup, ((1 + l0[b - 1]) * ar0 + (1 + l1[b - 1]) * ar1) / (c0 + c1), 1e-12);
    EXPECT_NEAR(row->predicted_speedup, ((1 + p0[b - 1]) * ar0 + (1 + p1[b - 1]) * ar1) / (c0 + c1),
                1e-6);
    ASSERT_EQ(row->per_step.size(), 2u);
    EXPECT_EQ(row->per_step[0].step, 0);
    EXPECT_EQ(row->per_step[1].step, 1);
    EXPECT_EQ(row->per_step[1].accepted, l1[b - 1]);
    EXPECT_NEAR(row->per_step[0].speedup, (1 + l0[b - 1]) * ar0 / c0, 1e-12);
  }
  // Budgets beyond the lattice (step 1 has 2 + 4 = 6 nodes) are capped.
  o.budgets = {100};
  report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok());
  EXPECT_DOUBLE_EQ(report->rows[0].mean_tree_size, (14 + 6) / 2.0);
  EXPECT_DOUBLE_EQ(report->rows[0].accepted_per_step, (3 + 2) / 2.0);
}

// A drafter that drafts level by level (DrafterCost::depth_s: 1 ms per level) pays for the
// levels of the tree that ran, not for the marginals' gamma. The depths of the best-first
// prefixes above: step 0: 1, 1, 2, 3; step 1: 1, 1, 2, 2 (gamma 3 and 2).
TEST(WhatIf, BestFirstCyclesPayTheTreesOwnDepth) {
  const Trace trace = Fixture();
  const AffineLatency latency(0.01, 0.001, 1e-5);
  WhatIfOptions o;
  o.budgets = {1, 2, 3, 4};
  o.strategies = {Strategy::kBestFirst};
  o.drafter.cls = costmodel::DrafterClass::kAutoregressive;
  o.drafter.t_net_s = 0.001;
  o.drafter.depth_s = {0, 0.001, 0.002, 0.003};
  o.t_aux_s = 0.0005;
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok()) << report.status();
  const int d0[] = {1, 1, 2, 3}, d1[] = {1, 1, 2, 2};
  for (int b = 1; b <= 4; ++b) {
    const WhatIfRow* row = FindRow(*report, Strategy::kBestFirst, b);
    ASSERT_NE(row, nullptr);
    const double c0 = 0.0005 + 0.001 * d0[b - 1] + latency.VerifySeconds(b + 1, 100);
    const double c1 = 0.0005 + 0.001 * d1[b - 1] + latency.VerifySeconds(b + 1, 104);
    EXPECT_NEAR(row->cycle_s, (c0 + c1) / 2, 1e-12) << "budget " << b;
  }
  // Paying every step's gamma (3 and 2 levels) would cost more at budget 1.
  const WhatIfRow* one = FindRow(*report, Strategy::kBestFirst, 1);
  EXPECT_LT(one->cycle_s,
            (0.0035 + latency.VerifySeconds(2, 100) + 0.0025 + latency.VerifySeconds(2, 104)) / 2);
}

TEST(WhatIf, LinearPolicyReplayByHand) {
  const Trace trace = Fixture();
  const AffineLatency latency(0.01, 0.001);
  WhatIfOptions o;
  o.budgets = {1, 2, 4};
  o.strategies = {Strategy::kLinear};
  o.policy_forward_s = 0.002;
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok()) << report.status();
  // Step 0 chain 5 7 9 (recording ends after 9); step 2 chain 3 (recording ends after 3).
  // (n, L, forwards): K=1: (1,1,1) (1,1,1); K=2: (2,2,2) (1,1,2); K=4: (3,3,4) (1,1,2).
  struct Expect {
    int k, n0, n2, f0, f2;
    double l;
    double pred;
  };
  const Expect cases[] = {{1, 1, 1, 1, 1, 1.0, (0.6 + 0.8) / 2},
                          {2, 2, 1, 2, 2, 1.5, (0.9 + 0.8) / 2},
                          {4, 3, 1, 4, 2, 2.0, (1.17 + 0.8) / 2}};
  for (const Expect& e : cases) {
    const WhatIfRow* row = FindRow(*report, Strategy::kLinear, e.k);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->steps_used, 2);
    EXPECT_EQ(row->steps_skipped, 1);
    EXPECT_EQ(row->params, absl::StrCat("linear_chain(K=", e.k, ")"));
    EXPECT_DOUBLE_EQ(row->accepted_per_step, e.l) << e.k;
    EXPECT_NEAR(row->predicted_accepted_per_step, e.pred, 1e-6) << e.k;
    EXPECT_DOUBLE_EQ(row->mean_tree_size, (e.n0 + e.n2) / 2.0);
    const double c0 = 0.002 * e.f0 + latency.VerifySeconds(e.n0 + 1, 100);
    const double c2 = 0.002 * e.f2 + latency.VerifySeconds(e.n2 + 1, 10);
    EXPECT_NEAR(row->cycle_s, (c0 + c2) / 2, 1e-12) << e.k;
  }
}

TEST(WhatIf, OracleIsTheBestFixedBudgetWithTiesToTheSmaller) {
  const Trace trace = Fixture();
  WhatIfOptions o;
  o.budgets = {1, 2, 3, 4, 8};
  o.strategies = {Strategy::kBestFirst, Strategy::kController, Strategy::kScan};
  // Free verification of extra tokens: more budget never hurts; 4 and 8 accept the same.
  auto flat = RunWhatIf(trace, AffineLatency(0.01, 0.0), o);
  ASSERT_TRUE(flat.ok()) << flat.status();
  ASSERT_TRUE(flat->oracle.found);
  EXPECT_EQ(flat->oracle.budget, 4);
  EXPECT_DOUBLE_EQ(flat->oracle.accepted_per_step, 2.5);
  for (const WhatIfRow& r : flat->rows) {
    if (r.strategy == Strategy::kBestFirst) {
      EXPECT_LE(r.speedup, flat->oracle.speedup);
    }
  }
  // Expensive tokens: (1+1)+(1+0) tokens for 2 x 21 ms beats every larger budget.
  auto steep = RunWhatIf(trace, AffineLatency(0.001, 0.01), o);
  ASSERT_TRUE(steep.ok());
  EXPECT_EQ(steep->oracle.budget, 1);
  EXPECT_NEAR(steep->oracle.speedup, 3 * 0.011 / (2 * 0.021), 1e-12);
  // The controller row and summary agree; the ratio is against the oracle.
  const WhatIfRow* ctl = FindRow(*steep, Strategy::kController, 8);
  ASSERT_NE(ctl, nullptr);
  ASSERT_TRUE(steep->controller.found);
  EXPECT_DOUBLE_EQ(steep->controller.speedup, ctl->speedup);
  EXPECT_DOUBLE_EQ(steep->controller.ratio_to_oracle, ctl->speedup / steep->oracle.speedup);
  EXPECT_TRUE(steep->scan.found);
  EXPECT_EQ(steep->n_max, 8);  // defaults to the largest budget
}

// The planner's own plan of a trace step (drafter cost of its gamma, no other per-cycle time).
absl::Status PlanStep(const TraceStep& step, const costmodel::LatencyModel& latency,
                      const planner::BestFirstOptions& options, planner::BestFirstPlan* plan) {
  costmodel::DrafterCost d;
  d.gamma = step.marginals->gamma;
  const costmodel::CycleCost cost(&latency, d, 0, step.c);
  planner::BestFirstPlanner planner;
  return planner.Plan(*step.marginals, options, &cost, plan);
}

TEST(WhatIf, ControllerTreesAreThePlannersTrees) {
  const Trace trace = Fixture();
  const AffineLatency latency(0.01, 0.0004, 1e-6);
  WhatIfOptions o;
  o.budgets = {16};
  o.strategies = {Strategy::kController};
  o.per_step = true;
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok());
  const WhatIfRow& row = report->rows.at(0);
  ASSERT_EQ(row.per_step.size(), 2u);
  planner::BestFirstOptions bo;
  bo.mode = planner::BudgetMode::kController;
  bo.n_max = 16;
  planner::BestFirstPlan plan;
  for (const StepResult& s : row.per_step) {
    const TraceStep& step = trace.steps[s.step];
    ASSERT_TRUE(PlanStep(step, latency, bo, &plan).ok());
    EXPECT_EQ(s.n, plan.n);
    EXPECT_EQ(s.accepted, RealizedAcceptedLength(plan.tree, step.continuation));
    EXPECT_NEAR(s.predicted_accepted, plan.expected_accepted - 1, 1e-12);
    EXPECT_DOUBLE_EQ(s.cycle_s, plan.cycle_s);
  }
}

// A synthetic trace in which the target's continuation is drawn from the drafter's marginals
// (independent positions; residual mass -> a token outside the row), so Â = E[L] exactly.
Trace SyntheticTrace(int steps, uint32_t seed) {
  std::mt19937 rng(seed);
  Trace t;
  t.header.target = "synthetic";
  t.header.draft = "synthetic";
  t.header.vocab = 1000;
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < steps; ++i) {
    TraceStep s;
    s.prompt = i / 20;
    s.c = 64 + 16 * (i % 20);
    s.root = static_cast<int32_t>(rng() % 1000);
    planner::Marginals m;
    m.root_token = s.root;
    m.gamma = 8;
    m.k = 4;
    const double sharp = 0.3 + 0.65 * u(rng);  // top-1 prob, varies per step
    for (int d = 0; d < m.gamma; ++d) {
      double left = 1.0;
      std::vector<float> row;
      for (int r = 0; r < m.k; ++r) {
        m.tokens.push_back(10 * d + r);
        const double p = r == 0 ? sharp * std::pow(0.97, d) : left * 0.45;
        row.push_back(static_cast<float>(p));
        left -= p;
      }
      std::sort(row.begin(), row.end(), std::greater<float>());
      m.probs.insert(m.probs.end(), row.begin(), row.end());
    }
    for (int d = 0; d < m.gamma; ++d) {
      double x = u(rng), acc = 0;
      int32_t tok = 999;  // outside every row
      for (int r = 0; r < m.k; ++r) {
        acc += m.prob(d, r);
        if (x < acc) {
          tok = m.token(d, r);
          break;
        }
      }
      s.continuation.push_back(tok);
    }
    s.marginals = std::move(m);
    t.steps.push_back(std::move(s));
  }
  return t;
}

TEST(WhatIf, ControllerTracksTheOracleWhenTheSurrogateIsUnbiased) {
  const Trace trace = SyntheticTrace(400, 11);
  const AffineLatency latency(0.012, 0.00015, 1e-7);  // a stepless, gently rising cost
  WhatIfOptions o;
  o.budgets = {1, 2, 4, 8, 16, 32, 64, 128};
  o.strategies = {Strategy::kBestFirst, Strategy::kController, Strategy::kScan};
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->oracle.found);
  ASSERT_TRUE(report->controller.found);
  EXPECT_GT(report->oracle.budget, 1);
  EXPECT_LT(report->oracle.budget, 128);
  EXPECT_GT(report->controller.ratio_to_oracle, 0.9);
  EXPECT_LT(report->controller.ratio_to_oracle, 1.2);
  // Convex cost: scan and the controller's first-decrease rule pick the same trees.
  EXPECT_DOUBLE_EQ(report->scan.speedup, report->controller.speedup);
  // The surrogate is unbiased here: mean predicted close to mean realised for every row.
  for (const WhatIfRow& r : report->rows) {
    EXPECT_NEAR(r.predicted_accepted_per_step, r.accepted_per_step, 0.1 * (1 + r.accepted_per_step))
        << r.params;
  }
  EXPECT_GT(report->surrogate.chain_pearson, 0.3);
  EXPECT_GT(report->surrogate.controller_pearson, 0.3);
  EXPECT_EQ(report->surrogate.steps, 400);
}

// --calibrate: each controller step plans with the surrogate_scale of an AcceptanceEstimator fed
// every earlier step's (Â, L), replayed here by hand step for step.
TEST(WhatIf, CalibratedControllerPlansWithTheOnlineScale) {
  const Trace trace = SyntheticTrace(120, 5);
  const AffineLatency latency(0.012, 0.0003, 1e-7);
  WhatIfOptions o;
  o.budgets = {64};
  o.strategies = {Strategy::kController, Strategy::kScan};
  o.per_step = true;
  o.calibrate = true;
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok()) << report.status();
  for (int row = 0; row < 2; ++row) {
    const WhatIfRow& r = report->rows.at(row);
    ASSERT_EQ(r.per_step.size(), trace.steps.size());
    planner::AcceptanceEstimator estimator;
    planner::BestFirstOptions bo;
    bo.mode = row == 0 ? planner::BudgetMode::kController : planner::BudgetMode::kScan;
    bo.n_max = 64;
    planner::BestFirstPlan plan;
    for (const StepResult& s : r.per_step) {
      bo.acceptance_scale = estimator.surrogate_scale();
      ASSERT_TRUE(PlanStep(trace.steps[s.step], latency, bo, &plan).ok());
      EXPECT_EQ(s.n, plan.n) << "step " << s.step;
      EXPECT_NEAR(s.predicted_accepted, plan.expected_accepted - 1, 1e-12);
      estimator.ObserveSurrogate(plan.expected_accepted, s.accepted);
    }
    EXPECT_THAT(r.params,
                HasSubstr(absl::StrFormat("calibrated: s=%.3f", estimator.surrogate_scale())));
  }
  EXPECT_EQ(WhatIfReportToJson(*report)["options"]["calibrate"], true);
  EXPECT_THAT(FormatWhatIfTable(*report), HasSubstr("calibrate the surrogate online"));
}

// An under-confident drafter: every marginal halved, so Σρ promises far less than the trees
// accept. The uncalibrated controller stops too early; the calibrated one learns s > 1.5 and
// realises a higher speedup, while the unbiased trace leaves s near 1.
TEST(WhatIf, CalibrationRecoversAnUnderConfidentDrafter) {
  Trace trace = SyntheticTrace(400, 11);
  for (TraceStep& s : trace.steps) {
    for (float& p : s.marginals->probs) p *= 0.5f;
  }
  const AffineLatency latency(0.012, 0.00015, 1e-7);
  WhatIfOptions o;
  o.budgets = {128};
  o.strategies = {Strategy::kController};
  auto raw = RunWhatIf(trace, latency, o);
  o.calibrate = true;
  auto cal = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(raw.ok() && cal.ok());
  const WhatIfRow& r = raw->rows.at(0);
  const WhatIfRow& c = cal->rows.at(0);
  EXPECT_GT(c.mean_tree_size, r.mean_tree_size);
  EXPECT_GT(c.speedup, r.speedup);
  // The final s, from the row's params "controller(n_max=128, calibrated: s=1.234)".
  auto final_scale = [](const std::string& params) {
    double s = 0;
    const size_t at = params.find("s=");
    if (at == std::string::npos || !absl::SimpleAtod(params.substr(at + 2, 5), &s)) return -1.0;
    return s;
  };
  EXPECT_GT(final_scale(c.params), 1.5) << c.params;
  auto unbiased = RunWhatIf(SyntheticTrace(400, 11), latency, o);
  ASSERT_TRUE(unbiased.ok());
  EXPECT_NEAR(final_scale(unbiased->rows.at(0).params), 1.0, 0.25) << unbiased->rows.at(0).params;
}

TEST(WhatIf, FixedBudgetRowsMatchPlanningEachBudgetSeparately) {
  const Trace trace = SyntheticTrace(40, 5);
  const AffineLatency latency(0.01, 0.0002);
  WhatIfOptions o;
  o.budgets = {1, 3, 7, 20, 50};
  o.strategies = {Strategy::kBestFirst};
  o.per_step = true;
  auto report = RunWhatIf(trace, latency, o);
  ASSERT_TRUE(report.ok());
  planner::BestFirstPlanner planner;
  planner::BestFirstPlan plan;
  for (const WhatIfRow& row : report->rows) {
    ASSERT_EQ(row.per_step.size(), trace.steps.size());
    for (const StepResult& s : row.per_step) {
      const TraceStep& step = trace.steps[s.step];
      ASSERT_TRUE(planner.PlanFixed(*step.marginals, row.budget, &plan).ok());
      ASSERT_EQ(s.n, plan.n);
      ASSERT_EQ(s.accepted, RealizedAcceptedLength(plan.tree, step.continuation));
      ASSERT_NEAR(s.predicted_accepted, plan.expected_accepted - 1, 1e-9);
    }
  }
}

TEST(WhatIf, StepsWithoutTheNeededDataAreSkippedAndCounted) {
  const Trace trace = SyntheticTrace(5, 3);  // marginals only
  WhatIfOptions o;
  o.budgets = {2, 4};
  o.strategies = {Strategy::kDynaTree, Strategy::kBestFirst};
  auto report = RunWhatIf(trace, AffineLatency(0.01, 0.001), o);
  ASSERT_TRUE(report.ok()) << report.status();
  const WhatIfRow* dyn = FindRow(*report, Strategy::kDynaTree, 4);
  ASSERT_NE(dyn, nullptr);
  EXPECT_EQ(dyn->steps_used, 0);
  EXPECT_EQ(dyn->steps_skipped, 5);
  EXPECT_TRUE(std::isnan(dyn->speedup));
  const nlohmann::json j = WhatIfReportToJson(*report);
  EXPECT_TRUE(j["rows"][0]["speedup"].is_null());
  EXPECT_EQ(j["rows"][0]["strategy"], "dynatree");
  EXPECT_EQ(j["rows"][2]["strategy"], "bestfirst");
  EXPECT_EQ(j["oracle"]["strategy"], "bestfirst");
  EXPECT_TRUE(j["controller"].is_null());
}

TEST(WhatIf, JsonHasTheContractFields) {
  const Trace trace = Fixture();
  WhatIfOptions o;
  o.budgets = {1, 4};
  auto report = RunWhatIf(trace, AffineLatency(0.01, 0.001), o);
  ASSERT_TRUE(report.ok()) << report.status();
  // best_first 2 + controller + scan + dynatree 2 + fixed_tree 2 + linear 2.
  ASSERT_EQ(report->rows.size(), 10u);
  const nlohmann::json j = WhatIfReportToJson(*report);
  for (const auto& row : j["rows"]) {
    for (const char* key :
         {"strategy", "budget", "params", "steps_used", "steps_skipped", "accepted_per_step",
          "tokens_per_step", "predicted_accepted_per_step", "mean_tree_size", "cycle_s", "t_ar_s",
          "speedup", "predicted_speedup", "pearson"}) {
      ASSERT_TRUE(row.contains(key)) << key;
    }
    EXPECT_FALSE(row.contains("per_step"));
  }
  EXPECT_EQ(j["trace"]["steps"], 3);
  EXPECT_EQ(j["trace"]["prompts"], 2);
  EXPECT_EQ(j["latency_model"], "affine");
  EXPECT_EQ(j["options"]["n_max"], 4);
  EXPECT_EQ(j["options"]["strategies"].size(), 6u);
  EXPECT_TRUE(j["oracle"]["budget"].is_number_integer());
  EXPECT_TRUE(j["controller"]["ratio_to_oracle"].is_number());
  EXPECT_EQ(j["surrogate"]["steps"], 2);
  // Chain surrogate by hand: step 0 chain 5 7 9, Â = .6 + .3 + .27, L = 3; step 1 chain 14 13,
  // Â = .5 + .35, L = 0.
  EXPECT_NEAR(j["surrogate"]["chain_predicted_mean"].get<double>(), (1.17 + 0.85) / 2, 1e-6);
  EXPECT_DOUBLE_EQ(j["surrogate"]["chain_accepted_mean"].get<double>(), 1.5);
  EXPECT_NEAR(j["surrogate"]["chain_pearson"].get<double>(), 1.0, 1e-12);
  const std::string table = FormatWhatIfTable(*report);
  EXPECT_THAT(table, HasSubstr("oracle: bestfirst budget"));
  EXPECT_THAT(table, HasSubstr("of the oracle"));
  EXPECT_THAT(table, HasSubstr("\nfixed "));
}

TEST(WhatIf, BadOptionsAndStepsNameTheField) {
  Trace trace = Fixture();
  const AffineLatency latency(0.01, 0.001);
  auto fails = [&](const WhatIfOptions& o, const std::string& expect) {
    auto r = RunWhatIf(trace, latency, o);
    ASSERT_FALSE(r.ok()) << expect;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(expect));
  };
  WhatIfOptions o;
  o.budgets = {};
  fails(o, "budgets: empty");
  o.budgets = {4, 0};
  fails(o, "budgets[1] = 0");
  o.budgets = {4};
  o.strategies = {};
  fails(o, "strategies: empty");
  o.strategies = {Strategy::kDynaTree};
  o.dynatree.tau_l = 0.95;
  fails(o, "dynatree.tau_l = 0.95");
  o.dynatree = planner::DynaTreeOptions();
  o.t_aux_s = -1;
  fails(o, "t_aux_s = -1");
  o.t_aux_s = 0;
  o.n_max = 9000;
  fails(o, "n_max = 9000");
  o.n_max = 0;
  trace.steps[2].continuation[0] = 50;
  fails(o, "step 2: continuation[0] = 50");
  trace.steps.clear();
  fails(o, "trace: no steps");
}

TEST(WhatIf, ParseLists) {
  auto b = ParseBudgetList("8, 1,4");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int>{1, 4, 8}));
  EXPECT_THAT(std::string(ParseBudgetList("1,x").status().message()), HasSubstr("'x'"));
  EXPECT_THAT(std::string(ParseBudgetList("0").status().message()), HasSubstr("[1, 8191]"));
  EXPECT_THAT(std::string(ParseBudgetList("2,2").status().message()), HasSubstr("twice"));
  EXPECT_FALSE(ParseBudgetList("").ok());
  auto s = ParseStrategyList("linear,bestfirst");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<Strategy>{Strategy::kLinear, Strategy::kBestFirst}));
  // The names earlier releases wrote still parse (planner/strategy.h).
  auto old = ParseStrategyList("best_first,fixed_tree");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(*old, (std::vector<Strategy>{Strategy::kBestFirst, Strategy::kFixed}));
  EXPECT_EQ(ParseStrategyList("all")->size(), 6u);
  EXPECT_THAT(std::string(ParseStrategyList("bestfirst,foo").status().message()),
              HasSubstr("'foo': unknown strategy (known: bestfirst, controller"));
  for (Strategy st : AllStrategies()) EXPECT_EQ(*ParseStrategy(StrategyName(st)), st);
}

TEST(Correlation, HandValues) {
  EXPECT_DOUBLE_EQ(PearsonCorrelation({1, 2, 3}, {2, 4, 6}), 1.0);
  EXPECT_DOUBLE_EQ(PearsonCorrelation({1, 2, 3}, {3, 2, 1}), -1.0);
  EXPECT_NEAR(PearsonCorrelation({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
  EXPECT_NEAR(SpearmanCorrelation({10, 20, 30, 40}, {1, 9, 4, 16}), 0.8, 1e-12);
  // Ties get average ranks: x ranks 1.5 1.5 3, y ranks 1 2 3.
  EXPECT_NEAR(SpearmanCorrelation({1, 1, 2}, {5, 6, 7}), 0.8660254037844386, 1e-12);
  EXPECT_TRUE(std::isnan(PearsonCorrelation({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(PearsonCorrelation({1}, {1})));
}

}  // namespace
}  // namespace specplan::whatif
