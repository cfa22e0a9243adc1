// A PlanTreeRequest (binary protobuf) through PlannerService::DoPlanTree, the validation and
// planning code the PlanTree handler runs, then the request's cost through DoEstimateLatency.
// Any request may be rejected; none may crash, and an accepted one must give a consistent plan.
#include "fuzz/service_fuzz_util.h"

namespace specplan::fuzz {
namespace {

void CheckPlan(const v1::PlanTreeRequest& req, const v1::PlanTreeResponse& resp) {
  const v1::Plan& plan = resp.plan();
  SPECPLAN_CHECK(plan.tree().tokens_size() == plan.n() + 1);
  SPECPLAN_CHECK(plan.tree().parents_size() == plan.n() + 1);
  SPECPLAN_CHECK(plan.n() <= req.n_max());
  SPECPLAN_CHECK(resp.outputs().size() == 0 || resp.outputs().size() == plan.n() + 1);
}

// The request's cost (accepted or not) priced at s = 1 and s = n_max + 1.
void EstimateCost(const v1::PlanTreeRequest& req) {
  v1::EstimateLatencyRequest est;
  *est.mutable_cost() = req.cost();
  est.add_s(1);
  est.add_s(static_cast<int64_t>(req.n_max()) + 1);
  est.set_roofline_terms(true);
  v1::EstimateLatencyResponse est_resp;
  (void)FuzzService().DoEstimateLatency(est, &est_resp);
}

}  // namespace

SPECPLAN_REQUEST_FUZZER(DoPlanTree, CheckPlan, /*wanted=*/nullptr, EstimateCost)

}  // namespace specplan::fuzz
