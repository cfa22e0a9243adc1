// Refits the engine's host-time terms (host_time.h) from the user's own benchmark numbers: a few
// batch sizes measured with and without speculation. Each point's measured step time, less what
// the step model prices from kernels (the verify pass and the drafter's forwards, with no host
// time) and the sampling calls, is fitted as
//   step_s + per_sequence_s b + per_draft_forward_s forwards + verify_per_token_s tokens
// by least squares with every coefficient >= 0 (the best of the non-negative subsets; four
// unknowns). sample_call_s keeps the engine's default, and so does ngram_verify_fraction (a
// fraction of the verify pass, not seconds: the ngram/suffix proposal is priced with the kernels
// at its default before the fit, and listed as kept; the per-token column of a point that
// proposes is scaled by 1 + the fraction, since the proposal grows with the whole verify term).
// A term no point can tell apart (e.g. the per-draft-forward time with no point that runs a
// drafter forward) keeps its default, and the fit says so.
#ifndef SPECPLAN_COSTMODEL_STEP_HOST_FIT_H_
#define SPECPLAN_COSTMODEL_STEP_HOST_FIT_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/step/step_model.h"

namespace specplan::costmodel {

// One measurement: b sequences decoding with chains of k (0 = no speculation) at about c cached
// tokens each, taking step_s seconds per engine step. From a throughput: step_s = b x (tokens per
// step) / (tokens per second), tokens per step = 1 without speculation, else the engine's mean
// acceptance length (bonus included).
struct StepPoint {
  int64_t b = 1;
  int k = 0;
  int64_t c = 0;
  double step_s = 0;
  int line = 0;  // where it was read (0 = not from a file)
};

// Reads CSV with a header naming at least batch, k, context and either step_ms, or tokens_per_s
// with acceptance_length (needed where k > 0). Errors name source:line:column and the field.
absl::StatusOr<std::vector<StepPoint>> ParseStepPoints(const std::string& csv,
                                                       const std::string& source);

struct HostFit {
  HostTime host;                    // the fitted terms (others: the defaults it started from)
  std::vector<std::string> fitted;  // the fields the points determined
  std::vector<std::string> kept;    // the fields kept at their defaults, and why
  double mape = 0;                  // of the fitted step times against the points
  std::vector<double> predicted_s;  // [points]
};

// `model` is the step model with the engine's defaults (its host() is the starting point);
// `verify` prices the target pass it was built over. INVALID_ARGUMENT for fewer than 2 points, a
// point with k > 0 and no drafter, or one that the kernels alone already exceed (named by line).
absl::StatusOr<HostFit> FitHostTime(const LatencyModel* verify, const ModelSpec& target,
                                    const GpuSpec& gpu,
                                    const std::map<std::string, DrafterProfile>* drafters,
                                    const std::string& engine, const StepOptions& options,
                                    const std::vector<StepPoint>& points);

// HostTime as host_time.h HostTimeToJson writes it, and back (every field required, in [0, 1]:
// seconds, and ngram_verify_fraction a fraction).
absl::StatusOr<HostTime> HostTimeFromJson(const nlohmann::json& j);
nlohmann::json HostFitToJson(const HostFit& fit);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_STEP_HOST_FIT_H_
