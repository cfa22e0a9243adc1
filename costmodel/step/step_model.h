// The engine's whole speculative step, priced (DESIGN.md "Cycle cost"):
//   T_step = T_verify + T_draft + T_sample + T_host
//   T_verify  the target's ragged pass (the profile's latency model), read at the engine's
//             CUDA-graph bucket when StepOptions::graphs is given (cuda_graphs.h: padded up to the
//             smallest captured size, or eager above the largest), + HostTime::verify_per_token_s
//             per token in the pass
//   T_draft   the drafter's forwards (drafter_arch.h DraftForwards), each priced by the drafter's
//             table composed from the same kernel tables as the target (Profile::drafters), or by
//             the drafter's roofline when the profile holds no such table (measured profiles, the
//             bare roofline), plus HostTime::per_draft_forward_s per forward; for the ngram and
//             suffix drafters (no network: they propose on the host),
//             HostTime::ngram_verify_fraction x T_verify when the step drafts (D > 0); or by hand
//             (StepOptions::draft_s, the whole of it)
//   T_sample  HostTime::sample_call_s for the target's sampling and one per drafter forward
//   T_host    HostTime::step_s + per_sequence_s b
// and one plain decoding step of the same batch (ArStep): T_verify(s = 1) + one sampling call +
// step_s + per_sequence_s b. A speedup is (tokens per step) x ArStep / Step.
#ifndef SPECPLAN_COSTMODEL_STEP_STEP_MODEL_H_
#define SPECPLAN_COSTMODEL_STEP_STEP_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/profile/profile.h"
#include "costmodel/step/cuda_graphs.h"
#include "costmodel/step/drafter_arch.h"
#include "costmodel/step/host_time.h"

namespace specplan::costmodel {

struct StepOptions {
  std::string drafter = "eagle3";  // drafter_arch.h name; "" = none (plain decoding only)
  int draft_steps = -1;            // D, positions drafted per step; -1 = s - 1 (a chain)
  int topk = 1;                    // beams per draft forward (SGLang-style trees); >= 1
  DrafterOptions drafter_options;
  std::optional<double> draft_s;  // by hand: seconds of one step's drafting, replacing T_draft
  std::optional<HostTime> host;   // by hand or refitted: replaces the engine's defaults
  // The engine's CUDA-graph ladder for the target's pass (cuda_graphs.h); nullopt = every pass
  // priced at its exact size (the profile's tables alone).
  std::optional<CudaGraphs> graphs;
};
// Validates the options; errors name the field and value.
absl::Status ValidateStepOptions(const StepOptions& o);

// One step's time by term, seconds.
struct StepBreakdown {
  double verify_s = 0;
  double draft_s = 0;
  double sample_s = 0;
  double host_s = 0;
  int draft_forwards = 0;  // drafter forwards the step ran
  double step_s() const { return verify_s + draft_s + sample_s + host_s; }
};
nlohmann::json StepBreakdownToJson(const StepBreakdown& b);  // the terms and "step_s"

class StepModel {
 public:
  // `verify` prices the target's pass and must outlive the model; `drafters` are the profile's
  // composed drafter tables (nullptr or empty: none); `engine` picks the host defaults
  // (DefaultHostTime) unless options.host is given. Errors name the field and value: an unknown
  // drafter, an engine without defaults, bad options.
  static absl::StatusOr<StepModel> Create(const LatencyModel* verify, const ModelSpec& target,
                                          const GpuSpec& gpu,
                                          const std::map<std::string, DrafterProfile>* drafters,
                                          const std::string& engine, const StepOptions& options);

