// specplan for an engine that links C++: one object made once from what the engine runs (a GPU,
// a target model, the engine whose kernels price it, the drafter and the engine's host terms),
// which resolves the cost once and then prices steps and plans trees every decoding step.
//
//   specplan::PlannerConfig config;
//   config.gpu = "h100";  config.model = "qwen3-8b";  config.engine = "sglang";
//   config.drafter = "eagle3";
//   absl::StatusOr<specplan::Planner> planner = specplan::Planner::Create(config);
//   costmodel::StepBreakdown step = *planner->Step(/*b=*/1, /*s=*/4, /*c=*/1024);
//   specplan::TreePlan plan;
//   absl::Status st = planner->PlanTree(marginals, /*c=*/1024, options, &plan);
//
// The step is the one `specplan estimate --drafter eagle3` prints and a plan's cycle is priced as
// `specplan plan` prices it (the operations layer, ops/, is the one home of both rules). A
// drafter is always priced: the legacy by-hand cost classes (ar, parallel, causal) are refused.
// A Planner keeps its planners' buffers between calls (no allocation once they have grown), so
// it is not thread-safe: one Planner per thread. Movable, not copyable.
#ifndef SPECPLAN_INCLUDE_SPECPLAN_SPECPLAN_H_
#define SPECPLAN_INCLUDE_SPECPLAN_SPECPLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/tree_outputs.h"
#include "specplan/cost.h"
#include "specplan/planner.h"
#include "specplan/tree.h"

namespace specplan {

// What the engine runs. Names as `specplan estimate` takes them (docs/cli.md).
struct PlannerConfig {
  std::string gpu;        // registry name ("h100") or a GPU spec JSON path
  std::string model;      // registry name ("qwen3-8b") or an HF config.json path
  std::string engine;     // "sglang", "vllm", "trtllm", "specplan"; "" = the first of these bundled
  std::string profile;    // a profile JSON path instead of the bundled lookup; "" = bundled
  std::string calib_dir;  // where bundled profiles live; "" = the installed share/specplan/calib
  std::string dtype = "bf16";
  int64_t tp = 0;  // tensor parallelism; 0 = the profile's, else 1
  // The drafter architecture the step model prices from the profile's kernel tables: eagle,
  // eagle3, mtp, draft:MODEL, block:MODEL, ngram, suffix (costmodel/step/drafter_arch.h).
  std::string drafter = "eagle3";
  int draft_steps = -1;     // D positions drafted per step; -1 = the chain's s - 1
  int topk = 1;             // beams per draft forward (SGLang-style trees)
  int64_t draft_vocab = 0;  // eagle3's draft vocabulary; 0 = 32000
  // The engine's host terms as `specplan step fit --out` writes them; "" = the engine's defaults.
  std::string host_file;
  // Single host terms, ms, over the defaults or the file's (unset: keep them).
  std::optional<double> host_step_ms, host_per_seq_ms, host_per_draft_ms, sample_ms;
};

// One request's plan: the tree with its estimated speedup and the verifier's tensors.
struct TreePlan {
  planner::BestFirstPlan plan;   // tree, n, expected accepted, cycle_s, speedup, l_ar_s
  planner::TreeOutputs outputs;  // positions (c + depth), parents, retrieve, packed mask
};

// A batch's plan: one tree per request under one verification pass.
struct BatchTreePlan {
  planner::BatchPlan plan;                    // trees [B], n, goodput, cycle
  std::vector<planner::TreeOutputs> outputs;  // [B] positions (c_i + depth), retrieve, mask
};

class Planner {
 public:
  // Resolves the cost (the profile of (gpu, model, dtype, engine), its latency model and
  // drafter tables) and the drafter's step model. Errors name the config's field and value
  // ("drafter = 'ar': ...", "engine = 'foo': ...", "host_file = 'h.json': ...").
  static absl::StatusOr<Planner> Create(const PlannerConfig& config);

  Planner(Planner&&) noexcept;
  Planner& operator=(Planner&&) noexcept;
  ~Planner();

  // The engine's whole step for b sequences, each verifying s tokens over c cached (b, s >= 1,
  // c >= 0): verify + draft + sample + host, seconds. `specplan estimate --b b --s s --c c`.
  absl::StatusOr<costmodel::StepBreakdown> Step(int64_t b, int64_t s, int64_t c) const;
  // One plain decoding step of b sequences over c cached (no drafting).
  absl::StatusOr<costmodel::StepBreakdown> PlainStep(int64_t b, int64_t c) const;

  // One request's best-first tree over its drafter's marginals at context c, with options' mode
  // (controller, scan or fixed) and n_max; the cycle is priced as `specplan plan` prices it.
  absl::Status PlanTree(const planner::Marginals& marginals, int64_t c,
                        const planner::BestFirstOptions& options, TreePlan* out);
  // Every request of a batch under one budget (`specplan plan-batch`).
  absl::Status PlanBatch(absl::Span<const planner::BatchRequest> requests,
                         const planner::BatchPlanOptions& options, BatchTreePlan* out);

  // Which profile priced the pass ("h100-sxm/qwen3-8b-bf16@sglang"; "" = the bare roofline), its
  // latency model's kind, and how T_draft is priced ("kernel tables", "roofline", "host only").
  const std::string& profile_id() const;
  const std::string& latency_model() const;
  const std::string& draft_priced_by() const;

 private:
  struct State;
  explicit Planner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace specplan

#endif  // SPECPLAN_INCLUDE_SPECPLAN_SPECPLAN_H_
