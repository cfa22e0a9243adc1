// Conversions between the wire messages (specplan.v1) and the planner's plain structs, with the
// request validation that belongs to the wire: lengths, server limits, enum values. Checks that the
// planner already has (ValidateMarginals, ValidateTree, ValidateNodeDistributions, option
// validators) are reused and their messages prefixed with the request field path, so that every
// error names the field and the value, e.g. "marginals.probs[3][1] = 1.2: must be in [0, 1]".
//
// Codes: INVALID_ARGUMENT for malformed values, RESOURCE_EXHAUSTED for a server limit
// (--max-gamma, --max-k, --max-n).
#ifndef SPECPLAN_SERVICE_CONVERT_H_
#define SPECPLAN_SERVICE_CONVERT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/grid_latency.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"
#include "planner/batch/batch_plan.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/policies/dynatree.h"
#include "planner/policies/fixed_tree.h"
#include "planner/policies/policy.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"
#include "specplan/v1/planner.pb.h"
#include "whatif/sweep.h"

namespace specplan::service {

// Request limits of one server (flags --max-gamma, --max-k, --max-n, ...).
struct ServiceLimits {
  int max_gamma = planner::kMaxMarginalsGamma;  // marginals rows / path-conditioned depth
  int max_k = planner::kMaxMarginalsK;          // candidates per row
  int max_n = planner::kMaxTreeNodes - 1;       // draft nodes of any tree taken or produced
  int64_t max_context = int64_t{1} << 24;       // c, cached tokens
  int64_t max_s = int64_t{1} << 20;             // s in EstimateLatency
  int max_grid_points = 1 << 16;                // EstimateLatency points
  int max_report_steps = 1 << 16;               // ReportAcceptance steps per call
  int64_t max_whatif_steps = 1 << 17;           // WhatIf: trace steps per request
  int max_whatif_budgets = 64;                  // WhatIf: budgets per request (each <= max_n)
  // WhatIfOnline: output tokens replayed per request (requests x settings x loads). 2^26 (67 M) is
  // about 5x microbench/online_bench's sweep (10,000 requests of 64-256 output tokens at 8 rates,
  // 12.8 M tokens, 0.66-0.68 s on the 2-core Intel Xeon VM): a few seconds of one server thread.
  int64_t max_online_tokens = int64_t{1} << 26;
  int max_batch_requests = planner::kMaxBatchRequests;  // PlanBatch: requests per call (B)
  int max_batch_nodes = planner::kMaxBatchNodes;        // PlanBatch: n_max, total draft nodes
  // PlanSession streams open at once. Each open stream holds one server thread (PlanSession runs
  // on gRPC's synchronous API, a thread per stream, idle or not), so this bounds the threads
  // clients can pin; a stream past it is refused with RESOURCE_EXHAUSTED.
  int max_sessions = 256;
};

// The largest --max-sessions (threads one server may give to streams).
inline constexpr int kMaxSessions = 4096;

// Checks the limits themselves (flags): each within the planner's own bounds.
absl::Status ValidateLimits(const ServiceLimits& limits);

// "field: message" with the same code.
absl::Status Prefixed(absl::string_view field, const absl::Status& status);

// Wire marginals -> *out (its buffers are reused). Checks gamma/k against the limits and the
// array lengths, then ValidateMarginals. `field` is the request field ("marginals").
absl::Status MarginalsFromProto(const v1::Marginals& in, const ServiceLimits& limits,
                                absl::string_view field, planner::Marginals* out);

// Wire tree -> *out (buffers reused). Empty depths are computed from parents; empty path_probs
// stay empty. Checks the size against the limits, then ValidateTree.
absl::Status TreeFromProto(const v1::Tree& in, const ServiceLimits& limits, absl::string_view field,
                           planner::Tree* out);
void TreeToProto(const planner::Tree& in, v1::Tree* out);

// BudgetMode: UNSPECIFIED -> controller; unknown values are INVALID_ARGUMENT.
absl::Status BudgetModeFromProto(int mode, absl::string_view field, planner::BudgetMode* out);
// A request's acceptance_scale: 0 -> 1 (uncalibrated); otherwise it must be in
// (0, planner::kMaxAcceptanceScale] (InvalidArgument naming `field` and the value).
absl::Status AcceptanceScaleFromProto(double in, const std::string& field, double* out);
v1::BudgetMode BudgetModeToProto(planner::BudgetMode mode);
// An engine name (ProfileRef.engine, the server's --engine): "" stays "" (none named); otherwise
// the canonical name costmodel::ParseEngine gives ("TRT-LLM" -> "trtllm"). INVALID_ARGUMENT naming
// `field` and the value and listing the known engines: "cost.profile.engine = 'foo': unknown
// engine (known: sglang, vllm, trtllm, specplan)".
absl::Status EngineFromProto(const std::string& in, absl::string_view field, std::string* out);

// Request side of the client (no checks: the server validates).
void MarginalsToProto(const planner::Marginals& in, v1::Marginals* out);
void DrafterCostToProto(const costmodel::DrafterCost& in, v1::DrafterCost* out);

// The step model's options of a request's drafter (DrafterCost.architecture and what follows):
// the architecture, D (has_draft_steps; else -1 = s - 1), topk (0 = 1), draft_vocab, `draft_s`
// (> 0: T_draft by hand) and the host overrides over DefaultHostTime(engine) (their provenance
// says so). Values are checked here and by costmodel::ValidateStepOptions; errors name
// "<field>.drafter.<name>" and the value ("cost.drafter.topk = 65: must be in [1, 64]"). The
// architecture name itself is checked when the step model is built (StepModel::Create).
absl::Status StepOptionsFromProto(const v1::DrafterCost& in, const std::string& engine,
                                  double draft_s, absl::string_view field,
                                  costmodel::StepOptions* out);
// A step-model error in the request's words: "drafter = 'x': ..." -> "<field>.drafter.architecture
// = 'x': ...", "topk = ..." / "draft_steps = ..." / "host.<f> = ..." -> "<field>.drafter.<...>",
// "draft_s = ..." -> "<field>.drafter.t_net_s + t_head_s + t_light_s = ..." (T_draft by hand).
absl::Status StepErrorInFields(const absl::Status& status, absl::string_view field);

// Step breakdowns and host time on the wire, both ways (no checks).
void StepBreakdownToProto(const costmodel::StepBreakdown& in, const std::string& draft_priced_by,
                          v1::StepBreakdown* out);
costmodel::StepBreakdown StepBreakdownFromProto(const v1::StepBreakdown& in);
void HostTimeToProto(const costmodel::HostTime& in, v1::HostTime* out);
costmodel::HostTime HostTimeFromProto(const v1::HostTime& in);

// n_max in [0, limits.max_n]: negative -> INVALID_ARGUMENT, too large -> RESOURCE_EXHAUSTED.
absl::Status CheckNMax(int64_t n_max, const ServiceLimits& limits, absl::string_view field);
// 0 <= c <= limits.max_context (ops::CheckContext): "<field> = <c>: must be in [0, <max>]".
absl::Status CheckContext(int64_t c, const ServiceLimits& limits, absl::string_view field);

// A duration in seconds: finite, in [0, kMaxSeconds]. The upper bound keeps sums over long
// traces and trees finite (a WhatIf sweep adds one cycle cost per step).
inline constexpr double kMaxSeconds = 1e6;
absl::Status CheckSeconds(double value, absl::string_view field);

// Which outputs to compute; an unset selection means the default set (see planner.proto).
struct Outputs {
  bool positions = true, parents = true, retrieve = true, packed_mask = true, dense_mask = false,
       curve = true;
};
Outputs OutputsFromProto(bool has_selection, const v1::OutputSelection& sel);
planner::TreeOutputOptions TreeOutputOptionsFor(const Outputs& o, int64_t position_offset);
void TreeOutputsToProto(const planner::TreeOutputs& in, const Outputs& o, v1::TreeOutputs* out);

// Plan summary fields and (when o.curve) the curve.
void PlanToProto(const planner::BestFirstPlan& in, const Outputs& o, v1::Plan* out);

// Reply side of the client: a server's reply back into the planner's structs (buffers reused),
// taken as it is (no checks); the inverses of PlanToProto, TreeOutputsToProto and the server's
// MergeTrees reply.
void PlanFromProto(const v1::Plan& in, planner::BestFirstPlan* out);
void TreeOutputsFromProto(const v1::TreeOutputs& in, planner::TreeOutputs* out);
void MergedTreeFromProto(const v1::MergeTreesResponse& in, planner::MergedTree* out);

// Wire grid -> model (costmodel/latency/grid_latency.h, GridSource::kCaller). Checks: 1 <= points
// <= limits.max_grid_points (RESOURCE_EXHAUSTED above), equal lengths, s strictly increasing in [1,
// limits.max_s], seconds in [0, kMaxSeconds] (values below 1 ns count as 1 ns, at grid points too,
// so no step is free). `field` is the request field ("cost.latency_grid").
absl::StatusOr<std::shared_ptr<const costmodel::GridLatency>> LatencyGridFromProto(
    const v1::LatencyGrid& in, const ServiceLimits& limits, absl::string_view field);

// Policy configs (planner.proto DynaTreeConfig, FixedTreeConfig) -> options: a 0 field keeps the
// option's default (n_max / max_nodes included); fixed tau is taken as sent. Values are left to
// the policy's validator. Shared by PlanSession and WhatIf.
planner::DynaTreeOptions DynaTreeOptionsFromProto(const v1::DynaTreeConfig& c);
planner::FixedTreeOptions FixedTreeOptionsFromProto(const v1::FixedTreeConfig& c);

// Wire distributions -> *out (buffers reused); shape checks only, the policy validates values.
absl::Status NodeDistributionsFromProto(const v1::NodeDistributions& in,
                                        planner::NodeDistributions* out);

// PlanBatch (planner.proto "PlanBatch").
//
// The batch of a request: (*marginals)[i] is requests[i].marginals (resized to B; buffers reused)
// and (*out)[i] points into it, so *marginals must stay put while *out is used. Checks B in
// [1, limits.max_batch_requests] (RESOURCE_EXHAUSTED above), every request's marginals as
// MarginalsFromProto does with the field "requests[i].marginals", context_tokens in [0,
// limits.max_context], n_max (when has_n_max) with CheckNMax, weight (0 = 1, else finite > 0).
// A request without a cap is capped at limits.max_n when that is below the planner's own limit.
absl::Status BatchRequestsFromProto(const v1::PlanBatchRequest& in, const ServiceLimits& limits,
                                    std::vector<planner::Marginals>* marginals,
                                    std::vector<planner::BatchRequest>* out);
// The options of a request: mode, n_max (in [0, limits.max_batch_nodes], RESOURCE_EXHAUSTED
// above), objective and max_seconds_per_token (finite, > 0 for LATENCY_BOUND). validate = false
// (BatchRequestsFromProto validated the marginals).
absl::Status BatchOptionsFromProto(const v1::PlanBatchRequest& in, const ServiceLimits& limits,
                                   planner::BatchPlanOptions* out);
// The SGLang options of a request: tree_mask_mode ("" = QLEN_ONLY) and draft_token_num (>= 0).
absl::Status SglangOptionsFromProto(const v1::PlanBatchRequest& in,
                                    planner::SglangLayoutOptions* out);

// Client side: the requests and options as a PlanBatchRequest (no checks: the server validates).
// n_max = -1 is sent as has_n_max = false.
void BatchRequestToProto(const std::vector<planner::BatchRequest>& requests,
                         const planner::BatchPlanOptions& options, v1::PlanBatchRequest* out);

// Server side: the plan and each request's outputs (outputs[i] for request i, positions offset by
// its c) into the reply; the curve when o.curve.
void BatchPlanToProto(const planner::BatchPlan& in,
                      const std::vector<planner::TreeOutputs>& outputs, const Outputs& o,
                      v1::PlanBatchResponse* out);
// Client side, the inverse (buffers reused; taken as it is, no checks). `outputs` may be null
// (the per-request outputs are then not read).
void BatchPlanFromProto(const v1::PlanBatchResponse& in, planner::BatchPlan* out,
                        std::vector<planner::TreeOutputs>* outputs);

// Engine layouts on the wire, both ways.
void RaggedBatchToProto(const planner::BatchLayout& in, v1::RaggedBatch* out);
void SglangBatchToProto(const planner::SglangLayout& in, v1::SglangBatch* out);

// WhatIf (planner.proto "WhatIf"). The sweep options of a request, except drafter and t_aux_s
// (they come with the resolved cost) and the trace: budgets (each in [1, limits.max_n], at most
// limits.max_whatif_budgets, no repeats; empty = the WhatIfOptions default), strategies (known
// names, no repeats; empty = all), n_max (CheckNMax), policy_forward_s, dynatree and fixed_tree
// (0 = default; max_nodes / n_max are the budget), per_step. Codes as above; values the sweep
// itself checks (policy option ranges) are left to whatif::RunWhatIf, whose messages name the
// same fields ("dynatree.tau_l = ...").
absl::Status WhatIfOptionsFromProto(const v1::WhatIfRequest& in, const ServiceLimits& limits,
                                    whatif::WhatIfOptions* out);
// The client side: the same fields of *out from options (drafter, t_aux_s, the trace and the cost
// are left alone). InvalidArgument when a DynaTreeOptions field that the wire does not carry
// (prune_mode, window, target_acceptance, eta_*, statistic) differs from its default, or when a
// dynatree / fixed_tree value is 0 where 0 would mean "default" on the wire.
absl::Status WhatIfOptionsToProto(const whatif::WhatIfOptions& options, v1::WhatIfRequest* out);

// Report -> response (everything but trace.bundled_path, profile_id and run_us) and back. Doubles
// travel unchanged (NaN included), so FromProto(ToProto(r)) equals r field for field.
void WhatIfReportToProto(const whatif::WhatIfReport& in, v1::WhatIfResponse* out);
// InvalidArgument naming the field for an unknown strategy or drafter class name or ragged
// per-step arrays (a reply from a different version of the server).
absl::StatusOr<whatif::WhatIfReport> WhatIfReportFromProto(const v1::WhatIfResponse& in);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_CONVERT_H_
