// Speculation schedules for engines that take a table instead of a planner: for each batch size of
// a grid, the static speculation setting with the highest throughput when the trace is replayed
// with B requests in flight (whatif/concurrency.h best-chain / best-fixed), rendered in the
// engine's own configuration format.
//
// The unit of a setting differs per engine:
//   vllm, trtllm  K, the draft length of a chain (vLLM num_speculative_tokens, TensorRT-LLM
//                 draft_len): best-chain's top-1 chain of K nodes, K = 1 .. the marginals' gamma.
//   sglang        a tree: best-fixed's best-first tree of n draft nodes (n from
//                 BestFixedBudgets(n_max)), given to SGLang as (speculative_num_steps,
//                 speculative_eagle_topk, speculative_num_draft_tokens) by SglangTreeFor.
// Setting 0 is plain decoding (no speculation).
//
// Choice: at each grid point the setting with the highest replayed throughput (the smaller on
// ties) among those no larger than the previous grid point's (ScheduleOptions::monotone: a larger
// batch never gets a longer chain or a bigger tree; the cost of that constraint is reported per
// point). TensorRT-LLM in any case requires the smallest key's draft length to be the largest
// (max_draft_len), so a trtllm schedule never exceeds K(1).
//
// Range rule: the setting chosen at grid point B_i applies to the batch sizes B_i .. B_{i+1} - 1
// and the last grid point's to every larger batch (up to ScheduleMaxBatch(), where a format needs a
// finite bound); neighbouring ranges with the same setting merge into one. The first grid point
// must be 1, so that every batch size has a setting.
//
// TPOT SLO (ScheduleOptions::slo_tpot_s): with B requests always in flight every request's time per
// output token is TPOT(B) = B / throughput(B), the same for all of them, so at one B the setting
// with the highest throughput also has the lowest TPOT and an SLO cannot change the choice; what it
// changes is how far the batch may grow. Each point says whether its setting meets the SLO, and
// the schedule names the largest grid B that does, beside plain decoding's (Schedule::slo_*).
// TTFT needs arrivals and prefill, which this replay does not have (whatif/online.h does).
//
// Best single static setting: the one setting (K, or n, or 0) that, used at every grid point,
// maximises the throughput summed over the grid, Σ_B throughput(B, setting): what a deployment
// without a per-batch-size table would run.
#ifndef SPECPLAN_WHATIF_SCHEDULE_H_
#define SPECPLAN_WHATIF_SCHEDULE_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency/latency_model.h"
#include "whatif/chain_replay.h"
#include "whatif/concurrency.h"
#include "whatif/trace.h"

