// What-if under concurrency: replay a recorded trace (trace.h) with B requests in flight, verified
// together in one ragged pass per step, and compare how four strategies size the draft trees.
//
// Requests in flight. The trace's steps that carry "marginals" form a ring of S steps in trace
// order (one prompt's steps after another's). Request j (j = 0..B-1) starts at ring position
// o_j = floor(j S / B) and advances one position per batch step, wrapping around; the replay runs
// R = S batch steps, so every request replays every ring step exactly once and B = 1 is the trace
// in order. For B > S several requests replay the same step side by side. Each request's realised
// accepted length L is computed against its step's recorded continuation exactly as the one-request
// sweep does (replay.h RealizedAcceptedLength); the step's context length c is the recorded one.
//
// Recorded interleavings (ConcurrencyOptions::recorded). A trace of a batch run (specplan-bench
// --batch B --record-trace) names each step's verification pass. The replay then takes the passes
// as they happened: batch step t is pass t's steps, so the batch sizes, the mix of context lengths
// and the continuous-batching tail (fewer requests as the last prompts finish) are the run's.
//
// Cost of one batch step (costmodel/cycle_cost.h BatchCycleCost), request i drafting n_i nodes:
// clang-format off
//   C         = T_draft(B) + T_aux + T_verify({(n_i + 1, c_i)})        seconds, one ragged pass
//   T_draft(B) = T_draft(1) (1 + g (B - 1))      g = options.drafter.batch_growth (DrafterCost)
//   T_AR      = T_verify({(1, c_i)})                                   seconds, plain decoding
// clang-format on
// with gamma = the largest marginals gamma in the batch.
//
// Strategies (names as in the JSON and table):
// clang-format off
//   ar             plain decoding: every request emits 1 token per step; each step costs T_AR
//                  (no drafter).
//   fixed          the same fixed budget per request: BestFirstPlanner in fixed mode, exactly
//                  min(n_max, lattice) draft nodes each (a static tree size tuned for low load).
//   controller     the per-request controller: each request planned alone by BestFirstPlanner in
//                  controller mode (n = 0..n_max, priced as a lone request:
//                  C = T_draft(1) + T_aux + T_verify(n + 1, c)), blind to the batch; the batch is
//                  then priced together. As in the one-request sweep, a step pays the drafter
//                  even when every n_i = 0.
//   best-fixed     (options.best_fixed) the best static schedule per batch size, chosen in
//                  hindsight: for each B, every budget of BestFixedBudgets(n_max) is replayed as
//                  fixed is, and the row is the one with the highest throughput, or ar's when no
//                  budget beats plain decoding. It is what a hand-tuned per-batch-size table
//                  (vLLM's num_speculative_tokens_per_batch_size, TensorRT-LLM's
//                  draft_len_schedule) could reach at best on this trace; its budget per B is
//                  ConcurrencyReport::best_fixed_budgets.
//   best-chain     (options.best_chain) best-fixed for a chain: every request drafts the top-1
//                  chain of K nodes (node d is the first candidate of marginals row d - 1;
//                  ChainLengths: K = 1 .. min(the largest marginals gamma, n_max), and a step
//                  whose gamma is smaller drafts all of its gamma), replayed and priced as fixed
//                  is; for each B the K with the highest throughput, or ar's row (K = 0) when
//                  none beats plain decoding. It is what vLLM's and TensorRT-LLM's per-batch-size
//                  draft lengths (a chain of K speculative tokens) could reach at best on this
//                  trace; its K per B is ConcurrencyReport::best_chain_lengths.
//   batch          planner::BatchPlanner (BudgetMode::kController, kGoodput) over all B requests,
//                  n_max per request and B n_max over the batch. A step where it returns N* = 0
//                  (speculation_pays false) is a plain decoding step: 1 token per request, T_AR.
//                  With options.batch_scan it takes the argmax of G(N) (BudgetMode::kScan)
//                  instead of the first decrease: measured profiles are stepped (a request's
//                  first draft node moves it from the decode to the verify attention kernel), so
//                  G(N) can dip at N = 1 and rise again.
// With options.calibrate the controller and batch plan with the surrogate calibrated online, as a
// deployed planner fed ReportAcceptance would: a planner::AcceptanceEstimator sees each planned
// request's (Â, realised L) in replay order (the controller's in ring order, the batch planner's
// per batch size, batch step after batch step) and every plan takes its surrogate_scale s as the
// acceptance_scale (best_first.h: a node is worth s·ρ). The final s of each is reported.
// clang-format on
//
// Per (B, strategy) row, over all R batch steps and B requests (a "request step"):
//   throughput     = Σ (1 + L) / Σ C             tokens per second over all requests
//   accepted       = mean L per request step     (root/bonus excluded; ar: 0)
//   tree size      = mean n per request step     (draft nodes)
//   speedup        = throughput / ar throughput at the same B
// Speculation stops paying at the smallest B in the list whose batch throughput is not above
// ar's (realised, not predicted: the planner prices Â, the replay counts L).
#ifndef SPECPLAN_WHATIF_CONCURRENCY_H_
#define SPECPLAN_WHATIF_CONCURRENCY_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "whatif/replay_basis.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::whatif {

