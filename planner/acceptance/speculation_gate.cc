#include "planner/acceptance/speculation_gate.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "costmodel/latency/batch_shape.h"
#include "planner/policies/best_first.h"
#include "util/check.h"

namespace specplan::planner {

AcceptanceEstimator::AcceptanceEstimator(const AcceptanceEstimatorOptions& options) : o_(options) {}

void AcceptanceEstimator::Observe(int proposed_depth, int num_draft, int accepted_length) {
  SPECPLAN_CHECK(0 <= accepted_length && accepted_length <= proposed_depth &&
                 proposed_depth <= num_draft);
  if (proposed_depth == 0) return;
  const double f = o_.forget;
  successes_ = f * successes_ + accepted_length;
  attempts_ = f * attempts_ + accepted_length + (accepted_length < proposed_depth ? 1 : 0);
  const double w = static_cast<double>(num_draft) / proposed_depth;
  if (steps_ == 0) {
    width_ = w;
    depth_ = proposed_depth;
  } else {
    width_ = f * width_ + (1 - f) * w;
    depth_ = f * depth_ + (1 - f) * proposed_depth;
  }
  ++steps_;
}

void AcceptanceEstimator::ObserveSurrogate(double expected_accepted, int accepted_length) {
  if (!(expected_accepted >= 1) || accepted_length < 0) return;
  const double r = (accepted_length + 1.0) / expected_accepted;
  kappa_ = surrogate_steps_ == 0 ? r : o_.forget * kappa_ + (1 - o_.forget) * r;
  ++surrogate_steps_;
  if (expected_accepted > 1) {
    realised_draft_ = o_.forget * realised_draft_ + accepted_length;
    promised_draft_ = o_.forget * promised_draft_ + (expected_accepted - 1);
  }
}

double AcceptanceEstimator::surrogate_scale() const {
  const double s = (realised_draft_ + o_.prior_weight) / (promised_draft_ + o_.prior_weight);
  if (!std::isfinite(s)) return 1.0;  // no observation and no prior weight: 0 / 0
  return std::clamp(s, 1.0 / kMaxAcceptanceScale, kMaxAcceptanceScale);
}

double AcceptanceEstimator::alpha() const {
  return (successes_ + o_.prior_weight * o_.prior_alpha) / (attempts_ + o_.prior_weight);
}

double AcceptanceEstimator::ExpectedAccepted(int depth) const {
  const double a = alpha();
  double term = 1, sum = 0;
  for (int k = 1; k <= depth; ++k) {
    term *= a;
    sum += term;
  }
  return sum;
}

absl::Status ValidateSpeculationGateOptions(const SpeculationGateOptions& o) {
  const AcceptanceEstimatorOptions& a = o.acceptance;
  auto bad = [](const char* field, double v, const char* range) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", v, ": must be in ", range));
  };
  if (!(a.prior_alpha >= 0 && a.prior_alpha <= 1)) {
    return bad("gate.acceptance.prior_alpha", a.prior_alpha, "[0, 1]");
  }
  if (!(a.prior_weight >= 0) || !std::isfinite(a.prior_weight)) {
    return bad("gate.acceptance.prior_weight", a.prior_weight, "[0, inf)");
  }
  if (!(a.forget > 0 && a.forget <= 1)) return bad("gate.acceptance.forget", a.forget, "(0, 1]");
  if (!(o.min_gain >= 0) || !std::isfinite(o.min_gain)) {
    return bad("gate.min_gain", o.min_gain, "[0, inf)");
  }
  if (!(o.time_forget >= 0 && o.time_forget < 1)) {
    return bad("gate.time_forget", o.time_forget, "[0, 1)");
  }
  if (o.probe_interval < 1) return bad("gate.probe_interval", o.probe_interval, "[1, inf)");
  if (o.max_probe_interval < o.probe_interval) {
    return bad("gate.max_probe_interval", o.max_probe_interval, "[probe_interval, inf)");
  }
  if (o.probe_depth < 1) return bad("gate.probe_depth", o.probe_depth, "[1, inf)");
  if (!(o.probe_budget >= 0 && o.probe_budget <= 1)) {
    return bad("gate.probe_budget", o.probe_budget, "[0, 1]");
  }
  return costmodel::ValidateHostTime(o.host, "gate.host.");
}

