// Operation Schedule: the speculation schedule an engine takes today, in the engine's own format
// (whatif/schedule.h): per batch size of a grid the static draft length or tree with the highest
// replayed throughput, from a marginals trace (trees and chains) or from the user's own
// acceptance (chains over the engine's whole step, whatif/chain_replay.h). Serves
// `specplan schedule`; a service would call the CostView overload over a trace it holds.
//
//   ScheduleRequest req;  req.cost.model = "llama-3.1-8b";  req.cost.gpu = "h100";
//   req.format = whatif::ScheduleFormat::kVllm;
//   absl::StatusOr<ScheduleResult> r = ops::Schedule(req);
//   std::cout << ops::Render(*r);   // the engine's configuration (JSON or YAML)
#ifndef SPECPLAN_OPS_SCHEDULE_OP_H_
#define SPECPLAN_OPS_SCHEDULE_OP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/cost_request.h"
#include "ops/whatif_op.h"
#include "planner/acceptance/engine_acceptance.h"
#include "whatif/schedule.h"
#include "whatif/trace.h"

namespace specplan::ops {

struct ScheduleRequest {
  // The cost, the trace and the replay (as WhatIfConcurrencyRequest's): batch_sizes is the grid
  // (starting at 1; default 1, 2, 4, ..., 256), n_max the largest tree (sglang) and longest
  // chain (vllm, trtllm), default 64; draft_batch_growth, calibrate and batch_scan as there (the
  // batch planner is the comparison row). best_fixed, best_chain and recorded are the operation's.
  WhatIfConcurrencyRequest replay = [] {
    WhatIfConcurrencyRequest r;
    r.n_max = 64;
    return r;
  }();
  whatif::ScheduleFormat format = whatif::ScheduleFormat::kVllm;
  int min_draft_len = 0;   // chains only: choose among K >= this, [0, 64]
  bool monotone = true;    // never more at a larger batch size (ScheduleOptions::monotone)
  double slo_tpot_ms = 0;  // TPOT SLO, ms per output token, [0, 1e4]; 0 = none
  // vllm only: the context axis (vLLM RFC #48627), a grid starting at 0; empty = none.
  std::vector<int64_t> context_grid;
  // Chains over the user's acceptance instead of the trace (then replay.trace must be ""), each
  // request at `context` tokens when the acceptance is per-position rates.
  std::optional<planner::EngineAcceptance> acceptance;
  int64_t context = 1024;
};

struct ScheduleResult {
  whatif::Schedule schedule;           // at context 0 (by_context.rows[0] with a grid)
  whatif::ContextSchedule by_context;  // with context_grid; else empty
  whatif::ScheduleSource source;       // what the output's metadata names
};

// The request alone: the grid (non-empty, in [1, 4096], starting at 1), n_max, min_draft_len
// (chains only), context_grid (vllm only, not with acceptance), trace and acceptance not both,
// context, the by-hand times, dtype and drafter names. Errors name the field and value.
absl::Status Validate(const ScheduleRequest& req);
// Over a marginals trace and a cost the caller holds: Validate, the drafter priced at the trace's
// shape (as WhatIfConcurrency), whatif::BuildSchedule (or BuildContextSchedule with a grid: its
// errors as "context_grid: ..."). The source is left for the caller to name.
absl::StatusOr<ScheduleResult> Schedule(const ScheduleRequest& req, const whatif::Trace& trace,
                                        const CostView& cost);
// In-process: the format's own engine prices the passes unless cost.engine or cost.profile says
// otherwise; resolves the cost, then replays req.acceptance's chains, or loads req.trace
// ("trace <path>: ...") and replays it ("<trace path>: ...").
absl::StatusOr<ScheduleResult> Schedule(const ScheduleRequest& req);

// The schedule in the engine's format ('\n'-terminated): whatif::RenderSchedule, or with a context
// grid whatif::RenderContextSchedule.
std::string Render(const ScheduleResult& result);
// The human summary: whatif::FormatScheduleSummary and, with a context grid, one line per further
// context ("at context +N tokens: B 1 K 3 (812.4 tokens/s), ...").
std::string Summary(const ScheduleResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_SCHEDULE_OP_H_
