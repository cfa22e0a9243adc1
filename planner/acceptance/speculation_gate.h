// The speculation gate: decides BEFORE drafting whether a step drafts at all and how deep, from
// measured costs and an online estimate of how much the drafter gets accepted (issue 18:
// "speculation that does not pay is off").
//
// Why before drafting: a controller that plans on the drafter's output (best-first's
// S(n) = Â(n)·L_AR / C(n)) can answer n* = 0, but only after the draft forwards have run, so a
// "do not speculate" answer has already paid for drafting. The gate prices drafting itself.
//
// Acceptance model (AcceptanceEstimator): every draft level is accepted independently with
// probability alpha given that its parent level was (a truncated geometric chain). One verified
// step that proposed depths 1..D and accepted L of them is L successes and, when L < D, one
// failure. With exponential forgetting (factor f per observed step) and a prior of alpha_0 worth
// w_0 attempts:
//   successes <- f·successes + L,  attempts <- f·attempts + L + [L < D]
//   alpha = (successes + w_0·alpha_0) / (attempts + w_0)
//   E[accepted | depth d] = A(d) = Σ_{k=1..d} alpha^k
// Realised acceptance is what the estimator tracks, so A(d) is calibrated by construction; the
// planner's surrogate Â is tracked beside it as the ratio kappa = EMA of (L + 1) / Â (the
// statistic ReportAcceptance keeps), for callers that plan on Â and want to know how it tracks
// realised acceptance. For planning on the draft part, the same observations give the surrogate's
// calibration, the forgetful ratio of realised draft tokens to promised ones,
//   surrogate_scale = (Σ f^age L + w_0) / (Σ f^age (Â − 1) + w_0)   (1 before any; clamped to
//   [1/64, 64]),
// which a best-first or batch planner takes as its acceptance_scale (best_first.h): it then
// prices a node at surrogate_scale·ρ, so a drafter whose probabilities are under-confident (its
// trees accept more than Σρ) gets deeper trees and an over-confident one shallower trees. The
// estimator also keeps EMAs of the verified width (draft nodes per proposed depth, w) and of the
// proposed depth itself.
//
// Decision (SpeculationGate::Decide): with t = measured seconds of one draft level (forward plus
// candidate rows), T(s) = T_verify(s, c) from a costmodel::LatencyModel and s(d) =
// 1 + round(w·d) verified tokens at depth d, the expected tokens per second of a step of depth d
// are
//   R(0) = 1 / (T(1) + H(1))                                (plain AR step)
//   R(d) = (1 + A(d)) / (d·t + T(s(d)) + H(s(d)))           (d in [min_depth, max_depth])
// where H(s) is the engine's host work in a step, from the same terms the step model prices
// (costmodel/step/host_time.h, SpeculationGateOptions::host): step_s + per_sequence_s·B +
// one sampling call + verify_per_token_s per verified token. The drafter's own host work and
// sampling are in the measured t already. With the default (all zero, specplan's runtime, whose
// calibrated passes include their host work) H = 0.
// The gate returns the d maximising R (ties: the smaller d); 0 unless some d beats AR by more
// than the factor (1 + min_gain).
//
// A batch (DecideBatch): B sequences at contexts c_i verified in one ragged pass
// T_B({s_i}) = LatencyModel::VerifyBatchSeconds, all drafted one after another to one depth d:
//   R(0) = B / (T_B({1}) + H_B(1))
//   R(d) = B (1 + A(d)) / (B·d·t + T_B({s(d)}) + H_B(s(d)))
// With B = 1 this is Decide's rule; one gate (one estimator) serves the whole batch.
//
// Recovery: a gate that returns 0 stops seeing acceptance and fresh draft timings. After
// probe_interval consecutive undrafted steps it returns a probe (depth min(probe_depth,
// max_depth), at least min_depth) whose acceptance and timing update the estimates; each probe
// that is followed by another 0 doubles the interval up to max_probe_interval, and any step the
// gate drafts on its own merits resets it. A probe can cost far more than its depth (a drafter
// that skipped steps first catches up on them), so once the caller reports what a probe cost
// (ObserveProbeSeconds), the next probe also waits until that cost is at most probe_budget of the
// AR time in between: at least probe_s / (probe_budget · T(1)) undrafted steps (never more than
// max_probe_interval). So a drafter that became cheap or good again is picked up within one
// probe, and one that stays useless costs one probe per max_probe_interval steps. Before any
// draft time has been measured the gate also probes.
//
// Torch-free (planner/ depends on costmodel/ only); not thread-safe, one gate per sequence or
// strategy.
#ifndef SPECPLAN_PLANNER_ACCEPTANCE_SPECULATION_GATE_H_
#define SPECPLAN_PLANNER_ACCEPTANCE_SPECULATION_GATE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/step/host_time.h"
#include "planner/acceptance/acceptance.h"

