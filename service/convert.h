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
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "planner/best_first.h"
#include "planner/marginals.h"
#include "planner/merge.h"
#include "planner/policy.h"
#include "planner/tree.h"
#include "planner/tree_outputs.h"
#include "specplan/v1/planner.pb.h"

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
};

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

// n_max in [0, limits.max_n]: negative -> INVALID_ARGUMENT, too large -> RESOURCE_EXHAUSTED.
absl::Status CheckNMax(int64_t n_max, const ServiceLimits& limits, absl::string_view field);

// A finite number >= 0 (`what` names the unit in the message).
absl::Status CheckNonNegative(double value, absl::string_view field);

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

// Wire distributions -> *out (buffers reused); shape checks only, the policy validates values.
absl::Status NodeDistributionsFromProto(const v1::NodeDistributions& in,
                                        planner::NodeDistributions* out);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_CONVERT_H_
