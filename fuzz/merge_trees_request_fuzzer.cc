// A MergeTreesRequest (binary protobuf) through PlannerService::DoMergeTrees, the validation and
// merge code the MergeTrees handler runs. Any request may be rejected; none may crash, and an
// accepted one must give a consistent merged tree.
#include "fuzz/service_fuzz_util.h"

namespace specplan::fuzz {
namespace {

void CheckMerged(const v1::MergeTreesRequest& req, const v1::MergeTreesResponse& resp) {
  const int n = resp.tree().tokens_size();
  SPECPLAN_CHECK(n >= 1 && resp.tree().parents_size() == n && resp.source_size() == n);
  SPECPLAN_CHECK(resp.phi_a_size() == req.a().tokens_size());
  SPECPLAN_CHECK(resp.phi_b_size() == req.b().tokens_size());
  if (req.budget()) SPECPLAN_CHECK(n - 1 <= req.n_max());
  for (int i = 0; i < resp.phi_a_size(); ++i) SPECPLAN_CHECK(resp.phi_a(i) < n);
  for (int i = 0; i < resp.phi_b_size(); ++i) SPECPLAN_CHECK(resp.phi_b(i) < n);
}

}  // namespace

SPECPLAN_REQUEST_FUZZER(DoMergeTrees, CheckMerged)

}  // namespace specplan::fuzz
