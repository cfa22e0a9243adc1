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
#include "costmodel/step/step_model.h"

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
  // The drafter: an architecture (eagle, eagle3, mtp, draft:MODEL, block:MODEL, ngram, suffix;
  // costmodel/step/drafter_arch.h), priced by the step model from the profile's composed tables;
  // or a legacy cost class (ar, parallel, causal) priced only by the command's --t-*-ms flags.
  std::string drafter = "eagle3";
  int draft_steps = -1;     // D; -1 = the chain's s - 1
  int topk = 1;             // beams per draft forward (SGLang-style trees)
  int64_t draft_vocab = 0;  // eagle3's draft vocabulary; 0 = 32000
  // Host-time overrides, ms; < 0 = the engine's default (costmodel/step/host_time.h).
  double host_step_ms = -1, host_per_seq_ms = -1, host_per_draft_ms = -1, sample_ms = -1;
  std::string host_file;  // host terms as `specplan step fit --out` writes them; "" = defaults
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
  // Whether --drafter names a legacy cost class (ar, parallel, causal) rather than an
  // architecture the step model prices.
  bool DrafterIsCostClass() const;
  // The step model's options from these flags: the drafter architecture (none for a cost class),
  // --draft-steps, --topk, --draft-vocab, the host overrides over the engine's defaults, and
  // `draft_s` (a command's --t-draft-ms, in seconds) as T_draft by hand when given (> 0).
  // Errors name the flag.
  absl::StatusOr<costmodel::StepOptions> StepOptionsFor(const std::string& engine,
                                                        double draft_s) const;
  // The step model over a resolved cost (its verify model must outlive the result).
  absl::StatusOr<costmodel::StepModel> Step(const costmodel::ResolvedLatencyModel& resolved,
                                            double draft_s) const;
  // For the planners that price a cycle as C(n) = T_draft + T_aux + T_verify(n + 1, c): with an
  // architecture drafter, the step model's draft time of one sequence drafting `gamma`
  // positions at context c becomes the drafter's per-cycle cost (a block cost of that size, whose
  // batch_growth is the step model's growth from b = 1 to 16), and its sample and host terms are
  // added to *t_aux_s; *l_ar_s becomes the plain step with its host work. A cost class is left as
  // parsed (*l_ar_s = 0: the planner's T_verify(1, c)).
  absl::Status PriceDrafter(const costmodel::ResolvedLatencyModel& resolved, int gamma, int64_t c,
                            costmodel::DrafterCost* drafter, double* t_aux_s, double* l_ar_s) const;
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
