// `specplan whatif --concurrency LIST`: the what-if replay with B requests in flight
// (whatif/concurrency.h). whatif_command.cc parses the flags and loads the trace and the latency
// model; this part runs the replay and prints the table, the JSON or the plot.
#ifndef SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
#define SPECPLAN_CLI_WHATIF_CONCURRENCY_H_

#include <string>

#include "costmodel/latency_model.h"
#include "whatif/concurrency.h"
#include "whatif/trace.h"

namespace specplan::cli {

struct WhatIfConcurrencyRun {
  const whatif::Trace* trace = nullptr;              // not owned
  const costmodel::LatencyModel* latency = nullptr;  // not owned
  std::string trace_path;
  std::string model_name, gpu_name, dtype_name;
  std::string profile;                 // profile id or path; "" for the bare roofline
  std::string engine, engine_version;  // the profile's (costmodel::Profile); "" for the roofline
  whatif::ConcurrencyOptions options;
  bool json = false;
  std::string plot;  // PNG path, or ""
};

// Runs the replay and prints to stdout (errors to stderr). Returns the exit code.
int RunWhatIfConcurrency(const WhatIfConcurrencyRun& run);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
