// What the what-if sweep (sweep.cc) and the replay under concurrency (concurrency.cc) share: the
// checks of their common options and trace, and the pieces of their reports.
#ifndef SPECPLAN_WHATIF_REPORT_UTIL_H_
#define SPECPLAN_WHATIF_REPORT_UTIL_H_

#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "planner/strategy.h"
#include "whatif/replay_basis.h"
#include "whatif/trace.h"

namespace specplan::whatif {

// InvalidArgument "<field> = <v>: must be a finite number of seconds >= 0" unless it is one.
absl::Status CheckSeconds(double v, const char* field);
// CheckSeconds on the drafter's times: "drafter.t_net_s", "drafter.t_head_s", "drafter.t_light_s".
absl::Status CheckDrafterSeconds(const costmodel::DrafterCost& drafter);
// ValidateTraceStep on every step; the first error as "step <i>: <message>".
absl::Status ValidateTraceSteps(const Trace& trace);

// The basis of a report of `trace` priced by `latency` with these options.
ReplayBasis BasisOf(const Trace& trace, const costmodel::LatencyModel& latency, int n_max,
                    const costmodel::DrafterCost& drafter, double t_aux_s, bool calibrate);
// The basis's part of a report's JSON form: {"trace": {"target", "draft"}, "latency_model",
// "options": {"strategies", "n_max", "drafter", "t_aux_s", "calibrate"}}, for the report to add
// its own keys to.
nlohmann::json BasisJson(const ReplayBasis& basis,
                         const std::vector<planner::Strategy>& strategies);

// The strategies' names, as a JSON array.
nlohmann::json StrategyNamesJson(const std::vector<planner::Strategy>& strategies);
// {"class", "t_net_s", "t_head_s", "t_light_s"} of the drafter.
nlohmann::json DrafterJson(const costmodel::DrafterCost& drafter);
// An object of the given numbers, each null when not finite (json_util::NumberOrNull).
nlohmann::json NumbersOrNull(std::initializer_list<std::pair<const char*, double>> fields);
// `x` with `precision` decimals, or "-" when it is not finite (NaN: no value).
std::string FormatOrDash(double x, int precision);
// "1.234x", or "-" when not finite.
std::string FormatSpeedup(double x);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_REPORT_UTIL_H_
