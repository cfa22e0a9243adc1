// The flags every command that prices a verification pass shares (plan, plan-batch, whatif,
// estimate): which target on which GPU, which profile and latency model, dtype, tensor
// parallelism, the drafter's cost class and the per-cycle overhead. A command's Args struct
// derives from CostFlags and registers them with AddCostFlags, so their names, help and checks
// are the same in every command.
#ifndef SPECPLAN_CLI_COST_FLAGS_H_
#define SPECPLAN_CLI_COST_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace specplan::cli {

struct CostFlags {
  std::string model;
  std::string gpu;
  std::string profile;
  std::string latency_model;
  std::string dtype = "bf16";
  int64_t tp = 0;  // 0 = not given: the profile's, else 1
  std::string drafter = "parallel";
  double t_aux_ms = 0;
};

// The options AddCostFlags registered, for a command to add requirements (e.g. --model
// ->required()).
struct CostFlagOptions {
  CLI::Option* model = nullptr;
  CLI::Option* gpu = nullptr;
  CLI::Option* drafter = nullptr;
};

// Registers --model, --gpu, --profile, --latency-model, --tp, --dtype, --drafter and --t-aux-ms,
// bound to `flags` (which must outlive the parse).
CostFlagOptions AddCostFlags(CLI::App* cmd, CostFlags* flags);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_COST_FLAGS_H_