SpeculationGate::SpeculationGate(const SpeculationGateOptions& options)
    : o_(options), estimator_(options.acceptance), interval_(options.probe_interval) {
  SPECPLAN_CHECK(ValidateSpeculationGateOptions(o_).ok());
}

void SpeculationGate::ObserveDraftLevel(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  level_s_ = level_s_ == 0 ? seconds : o_.time_forget * level_s_ + (1 - o_.time_forget) * seconds;
}

void SpeculationGate::ObserveProbeSeconds(double seconds) {
  if (seconds > 0 && std::isfinite(seconds)) probe_s_ = seconds;
}

GateDecision SpeculationGate::Decide(const costmodel::LatencyModel& verify, int64_t c,
                                     int min_depth, int max_depth, double draft_level_s) {
  return DecideWith(
      1, [&](int64_t s) { return verify.VerifySeconds(s, c); }, min_depth, max_depth,
      draft_level_s);
}

GateDecision SpeculationGate::DecideBatch(const costmodel::LatencyModel& verify,
                                          absl::Span<const int64_t> contexts, int min_depth,
                                          int max_depth, double draft_level_s) {
  SPECPLAN_CHECK(!contexts.empty());
  costmodel::BatchShape shape;
  shape.Reserve(contexts.size());
  auto verify_s = [&](int64_t s) {
    shape.Clear();
    for (int64_t c : contexts) shape.Add(s, c);
    return verify.VerifyBatchSeconds(shape);
  };
  return DecideWith(static_cast<int>(contexts.size()), verify_s, min_depth, max_depth,
                    draft_level_s);
}

double SpeculationGate::HostSeconds(int sequences, int64_t s) const {
  const costmodel::HostTime& h = o_.host;
  const double b = sequences;
  return h.step_s + h.per_sequence_s * b + h.sample_call_s +
         h.verify_per_token_s * b * static_cast<double>(s);
}

GateDecision SpeculationGate::DecideWith(int sequences,
                                         const std::function<double(int64_t)>& verify_s,
                                         int min_depth, int max_depth, double draft_level_s) {
  SPECPLAN_CHECK(1 <= min_depth && min_depth <= max_depth && sequences >= 1);
  ++stats_.decisions;
  const double B = sequences;
  GateDecision d;
  d.ar_tokens_per_s = B / (verify_s(1) + HostSeconds(sequences, 1));
  d.tokens_per_s = d.ar_tokens_per_s;
  const double t = draft_level_s >= 0 && std::isfinite(draft_level_s) ? draft_level_s : level_s_;
  const int probe_depth = std::clamp(o_.probe_depth, min_depth, max_depth);
  if (!(t > 0)) {  // nothing measured yet: draft once to measure
    d.depth = probe_depth;
    d.probe = true;
  } else {
    const double w = estimator_.width();
    for (int depth = min_depth; depth <= max_depth; ++depth) {
      const int64_t s = 1 + static_cast<int64_t>(std::llround(w * depth));
      const double a = estimator_.ExpectedAccepted(depth);
      const double r = B * (1.0 + a) / (B * depth * t + verify_s(s) + HostSeconds(sequences, s));
      if (r > d.tokens_per_s && r > d.ar_tokens_per_s * (1.0 + o_.min_gain)) {
        d.tokens_per_s = r;
        d.depth = depth;
      }
    }
    if (d.depth > 0) {  // drafting pays: back to the short probe schedule
      interval_ = o_.probe_interval;
      undrafted_run_ = 0;
      probed_last_ = false;
    } else {
      if (probed_last_) interval_ = std::min(2 * interval_, o_.max_probe_interval);
      probed_last_ = false;
      double due = interval_;
      if (probe_s_ > 0 && o_.probe_budget > 0) {  // the last probe's cost, spread thin enough
        const double spread = probe_s_ * (d.ar_tokens_per_s / B) / o_.probe_budget;
        due = std::min<double>(std::max(due, std::ceil(spread)), o_.max_probe_interval);
      }
      if (undrafted_run_ >= due) {  // enough undrafted steps in a row: probe
        d.depth = probe_depth;
        d.probe = true;
        undrafted_run_ = 0;
        probed_last_ = true;
      } else {
        ++undrafted_run_;
      }
    }
  }
  if (d.probe) ++stats_.probes;
  if (d.depth == 0) ++stats_.undrafted;
  d.expected_accepted = estimator_.ExpectedAccepted(d.depth);
  return d;
}

}  // namespace specplan::planner
