// What chains of K draft tokens buy at batch size B, for the user's own acceptance
// (planner/acceptance/engine_acceptance.h) on the engine's whole step
// (costmodel/step/step_model.h: verify + draft + sample + host).
//
// Three ways to read the acceptance:
//   trace, copies   (a per-step trace; ChainBatching::kCopies) each request of the trace is run as
//                   B identical copies decoded together, as SpecDecode-Bench measured: walking its
//                   acc_len from position 1, a step at output position i verifies K + 1 tokens
//                   over c = prompt + i cached ones and emits min(acc_len[i], K + 1); plain
//                   decoding runs one step per output token; a step the drafter proposes
//                   fewer tokens for (AcceptanceTraceRequest::DraftAt: an n-gram matcher that
//                   finds no match) verifies only those. The row's speedup is SpecDecode-Bench's
//                   (scripts/vis_speedup.py): each request's throughput (its tokens over its
//                   time) averaged over requests, speculative over plain; its throughputs are
//                   pooled.
//   trace, mixed    (ChainBatching::kMixed) B different requests in flight (continuous batching):
//                   slot j starts with request j (mod R) and, when its request ends, takes the
//                   next in ring order; every step verifies each slot's drafted tokens + 1
//                   (K, or fewer where DraftAt says so) over its own context in one ragged pass.
//                   The replay ends when R requests have finished; speedup = throughput / plain
//                   decoding's throughput replayed the same way.
//   rates           (no trace, or ChainReplayOptions::independent) independence between steps:
//                   E[tokens per step] = 1 + sum_{i<K} per_position[i] at one context c
//                   (ChainReplayOptions::context) for every request; speedup = E x T_AR / T_step.
// K = 0 is plain decoding (speedup 1).
#ifndef SPECPLAN_WHATIF_CHAIN_REPLAY_H_
#define SPECPLAN_WHATIF_CHAIN_REPLAY_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/step/step_model.h"
#include "planner/acceptance/engine_acceptance.h"
#include "whatif/online.h"

namespace specplan::whatif {

enum class ChainBatching { kCopies, kMixed };
const char* ChainBatchingName(ChainBatching b);  // "copies", "mixed"
absl::StatusOr<ChainBatching> ParseChainBatching(const std::string& name);

struct ChainReplayOptions {
  std::vector<int> batch_sizes = {1, 16, 64, 128};  // each in [1, 4096], ascending
  std::vector<int> chain_lengths;  // K values, each in [0, k_max]; empty = 0 .. min(k_max, 8)
  ChainBatching batching = ChainBatching::kCopies;
  bool independent = false;  // use the per-position rates even when the input is a trace
  int64_t context = 1024;    // rates: every request's cached context, tokens
  int max_requests = 0;      // traces: replay only the first N requests (0 = all), after
                             // drop_at_output
  // Traces: drop the requests whose output reached this many tokens (they ran to the benchmark's
  // max_tokens instead of stopping; SpecDecode-Bench's scripts/vis_speedup.py keeps only requests
  // finished by stop). 0 = keep all.
  int64_t drop_at_output = 0;
  // Traces, copies: count each request's prefill, as the measured wall time does. Each request's
  // B copies arrive together and are served by the online engine model (whatif/online.h) under
  // prefill_limits, priced by this pricer; a request's time runs from the copies' arrival to the
  // last copy's finish (the mean as above). Tokens per step and the step shares stay the decode
  // steps'. Null: decode steps only.
  const OnlineStepPricer* prefill = nullptr;
  EngineLimits prefill_limits;        // the speculative runs' limits
  EngineLimits prefill_plain_limits;  // plain decoding's (SGLang's running limit differs)
};

struct ChainReplayRow {
  int batch = 1;
  int k = 0;
  double tokens_per_step = 1;     // per request, bonus included (realised, or expected for rates)
  double speedup = 1;             // see the top of this file
  double throughput = 0;          // tokens/s over the whole batch
  double ar_throughput = 0;       // plain decoding, tokens/s over the whole batch
  double steps = 0;               // speculative steps replayed (1 for rates)
  costmodel::StepBreakdown time;  // seconds per term summed over those steps (one step for rates)
};

struct ChainReplayReport {
  std::string mode;                  // "trace, copies", "trace, mixed", "rates"
  int requests = 0;                  // trace requests replayed (0 for rates)
  int64_t context = 0;               // rates: the context used
  std::vector<ChainReplayRow> rows;  // by batch size, then K ascending
  // Per batch size, the K with the highest throughput (the smaller on ties): [batch_sizes]
  std::vector<int> best_k;
};

// INVALID_ARGUMENT naming the field: bad batch sizes or chain lengths (a K above the acceptance's
// k_max: the source says nothing of longer chains), mixed batching without a trace, a step model
// without a drafter.
absl::StatusOr<ChainReplayReport> ReplayChains(const planner::EngineAcceptance& acceptance,
                                               const costmodel::StepModel& step,
                                               const ChainReplayOptions& options);

nlohmann::json ChainReplayToJson(const ChainReplayReport& r);
// A text table: B, K, tokens per step, speedup, throughputs, the step's shares ('\n'-terminated).
std::string FormatChainReplay(const ChainReplayReport& r);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_CHAIN_REPLAY_H_
