// A WhatIfRequest (binary protobuf) through PlannerService::DoWhatIf, the validation, trace parsing
// and sweep code the WhatIf handler runs. Any request may be rejected; none may crash, and an
// accepted one must give one row per (strategy, budget) with consistent aggregates. Requests for
// the server's bundled trace (empty trace_jsonl) are skipped: they replay 95 steps and would only
// slow the search down.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fuzz/service_fuzz_util.h"
#include "specplan/v1/planner.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  v1::WhatIfRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (req.trace_jsonl().empty() || req.trace_jsonl().size() > (32 << 10)) return 0;
  v1::WhatIfResponse resp;
  const absl::Status st = fuzz::FuzzService().DoWhatIf(req, &resp);
  if (!st.ok()) {
    SPECPLAN_CHECK(!st.message().empty());
    return 0;
  }
  const int64_t steps = resp.trace().steps();
  SPECPLAN_CHECK(steps >= 0);
  for (const v1::WhatIfRow& row : resp.rows()) {
    SPECPLAN_CHECK(row.steps_used() + row.steps_skipped() == steps);
    SPECPLAN_CHECK(row.budget() >= 1);
    if (row.steps_used() == 0) continue;
    SPECPLAN_CHECK(row.accepted_per_step() >= 0 &&
                   row.accepted_per_step() <= row.mean_tree_size() + 1e-9);
    SPECPLAN_CHECK(std::isfinite(row.speedup()) && row.speedup() > 0);
    if (req.per_step()) SPECPLAN_CHECK(row.per_step().step_size() == row.steps_used());
  }
  return 0;
}
