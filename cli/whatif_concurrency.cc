#include "cli/whatif_concurrency.h"

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/cost_flags.h"
#include "plot/chart.h"

namespace specplan::cli {
namespace {

constexpr char kCmd[] = "specplan whatif: ";

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

CLI::Option* AddCalibrateFlag(CLI::App* cmd, ReplayFlags* flags, const std::string& help) {
  return cmd->add_flag("--calibrate", flags->calibrate, help);
}

CLI::Option* AddBatchScanFlag(CLI::App* cmd, ReplayFlags* flags, const std::string& help) {
  return cmd->add_flag("--batch-scan", flags->batch_scan, help);
}

void ReplayFlags::Fill(ops::WhatIfConcurrencyRequest* req) const {
  req->trace = trace;
  req->t_draft_ms = t_draft_ms;
  if (draft_batch_growth_option->count() > 0) req->draft_batch_growth = draft_batch_growth;
  req->calibrate = calibrate;
  req->batch_scan = batch_scan;
}

absl::Status WhatIfErrorInFlags(const absl::Status& status) {
  if (absl::StartsWith(status.message(), "trace ")) {
    return absl::Status(status.code(), absl::StrCat("--", status.message()));
  }
  return CostErrorInFlags(status);
}

void PrintWhatIfText(const ops::WhatIfSource& source, const std::string& table,
                     const std::string& plot) {
  std::cout << absl::StrFormat(
                   "%s on %s (%s)%s%s\n", source.model, source.gpu, source.dtype,
                   source.profile.empty() ? "" : ", profile ",
                   DescribeProfile(source.profile, source.engine, source.engine_version))
            << "trace file: " << source.trace_path << "\n"
            << table;
  if (!plot.empty()) std::cout << "plot: " << plot << "\n";
}

int RunWhatIfConcurrency(const ops::WhatIfConcurrencyRequest& given, bool json,
                         const std::string& plot, const OutputFlags& output) {
  ops::WhatIfConcurrencyRequest req = given;
  if (isatty(STDERR_FILENO) && req.batch_sizes.size() > 1 && !req.recorded) {
    req.progress = [](int done, int total) {
      std::cerr << "\rspecplan whatif: " << done << "/" << total << " batch sizes" << std::flush;
      if (done == total) std::cerr << "\n";
    };
  }
  auto result = ops::WhatIfConcurrency(req);
  if (Failed(kCmd, WhatIfErrorInFlags(result.status()))) return 1;
  if (!plot.empty() && !WritePlot(kCmd, plot, MakeConcurrencyCharts(result->report), output)) {
    return 1;
  }
  if (json) {
    std::cout << ops::ToJson(*result).dump(2) << "\n";
  } else {
    PrintWhatIfText(result->source, whatif::FormatConcurrencyTable(result->report), plot);
  }
  return 0;
}

int RunChainReplay(const ops::WhatIfChainsRequest& req, bool json) {
  auto result = ops::WhatIfChains(req);
  if (!result.ok()) {
    // The replay names its fields; say them as the flags that set them.
    std::string msg(WhatIfErrorInFlags(result.status()).message());
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
  if (json) {
    std::cout << ops::ToJson(*result).dump(2) << "\n";
  } else {
    PrintWhatIfText(result->source, ops::ChainsTable(*result), "");
  }
  return 0;
}

}  // namespace specplan::cli