  // A speculative step of b sequences, each verifying s tokens over c cached (b, s >= 1, c >= 0).
  StepBreakdown Step(int64_t b, int64_t s, int64_t c) const;
  // A speculative step of a ragged batch (D = options' draft_steps, else the largest s_i - 1).
  StepBreakdown Step(const BatchShape& batch) const;
  // One plain decoding step of b sequences over c cached (or of the batch's sequences at s = 1).
  StepBreakdown ArStep(int64_t b, int64_t c) const;
  StepBreakdown ArStep(const BatchShape& batch) const;
  // The step of a draft tree of n >= 0 nodes and depth `depth` (0 <= depth <= n, the levels it
  // drafts) for b uniform sequences at context c: the target verifies n + 1 tokens; an
  // autoregressive drafter (eagle, eagle3, mtp, draft:M) runs its extend forward over the
  // depth + 1 tokens a tree of that depth can accept, then depth - 1 forwards of b x topk beams
  // (DraftForwards with s = depth + 1, D = depth: a chain of depth d is Step(b, d + 1, c) at
  // D = d); a block drafter one forward of `block_positions` positions whatever the tree
  // (the positions its marginals hold); ngram/suffix their fraction of this verify pass. The
  // options' draft_steps is not read: the tree's depth is. n = 0 drafts nothing: ArStep(b, c).
  StepBreakdown TreeStep(int64_t b, int64_t n, int depth, int64_t c, int block_positions) const;
  // Whether the drafter's cost steps with the tree's depth (DraftsByLevel(options)).
  bool DraftsByLevel() const;

  const HostTime& host() const { return host_; }
  const std::string& engine() const { return engine_; }
  const StepOptions& options() const { return options_; }
  bool has_drafter() const { return !options_.drafter.empty(); }
  // How T_draft is priced: "kernel tables" (the profile's composed drafter), "roofline" (the
  // drafter's bare roofline: the profile holds no composed table for it), "given" (by hand),
  // "host only" (ngram, suffix: no network; their proposal on the host is priced as
  // HostTime::ngram_verify_fraction of the step's T_verify), "none" (no drafter).
  const std::string& draft_priced_by() const { return draft_priced_by_; }
  // Seconds of the target's pass over a ragged batch, at its CUDA-graph bucket (no host terms):
  // what T_verify reads, for callers that build passes of their own (whatif/online.h, prefill
  // chunks with decoding requests).
  double VerifyPassSeconds(const BatchShape& batch) const;
  // The resolved ladder; null when options().graphs is not given.
  const GraphBuckets* graphs() const { return graphs_.get(); }
  // Seconds of one drafter forward of b sequences, each s new tokens over c cached.
  double DraftForwardSeconds(int64_t b, int64_t s, int64_t c) const;
  // Seconds of one drafter forward over a ragged batch (each sequence s_i new tokens over c_i).
  double DraftForwardSeconds(const BatchShape& batch) const;

  // For callers that price many uniform steps (replays, sweeps, schedules): tabulates T_draft at
  // the nodes of the target's table (each node priced forward by forward, as Step does), so that
  // Step(b, s, c) on the target's grids reads the verify pass and the drafting with one grid
  // search (and ArStep(b, c) the plain pass without building its batch). Off the grids, and for
  // ragged batches, Step prices forward by forward as before.
  // Between nodes T_draft is then interpolated like the target's pass (bilinear in (s, c), linear
  // in b), within 1 % of the forward-by-forward price on the bundled profiles
  // (tests/costmodel/step_model_test.cc). A no-op unless the target is priced by a table
  // (TableLatency) and the drafter by a network (not by hand, not host only). Returns whether it
  // tabulated. Not thread-safe with concurrent Step calls: call it before sharing the model.
  bool TabulateDraft();
  bool draft_tabulated() const { return draft_table_ != nullptr; }
  // This model with `topk` beams per draft forward, its other options kept: for callers that
  // price several SGLang tree settings on one resolved cost (ops::Schedule). The copy is not
  // tabulated (TabulateDraft). InvalidArgument "topk = N: must be in [1, 64]".
  absl::StatusOr<StepModel> WithTopk(int topk) const;

