#include "cli/whatif_concurrency.h"

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/cost_flags.h"
#include "plot/chart.h"
#include "util/atomic_file.h"

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
  std::vector<whatif::ConcurrencyStrategy> strategies = whatif::AllConcurrencyStrategies();
  if (r.best_fixed) strategies.push_back(whatif::ConcurrencyStrategy::kBestFixed);
  if (r.best_chain) strategies.push_back(whatif::ConcurrencyStrategy::kBestChain);
  for (whatif::ConcurrencyStrategy s : strategies) {
    plot::Series t, sp;
    t.label = sp.label = whatif::ConcurrencyStrategyName(s);
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
  if (!report.ok()) {
    std::cerr << kCmd << run.trace_path << ": " << report.status().message() << "\n";
    return 1;
  }
  if (!run.plot.empty()) {
    auto png = plot::RenderPng(MakeConcurrencyCharts(*report), 900, 900);
    if (!png.ok()) {
      std::cerr << kCmd << "--plot " << run.plot << ": " << png.status().message() << "\n";
      return 1;
    }
    absl::Status st = WriteFileAtomically(run.plot, *png);
    if (!st.ok()) {
      std::cerr << kCmd << "--plot " << run.plot << ": " << st.message() << "\n";
      return 1;
    }
  }
  if (run.json) {
    nlohmann::json j = whatif::ConcurrencyReportToJson(*report);
    j["trace"]["path"] = run.trace_path;
    j["model"] = run.model_name;
    j["gpu"] = run.gpu_name;
    j["profile"] = run.profile.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.profile);
    j["engine"] = run.engine.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.engine);
    j["engine_version"] =
        run.engine_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.engine_version);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("%s on %s (%s)%s%s\n", run.model_name, run.gpu_name, run.dtype_name,
                               run.profile.empty() ? "" : ", profile ",
                               DescribeProfile(run.profile, run.engine, run.engine_version))
            << "trace file: " << run.trace_path << "\n"
            << whatif::FormatConcurrencyTable(*report);
  if (!run.plot.empty()) std::cout << "plot: " << run.plot << "\n";
  return 0;
}

}  // namespace specplan::cli
