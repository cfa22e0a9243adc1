// What an operation prices a pass with, as a request names it: which target on which GPU, whose
// kernels (engine), which profile and latency model, dtype and tensor parallelism (the cost
// half, costmodel::CostSpec), and the drafter with the engine's host terms (the step half,
// costmodel::StepOptions). Every front end fills one: the CLI from its flags (cli/cost_flags.h),
// the Python module from keyword arguments, the service from a proto's fields.
//
// Errors name the request's field and value in its own words ("drafter = 'x': unknown ...",
// "dtype: unknown value 'int4' ...", "topk = 0: must be in [1, 64]", "host_file = 'h.json': ...");
// a front end renames the fields (the CLI: cli/cost_flags.h CostErrorInFlags, one table).
//
// Two ways to a priced cost:
//   CostRequest::Resolve   in-process: costmodel::ResolveCost over the bundled profiles, plus the
//                          drafter's step model (owned: ResolvedCost).
//   CostView               a cost a front end already holds (the service's cached sources, a
//                          Python Cost object): non-owning pointers the operations price with.
// The operations (ops/estimate.h, plan_tree.h, plan_batch.h) take a CostView; their in-process
// overloads resolve a CostRequest first.
#ifndef SPECPLAN_OPS_COST_REQUEST_H_
#define SPECPLAN_OPS_COST_REQUEST_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"

