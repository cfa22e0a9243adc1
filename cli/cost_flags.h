// The flags every command that prices a verification pass shares (plan, plan-batch, whatif,
// estimate): which target on which GPU, whose kernels (engine), which profile and latency model,
// dtype, tensor parallelism, the drafter's cost class and the per-cycle overhead. They fill an
// ops::CostRequest (ops/cost_request.h), which holds the logic. A command's Args struct derives
// from CostFlags and registers them with AddCostFlags, so their names, help and checks are the
// same in every command.
#ifndef SPECPLAN_CLI_COST_FLAGS_H_
#define SPECPLAN_CLI_COST_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/step/step_model.h"
#include "ops/cost_request.h"

namespace specplan::cli {

struct RemoteCost;  // cli/remote.h

// The cost request (ops/cost_request.h: its fields and the pricing logic) with the flags' words:
// Parse returns ops::CostRequest::Parse's answer with its errors mapped to flag names
// (CostErrorInFlags: "drafter = 'x': ..." -> "--drafter x: ..."), as a command maps the errors of
// the operation it runs. What stays here is flag registration (AddCostFlags) and the --server
// helpers.
struct CostFlags : ops::CostRequest {
  using Parsed = ops::CostRequest::Parsed;
  // --drafter and --dtype parsed, drafter first ("--drafter 'x': ...").
  absl::StatusOr<Parsed> Parse(double t_draft_ms) const;
  // For a --server call: InvalidArgument when --profile or --latency-model, which are local, was
  // given (the server prices with its stored profile for --gpu/--model/--dtype/--engine).
  absl::Status CheckRemote() const;
  // The same for a --server call (cli/remote.h): model, gpu, engine and tp (0 -> 1) with these
  // drafter, --t-aux-ms and context c; --host-file is read here (ops::ReadHostFile: "--host-file
  // PATH: ..." when it cannot be) and its terms sent as the step's host_base, the --host-*-ms and
  // --sample-ms flags as overrides over them, so the server prices the same host terms as the
  // in-process command.
  absl::StatusOr<RemoteCost> ToRemoteCost(costmodel::DType dtype,
                                          const costmodel::DrafterCost& drafter,
                                          int64_t context) const;
};

// The options AddCostFlags registered, for a command to add requirements (e.g. --model
// ->required()).
struct CostFlagOptions {
  CLI::Option* model = nullptr;
  CLI::Option* gpu = nullptr;
  CLI::Option* drafter = nullptr;
};

// An operation's error (ops/) in the words of the command line, from one table of request field
// -> flag names (ops/cost_request.h CostRequestFlagNames(): the CostSpec and ops::CostRequest
// fields and the fields the operations' requests share, s, c, b, n_max, t_draft_ms, ...): a leading
// "<field> = '<value>': " or "<field> = <value>: " becomes "--<flag> <value>: " ("engine = 'foo':
// unknown ..." -> "--engine foo: unknown ...", "tp = 3: ..." -> "--tp 3: ..."), a leading
// "<field>: " becomes "--<flag>: ", and the advice "(or set profile_path)" becomes "(or pass
// --profile)". Other messages are returned as they are.
absl::Status CostErrorInFlags(const absl::Status& status);

// --model, --gpu and --dtype as every command that names a target, a GPU and an element type takes
// them (the cost flags below, and fit, which fits a profile for them): registry names or files,
// resolved by costmodel::ResolveModel / ResolveGpu / ParseDType.
CLI::Option* AddModelOption(CLI::App* cmd, std::string* model);
CLI::Option* AddGpuOption(CLI::App* cmd, std::string* gpu);
CLI::Option* AddDTypeOption(CLI::App* cmd, std::string* dtype);  // its default shown

// Registers --model, --gpu, --engine, --profile, --latency-model, --tp, --dtype, --drafter,
// --draft-steps, --topk, --draft-vocab, the host-time overrides (--host-step-ms,
// --host-per-seq-ms, --host-per-draft-ms, --sample-ms) and --t-aux-ms, bound to `flags` (which
// must outlive the parse).
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
