// A PlanTreeRequest (binary protobuf) through PlannerService::DoPlanTree, the validation and
// planning code the PlanTree handler runs, then the request's cost through DoEstimateLatency.
// Any request may be rejected; none may crash, and an accepted one must give a consistent plan.
#include <cstddef>
#include <cstdint>

#include "fuzz/service_fuzz_util.h"
#include "specplan/v1/planner.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  v1::PlanTreeRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  service::PlannerService& svc = fuzz::FuzzService();
  v1::PlanTreeResponse resp;
  const absl::Status st = svc.DoPlanTree(req, &resp);
  if (st.ok()) {
    const v1::Plan& plan = resp.plan();
    SPECPLAN_CHECK(plan.tree().tokens_size() == plan.n() + 1);
    SPECPLAN_CHECK(plan.tree().parents_size() == plan.n() + 1);
    SPECPLAN_CHECK(plan.n() <= req.n_max());
    SPECPLAN_CHECK(resp.outputs().size() == 0 || resp.outputs().size() == plan.n() + 1);
  } else {
    SPECPLAN_CHECK(!st.message().empty());
  }

  v1::EstimateLatencyRequest est;
  *est.mutable_cost() = req.cost();
  est.add_s(1);
  est.add_s(static_cast<int64_t>(req.n_max()) + 1);
  est.set_roofline_terms(true);
  v1::EstimateLatencyResponse est_resp;
  (void)svc.DoEstimateLatency(est, &est_resp);
  return 0;
}
