// Decoding traces for offline what-if analysis: what a drafter proposed at each decoding step and
// what the target actually produced, enough to compute the accepted length of ANY draft tree the
// planner could have built at that step (greedy verification).
//
// Format: JSONL (one JSON object per line, UTF-8, '\n' separated; blank lines are ignored).
// Line 1 is the header:
//   {"format": "specplan.trace", "version": 1,
//    "target": str, "draft": str,        // what produced the trace (free-form names)
//    "vocab": int,                       // vocabulary size, > 0; every token id is < vocab
//    "source": str, "created_utc": str}  // optional: command line, timestamp
// Every further line is one decoding step:
//   {"prompt": int,          // index of the prompt the step belongs to, >= 0
//    "c": int,               // context length: tokens in the target's KV cache, >= 0
//    "root": int,            // root token (the pending bonus token, DESIGN.md "Tree")
//    "continuation": [int],  // the target's greedy tokens after the root, >= 1 of them; a tree's
//                            // accepted length is capped at this length
//    "marginals": {"tokens": [[int]*k]*gamma, "probs": [[float]*k]*gamma},   // optional
//    "nodes": {"parents": [int], "tokens": [int],                            // optional
//              "dist_tokens": [[int]*k], "dist_probs": [[float]*k]},
//    "draft_s": float,       // optional: measured drafting seconds of the step, >= 0
//    "pass": int}            // optional: the verification pass of a batch run that verified the
//                            // step, >= 0 (specplan-bench --batch --record-trace). The steps that
//                            // share a pass were verified together in one ragged pass, so a pass's
//                            // steps are the batch's requests with their context lengths c; two
//                            // steps of one prompt never share a pass.
// At least one of "marginals" (a parallel drafter's gamma x k lattice,
// planner/marginals/marginals.h; its root_token is "root") and "nodes" (an autoregressive drafter's
// distributions) is present. "nodes" is a recorded tree in topological order (parents[0] = -1,
// parents[i] < i, tokens[0] = root); row i of dist_tokens/dist_probs is the drafter's top-k
// next-token distribution after the path to node i (descending probs, -1/0 padding at the end; an
// all-padding row = not recorded, the node cannot be expanded in replay). Every non-root node's
// token appears in its parent's row, and siblings have distinct tokens. A tree policy replayed on
// the step can expand exactly the recorded nodes.
#ifndef SPECPLAN_WHATIF_TRACE_H_
#define SPECPLAN_WHATIF_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/marginals/marginals.h"
#include "planner/tree/token.h"

namespace specplan::whatif {

inline constexpr int kTraceVersion = 1;
// Documented limits on traces accepted from outside callers.
inline constexpr int64_t kMaxTraceSteps = 1'000'000;
inline constexpr int kMaxContinuation = 4096;
inline constexpr int kMaxRecordedNodes = 8192;
inline constexpr int kMaxRecordedK = 4096;

struct TraceHeader {
  std::string target;
  std::string draft;
  int64_t vocab = 0;
  std::string source;       // optional
  std::string created_utc;  // optional
};

// An autoregressive drafter's next-token distributions over a recorded tree (see above).
struct RecordedNodes {
  std::vector<int32_t> parents;               // [m]
  std::vector<planner::TokenId> tokens;       // [m]
  int32_t k = 0;                              // row length
  std::vector<planner::TokenId> dist_tokens;  // [m][k] (-1 = padding)
  std::vector<float> dist_probs;              // [m][k]

  int size() const { return static_cast<int>(parents.size()); }
  // Index of the child of `node` with `token`, or -1.
  int Child(int node, planner::TokenId token) const;
  // True when row `node` holds a distribution (not all padding).
  bool Expanded(int node) const;
};

struct TraceStep {
  int64_t prompt = 0;
  int64_t c = 0;
  planner::TokenId root = 0;
  std::vector<planner::TokenId> continuation;
  std::optional<planner::Marginals> marginals;  // root_token == root
  std::optional<RecordedNodes> nodes;
  double draft_s = -1;  // < 0: not recorded
  int64_t pass = -1;    // < 0: not recorded (a run of one sequence at a time)
};

struct Trace {
  TraceHeader header;
  std::vector<TraceStep> steps;
};

// Parses a whole trace. Errors name the source, the 1-based line and the field, e.g.
// "run.jsonl:7: marginals.probs[2][0] = 1.5: must be a number in [0, 1]".
absl::StatusOr<Trace> ParseTrace(std::string_view text, std::string_view source_name = "trace");
absl::StatusOr<Trace> LoadTrace(const std::string& path);

// Checks one step against the header (token ranges, shapes, the rules above); `field_prefix`-free
// messages such as "nodes.parents[3] = 5: must be < 3 (topological order)".
absl::Status ValidateTraceStep(const TraceStep& step, const TraceHeader& header);

// What a drafter's whole step is priced at for a replay of `trace` (costmodel/step/step_model.h
// PlannerTermsFor): the mean context of its steps (0 for none) and the largest marginals gamma
// (1 when no step has marginals).
struct TraceDraftShape {
  int64_t mean_context = 0;
  int max_gamma = 1;
};
TraceDraftShape DraftShapeOf(const Trace& trace);

// One JSON line (no trailing newline) per header / step, as ParseTrace reads them.
std::string TraceHeaderLine(const TraceHeader& header);
std::string TraceStepLine(const TraceStep& step);
// Header line + one line per step, each '\n'-terminated.
std::string SerializeTrace(const Trace& trace);
// Validates every step, then writes atomically (util/atomic_file.h).
absl::Status SaveTrace(const Trace& trace, const std::string& path);

// A file of whatif/traces/ (or of $SPECPLAN_TRACE_DIR where set): "family.jsonl" (the trained
// family on held-out text) or "tiny.jsonl" (the built-in tiny random pair, kept for fast tests).
std::string BundledTracePath(std::string_view file);
// The default trace: BundledTracePath("family.jsonl").
std::string DefaultTracePath();

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_TRACE_H_