namespace specplan::ops {

// A cost an operation prices with; non-owning (the holder keeps latency and step alive for the
// call).
struct CostView {
  const costmodel::LatencyModel* latency = nullptr;  // T_verify(s, c); required
  // The drafter architecture's whole step (verify + draft + sample + host); null for a drafter
  // priced by cost class (then `drafter` alone prices drafting).
  const costmodel::StepModel* step = nullptr;
  // The drafter's planner cost before the step is priced in: its class and by-hand times (seconds)
  // and batch_growth. gamma = 0: the operation's own (the marginals' gamma, the batch's largest).
  costmodel::DrafterCost drafter{costmodel::DrafterClass::kParallelBlock, 0};
  double t_aux_s = 0;        // per-cycle overhead given by hand (seconds), >= 0
  std::string latency_kind;  // latency->Kind(), as outputs name it
  std::string profile_id;    // the profile that priced the pass; "" = none (bare/inline roofline)
};

// The host terms in `path`, as `specplan step fit --out` writes them (every term required and in
// range). NOT_FOUND "host_file = 'PATH': <why>" when it cannot be read, INVALID_ARGUMENT
// "host_file = 'PATH': <why>" when it is not such a file.
absl::StatusOr<costmodel::HostTime> ReadHostFile(const std::string& path);

// The host terms a request prices, the one rule every front end follows: `host_file`'s terms
// (ReadHostFile) when it is not "", else `engine`'s defaults, with the `given` single terms (ms)
// over them (costmodel::OverrideHostTime: `names` are the front end's names of the four terms,
// `who` the overrides' provenance). nullopt when neither a file nor a term is given: the step
// model then takes the engine's defaults itself.
absl::StatusOr<std::optional<costmodel::HostTime>> HostTermsFor(
    const std::string& engine, const std::string& host_file,
    const costmodel::HostOverridesMs& given, const std::array<const char*, 4>& names,
    const std::string& who);

// The planner terms of one cycle (C(n) = T_draft + T_aux + T_verify(n + 1, c)) from a view, for
// one sequence drafting `gamma` positions at context c: with a step model the drafter becomes
// costmodel::PlannerTermsFor's block cost, T_aux gains the step's sampling and host work and L_AR
// is the plain step with its host work; with a cost class the view's drafter stands (gamma set
// when it is 0) and l_ar_s = 0 (the planner's T_verify(1, c)). The one place a plan's cycle is
// priced (CLI, Python, service).
struct CycleTerms {
  costmodel::DrafterCost drafter;
  double t_aux_s = 0;  // seconds
  double l_ar_s = 0;   // seconds; 0 = T_verify(1, c)
};
CycleTerms PriceCycle(const CostView& cost, int gamma, int64_t c);

// Records on an operation's result which cost priced it: priced, latency_model (the view's
// latency_kind) and profile (its profile_id); without a cost, priced = false and both cleared
// (capacity kept). Result: any result with those three fields (PlanTreeResult, PlanBatchResult).
template <typename Result>
void RecordPricing(const CostView* cost, Result* result) {
  result->priced = cost != nullptr;
  if (cost != nullptr) {
    result->latency_model = cost->latency_kind;
    result->profile = cost->profile_id;
  } else {
    result->latency_model.clear();
    result->profile.clear();
  }
}

struct ResolvedCost;

struct CostRequest {
  // The cost half (costmodel::CostSpec; "" = default / the bundled lookup).
  std::string model;          // registry name or HF config.json path
  std::string gpu;            // registry name or GPU spec JSON path
  std::string engine;         // "" = the first of sglang, vllm, trtllm, specplan bundled
  std::string profile;        // explicit profile JSON path (CostSpec::profile_path)
  std::string latency_model;  // kind of the profile; "" = its default
  std::string calib_dir;      // where bundled profiles live (CostSpec::calib_dir); "" = default
  std::string dtype = "bf16";
  int64_t tp = 0;  // 0 = not given: the profile's, else 1
  // The drafter: an architecture (eagle, eagle3, mtp, draft:MODEL, block:MODEL, ngram, suffix;
  // costmodel/step/drafter_arch.h), priced by the step model from the profile's composed tables;
  // or a legacy cost class (ar, parallel, causal) priced only by the operation's by-hand times.
  std::string drafter = "eagle3";
  int draft_steps = -1;     // D; -1 = the chain's s - 1
  int topk = 1;             // beams per draft forward (SGLang-style trees)
  int64_t draft_vocab = 0;  // eagle3's draft vocabulary; 0 = 32000
  // Host-time overrides, ms; < 0 = the engine's default (costmodel/step/host_time.h).
  double host_step_ms = -1, host_per_seq_ms = -1, host_per_draft_ms = -1, sample_ms = -1;
  std::string host_file;  // host terms as `specplan step fit --out` writes them; "" = defaults
  double t_aux_ms = 0;    // per-cycle overhead, ms
  // CUDA graphs (costmodel/step/cuda_graphs.h): "engine" (default) reads the target's pass at the
  // engine's captured size, "eager" runs every pass without graphs (vLLM --enforce-eager, SGLang
  // --disable-cuda-graph), "off" prices passes at their exact size (no graphs modelled). Engines
  // without a modelled ladder (trtllm, specplan) are priced as "off" under "engine".
  std::string cuda_graphs = "engine";
  std::vector<int64_t> cuda_graph_sizes;  // vLLM cudagraph_capture_sizes / SGLang cuda_graph_bs
  int64_t cuda_graph_max = 0;   // vLLM max_cudagraph_capture_size / SGLang cuda_graph_max_bs; 0 =
                                // the engine's default
  double eager_launch_us = -1;  // host microseconds per launched op without graphs; < 0 = 10
  // The engine limits vLLM's ladder maximum follows (max_num_seqs, max_num_batched_tokens); 0 =
  // 1024 and 8192, vLLM's defaults on an H100. Not flags of their own: the operations that take
  // the engine's limits (whatif --online, --prefill) set them from --max-num-seqs and
  // --max-num-batched-tokens.
  int64_t graph_max_num_seqs = 0;
  int64_t graph_max_num_batched_tokens = 0;

