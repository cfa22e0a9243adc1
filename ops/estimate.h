// Operation Estimate: the roofline terms and predicted verification latency of one pass of b
// sequences, each verifying s tokens over c cached; with a drafter architecture the engine's whole
// step (verify + draft + sample + host) and the plain decoding step; with the user's acceptance
// the speedup a chain of K = s - 1 gives. Serves `specplan estimate` (in-process and --server);
// the Python module's Cost.estimate is to call it too.
//
//   EstimateRequest req;  req.cost.model = "qwen3-8b";  req.cost.gpu = "h100";  req.s = 4;
//   absl::StatusOr<EstimateResult> r = ops::Estimate(req);   // resolves req.cost in-process
//   std::cout << ops::ToJson(req, *r).dump(2);
//
// A pass whose weights and KV cache cannot fit in the GPU's memory is refused
// (RESOURCE_EXHAUSTED naming b, s, c and the bytes, costmodel/hardware/memory_fit.h), or with
// warn_memory answered with EstimateResult::memory_warning set.
#ifndef SPECPLAN_OPS_ESTIMATE_H_
#define SPECPLAN_OPS_ESTIMATE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"
#include "ops/cost_request.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::ops {

inline constexpr int64_t kMaxEstimateBatch = int64_t{1} << 16;  // b
inline constexpr int64_t kMaxEstimateS = int64_t{1} << 20;      // s

struct EstimateRequest {
  CostRequest cost;  // target, GPU, engine, profile, drafter, host terms
  int64_t s = 1;     // tokens verified per sequence (draft nodes + 1 root), [1, 2^20]
  int64_t c = 0;     // cached tokens per sequence, [0, kMaxContext]
  int64_t b = 1;     // sequences in the pass, [1, kMaxEstimateBatch]
  int gamma = 16;    // drafted positions per cycle (cost classes), [1, 1024]
  // By-hand drafter times, ms (>= 0): a cost class's t_net / t_head / t_light; with an
  // architecture, any > 0 replaces the composed T_draft by this class's DraftSeconds().
  double t_net_ms = 0, t_head_ms = 0, t_light_ms = 0;
  // The user's acceptance (a chain of K = s - 1 needs k_max >= s - 1); none = no speedup.
  std::optional<planner::EngineAcceptance> acceptance;
  bool warn_memory = false;  // a pass that cannot fit: a warning in the result, not an error
};

struct EstimateResult {
  costmodel::ModelSpec model_spec;  // the target as priced (dtype, tp)
  costmodel::GpuSpec gpu_spec;
  costmodel::RooflineEstimate roofline;  // of the whole pass: weights once, tokens b times
  std::string latency_model;             // kind of the latency model that predicted
  std::string profile;                   // the profile's path (or a server's id); "" = none
  std::string engine, engine_version;    // the profile's; "" = none known
  double predicted_s = 0;                // T_verify of the whole pass, seconds
  // The cycle C(n = s - 1) per sequence: draft + aux + verify, seconds. With a step model it is
  // the engine's step (aux = sample + host + t_aux).
  int64_t n = 0;
  std::string drafter;  // the architecture, or the cost class's name
  double draft_s = 0, aux_s = 0, verify_s = 0, cycle_s = 0;
  // With a drafter architecture: the step and the plain step (b sequences), who priced T_draft
  // ("composed", "by hand", ...), the host terms used, and the step's draft_steps / topk.
  std::optional<costmodel::StepBreakdown> step, ar_step;
  std::string draft_priced_by;
  costmodel::HostTime host;
  int draft_steps = 0, topk = 1;
  // With acceptance: its source and format, tokens per step at K = n, and (with a step) the
  // speedup over plain decoding.
  std::optional<planner::EngineAcceptance> acceptance;
  double tokens_per_step = 0;
  std::optional<double> speedup;
  std::string memory_warning;  // warn_memory and the pass does not fit: the refusal's message
};

// How the step's verify pass (b requests of s tokens) runs under the engine's CUDA-graph ladder
// (costmodel/step/cuda_graphs.h, the request's cuda_graphs fields over result.engine and the
// GPU's memory): nullopt without a step or a modelled ladder. The same in-process and for a
// server's answer (whose ladder is the engine's default).
struct EstimateGraph {
  std::string ladder;  // "vllm" | "sglang"
  bool graphed = false;
  int64_t padded_requests = 0;  // the requests the captured graph holds (b when eager)
};
std::optional<EstimateGraph> GraphOfEstimate(const EstimateRequest& req, const EstimateResult& r);

// The request alone (no cost resolved): b, s, c, gamma, the by-hand times, dtype and drafter
// names, and the acceptance's reach ("s = 5: a chain of 4 drafts, but acceptance SRC holds
// positions up to 3 (pass s = 4 or less)"). Errors name the field and value.
absl::Status Validate(const EstimateRequest& req);

// The drafter's planner cost from the request's class and by-hand times (seconds), gamma set.
costmodel::DrafterCost EstimateDrafter(const EstimateRequest& req);

// The memory check: OK, or the refusal; with warn_memory, OK with *warning set to its message.
absl::Status CheckMemory(const EstimateRequest& req, const costmodel::ModelSpec& model,
                         const costmodel::GpuSpec& gpu, std::string* warning);

// The figures that follow from model_spec, gpu_spec, the cycle and the step once they are set
// (in-process, or from a server's answer): the roofline of the pass, the step's cycle (draft,
// aux = sample + host + t_aux, verify), the acceptance's tokens per step and the speedup.
void CompleteEstimate(const EstimateRequest& req, EstimateResult* result);

// In-process over a cost the caller holds (its latency model and, with an architecture, its step
// model; the resolved model and GPU specs): Validate, CheckMemory, the cycle (or the ragged pass
// of b), the step and CompleteEstimate.
absl::StatusOr<EstimateResult> Estimate(const EstimateRequest& req, const CostView& cost,
                                        const costmodel::ModelSpec& model,
                                        const costmodel::GpuSpec& gpu);
// In-process: resolves req.cost (CostRequest::Resolve) and estimates. Errors name the request's
// fields ("drafter = 'x': ...", "engine = 'foo': ...", "b = 0: must be in [1, 65536] ...").
absl::StatusOr<EstimateResult> Estimate(const EstimateRequest& req);

// The JSON form (`specplan estimate --json`): the roofline's fields, model, gpu, dtype, tp,
// experts_streamed (MoE), s, c, b, predicted_s, per_sequence_s, per_token_s, latency_model,
// profile, engine, engine_version, cycle {n, drafter, draft_s, aux_s, verify_s, cycle_s}, and
// with a step: step {..., drafter, draft_steps, topk, draft_priced_by, host}, ar_step, ar_step_s;
// with acceptance: acceptance {source, format, k, tokens_per_step} and (with a step) speedup.
nlohmann::json ToJson(const EstimateRequest& req, const EstimateResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_ESTIMATE_H_
