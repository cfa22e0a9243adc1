// The flags every command that prices a verification pass shares (plan, plan-batch, whatif,
// estimate): which target on which GPU, whose kernels (engine), which profile and latency model,
// dtype, tensor parallelism, the drafter's cost class and the per-cycle overhead. A command's Args
// struct derives from CostFlags and registers them with AddCostFlags, so their names, help and
// checks are the same in every command.
#ifndef SPECPLAN_CLI_COST_FLAGS_H_
#define SPECPLAN_CLI_COST_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/model_spec.h"

namespace specplan::cli {

struct RemoteCost;  // cli/remote.h

struct CostFlags {
  std::string model;
  std::string gpu;
  std::string engine;  // "" = the first of sglang, vllm, trtllm, specplan with a bundled profile
  std::string profile;
  std::string latency_model;
  std::string dtype = "bf16";
  int64_t tp = 0;  // 0 = not given: the profile's, else 1
  std::string drafter = "parallel";
  double t_aux_ms = 0;

  // --drafter and --dtype parsed, drafter first; the error names the flag and value
  // ("--drafter 'x': ..."), for the command to print after its own name. `drafter` is the
  // drafter's cost with --drafter's class and t_net = the command's --t-draft-ms (its other
  // fields at their defaults: the command sets gamma from its marginals).
  struct Parsed {
    costmodel::DrafterCost drafter;
    costmodel::DType dtype;
  };
  absl::StatusOr<Parsed> Parse(double t_draft_ms) const;
  // Whether a command must price the pass: always for a budget it chooses itself (controller,
  // scan), and for a fixed budget only when a cost flag was given (AnyCostGiven).
  bool NeedsCost(bool fixed_budget) const { return !fixed_budget || AnyCostGiven(); }

  // The cost half of these flags (model, gpu, engine, profile, latency model, tp) with the parsed
  // --dtype, for costmodel::ResolveCost — and for a --server call, which takes the same spec.
  costmodel::CostSpec ToCostSpec(costmodel::DType dtype) const;
  // The one in-process resolution of these flags: costmodel::ResolveCost(ToCostSpec(dtype)), its
  // errors in the flags' words (CostErrorInFlags).
  absl::StatusOr<costmodel::ResolvedLatencyModel> Resolve(costmodel::DType dtype) const;
  // Whether any of --model, --gpu, --engine, --profile, --latency-model was given (a fixed-budget
  // plan needs no cost unless one was).
  bool AnyCostGiven() const;
  // For a --server call: InvalidArgument when --profile or --latency-model, which are local, was
  // given (the server prices with its stored profile for --gpu/--model/--dtype/--engine).
  absl::Status CheckRemote() const;
  // The same for a --server call (cli/remote.h): model, gpu, engine and tp (0 -> 1) with these
  // drafter, --t-aux-ms and context c.
  RemoteCost ToRemoteCost(costmodel::DType dtype, const costmodel::DrafterCost& drafter,
                          int64_t context) const;
};

// The options AddCostFlags registered, for a command to add requirements (e.g. --model
// ->required()).
struct CostFlagOptions {
  CLI::Option* model = nullptr;
  CLI::Option* gpu = nullptr;
  CLI::Option* drafter = nullptr;
};

// A costmodel::ResolveCost error in the words of these flags: its leading "<field> = '<value>': "
// (a CostSpec field) becomes "--<flag> <value>: " ("engine = 'foo': unknown ..." -> "--engine foo:
// unknown ...", "tp = 3: ..." -> "--tp 3: ..."), and its advice "(or set profile_path)" becomes
// "(or pass --profile)". Other messages are returned as they are. (costmodel::CostErrorInNames with
// kCostFlagNames, which specplan-bench shares.)
absl::Status CostErrorInFlags(const absl::Status& status);

// Registers --model, --gpu, --engine, --profile, --latency-model, --tp, --dtype, --drafter and
// --t-aux-ms, bound to `flags` (which must outlive the parse).
CostFlagOptions AddCostFlags(CLI::App* cmd, CostFlags* flags);

// How outputs name the profile a cost came from: "h100-sxm/qwen3-8b-bf16@sglang (engine sglang
// 0.5.14)", "calib/x.json (engine specplan)"; `profile` alone when the engine is "" (none known,
// e.g. a server's answer); "" when `profile` is "" (the bare roofline).
std::string DescribeProfile(const std::string& profile, const std::string& engine,
                            const std::string& engine_version);
// "engine sglang 0.5.14", "engine specplan"; "" when `engine` is "".
std::string DescribeEngine(const std::string& engine, const std::string& engine_version);

// The engine of the profile a specplan-server used (`id`, as its answers name it, "" = the bare
// roofline): its engine and engine_version from the server's profile list, so that a command
// prints over --server what it prints in-process; from the id alone ("...@<engine>", else
// "specplan"; no version) when the list cannot be read. Both "" for id "".
struct UsedEngine {
  std::string engine;
  std::string version;
};
UsedEngine RemoteProfileEngine(const std::string& server, const std::string& id);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_COST_FLAGS_H_
