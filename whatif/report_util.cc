#include "whatif/report_util.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/json_util.h"

namespace specplan::whatif {

absl::Status CheckSeconds(double v, const char* field) {
  if (!(v >= 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " = ", v, ": must be a finite number of seconds >= 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckDrafterSeconds(const costmodel::DrafterCost& drafter) {
  for (const auto& [v, field] : {std::pair<double, const char*>{drafter.t_net_s, "drafter.t_net_s"},
                                 {drafter.t_head_s, "drafter.t_head_s"},
                                 {drafter.t_light_s, "drafter.t_light_s"}}) {
    absl::Status st = CheckSeconds(v, field);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status ValidateTraceSteps(const Trace& trace) {
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    absl::Status st = ValidateTraceStep(trace.steps[i], trace.header);
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("step ", i, ": ", std::string(st.message())));
    }
  }
  return absl::OkStatus();
}

ReplayBasis BasisOf(const Trace& trace, const costmodel::LatencyModel& latency, int n_max,
                    const costmodel::DrafterCost& drafter, double t_aux_s, bool calibrate) {
  ReplayBasis b;
  b.target = trace.header.target;
  b.draft = trace.header.draft;
  b.latency_model = latency.Kind();
  b.n_max = n_max;
  b.drafter = drafter;
  b.t_aux_s = t_aux_s;
  b.calibrate = calibrate;
  return b;
}

nlohmann::json BasisJson(const ReplayBasis& b, const std::vector<planner::Strategy>& strategies) {
  nlohmann::json j;
  j["trace"] = {{"target", b.target}, {"draft", b.draft}};
  j["latency_model"] = b.latency_model;
  j["options"] = {{"strategies", StrategyNamesJson(strategies)},
                  {"n_max", b.n_max},
                  {"drafter", DrafterJson(b.drafter)},
                  {"t_aux_s", b.t_aux_s},
                  {"calibrate", b.calibrate}};
  return j;
}

nlohmann::json StrategyNamesJson(const std::vector<planner::Strategy>& strategies) {
  nlohmann::json names = nlohmann::json::array();
  for (planner::Strategy s : strategies) names.push_back(planner::StrategyName(s));
  return names;
}

nlohmann::json DrafterJson(const costmodel::DrafterCost& drafter) {
  return {{"class", costmodel::DrafterClassName(drafter.cls)},
          {"t_net_s", drafter.t_net_s},
          {"t_head_s", drafter.t_head_s},
          {"t_light_s", drafter.t_light_s}};
}

nlohmann::json NumbersOrNull(std::initializer_list<std::pair<const char*, double>> fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : fields) j[name] = json_util::NumberOrNull(value);
  return j;
}

std::string FormatOrDash(double x, int precision) {
  return std::isfinite(x) ? absl::StrFormat("%.*f", precision, x) : std::string("-");
}

std::string FormatSpeedup(double x) {
  return std::isfinite(x) ? absl::StrFormat("%.3fx", x) : std::string("-");
}

}  // namespace specplan::whatif
