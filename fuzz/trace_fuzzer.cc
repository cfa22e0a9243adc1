// Trace JSONL text -> ParseTrace (header + every step line, whatif/trace.h) -> RunWhatIf (every
// strategy replayed over the steps, whatif/sweep.h). For every accepted trace: each step
// re-validates, serialisation round-trips to an equal trace, the recorded node trees answer
// Child/Expanded consistently, and the sweep succeeds with realised lengths within the trees.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::fuzz {
namespace {

void CheckSame(const whatif::Trace& a, const whatif::Trace& b) {
  SPECPLAN_CHECK(a.header.vocab == b.header.vocab && a.header.target == b.header.target &&
                 a.header.draft == b.header.draft && a.header.source == b.header.source);
  SPECPLAN_CHECK(a.steps.size() == b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const whatif::TraceStep& x = a.steps[i];
    const whatif::TraceStep& y = b.steps[i];
    SPECPLAN_CHECK(x.prompt == y.prompt && x.c == y.c && x.root == y.root);
    SPECPLAN_CHECK(x.continuation == y.continuation);
    SPECPLAN_CHECK(x.marginals.has_value() == y.marginals.has_value());
    if (x.marginals) {
      SPECPLAN_CHECK(x.marginals->tokens == y.marginals->tokens &&
                     x.marginals->probs == y.marginals->probs);
    }
    SPECPLAN_CHECK(x.nodes.has_value() == y.nodes.has_value());
    if (x.nodes) {
      SPECPLAN_CHECK(x.nodes->parents == y.nodes->parents && x.nodes->tokens == y.nodes->tokens &&
                     x.nodes->dist_tokens == y.nodes->dist_tokens &&
                     x.nodes->dist_probs == y.nodes->dist_probs);
    }
  }
}

}  // namespace
}  // namespace specplan::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  using namespace specplan::fuzz;
  auto trace = whatif::ParseTrace(AsText(data, size), "fuzz");
  if (!trace.ok()) {
    SPECPLAN_CHECK(trace.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  for (const whatif::TraceStep& step : trace->steps) {
    CheckOk(whatif::ValidateTraceStep(step, trace->header), "ValidateTraceStep after parse");
    if (step.nodes) {
      const whatif::RecordedNodes& r = *step.nodes;
      for (int i = 1; i < r.size(); ++i) {
        SPECPLAN_CHECK(r.Child(r.parents[i], r.tokens[i]) == i);
      }
      for (int i = 0; i < r.size(); ++i) (void)r.Expanded(i);
    }
  }
  auto again = whatif::ParseTrace(whatif::SerializeTrace(*trace), "round trip");
  CheckOk(again.status(), "ParseTrace(SerializeTrace)");
  CheckSame(*trace, *again);

  if (trace->steps.empty() || trace->steps.size() > 64) return 0;
  whatif::WhatIfOptions options;
  options.budgets = {1, 3, 16};
  auto report = whatif::RunWhatIf(*trace, DefaultRoofline(), options);
  CheckOk(report.status(), "RunWhatIf on a valid trace");
  for (const whatif::WhatIfRow& row : report->rows) {
    SPECPLAN_CHECK(row.steps_used + row.steps_skipped == static_cast<int64_t>(trace->steps.size()));
    if (row.steps_used == 0) continue;
    SPECPLAN_CHECK(row.accepted_per_step >= 0 && row.accepted_per_step <= row.mean_tree_size);
    SPECPLAN_CHECK(row.speedup > 0 && row.cycle_s > 0);
  }
  return 0;
}