// The replay's rows (planner/strategy.h): ar, fixed, controller and batch, the four every replay
// runs, in this order, then best-fixed and best-chain when asked for.
std::vector<Strategy> AllConcurrencyStrategies();  // the four

// The static budgets best-fixed tries, ascending: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, ...
// (powers of two and 1.5 times them) up to n_max, and n_max itself.
std::vector<int> BestFixedBudgets(int n_max);

// The chain lengths best-chain tries for a trace whose largest marginals gamma is `gamma`:
// 1 .. min(gamma, n_max).
std::vector<int> ChainLengths(int gamma, int n_max);

// Largest batch size accepted (planner::kMaxBatchRequests).
int MaxConcurrency();

// Comma-separated batch sizes, e.g. "1,2,4,8". Errors name the bad item and why:
// "\"0\" must be a positive integer", "\"5000\" must be at most 4096", "\"4\" is listed twice".
// Sizes come back sorted ascending.
absl::StatusOr<std::vector<int>> ParseConcurrencyList(std::string_view text);

// The default growth of a batched draft pass (DrafterCost::batch_growth): each further request
// adds 2 % of one request's drafting time, so B = 256 drafts in 6.1x the time of B = 1 (a small
// drafter's batched pass stays mostly weight-bound).
inline constexpr double kDefaultDraftBatchGrowth = 0.02;

struct ConcurrencyOptions {
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128, 256};  // each in [1, 4096]
  int n_max = 128;  // draft nodes per request: fixed's budget, the controllers' search end;
                    // in [1, 8191]
  // The marginals drafter (gamma is replaced by the batch's largest marginals gamma); its
  // batch_growth prices batched drafting.
  costmodel::DrafterCost drafter = [] {
    costmodel::DrafterCost d;
    d.batch_growth = kDefaultDraftBatchGrowth;
    return d;
  }();
  double t_aux_s = 0;  // seconds, per batch step
  // Tokens added to every step's recorded context length c before pricing and planning, as if
  // each request's prompt were this much longer (the trace's acceptance is kept): the replay at
  // a longer context. In [0, kMaxContextOffset].
  int64_t context_offset = 0;
  bool batch_scan = false;     // batch in BudgetMode::kScan instead of kController
  bool calibrate = false;      // controller and batch calibrate the surrogate online (above)
  bool validate_trace = true;  // ValidateTraceStep on every step first
  // Adds the best-fixed row (above) after batch's.
  bool best_fixed = false;
  // Adds the best-chain row (above) after best-fixed's (or batch's).
  bool best_chain = false;
  // With best_fixed: the drafter cost each budget of BestFixedBudgets(n_max) pays instead of
  // `drafter` (same order; empty: `drafter` for every budget). For an engine that drafts a
  // setting's own shape whatever the step's tree: SGLang drafts speculative_num_steps levels of
  // speculative_eagle_topk beams at every step (whatif/schedule.h SglangTreeFor, filled by
  // BuildSchedule from ScheduleOptions::sglang_drafter). Each prices its batched drafting by its
  // own batch_growth; a depth-stepped one (depth_s) by the step's deepest tree, as `drafter` does.
  std::vector<costmodel::DrafterCost> best_fixed_drafters;
  // Replay the recorded batches instead of the ring: each batch step is one verification pass of
  // a batch run (the steps sharing a "pass", trace.h), with the requests and context lengths that
  // pass verified together, in pass order. batch_sizes is then ignored; the rows are labelled
  // kRecordedBatch. Every step with marginals must carry a pass.
  bool recorded = false;
  // Called after each batch size with (sizes done, sizes total); may be empty.
  std::function<void(int, int)> progress;
};

// The largest ConcurrencyOptions::context_offset, tokens.
inline constexpr int64_t kMaxContextOffset = int64_t{1} << 20;

// The batch label of the rows of a recorded-batches replay (ConcurrencyOptions::recorded).
inline constexpr int kRecordedBatch = 0;

