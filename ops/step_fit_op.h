// Operation StepFit: the engine's host-time terms (per step, per sequence, per draft forward, per
// verified token; costmodel/step/host_fit.h) refitted to the user's own benchmark points, priced
// over the same cost and step model every operation uses. Serves `specplan step fit`; the fitted
// terms (HostTimeToJson) are what a request's host_file names.
//
//   StepFitRequest req;  req.cost.model = "llama-3.1-8b";  req.cost.gpu = "h100";
//   req.points = "bench.csv";
//   absl::StatusOr<StepFitResult> r = ops::StepFit(req);
#ifndef SPECPLAN_OPS_STEP_FIT_OP_H_
#define SPECPLAN_OPS_STEP_FIT_OP_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/step/host_fit.h"
#include "ops/cost_request.h"
#include "ops/whatif_op.h"

namespace specplan::ops {

struct StepFitRequest {
  CostRequest cost;    // model and gpu required; engine, profile, drafter as every operation's
  std::string points;  // CSV path: batch, k, context, and step_ms or tokens_per_s (+ acceptance)
};

struct StepFitResult {
  costmodel::HostFit fit;
  std::vector<costmodel::StepPoint> points;  // [n] as read
  // What was fitted against: trace_path is the points file; model, gpu, dtype, profile, engine
  // and engine_version as resolved (ops/whatif_op.h WhatIfSource).
  WhatIfSource source;
};

// The request alone: model, gpu and points given, dtype and drafter names.
absl::Status Validate(const StepFitRequest& req);
// Reads and parses the points ("points <path>: ..."), resolves the cost, fits ("points <path>:
// ..." when the points cannot determine the terms).
absl::StatusOr<StepFitResult> StepFit(const StepFitRequest& req);

// The JSON form (`specplan step fit --json`): costmodel::HostFitToJson with points (the path) and
// profile.
nlohmann::json ToJson(const StepFitResult& result);
// The text form: the fitted terms, what was fitted and kept, measured against fitted per point
// and the MAPE ('\n'-terminated).
std::string ToText(const StepFitResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_STEP_FIT_OP_H_