namespace specplan::planner {

struct AcceptanceEstimatorOptions {
  double prior_alpha = 0.5;   // alpha before any observation, in [0, 1]
  double prior_weight = 1.0;  // attempts the prior is worth, >= 0
  double forget = 0.95;       // per observed step decay of the counts and EMAs, in (0, 1]
};

class AcceptanceEstimator {
 public:
  explicit AcceptanceEstimator(const AcceptanceEstimatorOptions& options = {});

  // One verified step that proposed depths 1..proposed_depth with num_draft draft nodes and
  // accepted accepted_length of them (0 <= accepted_length <= proposed_depth <= num_draft).
  // A step that proposed nothing (proposed_depth = 0) carries no information and is ignored.
  void Observe(int proposed_depth, int num_draft, int accepted_length);
  void Observe(const StepAcceptance& step) {
    Observe(step.proposed_depth, step.num_draft, step.accepted_length);
  }
  // The planner's surrogate for the step, Â = 1 + Σρ over the verified draft nodes (root
  // included, >= 1), and the realised accepted length: updates kappa. Ignored when Â < 1.
  void ObserveSurrogate(double expected_accepted, int accepted_length);

  double alpha() const;
  // A(d) = Σ_{k=1..d} alpha^k: expected accepted draft tokens of a depth-d step (bonus excluded).
  double ExpectedAccepted(int depth) const;
  // EMA of draft nodes per proposed depth (>= 1; 1 before any observation).
  double width() const { return width_; }
  // EMA of the proposed depth (0 before any observation).
  double mean_depth() const { return depth_; }
  // EMA of (accepted + 1) / Â over ObserveSurrogate calls (1 before any).
  double kappa() const { return kappa_; }
  // (Σ f^age L + w_0) / (Σ f^age (Â − 1) + w_0) over ObserveSurrogate calls with Â > 1, w_0 =
  // prior_weight (1 before any), clamped to [1 / kMaxAcceptanceScale, kMaxAcceptanceScale].
  double surrogate_scale() const;
  int64_t observed_steps() const { return steps_; }
  int64_t surrogate_steps() const { return surrogate_steps_; }

