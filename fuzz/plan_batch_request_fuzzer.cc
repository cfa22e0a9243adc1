// A PlanBatchRequest (binary protobuf) through PlannerService::DoPlanBatch: the conversion and
// validation of every request (index paths in the messages), the cost, the batch planner, the
// per-request outputs and the engine layouts. Any request may be rejected; none may crash, and an
// accepted one must give a consistent plan.
#include "fuzz/service_fuzz_util.h"

namespace specplan::fuzz {
namespace {

void CheckBatch(const v1::PlanBatchRequest& req, const v1::PlanBatchResponse& resp) {
  SPECPLAN_CHECK(resp.requests_size() == req.requests_size());
  int64_t total = 0;
  for (const v1::BatchPlanEntry& e : resp.requests()) {
    SPECPLAN_CHECK(e.tree().tokens_size() == e.n() + 1);
    SPECPLAN_CHECK(e.tree().parents_size() == e.n() + 1);
    SPECPLAN_CHECK(e.outputs().size() == 0 || e.outputs().size() == e.n() + 1);
    total += e.n();
  }
  SPECPLAN_CHECK(total == resp.n_total());
  SPECPLAN_CHECK(resp.n_total() <= req.n_max());
  if (req.layout() == v1::BATCH_LAYOUT_RAGGED) {
    SPECPLAN_CHECK(resp.ragged().cu_seqlens_size() == req.requests_size() + 1);
    SPECPLAN_CHECK(resp.ragged().tokens_size() == resp.n_total() + req.requests_size());
  }
}

}  // namespace

SPECPLAN_REQUEST_FUZZER(DoPlanBatch, CheckBatch)

}  // namespace specplan::fuzz
