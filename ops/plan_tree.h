// Operation PlanTree: the best-first draft tree for one sequence from its drafter's marginals,
// with the hardware-aware budget controller (BASTION Alg. 1), a full scan, or a fixed budget, and
// the verifier's outputs (absolute positions c + depth, ancestor mask, retrieve rows). Serves
// `specplan plan` and the service's PlanTree; the Python module's plan() is to call it too.
//
//   PlanTreeRequest req;  req.marginals = &m;  req.c = 1024;  req.options.n_max = 64;
//   req.cost.model = "qwen3-8b";  req.cost.gpu = "h100";
//   absl::StatusOr<PlanTreeResult> r = ops::PlanTree(req);  // resolves req.cost in-process
//   std::cout << ops::ToJson(req, *r).dump(2);
//
// Hot path (engines, the service): PlanTreeInto plans into a caller-owned planner and result,
// reused call after call (no allocation once their buffers have grown), over a cost the caller
// already holds (CostView).
#ifndef SPECPLAN_OPS_PLAN_TREE_H_
#define SPECPLAN_OPS_PLAN_TREE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/cost_request.h"
#include "ops/validate.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::ops {

struct PlanTreeRequest {
  const planner::Marginals* marginals = nullptr;  // [gamma][k]; not owned, required
  int64_t c = 0;  // cached tokens: the cycle's context and the positions' offset, [0, max]
  // mode, n_max ([0, kMaxTreeNodes - 1]), l_ar_s (<= 0: the cost's), acceptance_scale, validate.
  planner::BestFirstOptions options;
  // In-process cost (PlanTree(req) only); needed unless options.mode is kFixed.
  CostRequest cost;
  double t_draft_ms = 0;  // by-hand draft time, ms (per step for ar, per block otherwise), >= 0
  // The verifier's outputs; position_offset is set to c.
  planner::TreeOutputOptions outputs{0, /*packed_mask=*/false};
};

struct PlanTreeResult {
  planner::BestFirstPlan plan;   // tree, n, Â, cycle_s, speedup, l_ar_s, curve
  planner::TreeOutputs outputs;  // positions (c + depth), retrieve, masks as asked
  bool priced = false;           // a cost priced the plan (latency_model, profile are set)
  std::string latency_model;     // the latency model's kind
  std::string profile;           // the profile's id; "" = none (bare or inline roofline)
};

// The request alone: marginals given (and valid when options.validate), c, n_max,
// acceptance_scale, t_draft_ms. Errors name the field and value.
absl::Status Validate(const PlanTreeRequest& req, int64_t max_context = kMaxContext);

// Plans into *planner and *result over `cost` (null only in kFixed: no cycle_s / speedup). The
// cycle is priced at req.c with PriceCycle; a given options.l_ar_s > 0 stands over the step's.
// Does not resolve anything and does not allocate once the buffers have grown.
absl::Status PlanTreeInto(const PlanTreeRequest& req, const CostView* cost,
                          planner::BestFirstPlanner* planner, PlanTreeResult* result,
                          int64_t max_context = kMaxContext);
// In-process: resolves req.cost when NeedsCost (CostRequest::Resolve) and plans.
absl::StatusOr<PlanTreeResult> PlanTree(const PlanTreeRequest& req);

// Whether `cost` prices its drafting per tree level (costmodel::DraftsByLevel of its drafter; a
// by-hand draft time t_draft_ms > 0 makes it depth-flat), so that the planners search per depth
// cap (planner::SearchFor). A client that plans on a server tells the server's search from it.
bool DraftsByLevel(const CostRequest& cost, double t_draft_ms);

// The JSON form (`specplan plan --json`): mode, search (planner::PlanSearch's name), n_max, n,
// tokens, parents, depths, path_probs, expected_accepted, positions, retrieve, cycle_s, speedup,
// l_ar_s (null when NaN), lattice_exhausted, c; latency_model and profile when priced; curve unless
// kFixed.
nlohmann::json ToJson(const PlanTreeRequest& req, const PlanTreeResult& result);

// Shared by the JSON forms: the retrieve rows of `outputs` ([leaves][width], -1 padded) and a
// planner's curve ({"n", "expected_accepted", "cycle_s", <value_name>} per point).
nlohmann::json RetrieveJson(const planner::TreeOutputs& outputs);
template <typename Point>
nlohmann::json CurveJson(const std::vector<Point>& curve, const char* value_name,
                         double Point::*value) {
  nlohmann::json out = nlohmann::json::array();
  for (const Point& p : curve) {
    out.push_back({{"n", p.n},
                   {"expected_accepted", p.expected_accepted},
                   {"cycle_s", p.cycle_s},
                   {value_name, p.*value}});
  }
  return out;
}

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_PLAN_TREE_H_