 private:
  AcceptanceEstimatorOptions o_;
  double successes_ = 0;
  double attempts_ = 0;
  double width_ = 1;
  double depth_ = 0;
  double kappa_ = 1;
  double realised_draft_ = 0;  // Σ f^age L over ObserveSurrogate calls with Â > 1
  double promised_draft_ = 0;  // Σ f^age (Â − 1) over the same calls
  int64_t steps_ = 0;
  int64_t surrogate_steps_ = 0;
};

struct SpeculationGateOptions {
  bool enabled = true;  // false: callers skip the gate and always draft their full depth
  AcceptanceEstimatorOptions acceptance;
  double min_gain = 0.0;          // a depth must beat AR's tokens/s by more than this fraction
  double time_forget = 0.8;       // EMA factor of the measured draft-level seconds, in [0, 1)
  int probe_interval = 64;        // undrafted steps before the first probe, >= 1
  int max_probe_interval = 1024;  // the interval doubles per unsuccessful probe up to this
  int probe_depth = 2;            // depth of a probe (>= 1; 2 also times a single-token level)
  double probe_budget = 0.02;     // most a probe may cost, as a fraction of the AR time until the
                                  // next one, in [0, 1]; 0: the interval alone spaces probes
  // The engine's host work per step (the step model's terms; per_draft_forward_s and
  // ngram_verify_fraction are not read: the measured draft level holds the drafter's). Default 0:
  // specplan's runtime (DefaultHostTime("specplan") in every term read here). An engine passes
  // DefaultHostTime(engine) or its refit (`specplan step fit`), so the gate trades drafting against
  // the same step the planners price.
  costmodel::HostTime host;
};

// Checks ranges; the error names the field and value.
absl::Status ValidateSpeculationGateOptions(const SpeculationGateOptions& options);

struct GateDecision {
  int depth = 0;                 // draft depth for this step; 0 = plain AR step, no drafting
  bool probe = false;            // drafted to refresh the estimates, not on expected gain
  double ar_tokens_per_s = 0;    // R(0)
  double tokens_per_s = 0;       // R(depth) as estimated (R(0) for depth 0 and for probes)
  double expected_accepted = 0;  // A(depth)
};

struct GateStats {
  int64_t decisions = 0;
  int64_t undrafted = 0;  // decisions of depth 0
  int64_t probes = 0;     // decisions that were probes
};

class SpeculationGate {
 public:
  explicit SpeculationGate(const SpeculationGateOptions& options = {});

  // Decides the depth of the next step among {0} ∪ [min_depth, max_depth]
  // (1 <= min_depth <= max_depth): verify prices T_verify(s, c) over the c cached tokens;
  // draft_level_s is the seconds of one draft level (< 0 or NaN: use the EMA of
  // ObserveDraftLevel; before any, the gate probes). Not const: counts, probe schedule.
  GateDecision Decide(const costmodel::LatencyModel& verify, int64_t c, int min_depth,
                      int max_depth, double draft_level_s = -1);
  // The same for a batch of contexts.size() >= 1 sequences (see the header comment); the
  // decision's tokens per second are the batch's.
  GateDecision DecideBatch(const costmodel::LatencyModel& verify,
                           absl::Span<const int64_t> contexts, int min_depth, int max_depth,
                           double draft_level_s = -1);
  // Measured seconds of one draft level (> 0; anything else is ignored).
  void ObserveDraftLevel(double seconds);
  // Measured seconds of the last probe's drafting, catch-up included (> 0; else ignored).
  void ObserveProbeSeconds(double seconds);
  // After verification of a step: feeds the acceptance estimator (see AcceptanceEstimator).
  void Observe(const StepAcceptance& step) { estimator_.Observe(step); }

  AcceptanceEstimator& estimator() { return estimator_; }
  const AcceptanceEstimator& estimator() const { return estimator_; }
  // EMA of the observed draft-level seconds (0 before any).
  double draft_level_s() const { return level_s_; }
  const GateStats& stats() const { return stats_; }
  const SpeculationGateOptions& options() const { return o_; }

 private:
  // The decision, with `sequences` sequences drafted one after another and verify_s(s) the
  // seconds of a pass verifying s tokens per sequence (host work added here: HostSeconds).
  GateDecision DecideWith(int sequences, const std::function<double(int64_t)>& verify_s,
                          int min_depth, int max_depth, double draft_level_s);
  // H_B(s): the host seconds of a step of `sequences` sequences verifying s tokens each.
  double HostSeconds(int sequences, int64_t s) const;

  SpeculationGateOptions o_;
  AcceptanceEstimator estimator_;
  double level_s_ = 0;
  int undrafted_run_ = 0;  // consecutive depth-0 decisions since the last drafted step
  int interval_;           // current probe interval
  double probe_s_ = 0;     // cost of the last probe, seconds (0: not reported)
  bool probed_last_ = false;
  GateStats stats_;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_ACCEPTANCE_SPECULATION_GATE_H_
