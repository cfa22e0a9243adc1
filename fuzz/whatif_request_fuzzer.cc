// A WhatIfRequest (binary protobuf) through PlannerService::DoWhatIf, the validation, trace parsing
// and sweep code the WhatIf handler runs. Any request may be rejected; none may crash, and an
// accepted one must give one row per (strategy, budget) with consistent aggregates. Requests for
// the server's bundled trace (empty trace_jsonl) are skipped: they replay 95 steps and would only
// slow the search down.
#include <cmath>

#include "fuzz/service_fuzz_util.h"

namespace specplan::fuzz {
namespace {

// A trace of its own, of at most 32 KiB.
bool Wanted(const v1::WhatIfRequest& req) {
  return !req.trace_jsonl().empty() && req.trace_jsonl().size() <= (32 << 10);
}

void CheckReport(const v1::WhatIfRequest& req, const v1::WhatIfResponse& resp) {
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
}

}  // namespace

SPECPLAN_REQUEST_FUZZER(DoWhatIf, CheckReport, Wanted)

}  // namespace specplan::fuzz