// One (batch size, strategy).
struct ConcurrencyRow {
  int batch = 0;
  Strategy strategy = Strategy::kAr;
  int64_t steps = 0;             // R batch steps
  double tokens = 0;             // Σ (1 + L) over all request steps
  double seconds = 0;            // Σ C over the batch steps
  double throughput = kNaN;      // tokens / seconds, tokens per second
  double accepted = kNaN;        // mean L per request step
  double mean_tree_size = kNaN;  // mean n per request step
  double cycle_s = kNaN;         // mean C per batch step, seconds
  double speedup = kNaN;         // throughput / ar throughput at this B
  // Batch steps in which no request drafted (batch: N* = 0, priced as plain decoding;
  // controller: every n_i = 0; ar: all of them).
  int64_t plain_steps = 0;
};

// Every static setting a best-fixed or best-chain row chose from, with its throughput at every
// batch size: what a caller needs to pick one setting for all sizes (whatif/schedule.h).
struct StaticSettings {
  std::vector<int> sizes;          // [m] draft nodes per request (tree budgets or chain lengths),
                                   // ascending; plain decoding (0) is ar's row, not listed
  std::vector<double> throughput;  // [batch sizes][m] tokens per second, row-major

  double at(size_t batch_index, size_t setting) const {
    return throughput[batch_index * sizes.size() + setting];
  }
};

// The basis (replay_basis.h): the trace's models, the latency model, and the options used.
struct ConcurrencyReport : ReplayBasis {
  // What was analysed.
  int64_t trace_steps = 0;  // steps in the trace
  int64_t ring_steps = 0;   // S: the steps with marginals, replayed
  // The options used besides the basis's.
  std::vector<int> batch_sizes;
  int64_t context_offset = 0;
  bool batch_scan = false;
  // With calibrate: the controller's surrogate_scale after the ring, and the batch planner's
  // after each batch size's replay ([batch_sizes], or [1] for a recorded replay); else 1 and {}.
  double controller_scale = 1;
  std::vector<double> batch_scales;
  bool best_fixed = false;
  // With best_fixed: the budget (draft nodes per request; 0 = plain decoding) best-fixed chose
  // for each batch size, in batch_sizes order ([1] for a recorded replay).
  std::vector<int> best_fixed_budgets;
  bool best_chain = false;
  // With best_chain: the chain length K best-chain chose for each batch size (0 = plain
  // decoding), in batch_sizes order ([1] for a recorded replay).
  std::vector<int> best_chain_lengths;
  // The settings best-fixed (budgets) and best-chain (chain lengths) chose from, each with its
  // throughput per batch size; empty without the option.
  StaticSettings best_fixed_settings, best_chain_settings;
  // Rows: batch sizes ascending, strategies in AllConcurrencyStrategies() order within a size,
  // then best-fixed and best-chain when asked for.
  std::vector<ConcurrencyRow> rows;
  // Smallest batch size whose batch throughput is not above ar's; 0 = never in the
  // range (and always 0 in a recorded-batches replay).
  int stop_paying_batch = 0;
  // A recorded-batches replay: the passes replayed (0 = a ring replay), the mean requests per
  // pass, and whether the batch planner's throughput is above ar's.
  int64_t recorded_passes = 0;
  double recorded_mean_batch = 0;
  bool recorded_pays = false;
};

// Runs the replay. InvalidArgument naming the field for bad options (empty or out-of-range batch
// sizes, n_max, negative times or batch growth), with validate_trace the first bad step ("step 3:
// ..."), or a trace without any step with marginals.
absl::StatusOr<ConcurrencyReport> RunConcurrency(const Trace& trace,
                                                 const costmodel::LatencyModel& latency,
                                                 const ConcurrencyOptions& options);

// The strategies of the report's rows, in row order within a batch size:
// AllConcurrencyStrategies(), then best-fixed and best-chain when the report has them.
std::vector<Strategy> ReportStrategies(const ConcurrencyReport& report);

// The row of (batch, strategy), or null.
const ConcurrencyRow* FindConcurrencyRow(const ConcurrencyReport& report, int batch,
                                         Strategy strategy);

// JSON form (README "Under concurrency" lists the fields); NaN becomes null.
// (concurrency_render.cc)
nlohmann::json ConcurrencyReportToJson(const ConcurrencyReport& report);
// Human-readable table, one line per (batch size, strategy) grouped by batch size, and the
// stop-paying line ('\n'-terminated).
std::string FormatConcurrencyTable(const ConcurrencyReport& report);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_CONCURRENCY_H_
