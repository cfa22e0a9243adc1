// The speculation gate's decision rule against its formulas (a reference over a parameter grid),
// its two ends (expensive drafter => 0, cheap and accepted drafter => max depth), the estimator's
// convergence, and the probe schedule that lets a drafter that improved back in.
#include "planner/acceptance/speculation_gate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "planner/policies/best_first.h"

namespace specplan::planner {
namespace {

// T_verify(s, c) = base + per_token * (s - 1) + per_ctx * c, seconds.
class AffineLatency : public costmodel::LatencyModel {
 public:
  AffineLatency(double base, double per_token, double per_ctx = 0)
      : base_(base), per_token_(per_token), per_ctx_(per_ctx) {}
  double VerifySeconds(int64_t s, int64_t c) const override {
    return base_ + per_token_ * static_cast<double>(s - 1) + per_ctx_ * static_cast<double>(c);
  }
  std::string Kind() const override { return "affine"; }

 private:
  double base_, per_token_, per_ctx_;
};

// A chain step of depth d that accepted l.
StepAcceptance Chain(int d, int l) { return StepAcceptance{d, d, l}; }

TEST(AcceptanceEstimatorTest, PriorThenTruncatedGeometricCounts) {
  AcceptanceEstimatorOptions o;
  o.prior_alpha = 0.5;
  o.prior_weight = 2;
  o.forget = 1.0;  // plain counts
  AcceptanceEstimator e(o);
  EXPECT_DOUBLE_EQ(e.alpha(), 0.5);
  EXPECT_DOUBLE_EQ(e.ExpectedAccepted(0), 0.0);
  EXPECT_DOUBLE_EQ(e.ExpectedAccepted(3), 0.5 + 0.25 + 0.125);
  e.Observe(Chain(6, 2));  // 2 successes, 1 failure
  EXPECT_DOUBLE_EQ(e.alpha(), (2 + 1.0) / (3 + 2.0));
  e.Observe(Chain(4, 4));  // 4 successes, no failure (truncated)
  EXPECT_DOUBLE_EQ(e.alpha(), (6 + 1.0) / (7 + 2.0));
  e.Observe(Chain(0, 0));  // nothing proposed: no information
  EXPECT_DOUBLE_EQ(e.alpha(), (6 + 1.0) / (7 + 2.0));
  EXPECT_EQ(e.observed_steps(), 2);
  // Width: draft nodes per proposed depth; a tree of 12 nodes at depth 4 is 3 wide.
  AcceptanceEstimator t(o);
  t.Observe(4, 12, 1);
  EXPECT_DOUBLE_EQ(t.width(), 3.0);
  EXPECT_DOUBLE_EQ(t.mean_depth(), 4.0);
}

TEST(AcceptanceEstimatorTest, ConvergesToTheTrueAcceptanceAndRatio) {
  std::mt19937_64 rng(7);
  for (double truth : {0.2, 0.55, 0.9}) {
    AcceptanceEstimatorOptions o;
    o.forget = 0.995;
    AcceptanceEstimator e(o);
    std::bernoulli_distribution accept(truth);
    for (int step = 0; step < 4000; ++step) {
      int l = 0;
      while (l < 6 && accept(rng)) ++l;
      e.Observe(Chain(6, l));
      // A surrogate that overstates realised (L + 1) by 25 %: kappa -> 0.8.
      e.ObserveSurrogate((l + 1) * 1.25, l);
    }
    EXPECT_NEAR(e.alpha(), truth, 0.04) << truth;
    EXPECT_NEAR(e.kappa(), 0.8, 1e-9) << truth;
    EXPECT_EQ(e.surrogate_steps(), 4000);
  }
}

// surrogate_scale = (Σ f^age L + w_0) / (Σ f^age (Â - 1) + w_0) over the steps with Â > 1.
TEST(AcceptanceEstimatorTest, SurrogateScaleIsTheForgetfulRatioOfDraftTokens) {
  AcceptanceEstimatorOptions o;
  o.forget = 0.5;
  o.prior_weight = 1;
  AcceptanceEstimator e(o);
  EXPECT_DOUBLE_EQ(e.surrogate_scale(), 1.0);
  e.ObserveSurrogate(2.0, 3);  // promised 1, realised 3
  EXPECT_DOUBLE_EQ(e.surrogate_scale(), (3 + 1.0) / (1 + 1.0));
  e.ObserveSurrogate(1.0, 0);  // Â = 1: nothing promised, ignored by the scale
  EXPECT_DOUBLE_EQ(e.surrogate_scale(), 2.0);
  e.ObserveSurrogate(3.5, 1);  // promised 2.5, realised 1
  EXPECT_DOUBLE_EQ(e.surrogate_scale(), (0.5 * 3 + 1 + 1.0) / (0.5 * 1 + 2.5 + 1.0));
  // An under-confident surrogate (ratio 2): with f = 0.95 the sums saturate at 1 / (1 - f) = 20
  // steps' worth, so the prior still weighs 1 / 11; the clamp holds at the ends.
  AcceptanceEstimator u;
  for (int i = 0; i < 2000; ++i) u.ObserveSurrogate(1.5, 1);
  EXPECT_NEAR(u.surrogate_scale(), (20 + 1.0) / (10 + 1.0), 1e-9);
  AcceptanceEstimatorOptions none;
  none.prior_weight = 0;
  AcceptanceEstimator z(none);
  EXPECT_DOUBLE_EQ(z.surrogate_scale(), 1.0);  // 0 / 0
  for (int i = 0; i < 50; ++i) z.ObserveSurrogate(1.001, 5);
  EXPECT_DOUBLE_EQ(z.surrogate_scale(), kMaxAcceptanceScale);
  for (int i = 0; i < 500; ++i) z.ObserveSurrogate(20.0, 0);
  EXPECT_DOUBLE_EQ(z.surrogate_scale(), 1.0 / kMaxAcceptanceScale);
}

TEST(AcceptanceEstimatorTest, ForgetsOldBehaviour) {
  AcceptanceEstimatorOptions o;
  o.forget = 0.8;  // counts saturate at 1 / (1 - f) = 5 attempts per attempt-per-step
  o.prior_weight = 1;
  o.prior_alpha = 0.5;
  AcceptanceEstimator e(o);
  // Every step rejects its first level: 1 attempt, 0 successes per step.
  for (int i = 0; i < 60; ++i) e.Observe(Chain(4, 0));
  EXPECT_NEAR(e.alpha(), 0.5 / (5 + 1), 1e-3);
  // Then every step accepts all 4: 4 attempts and 4 successes per step; the rejections fade.
  for (int i = 0; i < 60; ++i) e.Observe(Chain(4, 4));
  EXPECT_NEAR(e.alpha(), (20 + 0.5) / (20 + 1), 1e-3);
}

TEST(SpeculationGateTest, ExpensiveDrafterIsOff) {
  // A draft level costs as much as a verification (draft = target on a CPU); every draft is
  // accepted. R(d) = (1 + d) / (d T1 + T1 + 0.02 T1 d) < 1 / T1 for every d: no depth pays.
  const AffineLatency verify(1e-3, 2e-5);
  SpeculationGateOptions o;
  o.probe_interval = 1000;  // no probe in this test
  o.max_probe_interval = 1000;
  SpeculationGate gate(o);
  for (int i = 0; i < 20; ++i) gate.Observe(Chain(6, 6));
  EXPECT_GT(gate.estimator().alpha(), 0.95);
  for (int i = 0; i < 50; ++i) {
    const GateDecision d = gate.Decide(verify, 100, 1, 6, /*draft_level_s=*/1e-3);
    EXPECT_EQ(d.depth, 0) << i;
    EXPECT_FALSE(d.probe);
    EXPECT_DOUBLE_EQ(d.ar_tokens_per_s, 1.0 / verify.VerifySeconds(1, 100));
  }
  EXPECT_EQ(gate.stats().undrafted, 50);
  EXPECT_EQ(gate.stats().probes, 0);
}

TEST(SpeculationGateTest, CheapAcceptedDrafterDraftsFullDepth) {
  const AffineLatency verify(1e-3, 2e-5);
  SpeculationGate gate;
  for (int i = 0; i < 20; ++i) gate.Observe(Chain(6, 6));
  const GateDecision d = gate.Decide(verify, 100, 1, 6, /*draft_level_s=*/5e-5);
  EXPECT_EQ(d.depth, 6);
  EXPECT_FALSE(d.probe);
  EXPECT_GT(d.tokens_per_s, 3 * d.ar_tokens_per_s);
  EXPECT_NEAR(d.expected_accepted, gate.estimator().ExpectedAccepted(6), 1e-12);
  // The same drafter that is never accepted: off.
  SpeculationGate rejected;
  for (int i = 0; i < 40; ++i) rejected.Observe(Chain(6, 0));
  EXPECT_EQ(rejected.Decide(verify, 100, 1, 6, 5e-5).depth, 0);
}

TEST(SpeculationGateTest, DecisionIsTheArgmaxOfExpectedTokensPerSecond) {
  // Reference: the formulas of the header, written out independently, over a grid of acceptance,
  // draft cost, verify slope, tree width and depth bounds.
  int interior = 0, zeros = 0;
  for (double alpha : {0.1, 0.4, 0.7, 0.9, 0.99}) {
    for (double t : {2e-5, 1e-4, 3e-4, 1e-3}) {
      for (double slope : {0.0, 2e-5, 2e-4}) {
        for (int width : {1, 3}) {
          for (auto [lo, hi] : {std::pair{1, 6}, std::pair{3, 5}, std::pair{2, 2}}) {
            const AffineLatency verify(1e-3, slope, 1e-7);
            AcceptanceEstimatorOptions eo;
            eo.prior_alpha = alpha;
            eo.prior_weight = 1.0;  // no observation of acceptance: alpha = the prior
            SpeculationGateOptions o;
            o.acceptance = eo;
            SpeculationGate gate(o);
            // A rejected step of the given width (alpha then halves: (0 + alpha) / (1 + 1)).
            if (width > 1) gate.estimator().Observe(1, width, 0);
            const double a = gate.estimator().alpha();
            const double w = gate.estimator().width();
            const int64_t c = 500;
            double best = 1.0 / verify.VerifySeconds(1, c);
            int want = 0;
            for (int d = lo; d <= hi; ++d) {
              double acc = 0;
              for (int k = 1; k <= d; ++k) acc += std::pow(a, k);
              const double r =
                  (1 + acc) / (d * t + verify.VerifySeconds(1 + std::llround(w * d), c));
              if (r > best) {
                best = r;
                want = d;
              }
            }
            const GateDecision got = gate.Decide(verify, c, lo, hi, t);
            EXPECT_EQ(got.depth, want) << "alpha " << a << " t " << t << " slope " << slope
                                       << " width " << width << " [" << lo << ", " << hi << "]";
            EXPECT_NEAR(got.tokens_per_s, best, 1e-9 * best);
            if (want == 0) ++zeros;
            if (want > lo && want < hi) ++interior;
          }
        }
      }
    }
  }
  // The grid exercises both ends and interior optima.
  EXPECT_GT(zeros, 10);
  EXPECT_GT(interior, 5);
}

TEST(SpeculationGateTest, MinGainKeepsMarginalDraftingOff) {
  const AffineLatency verify(1e-3, 0);
  SpeculationGateOptions o;
  o.acceptance.prior_alpha = 0.3;
  o.acceptance.prior_weight = 1;
  // d = 1: (1.3) / (1e-3 + t); t = 8e-4 gives 1.3 / 1.8e-3 = 722 tok/s vs AR 1000: off;
  // t = 2e-4 gives 1083 tok/s, 8 % above AR.
  SpeculationGate plain(o);
  EXPECT_EQ(plain.Decide(verify, 0, 1, 1, 2e-4).depth, 1);
  o.min_gain = 0.10;
  SpeculationGate strict(o);
  EXPECT_EQ(strict.Decide(verify, 0, 1, 1, 2e-4).depth, 0);
}

// Simulates a decode: every drafted step is timed and fully accepted (draft = target).
struct Sim {
  SpeculationGate gate;
  const AffineLatency verify{1e-3, 2e-5};
  std::vector<int> depths;
  std::vector<bool> probes;
  explicit Sim(const SpeculationGateOptions& o) : gate(o) {}
  void Run(int steps, double level_s) {
    for (int i = 0; i < steps; ++i) {
      const GateDecision d = gate.Decide(verify, 64, 1, 6);
      depths.push_back(d.depth);
      probes.push_back(d.probe);
      if (d.depth > 0) {
        gate.ObserveDraftLevel(level_s);
        gate.Observe(Chain(d.depth, d.depth));
      }
    }
  }
};

TEST(SpeculationGateTest, ProbesBackOffWhileOffAndRecoverWhenTheDrafterImproves) {
  SpeculationGateOptions o;
  o.probe_interval = 4;
  o.max_probe_interval = 32;
  o.probe_depth = 2;
  o.time_forget = 0.0;  // the latest measurement only
  Sim sim(o);
  // Phase 1: a draft level costs a verification; only probes draft.
  sim.Run(200, 1e-3);
  std::vector<int> probe_at;
  for (size_t i = 0; i < sim.depths.size(); ++i) {
    if (sim.depths[i] > 0) {
      EXPECT_TRUE(sim.probes[i]) << "step " << i << " drafted on merits";
      EXPECT_EQ(sim.depths[i], 2);
      probe_at.push_back(static_cast<int>(i));
    }
  }
  // Step 0 probes (nothing measured yet); then probes after 4, 8, 16, 32, 32, ... undrafted steps.
  ASSERT_GE(probe_at.size(), 6u);
  EXPECT_EQ(probe_at[0], 0);
  EXPECT_EQ(probe_at[1] - probe_at[0] - 1, 4);
  EXPECT_EQ(probe_at[2] - probe_at[1] - 1, 8);
  EXPECT_EQ(probe_at[3] - probe_at[2] - 1, 16);
  EXPECT_EQ(probe_at[4] - probe_at[3] - 1, 32);
  EXPECT_EQ(probe_at[5] - probe_at[4] - 1, 32);
  EXPECT_EQ(sim.gate.stats().probes, static_cast<int64_t>(probe_at.size()));
  EXPECT_EQ(sim.gate.stats().undrafted, 200 - static_cast<int64_t>(probe_at.size()));
  // Phase 2: the drafter became 20x cheaper. Within one probe interval a probe measures it, and
  // from then on every step drafts on merits at full depth.
  const size_t start = sim.depths.size();
  sim.Run(60, 5e-5);
  size_t first_merit = 0;
  for (size_t i = start; i < sim.depths.size(); ++i) {
    if (sim.depths[i] > 0 && !sim.probes[i]) {
      first_merit = i;
      break;
    }
  }
  ASSERT_GT(first_merit, 0u);
  EXPECT_LE(first_merit - start, 33u);
  for (size_t i = first_merit; i < sim.depths.size(); ++i) {
    EXPECT_EQ(sim.depths[i], 6) << i;
    EXPECT_FALSE(sim.probes[i]) << i;
  }
}

TEST(SpeculationGateTest, ProbesAreSpacedByWhatTheyCost) {
  const AffineLatency verify(1e-3, 2e-5);  // T(1) = 1 ms
  SpeculationGateOptions o;
  o.probe_interval = 4;
  o.max_probe_interval = 1000;
  o.probe_budget = 0.1;
  SpeculationGate gate(o);
  for (int i = 0; i < 20; ++i) gate.Observe(Chain(6, 6));
  auto undrafted_before_probe = [&] {
    int n = 0;
    while (true) {
      const GateDecision d = gate.Decide(verify, 0, 1, 6, /*draft_level_s=*/1e-3);
      if (d.probe) return n;
      EXPECT_EQ(d.depth, 0);
      ++n;
    }
  };
  EXPECT_EQ(undrafted_before_probe(), 4);  // no probe cost known yet: the interval
  // The probe cost 5 ms: at a 10 % budget it must be spread over 5 ms / (0.1 * 1 ms) = 50 steps
  // (more than the doubled interval, 8).
  gate.ObserveProbeSeconds(5e-3);
  EXPECT_NEAR(undrafted_before_probe(), 50, 1);  // ceil of 50 up to rounding
  // A cheap probe: the doubling interval (16) spaces them again.
  gate.ObserveProbeSeconds(1e-4);
  EXPECT_EQ(undrafted_before_probe(), 16);
  // Never beyond max_probe_interval.
  o.max_probe_interval = 30;
  SpeculationGate capped(o);
  for (int i = 0; i < 20; ++i) capped.Observe(Chain(6, 6));
  capped.ObserveProbeSeconds(1.0);
  int n = 0;
  while (!capped.Decide(verify, 0, 1, 6, 1e-3).probe) ++n;
  EXPECT_EQ(n, 30);  // a cost known before the first probe spaces it too, up to the cap
}

TEST(SpeculationGateTest, FixedDraftSecondsOverrideTheMeasuredOnes) {
  const AffineLatency verify(1e-3, 2e-5);
  SpeculationGate gate;
  for (int i = 0; i < 20; ++i) gate.Observe(Chain(6, 6));
  gate.ObserveDraftLevel(1e-3);  // measured: expensive
  EXPECT_EQ(gate.Decide(verify, 0, 1, 6).depth, 0);
  EXPECT_EQ(gate.Decide(verify, 0, 1, 6, 5e-5).depth, 6);  // given: cheap
  gate.ObserveDraftLevel(-1);                              // ignored
  gate.ObserveDraftLevel(std::nan(""));                    // ignored
  EXPECT_DOUBLE_EQ(gate.draft_level_s(), 1e-3);
}

TEST(SpeculationGateTest, HostWorkPerStepIsPricedLikeTheStepModel) {
  // A drafter just too slow to pay on a bare pass pays once the engine's per-step host work
  // (which a drafted step amortises over more tokens) is priced: the step model's terms, R(d) =
  // B (1 + A(d)) / (B d t + T_B(s(d)) + H_B(s(d))), H_B(s) = step + per_sequence B + one sampling
  // call + per_token B s.
  const AffineLatency verify(1e-3, 2e-5);
  SpeculationGateOptions o;
  o.probe_interval = 1000;
  o.max_probe_interval = 1000;
  o.acceptance.prior_alpha = 0.6;
  o.acceptance.prior_weight = 1.0;
  const double t = 9e-4;  // one draft level: 0.9 of a verification
  SpeculationGate bare(o);
  EXPECT_EQ(bare.Decide(verify, 100, 1, 4, t).depth, 0);
  o.host.step_s = 1.2e-3;
  o.host.per_sequence_s = 1e-5;
  o.host.sample_call_s = 4e-5;
  o.host.verify_per_token_s = 9e-6;
  o.host.per_draft_forward_s = 1.0;  // not read: the measured level holds the drafter's host work
  SpeculationGate gate(o);
  const auto host = [&](int b, int64_t s) {
    return 1.2e-3 + 1e-5 * b + 4e-5 + 9e-6 * b * static_cast<double>(s);
  };
  const GateDecision d = gate.Decide(verify, 100, 1, 4, t);
  EXPECT_DOUBLE_EQ(d.ar_tokens_per_s, 1.0 / (verify.VerifySeconds(1, 100) + host(1, 1)));
  double best = d.ar_tokens_per_s;
  int want = 0;
  for (int depth = 1; depth <= 4; ++depth) {
    const double r = (1 + gate.estimator().ExpectedAccepted(depth)) /
                     (depth * t + verify.VerifySeconds(1 + depth, 100) + host(1, 1 + depth));
    if (r > best) best = r, want = depth;
  }
  EXPECT_GT(want, 0);
  EXPECT_EQ(d.depth, want);
  EXPECT_NEAR(d.tokens_per_s, best, 1e-9 * best);
  // A batch pays the per-sequence and per-token terms per sequence.
  const std::vector<int64_t> contexts = {100, 100, 100, 100};
  const GateDecision db = gate.DecideBatch(verify, contexts, 1, 4, t);
  EXPECT_NEAR(
      db.ar_tokens_per_s,
      4.0 / (verify.VerifyBatchSeconds(costmodel::BatchShape(
                 std::vector<costmodel::SequenceShape>(4, costmodel::SequenceShape{1, 100}))) +
             host(4, 1)),
      1e-9 * db.ar_tokens_per_s);
}

TEST(SpeculationGateTest, ValidatesOptionsNamingTheField) {
  SpeculationGateOptions o;
  EXPECT_TRUE(ValidateSpeculationGateOptions(o).ok());
  o.acceptance.forget = 0;
  EXPECT_NE(ValidateSpeculationGateOptions(o).message().find("gate.acceptance.forget = 0"),
            std::string::npos);
  o = SpeculationGateOptions();
  o.max_probe_interval = 2;
  o.probe_interval = 4;
  EXPECT_NE(ValidateSpeculationGateOptions(o).message().find("gate.max_probe_interval = 2"),
            std::string::npos);
  o = SpeculationGateOptions();
  o.probe_depth = 0;
  EXPECT_FALSE(ValidateSpeculationGateOptions(o).ok());
  o = SpeculationGateOptions();
  o.host.sample_call_s = -1;
  EXPECT_NE(ValidateSpeculationGateOptions(o).message().find("gate.host.sample_call_s = -1"),
            std::string::npos);
}

}  // namespace
}  // namespace specplan::planner