  // dtype and drafter parsed, drafter first. `drafter` is the drafter's cost with the drafter's
  // class (kParallelBlock for an architecture) and t_net = t_draft_ms (its other fields at their
  // defaults: the operation sets gamma from its marginals).
  struct Parsed {
    costmodel::DrafterCost drafter;
    costmodel::DType dtype;
  };
  absl::StatusOr<Parsed> Parse(double t_draft_ms) const;
  // Whether `drafter` names a legacy cost class (ar, parallel, causal) rather than an
  // architecture the step model prices.
  bool DrafterIsCostClass() const;
  // The step model's options: the drafter architecture (none for a cost class), draft_steps,
  // topk, draft_vocab, the host overrides over `engine`'s defaults, and `draft_s` (seconds) as
  // T_draft by hand when > 0.
  absl::StatusOr<costmodel::StepOptions> StepOptionsFor(const std::string& engine,
                                                        double draft_s) const;
  // The CUDA-graph ladder the fields above give for `engine` on a GPU of `gpu_mem_bytes`: nullopt
  // for "off" and for an engine without a modelled ladder. INVALID_ARGUMENT naming the field
  // ("cuda_graphs = 'x': must be engine, eager or off", "cuda_graph_sizes[1] = 0: ...").
  absl::StatusOr<std::optional<costmodel::CudaGraphs>> GraphsFor(const std::string& engine,
                                                                 double gpu_mem_bytes) const;
  // The step model over a resolved cost (which must outlive the result), with GraphsFor.
  absl::StatusOr<costmodel::StepModel> Step(const costmodel::ResolvedLatencyModel& resolved,
                                            double draft_s) const;
  // PriceCycle over a resolved cost: with an architecture, the step model's terms for `gamma`
  // positions at context c replace *drafter, are added to *t_aux_s and set *l_ar_s; a cost class
  // is left as parsed (*l_ar_s = 0).
  absl::Status PriceDrafter(const costmodel::ResolvedLatencyModel& resolved, int gamma, int64_t c,
                            costmodel::DrafterCost* drafter, double* t_aux_s, double* l_ar_s) const;
  // Whether an operation must price the pass: always for a budget it chooses itself (controller,
  // scan), and for a fixed budget only when a cost field was given (AnyCostGiven).
  bool NeedsCost(bool fixed_budget) const { return !fixed_budget || AnyCostGiven(); }
  // Whether any of model, gpu, engine, profile, latency_model was given.
  bool AnyCostGiven() const;

  // The cost half with the parsed dtype, for costmodel::ResolveCost.
  costmodel::CostSpec ToCostSpec(costmodel::DType dtype) const;
  // costmodel::ResolveCost(ToCostSpec(dtype)); errors name CostSpec's fields ("engine = 'foo':").
  absl::StatusOr<costmodel::ResolvedLatencyModel> ResolveSpec(costmodel::DType dtype) const;
  // The whole in-process resolution: Parse(t_draft_ms), ResolveSpec, and with an architecture
  // drafter its step model (by-hand T_draft = draft_s when > 0, else composed).
  absl::StatusOr<ResolvedCost> Resolve(double t_draft_ms, double draft_s = 0) const;
  // For an operation that prices only when `needed` (NeedsCost, or its own rule): Resolve with
  // the by-hand draft time t_draft_ms (also as T_draft, seconds) when needed; otherwise none,
  // once Parse(t_draft_ms) succeeds (bad dtype and drafter names are refused either way).
  absl::StatusOr<std::optional<ResolvedCost>> ResolveIfNeeded(bool needed, double t_draft_ms) const;
};

// The engine's default CUDA-graph ladder for a step model of `options` (CostRequest::GraphsFor with
// no graph field given), for the front ends that build step options of their own (the service, the
// Python module): every front end prices the same pass.
std::optional<costmodel::CudaGraphs> DefaultGraphs(const std::string& engine, double gpu_mem_bytes,
                                                   const costmodel::StepOptions& options);

// The flags specplan's command lines (the specplan CLI, specplan-bench) name request fields
// with: the one table of field -> flag ({"engine", "--engine"}), holding the CostSpec fields
// costmodel::ResolveCost names (profile_path is --profile), CostRequest's own fields and the
// fields the operations' requests share (s, c, b, gamma, n_max, ...). A front end renames an
// error's field with it (costmodel::CostErrorInNames; the CLI's cli/cost_flags.h
// CostErrorInFlags).
const std::vector<costmodel::CostFieldName>& CostRequestFlagNames();

// A CostRequest resolved in-process; owns what its View() points into. Movable.
struct ResolvedCost {
  std::shared_ptr<costmodel::ResolvedLatencyModel> resolved;  // never null
  std::optional<costmodel::StepModel> step;  // with an architecture drafter; points into resolved
  CostRequest::Parsed parsed;                // dtype and the drafter as parsed
  double t_aux_s = 0;                        // the request's t_aux_ms, seconds

  CostView View() const;
};

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_COST_REQUEST_H_
