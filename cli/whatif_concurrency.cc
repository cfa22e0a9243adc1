#include "cli/whatif_concurrency.h"

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/cost_flags.h"
#include "costmodel/step/host_time.h"
#include "plot/chart.h"

namespace specplan::cli {
namespace {

// Two panels over log2(B): throughput (log scale) and speedup over plain decoding, one curve per
// strategy, a dashed line where speculation stops paying.
std::vector<plot::Chart> MakeConcurrencyCharts(const whatif::ConcurrencyReport& r) {
  plot::Chart tput, speed;
  tput.title = absl::StrFormat("What-if under concurrency: %s on %s (%s latency), %d steps",
                               r.draft, r.target, r.latency_model, r.ring_steps);
  tput.x.label = "log2(B): B = 2^x requests in flight";
  tput.y.label = "throughput, tokens/s (all requests)";
  tput.y.log = true;
  speed.title = "Speedup over plain decoding at the same B";
  speed.x = tput.x;
  speed.y.label = "speedup over ar";
  for (whatif::Strategy s : whatif::ReportStrategies(r)) {
    plot::Series t, sp;
    t.label = sp.label = whatif::StrategyName(s);
    for (const whatif::ConcurrencyRow& row : r.rows) {
      if (row.strategy != s) continue;
      const double x = std::log2(static_cast<double>(row.batch));
      t.x.push_back(x);
      t.y.push_back(row.throughput);
      sp.x.push_back(x);
      sp.y.push_back(row.speedup);
    }
    tput.series.push_back(std::move(t));
    speed.series.push_back(std::move(sp));
  }
  if (r.stop_paying_batch > 0) {
    const plot::VerticalLine stop{std::log2(static_cast<double>(r.stop_paying_batch)),
                                  absl::StrFormat("stops paying B=%d", r.stop_paying_batch),
                                  0xB22222u};
    tput.vlines = speed.vlines = {stop};
  }
  return {tput, speed};
}

}  // namespace

int RunWhatIfConcurrency(const WhatIfConcurrencyRun& run) {
  const char* kCmd = "specplan whatif: ";
  whatif::ConcurrencyOptions options = run.options;
  if (isatty(STDERR_FILENO) && options.batch_sizes.size() > 1) {
    options.progress = [](int done, int total) {
      std::cerr << "\rspecplan whatif: " << done << "/" << total << " batch sizes" << std::flush;
      if (done == total) std::cerr << "\n";
    };
  }
  auto report = whatif::RunConcurrency(*run.trace, *run.latency, options);
  if (Failed(kCmd, report.status(), run.source.trace_path + ": ")) return 1;
  if (!run.plot.empty() && !WritePlot(kCmd, run.plot, MakeConcurrencyCharts(*report))) return 1;
  PrintWhatIfReport(run.source, run.json,
                    run.json ? whatif::ConcurrencyReportToJson(*report) : nlohmann::json(),
                    run.json ? std::string() : whatif::FormatConcurrencyTable(*report), run.plot);
  return 0;
}

int RunChainReplay(const ChainReplayRun& run) {
  const char* kCmd = "specplan whatif: ";
  auto acceptance = run.acceptance->Load();
  if (Failed(kCmd, acceptance.status())) return 1;
  auto resolved = run.cost->Resolve(run.dtype);
  if (Failed(kCmd, resolved.status())) return 1;
  auto step = run.cost->Step(*resolved, 0);
  if (Failed(kCmd, step.status())) return 1;
  auto report = whatif::ReplayChains(*acceptance, *step, run.options);
  if (!report.ok()) {
    // The replay names its fields; say them as the flags that set them.
    std::string msg(report.status().message());
    for (const auto& [field, flag] :
         {std::pair<std::string, std::string>{"chain_lengths: ", "--chains: "},
          {"batch_sizes: ", "--concurrency: "},
          {"context = ", "--context "},
          {"drafter: none", "--drafter names a cost class"}}) {
      if (msg.rfind(field, 0) == 0) msg = flag + msg.substr(field.size());
    }
    std::cerr << kCmd << msg << "\n";
    return 1;
  }
  WhatIfSource source;
  source.trace_path = acceptance->source;
  source.model_name = resolved->model_spec.name;
  source.gpu_name = resolved->gpu_spec.name;
  source.dtype_name = costmodel::DTypeName(run.dtype);
  source.profile = run.cost->profile.empty() ? resolved->profile_id : resolved->profile_path;
  source.engine = resolved->engine;
  source.engine_version = resolved->engine_version;
  nlohmann::json j;
  if (run.json) {
    j = whatif::ChainReplayToJson(*report);
    j["drafter"] = run.cost->drafter;
    j["draft_priced_by"] = step->draft_priced_by();
    j["host"] = costmodel::HostTimeToJson(step->host());
    j["acceptance"] = planner::EngineAcceptanceToJson(*acceptance);
  }
  const std::string table = absl::StrFormat(
      "drafter %s (draft priced by %s); host: %s\n%s", run.cost->drafter, step->draft_priced_by(),
      step->host().provenance, whatif::FormatChainReplay(*report));
  PrintWhatIfReport(source, run.json, j, run.json ? std::string() : table, "");
  return 0;
}

void PrintWhatIfReport(const WhatIfSource& source, bool as_json, nlohmann::json report_json,
                       const std::string& table, const std::string& plot) {
  auto or_null = [](const std::string& v) {
    return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  if (as_json) {
    if (!report_json.contains("trace")) report_json["trace"] = nlohmann::json::object();
    report_json["trace"]["path"] = source.trace_path;
    report_json["model"] = source.model_name;
    report_json["gpu"] = source.gpu_name;
    report_json["profile"] = or_null(source.profile);
    report_json["engine"] = or_null(source.engine);
    report_json["engine_version"] = or_null(source.engine_version);
    std::cout << report_json.dump(2) << "\n";
    return;
  }
  std::cout << absl::StrFormat(
                   "%s on %s (%s)%s%s\n", source.model_name, source.gpu_name, source.dtype_name,
                   source.profile.empty() ? "" : ", profile ",
                   DescribeProfile(source.profile, source.engine, source.engine_version))
            << "trace file: " << source.trace_path << "\n"
            << table;
  if (!plot.empty()) std::cout << "plot: " << plot << "\n";
}

}  // namespace specplan::cli
