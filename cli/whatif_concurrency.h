// `specplan whatif --concurrency LIST`: the what-if replay with B requests in flight
// (whatif/concurrency.h). whatif_command.cc parses the flags and loads the trace and the latency
// model; this part runs the replay and prints the table, the JSON or the plot. Both print their
// reports through PrintWhatIfReport.
#ifndef SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
#define SPECPLAN_CLI_WHATIF_CONCURRENCY_H_

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "cli/acceptance_flags.h"
#include "cli/cost_flags.h"
#include "costmodel/latency_model.h"
#include "whatif/chain_replay.h"
#include "whatif/concurrency.h"
#include "whatif/trace.h"

namespace specplan::cli {

// What a what-if run analysed and what priced it.
struct WhatIfSource {
  std::string trace_path;  // the trace file analysed (the server's bundled one without --trace)
  std::string model_name, gpu_name, dtype_name;
  std::string profile;                 // profile path (in-process) or id (server); "" = roofline
  std::string engine, engine_version;  // the profile's (costmodel::Profile); "" for the roofline
};

// Prints a what-if report to stdout: with `as_json`, `report_json` with the source's keys added
// (trace.path, model, gpu, profile, engine, engine_version: null when ""); else the source's
// header lines, `table` and, when `plot` is not empty, "plot: <plot>".
void PrintWhatIfReport(const WhatIfSource& source, bool as_json, nlohmann::json report_json,
                       const std::string& table, const std::string& plot);

struct WhatIfConcurrencyRun {
  const whatif::Trace* trace = nullptr;              // not owned
  const costmodel::LatencyModel* latency = nullptr;  // not owned
  WhatIfSource source;
  whatif::ConcurrencyOptions options;
  bool json = false;
  std::string plot;  // PNG path, or ""
};

// Runs the replay and prints to stdout (errors to stderr). Returns the exit code.
int RunWhatIfConcurrency(const WhatIfConcurrencyRun& run);

// --concurrency LIST --acceptance FILE: chains of K replayed over the user's acceptance on the
// engine's whole step (whatif/chain_replay.h). Resolves the cost and the step model from `cost`,
// loads the acceptance, prints the table (or JSON). Returns the exit code.
struct ChainReplayRun {
  const CostFlags* cost = nullptr;              // not owned
  const AcceptanceFlags* acceptance = nullptr;  // not owned
  costmodel::DType dtype = costmodel::DType::kBFloat16;
  whatif::ChainReplayOptions options;
  bool json = false;
};
int RunChainReplay(const ChainReplayRun& run);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
