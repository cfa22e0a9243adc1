// The JSON form and the table of a replay under concurrency (whatif/concurrency.h), both read from
// its ConcurrencyReport.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "whatif/concurrency.h"
#include "whatif/report_util.h"

namespace specplan::whatif {

nlohmann::json ConcurrencyReportToJson(const ConcurrencyReport& r) {
  using nlohmann::json;
  json j = BasisJson(r, ReportStrategies(r));
  j["trace"].update({{"steps", r.trace_steps}, {"ring_steps", r.ring_steps}});
  j["options"].update(
      {{"concurrency", r.batch_sizes}, {"batch_mode", r.batch_scan ? "scan" : "controller"}});
  j["options"]["drafter"]["batch_growth"] = r.drafter.batch_growth;
  if (r.calibrate) {
    j["calibration"] = {{"controller_scale", r.controller_scale}, {"batch_scales", r.batch_scales}};
  }
  json rows = json::array();
  for (const ConcurrencyRow& row : r.rows) {
    json jr = NumbersOrNull({{"seconds", row.seconds},
                             {"throughput", row.throughput},
                             {"accepted", row.accepted},
                             {"mean_tree_size", row.mean_tree_size},
                             {"cycle_s", row.cycle_s},
                             {"speedup", row.speedup}});
    jr.update({{"batch", row.batch},
               {"strategy", StrategyName(row.strategy)},
               {"steps", row.steps},
               {"tokens", row.tokens},
               {"plain_steps", row.plain_steps}});
    rows.push_back(std::move(jr));
  }
  j["rows"] = std::move(rows);
  if (r.best_fixed) j["best_fixed_budgets"] = r.best_fixed_budgets;
  if (r.best_chain) j["best_chain_lengths"] = r.best_chain_lengths;
  j["stop_paying_batch"] = r.stop_paying_batch > 0 ? json(r.stop_paying_batch) : json(nullptr);
  j["interleaving"] = r.recorded_passes > 0 ? "recorded" : "ring";
  if (r.recorded_passes > 0) {
    j["recorded"] = {{"passes", r.recorded_passes},
                     {"mean_batch", r.recorded_mean_batch},
                     {"speculation_pays", r.recorded_pays}};
  }
  return j;
}

std::string FormatConcurrencyTable(const ConcurrencyReport& r) {
  const auto f = FormatOrDash;
  const std::string replayed =
      r.recorded_passes > 0
          ? absl::StrFormat("replayed in the %d recorded passes", r.recorded_passes)
          : std::string("replayed by every request");
  std::string out = absl::StrFormat(
      "trace: %s -> %s, %d steps (%d with marginals, %s)\n"
      "cost: %s latency model; drafter %s (t_net %.3f ms, t_head %.3f ms, batch growth %g), "
      "aux %.3f ms; n_max %d draft nodes per request; batch planner: %s\n",
      r.draft, r.target, r.trace_steps, r.ring_steps, replayed, r.latency_model,
      costmodel::DrafterClassName(r.drafter.cls), r.drafter.t_net_s * 1e3, r.drafter.t_head_s * 1e3,
      r.drafter.batch_growth, r.t_aux_s * 1e3, r.n_max,
      r.batch_scan ? "scan (argmax of G(N))" : "controller (first decrease of G(N))");
  if (r.calibrate) {
    const std::string scales = absl::StrJoin(r.batch_scales, " ", [](std::string* out, double s) {
      absl::StrAppendFormat(out, "%.2f", s);
    });
    out += absl::StrFormat(
        "surrogate calibrated online: controller's final scale %.2f; batch's per B: %s\n",
        r.controller_scale, scales);
  }
  out += "\n";
  out += absl::StrFormat("%5s  %-13s %11s %8s %9s %7s %9s %7s\n", "B", "strategy", "tokens/s",
                         "speedup", "accepted", "tree", "cycle_ms", "plain");
  int last_b = -1;
  for (const ConcurrencyRow& row : r.rows) {
    if (last_b >= 0 && row.batch != last_b) out += "\n";
    last_b = row.batch;
    out += absl::StrFormat(
        "%5s  %-13s %11s %8s %9s %7s %9s %7s\n",
        row.batch == kRecordedBatch ? std::string("rec") : absl::StrCat(row.batch),
        StrategyName(row.strategy), f(row.throughput, 1), FormatSpeedup(row.speedup),
        f(row.accepted, 3), f(row.mean_tree_size, 1), f(row.cycle_s * 1e3, 3),
        absl::StrFormat("%d/%d", row.plain_steps, row.steps));
  }
  out += "\n";
  // One line of a best row's setting per batch size.
  auto settings_line = [&r, &out](const char* heading, const std::vector<int>& values) {
    out += heading;
    for (size_t i = 0; i < values.size(); ++i) {
      out += absl::StrFormat(
          " %s:%d", r.recorded_passes > 0 ? std::string("rec") : absl::StrCat(r.batch_sizes[i]),
          values[i]);
    }
    out += "\n";
  };
  if (r.best_fixed) {
    settings_line("best-fixed budget per B (draft nodes per request; 0 = plain decoding):",
                  r.best_fixed_budgets);
  }
  if (r.best_chain) {
    settings_line(
        "best-chain length per B (top-1 chain of K draft tokens per request; 0 = plain decoding):",
        r.best_chain_lengths);
  }
  if (r.recorded_passes > 0) {
    out += absl::StrFormat(
        "recorded batches (%d passes, mean B = %.2f): the batch planner's throughput is %s plain "
        "decoding's\n",
        r.recorded_passes, r.recorded_mean_batch, r.recorded_pays ? "above" : "not above");
  } else if (r.stop_paying_batch > 0) {
    out += absl::StrFormat(
        "speculation stops paying at B = %d (the batch planner's throughput is not above plain "
        "decoding's)\n",
        r.stop_paying_batch);
  } else {
    out += absl::StrFormat(
        "speculation never stops paying in the range (B = %d..%d): the batch planner's throughput "
        "is above plain decoding's at every B\n",
        r.batch_sizes.empty() ? 0 : r.batch_sizes.front(),
        r.batch_sizes.empty() ? 0 : r.batch_sizes.back());
  }
  return out;
}

}  // namespace specplan::whatif