namespace specplan::whatif {

enum class ScheduleFormat { kVllm, kTrtllm, kSglang };

// "vllm", "trtllm", "sglang".
const char* ScheduleFormatName(ScheduleFormat f);
// Parses a format name; InvalidArgument "\"x\": unknown format (vllm, trtllm, sglang)".
absl::StatusOr<ScheduleFormat> ParseScheduleFormat(std::string_view name);
// Whether the format's unit is a chain (vllm, trtllm) rather than a tree (sglang).
bool ScheduleUsesChains(ScheduleFormat f);

// The largest batch size a schedule names: the upper end of its last range (vLLM) and the key
// of a last draft length > 0 (TensorRT-LLM, where a batch above the largest key does not
// speculate). MaxConcurrency().
int ScheduleMaxBatch();

// SGLang's EAGLE tree settings (server args --speculative-num-steps, --speculative-eagle-topk,
// --speculative-num-draft-tokens; all 0 = no speculation).
//
// SGLang builds a tree in num_steps draft steps: step 0 takes the topk best children of the root,
// every later step expands each of the topk current beams by its topk best children and keeps the
// topk best of those topk^2 (by path score) as the next beams; of all candidates (topk + (steps -
// 1) topk^2) it verifies the num_draft_tokens - 1 with the highest path score, plus the root
// (sglang/srt/speculative/eagle_utils.py organize_draft_results: topk(score_list,
// num_draft_token - 1)). With topk = 1 SGLang sets num_draft_tokens = num_steps + 1.
struct SglangTree {
  int num_steps = 0;         // speculative_num_steps
  int eagle_topk = 0;        // speculative_eagle_topk
  int num_draft_tokens = 0;  // speculative_num_draft_tokens: draft nodes + 1 (the root)
};

// The SGLang settings under which SGLang's tree is best-first's tree of n draft nodes on every
// step of `trace` with marginals (path score = rho): num_steps = the largest depth of those trees,
// eagle_topk = the largest of (children of one node, nodes of one depth that have children) over
// them, num_draft_tokens = n + 1. Then SGLang's candidates contain each step's best-first tree, and
// since that tree is the n nodes of highest rho in the whole lattice, it is also the n of highest
// score among SGLang's candidates (up to ties). n = 0 gives {0, 0, 0}. InvalidArgument for n < 0
// or a trace without marginals.
absl::StatusOr<SglangTree> SglangTreeFor(const Trace& trace, int n);

struct ScheduleOptions {
  // The replay (concurrency.h): batch_sizes is the grid (ascending, starting at 1), n_max, the
  // drafter, t_aux_s, batch_scan and calibrate as there. best_fixed / best_chain and recorded are
  // set by BuildSchedule.
  ConcurrencyOptions replay;
  // Chains only: the smallest draft length a range may get (0 = none). TensorRT-LLM PR #16888
  // (open when read) floors the draft lengths a draft_len_schedule resolves to at 1 for one-engine
  // drafters; with min_chain = 1 the schedule chooses among K >= 1 and prices what such an
  // engine runs. The best single static setting obeys it too.
  int min_chain = 0;
  // At each grid point choose among settings no larger than the previous point's (see the top).
  bool monotone = true;
  // TPOT SLO, seconds per output token; 0 = none (see the top).
  double slo_tpot_s = 0;
  // sglang only: the drafter cost of one SGLang tree setting, as SGLang drafts it whatever the
  // step's tree (num_steps levels of eagle_topk beams). Given, each budget's replay pays it
  // (ConcurrencyOptions::best_fixed_drafters) instead of replay.drafter; empty: replay.drafter
  // prices every budget. ops::Schedule fills it from the step model for a drafter that drafts
  // level by level.
  std::function<absl::StatusOr<costmodel::DrafterCost>(const SglangTree&)> sglang_drafter;
};

// One grid point.
struct SchedulePoint {
  int batch = 0;                 // B
  int setting = 0;               // K (chains) or n (trees); 0 = plain decoding
  SglangTree sglang;             // trees: SglangTreeFor(setting)
  double throughput = 0;         // the setting's replayed throughput at B, tokens/s
  int best_setting = 0;          // the best setting at B on its own (unconstrained), and its
  double best_throughput = 0;    // throughput; differs from setting only where constrained
  double ar_throughput = 0;      // plain decoding at B
  double batch_throughput = 0;   // the per-step batch planner at B
  double static_throughput = 0;  // the best single static setting at B
  double tpot_s = 0;             // B / throughput: every request's time per output token
  double plain_tpot_s = 0;       // the same for plain decoding
  bool slo_met = true;           // tpot_s <= the TPOT SLO (true without one)
};

// One inclusive batch range of the rendered schedule.
struct ScheduleRange {
  int lo = 0, hi = 0;  // batch sizes lo .. hi; the last range's hi is ScheduleMaxBatch()
  int setting = 0;
  SglangTree sglang;
};

struct Schedule {
  ScheduleFormat format = ScheduleFormat::kVllm;
  bool chains = true;                 // ScheduleUsesChains(format)
  std::vector<SchedulePoint> points;  // [grid] ascending batch
  std::vector<ScheduleRange> ranges;  // merged, ascending, covering 1 .. ScheduleMaxBatch()
  int max_setting = 0;                // the largest setting of any range
  int static_setting = 0;             // the best single static setting
  SglangTree static_sglang;
  double static_throughput_sum = 0;    // Σ_B of the static setting's throughput
  double schedule_throughput_sum = 0;  // Σ_B of the schedule's
  double batch_throughput_sum = 0;     // Σ_B of the batch planner's
  int min_chain = 0;
  bool monotone = true;
  double slo_tpot_s = 0;        // the TPOT SLO (0 = none)
  int slo_max_batch = 0;        // the largest grid B whose setting meets it (0 = none)
  int slo_plain_max_batch = 0;  // the largest grid B at which plain decoding meets it
  // The grid points where the constraint (monotone, or TensorRT-LLM's K <= K(1)) changed the
  // choice: points[i].setting != points[i].best_setting.
  std::vector<int> constrained_batches;
  ConcurrencyReport report;  // the replay it was chosen from
  // Set by BuildChainSchedule: the acceptance the chains were replayed over ("<file> (<format>,
  // <mode>)") and how the step was priced; the metadata names them instead of a marginals trace.
  std::string acceptance;
  std::string step_note;
  // sglang: whether each tree setting's drafting was priced as SGLang drafts it
  // (ScheduleOptions::sglang_drafter), and its one-request drafting time per budget of
  // report.best_fixed_settings.sizes (seconds; empty otherwise).
  bool sglang_drafting = false;
  std::vector<double> sglang_draft_s;
};

// Replays `trace` (RunConcurrency with best_chain for chains, best_fixed for trees) and chooses
// the schedule (Choice, above). InvalidArgument naming the field for a grid that does not start at
// 1, a negative min_chain, a recorded replay, or whatever RunConcurrency refuses.
absl::StatusOr<Schedule> BuildSchedule(const Trace& trace, const costmodel::LatencyModel& latency,
                                       ScheduleFormat format, const ScheduleOptions& options);

// The schedule from chains of K replayed over the user's acceptance on the engine's whole step
// (whatif/chain_replay.h; its batch sizes are the grid, starting at 1; its K > 0 rows the
// candidates besides plain decoding): the same choice as BuildSchedule, with `acceptance` and
// `step_note` for the metadata. For format sglang the schedule is a chain (topk 1) per range,
// which RenderSchedule writes as SGLang's batch-size-aware adaptive configuration.
absl::StatusOr<Schedule> BuildChainSchedule(const ChainReplayReport& replay, ScheduleFormat format,
                                            const ScheduleOptions& options,
                                            const std::string& acceptance,
                                            const std::string& step_note);

// The setting a schedule gives batch size `batch` (>= 1) by the range rule above (0 above
// ScheduleMaxBatch()).
int ScheduleSettingAt(const Schedule& s, int batch);

// vLLM RFC #48627 (PR #48944, both open when read): each entry of
// num_speculative_tokens_per_batch_size may carry a context-length range, [bs_lo, bs_hi, ctx_lo,
// ctx_hi, K] (inclusive), so that K is looked up by batch size and context length; a 3-item entry
// keeps meaning "every context length". The context schedule replays the trace once per point of a
// context grid c_0 = 0 < c_1 < ...: at c_j every request's recorded context length grows by c_j
// tokens (ConcurrencyOptions::context_offset; the trace's acceptance is kept), and the batch
// schedule is chosen there as BuildSchedule does. Point c_j's batch ranges apply to the context
// lengths c_j .. c_{j+1} - 1, the last point's up to kMaxContextOffset; neighbouring context rows
// with identical batch ranges merge. The PR leaves open which context length of a batch keys the
// lookup (its "aggregator"); the replay prices batches whose requests all sit near c_j.
struct ContextScheduleCell {
  int bs_lo = 0, bs_hi = 0;
  int64_t ctx_lo = 0, ctx_hi = 0;
  int k = 0;
};

struct ContextSchedule {
  std::vector<int64_t> contexts;           // [m] the grid, ascending, contexts[0] = 0
  std::vector<Schedule> rows;              // [m] the batch schedule at each grid point
  std::vector<ContextScheduleCell> cells;  // ordered by (bs_lo, ctx_lo); disjoint, covering
                                           // 1 .. ScheduleMaxBatch() x 0 .. kMaxContextOffset
  int max_setting = 0;                     // the largest K of any cell
};

// Chains only (vllm). InvalidArgument naming the field for a grid that is empty, does not start
// at 0, is not strictly ascending or exceeds kMaxContextOffset, a non-chain format, or whatever
// BuildSchedule refuses.
absl::StatusOr<ContextSchedule> BuildContextSchedule(const Trace& trace,
                                                     const costmodel::LatencyModel& latency,
                                                     ScheduleFormat format,
                                                     const ScheduleOptions& options,
                                                     const std::vector<int64_t>& contexts);

// The setting a context schedule gives (batch, context) by its cells (0 outside them).
int ContextScheduleSettingAt(const ContextSchedule& s, int batch, int64_t context);

// What the output's metadata names.
struct ScheduleSource {
  std::string profile;  // profile id or path; "" = the bare roofline
  std::string engine, engine_version;
  std::string model, gpu, dtype;
  std::string trace_path;
};

// The schedule in the engine's format, '\n'-terminated:
//   vllm    JSON {"speculative_config": {"num_speculative_tokens": max K,
//           "num_speculative_tokens_per_batch_size": [[lo, hi, K], ...]}, "specplan": metadata}
//   trtllm  YAML for the LLM API options (trtllm-serve --extra_llm_api_options, or
//           LLM(**yaml.safe_load(...))): "speculative_config:" with max_draft_len and
//           draft_len_schedule {key: draft_len}, the metadata as '#' comments
//   sglang  JSON {"sglang": {"ranges": [{"batch_lo", "batch_hi", "speculative_num_steps",
//           "speculative_eagle_topk", "speculative_num_draft_tokens", "args"}...], "static":
//           {...}}, "specplan": metadata}
// The metadata names the profile and engine, the trace, the options, and per grid point the
// setting and the replayed throughput of the schedule, the batch planner, the best single static
// setting and plain decoding.
std::string RenderSchedule(const Schedule& s, const ScheduleSource& source);

// vllm with the context axis: the JSON of RenderSchedule(cs.rows[0]) (its batch-only
// speculative_config is what merged vLLM takes) plus "speculative_config_context_axis":
// {"num_speculative_tokens": max K, "num_speculative_tokens_per_batch_size": [[bs_lo, bs_hi,
// ctx_lo, ctx_hi, K], ...]} for an engine with PR #48944, and under "specplan"."context_axis" the
// grid, each row's per-B throughputs and the source of the format.
std::string RenderContextSchedule(const ContextSchedule& cs, const ScheduleSource& source);

// A short human summary: the per-B table (setting, its throughput, the batch planner's, the best
// single static setting's) and the sums ('\n'-terminated).
std::string FormatScheduleSummary(const Schedule& s, const ScheduleSource& source);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_SCHEDULE_H_
