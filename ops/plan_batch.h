// Operation PlanBatch: one tree budget across the B requests an engine verifies together in one
// ragged pass (planner/batch/batch_plan.h: goodput G(N) = Σ w_i Â_i / C_batch over one global
// budget, or the latency-bound objective), each request's verifier outputs, and optionally the
// batch in an engine's layout (ragged, SGLang). Serves `specplan plan-batch` and the service's
// PlanBatch; the Python module's plan_batch / plan_batch_arrays are to call it too.
//
// A drafter architecture's whole step (drafting, sampling, host) is priced into the cycle at the
// batch's mean context (MeanContext) for the batch's largest gamma: one rule for every front end.
//
//   PlanBatchRequest req;  req.requests = {{&m0, 1024}, {&m1, 300}};  req.options.n_max = 64;
//   req.cost.model = "qwen3-8b";  req.cost.gpu = "h100";
//   absl::StatusOr<PlanBatchResult> r = ops::PlanBatch(req);  // resolves req.cost in-process
//
// Hot path: PlanBatchInto plans into a caller-owned planner and result over a cost the caller
// holds (CostView), reusing their buffers.
#ifndef SPECPLAN_OPS_PLAN_BATCH_H_
#define SPECPLAN_OPS_PLAN_BATCH_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/cost_request.h"
#include "ops/validate.h"
#include "planner/batch/batch_plan.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::ops {

enum class BatchLayoutKind { kNone, kRagged, kSglang };

struct PlanBatchRequest {
  // [B] the requests (marginals or providers not owned; c, n_max, weight), 1 <= B <=
  // planner::kMaxBatchRequests.
  std::vector<planner::BatchRequest> requests;
  // mode, n_max (over the batch, [0, kMaxBatchNodes]), objective, max_seconds_per_token,
  // acceptance_scale, validate.
  planner::BatchPlanOptions options;
  CostRequest cost;               // in-process cost (PlanBatch(req) only)
  double t_draft_ms = 0;          // by-hand draft time for one sequence, ms, >= 0
  double draft_batch_growth = 0;  // a cost class's DrafterCost::batch_growth, >= 0
  // Each request's verifier outputs (position_offset set to its c); off: outputs stay empty.
  bool compute_outputs = true;
  planner::TreeOutputOptions outputs{0, /*packed_mask=*/false};
  BatchLayoutKind layout = BatchLayoutKind::kNone;
  planner::SglangLayoutOptions sglang;  // for kSglang
  // The most bytes the plan's outputs and layout may take (planner::TreeOutputsBytes, the
  // layouts' own sizes), checked once the trees are planned and before any output is built:
  // RESOURCE_EXHAUSTED past it. 0 = no bound beyond the layouts' own (planner::kMaxLayoutBytes).
  // The server passes its message limit.
  int64_t max_reply_bytes = 0;
};

struct PlanBatchResult {
  planner::BatchPlan plan;                    // trees [B], n, Â, price, curve, goodput
  std::vector<planner::TreeOutputs> outputs;  // [B] when compute_outputs
  std::vector<int64_t> contexts;              // [B] each request's c
  planner::BatchLayout ragged;                // layout kRagged
  planner::SglangLayout sglang;               // layout kSglang
  bool priced = false;                        // latency_model and profile are set
  std::string latency_model;
  std::string profile;  // the profile's id; "" = none
};

// The batch's mean context, as a drafter's step is priced for the batch: Σ c_i / B (integer
// division); 0 for an empty batch.
int64_t MeanContext(absl::Span<const planner::BatchRequest> requests);
int64_t MeanContext(absl::Span<const int64_t> contexts);
// The batch's largest gamma (a provider request's own gamma); 0 for an empty batch.
int MaxGamma(absl::Span<const planner::BatchRequest> requests);

// Whether a plan of `options` needs a cost: every mode but kFixed, and the latency bound.
bool NeedsCost(const planner::BatchPlanOptions& options);

// The request alone: B, each c in [0, max_context], n_max, max_seconds_per_token (only without
// kFixed), t_draft_ms, draft_batch_growth. Errors name the field and value
// ("requests[3].c = -1: must be in [0, 16777216]").
absl::Status Validate(const PlanBatchRequest& req, int64_t max_context = kMaxContext);

// Plans into *planner and *result over `cost` (null only when !NeedsCost(options)).
// Errors past the planning: RESOURCE_EXHAUSTED when the outputs and layout asked for would take
// more than req.max_reply_bytes ("reply: the outputs and layout of 128 trees (131072 nodes) take
// 8.6e+09 bytes, over the limit of 4194304 bytes: ...").
absl::Status PlanBatchInto(const PlanBatchRequest& req, const CostView* cost,
                           planner::BatchPlanner* planner, PlanBatchResult* result,
                           int64_t max_context = kMaxContext);
// In-process: resolves req.cost when NeedsCost or any cost field is given, and plans.
absl::StatusOr<PlanBatchResult> PlanBatch(const PlanBatchRequest& req);

// The JSON form (`specplan plan-batch --json`): mode, search (planner::PlanSearch's name),
// objective, n_max, n_total, requests [{n, c,
// tokens, parents, depths, positions, retrieve, expected_accepted, price}], curve, cycle_s,
// goodput, ar_goodput (null when NaN), bound_met (latency bound), speculation_pays,
// lattice_exhausted; latency_model and profile when priced. (Layouts: the front end's.)
nlohmann::json ToJson(const PlanBatchRequest& req, const PlanBatchResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_PLAN_BATCH_H_
