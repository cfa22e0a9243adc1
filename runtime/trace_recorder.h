// Records decoding traces (whatif/trace.h) from greedy SpeculativeDecoder runs, for offline what-if
// analysis (`specplan-bench --record-trace FILE`).
//
// For every verification iteration of a Generate call (GenerationResult::steps) the recorder
// re-drafts the step with its OWN draft-model drafters (own KV caches), so the strategy's decoding
// is untouched and stays token-identical to AR:
//  * "marginals": the autoregressive-chain lattice, gamma rows of top-k, exactly as
//    DraftModelDrafter::DraftChain produces it for the best-first strategy;
//  * "nodes": the draft model's top-k distribution at every node of a bounded recorded tree, so
//    that tree policies (linear chain, fixed tree, DynaTree) replayed offline can expand the nodes
//    they would. The recorded tree always holds the greedy chain down to depth gamma - 1 and the
//    full top-`fixed_branch` tree down to depth `fixed_depth` - 1 (so FixedTreePolicy(D =
//    fixed_depth, B = fixed_branch, tau = 0) replays exactly), then, level by level, the most
//    probable other candidates (by path probability) up to `level_width` per level and
//    `max_nodes` in all. Every recorded node is expanded (has a row); candidates reach depth gamma.
//  * "continuation": the target's greedy tokens after the step's root, read off the run's output
//    (greedy output is the target's own continuation for every strategy): continuation_len tokens
//    (default gamma + 1), fewer at the end of the output;
//  * "draft_s": wall seconds of the recorder's chain drafting for the step (gamma sequential draft
//    forwards), c, root and the prompt index.
// With TraceRecorderOptions::heads the "marginals" are instead the parallel draft heads' rows
// (HeadsDrafter; min(gamma, num_heads) rows) read off the target's hidden row before each root,
// which the recorder computes in one causal target pass over prompt + output per Record call, and
// draft_s is the heads' time. The nodes still come from the draft model.
// Only greedy runs can be recorded: with sampling the output is not the target's greedy
// continuation.
#ifndef SPECPLAN_RUNTIME_TRACE_RECORDER_H_
#define SPECPLAN_RUNTIME_TRACE_RECORDER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/decoder.h"
#include "runtime/draft_heads.h"
#include "runtime/drafters.h"
#include "runtime/heads_drafters.h"
#include "runtime/transformer.h"
#include "whatif/trace.h"

namespace specplan::runtime {

struct TraceRecorderOptions {
  int gamma = 6;             // chain-lattice rows = depth reached by the recorded tree's candidates
  int top_k = 4;             // candidates per row (lattice and tree rows)
  int max_nodes = 64;        // recorded (expanded) tree nodes, root included
  int level_width = 16;      // most expanded nodes per depth level beyond the mandatory ones
  int fixed_depth = 4;       // the full top-fixed_branch tree above this depth is always recorded
  int fixed_branch = 2;      //   (0 = none)
  int continuation_len = 0;  // continuation tokens per step; 0 = gamma + 1
  // Marginals from these parallel draft heads (not owned; their target computes the hidden rows)
  // instead of the draft model's chain. Null: the chain.
  const DraftHeads* heads = nullptr;

  // InvalidArgument naming the field: gamma in [1, planner::kMaxMarginalsGamma], top_k in
  // [1, planner::kMaxMarginalsK], max_nodes in [1, 4096], level_width >= 1, fixed_depth in
  // [0, gamma], fixed_branch in [0, top_k], continuation_len in [0, whatif::kMaxContinuation].
  absl::Status Validate() const;
};

class RecordingTreePolicy;  // trace_recorder.cc: the tree policy that records rows

class TraceRecorder {
 public:
  ~TraceRecorder();

  // `draft` is not owned and must outlive the recorder. `sampling` is the recorded decoder's: only
  // greedy decoding can be recorded (FailedPrecondition otherwise). `max_context` bounds prompt +
  // generated tokens, as for SpeculativeDecoder::Create.
  static absl::StatusOr<std::unique_ptr<TraceRecorder>> Create(const Transformer* draft,
                                                               const SamplingOptions& sampling,
                                                               int64_t max_context,
                                                               const TraceRecorderOptions& options);

  // Appends one step per entry of result.steps (in order) for the Generate(prompt, ...) call that
  // returned `result`, `prompt_index` >= 0. InvalidArgument when result.steps is inconsistent
  // with the prompt and the output (c, root, accepted lengths).
  absl::Status Record(int64_t prompt_index, const std::vector<planner::TokenId>& prompt,
                      const GenerationResult& result);

  const std::vector<whatif::TraceStep>& steps() const { return steps_; }
  // The recorded steps under `header` (vocab set to the draft model's vocabulary when 0).
  whatif::Trace MakeTrace(whatif::TraceHeader header) const;
  const TraceRecorderOptions& options() const { return options_; }

 private:
  TraceRecorder() = default;

  const Transformer* draft_ = nullptr;
  TraceRecorderOptions options_;
  std::unique_ptr<DraftModelDrafter> chain_drafter_;  // marginals without options_.heads
  std::unique_ptr<HeadsDrafter> heads_drafter_;       // marginals with options_.heads
  std::unique_ptr<DraftModelDrafter> tree_drafter_;
  std::unique_ptr<RecordingTreePolicy> tree_policy_;
  std::vector<whatif::TraceStep> steps_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_TRACE_RECORDER_H_
