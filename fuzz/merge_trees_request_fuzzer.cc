// A MergeTreesRequest (binary protobuf) through PlannerService::DoMergeTrees, the validation and
// merge code the MergeTrees handler runs. Any request may be rejected; none may crash, and an
// accepted one must give a consistent merged tree.
#include <cstddef>
#include <cstdint>

#include "fuzz/service_fuzz_util.h"
#include "specplan/v1/planner.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  v1::MergeTreesRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  v1::MergeTreesResponse resp;
  const absl::Status st = fuzz::FuzzService().DoMergeTrees(req, &resp);
  if (!st.ok()) {
    SPECPLAN_CHECK(!st.message().empty());
    return 0;
  }
  const int n = resp.tree().tokens_size();
  SPECPLAN_CHECK(n >= 1 && resp.tree().parents_size() == n && resp.source_size() == n);
  SPECPLAN_CHECK(resp.phi_a_size() == req.a().tokens_size());
  SPECPLAN_CHECK(resp.phi_b_size() == req.b().tokens_size());
  if (req.budget()) SPECPLAN_CHECK(n - 1 <= req.n_max());
  for (int i = 0; i < resp.phi_a_size(); ++i) SPECPLAN_CHECK(resp.phi_a(i) < n);
  for (int i = 0; i < resp.phi_b_size(); ++i) SPECPLAN_CHECK(resp.phi_b(i) < n);
  return 0;
}