 private:
  StepModel() = default;
  // T_draft of b sequences at (s, c) drafting d positions; *forwards = the forwards run.
  double DraftSeconds(int64_t b, int64_t s, int64_t c, int d, int* forwards) const;
  // Fills r's sample and host terms from its draft_forwards, for b sequences, and adds the
  // drafter's host work to its draft term: per forward; for ngram/suffix drafting d > 0
  // positions, the fraction of its verify term (which must be set).
  void AddHost(int64_t b, int d, StepBreakdown* r) const;

  // The target's pass of b uniform sequences of s tokens whose exact price is `exact`, read at its
  // CUDA-graph bucket (cuda_graphs.h: the padded rows priced at no context); `exact` itself
  // without graphs.
  double Graphed(int64_t b, int64_t s, double exact) const;
  // The same for a ragged batch.
  double GraphedBatch(const BatchShape& batch, double exact) const;
  // The target's pass of b x (s, 0): what padded rows add is priced at no context.
  double PassAtNoContext(int64_t b, int64_t s) const;

  // D for a step verifying s tokens per sequence (the options' draft_steps, else s - 1).
  int DraftStepsFor(int64_t s) const {
    return options_.draft_steps >= 0 ? options_.draft_steps : static_cast<int>(s - 1);
  }

  const LatencyModel* verify_ = nullptr;
  std::shared_ptr<const LatencyModel> draft_;  // the drafter's forward; null without a network
  // TabulateDraft: the target's table (verify_ itself) and T_draft at its nodes.
  const TableLatency* verify_table_ = nullptr;
  std::shared_ptr<const LatencyTable> draft_table_;
  DrafterArch arch_;
  StepOptions options_;
  HostTime host_;
  std::string engine_;
  std::string draft_priced_by_ = "none";
  std::shared_ptr<const GraphBuckets> graphs_;  // options_.graphs resolved; null without
  int64_t layers_ = 0;                          // the target's, for the eager fallback
};

// What a planner that prices a cycle as C(T) = T_draft(shape of T) + T_aux + T_verify(|T| + 1, c)
// (costmodel/cycle_cost.h, DESIGN.md "Cycle cost") takes from the step model, for one sequence
// over marginals of `gamma` positions at context c. The one place a plan's drafting is priced:
// every front end that plans (CLI, service, Python, through ops::PriceCycle) gets it here.
//   drafter      its block cost t_net_s = the drafting of all gamma positions with the drafter's
//                sampling calls (TreeStep at depth gamma: what a depth-flat cost and
//                CycleCost::Seconds pay), batch_growth the growth of that from b = 1 to 16;
//                for a drafter that drafts by level (DraftsByLevel) also depth_s[d] and
//                depth_growth[d], d = 0..gamma: the same for a tree of depth d (TreeStep), so
//                that CycleCost::TreeSeconds(n, d) is TreeStep(1, n, d, c).step_s();
//                per_sequence_s, per_token_s: the host's per-sequence and the engine's
//                per-verified-token time; plain_step_s the plain step's host step and sampling
//   t_aux_s      the target's sampling call and the host's step work
//   l_ar_s       the plain step with its host work (ArStep), also the cost of n = 0
// Whether a step model of `options` prices a drafter that drafts level by level, so that a tree's
// drafting steps with its depth: eagle, eagle3, mtp or draft:MODEL, its time not given by hand
// (not a block drafter, not ngram/suffix, not a cost class). A rule on the names, so that a client
// that plans on a server can tell the search the server runs.
bool DraftsByLevel(const StepOptions& options);

struct PlannerStepTerms {
  DrafterCost drafter;  // cls kParallelBlock, gamma as given (>= 1)
  double t_aux_s = 0;   // seconds
  double l_ar_s = 0;    // the plain step, seconds
};
PlannerStepTerms PlannerTermsFor(const StepModel& step, int gamma, int64_t c);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_STEP_STEP_MODEL_H_
