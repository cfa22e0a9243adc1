// The JSON form and the table of a what-if sweep (whatif/sweep.h), both read from its WhatIfReport.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "whatif/report_util.h"
#include "whatif/sweep.h"

namespace specplan::whatif {

nlohmann::json WhatIfReportToJson(const WhatIfReport& r) {
  using nlohmann::json;
  json j = BasisJson(r, r.strategies);
  j["trace"].update({{"vocab", r.vocab},
                     {"steps", r.steps},
                     {"prompts", r.prompts},
                     {"steps_with_marginals", r.steps_with_marginals},
                     {"steps_with_nodes", r.steps_with_nodes}});
  j["options"].update({{"budgets", r.budgets}, {"policy_forward_s", r.policy_forward_s}});
  json rows = json::array();
  for (const WhatIfRow& row : r.rows) {
    json jr =
        NumbersOrNull({{"accepted_per_step", row.accepted_per_step},
                       {"tokens_per_step", row.steps_used > 0 ? 1.0 + row.accepted_per_step : kNaN},
                       {"predicted_accepted_per_step", row.predicted_accepted_per_step},
                       {"mean_tree_size", row.mean_tree_size},
                       {"cycle_s", row.cycle_s},
                       {"t_ar_s", row.t_ar_s},
                       {"speedup", row.speedup},
                       {"predicted_speedup", row.predicted_speedup},
                       {"pearson", row.pearson}});
    jr.update({{"strategy", StrategyName(row.strategy)},
               {"budget", row.budget},
               {"params", row.params},
               {"steps_used", row.steps_used},
               {"steps_skipped", row.steps_skipped}});
    if (!row.per_step.empty()) {
      json steps = json::array();
      for (const StepResult& s : row.per_step) {
        steps.push_back({{"step", s.step},
                         {"n", s.n},
                         {"accepted", s.accepted},
                         {"predicted_accepted", s.predicted_accepted},
                         {"cycle_s", s.cycle_s},
                         {"t_ar_s", s.t_ar_s},
                         {"speedup", s.speedup}});
      }
      jr["per_step"] = std::move(steps);
    }
    rows.push_back(std::move(jr));
  }
  j["rows"] = std::move(rows);
  if (r.oracle.found) {
    j["oracle"] = NumbersOrNull(
        {{"speedup", r.oracle.speedup}, {"accepted_per_step", r.oracle.accepted_per_step}});
    j["oracle"].update(
        {{"strategy", StrategyName(Strategy::kBestFirst)}, {"budget", r.oracle.budget}});
  } else {
    j["oracle"] = nullptr;
  }
  auto summary = [](const ControllerSummary& c) -> json {
    if (!c.found) return nullptr;
    return NumbersOrNull({{"speedup", c.speedup},
                          {"accepted_per_step", c.accepted_per_step},
                          {"mean_tree_size", c.mean_tree_size},
                          {"ratio_to_oracle", c.ratio_to_oracle}});
  };
  j["controller"] = summary(r.controller);
  j["scan"] = summary(r.scan);
  const SurrogateQuality& q = r.surrogate;
  j["surrogate"] = NumbersOrNull({{"chain_pearson", q.chain_pearson},
                                  {"chain_spearman", q.chain_spearman},
                                  {"chain_predicted_mean", q.chain_predicted_mean},
                                  {"chain_accepted_mean", q.chain_accepted_mean},
                                  {"controller_pearson", q.controller_pearson},
                                  {"controller_spearman", q.controller_spearman}});
  j["surrogate"]["steps"] = q.steps;
  return j;
}

std::string FormatWhatIfTable(const WhatIfReport& r) {
  const auto f = FormatOrDash;
  std::string out = absl::StrFormat(
      "trace: %s -> %s, vocab %d, %d steps over %d prompts (%d with marginals, %d with nodes)\n"
      "cost: %s latency model; drafter %s (t_net %.3f ms, t_head %.3f ms), %.3f ms per policy "
      "forward, aux %.3f ms%s\n\n",
      r.draft, r.target, r.vocab, r.steps, r.prompts, r.steps_with_marginals, r.steps_with_nodes,
      r.latency_model, costmodel::DrafterClassName(r.drafter.cls), r.drafter.t_net_s * 1e3,
      r.drafter.t_head_s * 1e3, r.policy_forward_s * 1e3, r.t_aux_s * 1e3,
      r.calibrate ? "; controller and scan calibrate the surrogate online" : "");
  out += absl::StrFormat("%-11s %6s %6s %7s %9s %9s %9s %8s %8s\n", "strategy", "budget", "steps",
                         "tree", "accepted", "predicted", "cycle_ms", "speedup", "pearson");
  for (const WhatIfRow& row : r.rows) {
    out += absl::StrFormat("%-11s %6d %6d %7s %9s %9s %9s %8s %8s\n", StrategyName(row.strategy),
                           row.budget, row.steps_used, f(row.mean_tree_size, 1),
                           f(row.accepted_per_step, 3), f(row.predicted_accepted_per_step, 3),
                           f(row.cycle_s * 1e3, 4), FormatSpeedup(row.speedup), f(row.pearson, 3));
  }
  out += "\n";
  if (r.oracle.found) {
    out += absl::StrFormat("oracle: bestfirst budget %d: %.3fx, %.3f accepted per step\n",
                           r.oracle.budget, r.oracle.speedup, r.oracle.accepted_per_step);
  } else {
    out += "oracle: none (no step with marginals for bestfirst)\n";
  }
  auto line = [&](Strategy strategy, const ControllerSummary& c) {
    if (!c.found) return;
    // Calibrated: the row's params, which name the final scale s.
    std::string label = absl::StrFormat("%s (n_max %d)", StrategyName(strategy), r.n_max);
    for (const WhatIfRow& row : r.rows) {
      if (r.calibrate && row.strategy == strategy) label = row.params;
    }
    out += absl::StrFormat("%s: %.3fx at mean tree size %.1f, %.3f accepted per step", label,
                           c.speedup, c.mean_tree_size, c.accepted_per_step);
    if (std::isfinite(c.ratio_to_oracle)) {
      out += absl::StrFormat(", %.1f%% of the oracle", 100.0 * c.ratio_to_oracle);
    }
    out += "\n";
  };
  line(Strategy::kController, r.controller);
  line(Strategy::kScan, r.scan);
  const SurrogateQuality& q = r.surrogate;
  if (q.steps > 0) {
    out += absl::StrFormat(
        "surrogate: Pearson(A-hat, accepted) over %d steps: top-1 chain %s (Spearman %s), "
        "controller trees %s\n",
        q.steps, f(q.chain_pearson, 3), f(q.chain_spearman, 3), f(q.controller_pearson, 3));
  }
  return out;
}

}  // namespace specplan::whatif
