// What-if under online load: a stream of requests arriving at a rate (or with N in flight) served
// by a continuous-batching engine with its scheduler limits, each request a prefill of its prompt
// followed by decode steps, replayed for plain decoding and for chains of K draft tokens. Reports
// what `vllm bench serve` / `sglang.bench_serving` print: throughput and the p50 / p90 / p99 of
// TTFT, TPOT, ITL and end-to-end latency.
//
// Requests (OnlineRequest). Request i arrives at arrival_s, has prompt_tokens to prefill and
// output_tokens to generate (the first comes from the step that completes its prefill). Its
// acceptance is either a per-step trace (acc_len[g] = tokens a step at output position g emits
// when drafting up to the trace's length, bonus included; SpecDecode-Bench's form,
// planner/acceptance/engine_acceptance.h) or per-position survival rates (rates[i] = P(draft
// position i is accepted)), drawn per step from a seeded hash of (seed, request, position), so that
// every setting sees the same draws at the same output position.
//
// Engine model (EngineLimits), one step at a time, time advancing by the step's priced seconds:
//   kMixed     (vLLM's V1 scheduler) every step first serves the running requests in admission
//              order: a decoding request takes min(K + 1, budget left) tokens (its verified
//              tokens), a prefilling one its next chunk (min(prompt left, budget left); without
//              chunked prefill only its whole prompt fits, else it waits); then admits waiting
//              requests first come first served while running < max_running, the budget lasts and
//              the KV cache holds their prompt. token_budget is vLLM's max_num_batched_tokens.
//   kSeparate  (SGLang's scheduler with EAGLE-style speculation, which turns mixed chunks off)
//              a step is either a prefill batch or a decode batch: while a prompt is being chunked
//              or a waiting request can be admitted, the step prefills (admitting FCFS up to
//              token_budget = SGLang's chunked_prefill_size prompt tokens, the last one chunked);
//              otherwise every running request decodes K + 1 tokens, the budget not applying.
// KV cache: a request holds prompt + generated tokens (its prefilled tokens while prefilling), and
// a decode step needs K + 1 more per request. When a decode step would not fit, the most recently
// admitted running request is preempted (vLLM's recompute preemption; SGLang retracts likewise):
// its cache is freed and it goes back to the head of the queue, to re-prefill prompt + generated
// tokens before it decodes again. A request whose prompt + output cannot fit in the whole cache is
// refused (limits that cannot hold one request).
//
// Cost of a step (OnlineStepPricer, the seam): the decoding requests' sequences (s = tokens
// verified, c = cached) and the prefill chunks (s = chunk tokens, c = tokens already prefilled)
// go into one pass; StepModelPricer prices it from the step model (costmodel/step/step_model.h):
// the decoding requests' step (Step for K > 0, ArStep for plain decoding) with its verify term
// replaced by the target's ragged pass over decode and prefill sequences together (at its
// CUDA-graph bucket when the step model has the engine's ladder: costmodel/step/cuda_graphs.h), the
// host's per-sequence work for every sequence, and for K > 0 one drafter forward over the step's
// prefill chunks together (the drafter builds its own cache of the prompts). A decode batch in
// which no request drafts (an n-gram matcher that found nothing) is priced as plain decoding. A
// prefill-only step pays one sampling call and the host's step work besides.
//
// Metrics per request (vllm bench serve's definitions): TTFT = first token's time - arrival;
// TPOT = (finish - first token) / (output_tokens - 1) (requests with one output token have none);
// ITL = the gaps between successive emissions of a request (one per step that emitted tokens: a
// speculative step streams several tokens at once); E2E = finish - arrival. Throughput = output
// tokens of all requests / duration, duration = last finish - first arrival.
//
// SLOs (OnlineSlo, as `vllm bench serve --goodput ttft:MS tpot:MS` sets them): a request meets
// them when its TTFT and its TPOT are both at most the limits given (a request with one output
// token has no TPOT and meets the TPOT limit). Goodput = output tokens of the requests that met
// them / duration (tokens/s; without SLOs, the throughput). Per load, the best setting is the
// one with the highest goodput (the smaller K on ties).
#ifndef SPECPLAN_WHATIF_ONLINE_H_
#define SPECPLAN_WHATIF_ONLINE_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/step/step_model.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::whatif {

// How the engine batches prefill with decoding (see the top of this file).
enum class SchedulerKind { kMixed, kSeparate };
const char* SchedulerKindName(SchedulerKind k);  // "mixed", "separate"

// The engine's scheduler limits, named as the engines name them.
struct EngineLimits {
  SchedulerKind scheduler = SchedulerKind::kMixed;
  int max_running = 256;        // vLLM max_num_seqs, SGLang max_running_requests; >= 1
  int64_t token_budget = 8192;  // vLLM max_num_batched_tokens, SGLang chunked_prefill_size
  bool chunked_prefill = true;  // vLLM enable_chunked_prefill (SGLang: chunked_prefill_size > 0)
  int64_t kv_cache_tokens = 0;  // tokens the KV cache holds; >= 1
};

// The engine's own defaults for a GPU of `gpu_mem_bytes` (0 = unknown) serving `speculative`
// decoding, `engine` "vllm" or "sglang" (others: vLLM's), with kv_cache_tokens left 0 for the
// caller (KvCacheTokens):
//   vllm    vllm/engine/arg_utils.py EngineArgs.get_batch_defaults, OpenAI API server: with
//           >= 70 GiB (and not an A100) max_num_seqs 1024, max_num_batched_tokens 8192, else
//           256 and 2048; the V1 engine always chunks prefill. Scheduler kMixed.
//   sglang  python/sglang/srt/server_args.py: chunked_prefill_size 2048 below 35 GiB, 8192 below
//           160 GiB, 16384 above; max_running_requests reset to 48 for EAGLE / EAGLE3 /
//           STANDALONE speculation when not given (speculative = true here). Without speculation
//           SGLang sizes its request pool from memory, which is not modelled: max_running is then
//           4096 and the KV cache is the limit. Scheduler kSeparate.
EngineLimits DefaultEngineLimits(const std::string& engine, double gpu_mem_bytes, bool speculative);
// The engines' default memory fraction for the weights and the KV cache: vLLM's
// gpu_memory_utilization 0.90 (vllm/engine/arg_utils.py EngineArgs), SGLang's mem_fraction_static
// 0.88 at tp 1 (server_args.py; it varies with tp and version).
double DefaultMemoryFraction(const std::string& engine);
// Tokens the KV cache holds: (fraction x the GPU's memory - the weights one GPU holds) / the KV
// bytes of one token (costmodel/hardware/memory_fit.h PassMemory). Activations and the CUDA
// graphs' memory are not subtracted. InvalidArgument naming the fraction when it is not in
// (0, 1], or when the weights leave no room ("gpu_memory_utilization = 0.1: the weights (1.6e+10
// bytes) leave no room in 0.1 x 8e+10 bytes"); or when the GPU's memory is unknown.
absl::StatusOr<int64_t> KvCacheTokens(const costmodel::ModelSpec& model,
                                      const costmodel::GpuSpec& gpu, double fraction,
                                      const char* fraction_field);

// One request of the stream.
struct OnlineRequest {
  double arrival_s = 0;       // seconds from the start (closed loop: set by the replay)
  int64_t prompt_tokens = 1;  // >= 1
  int64_t output_tokens = 1;  // >= 1
  int source = -1;            // index into OnlineWorkload::traces, or -1: rates
};

// Where requests and their acceptance come from.
struct OnlineWorkload {
  // Per-step traces (acc_len per output position); requests with source >= 0 walk theirs.
  std::vector<planner::AcceptanceTraceRequest> traces;
  // Per-position survival rates for requests with source -1: [k_max], non-increasing, in [0,1].
  std::vector<double> rates;
  uint64_t seed = 1;  // the acceptance draws of rates requests
  // The traces' draft length when it is known to exceed what their walks show (a trace recorded
  // drafting this many tokens per step): K up to it is accepted. 0 = the walks' longest.
  int trace_k_max = 0;
};

// The seam that prices one engine step, seconds. `decode` holds the decoding requests' sequences
// (s = tokens verified, c = tokens cached), `prefill` the prefill chunks (s = chunk tokens, c =
// tokens already prefilled); at least one is not empty. k is the setting's chain length (0 =
// plain decoding).
class OnlineStepPricer {
 public:
  virtual ~OnlineStepPricer() = default;
  virtual double StepSeconds(const costmodel::BatchShape& decode,
                             const costmodel::BatchShape& prefill, int k) const = 0;
};

// Prices steps from the step model (see the top of this file), which must outlive it: the
// decoding requests' step, and the one pass over them and the prefill chunks at its CUDA-graph
// bucket (StepModel::VerifyPassSeconds).
class StepModelPricer : public OnlineStepPricer {
 public:
  explicit StepModelPricer(const costmodel::StepModel* step) : step_(step) {}
  double StepSeconds(const costmodel::BatchShape& decode, const costmodel::BatchShape& prefill,
                     int k) const override;

 private:
  const costmodel::StepModel* step_;
  mutable costmodel::BatchShape all_;  // reused: decode and prefill in one pass
};

// Arrivals.
struct ArrivalOptions {
  // Poisson arrivals at these rates, requests per second, each > 0 (one replay per rate); or,
  // when empty, a closed loop with `in_flight` requests outstanding (a request arrives when one
  // finishes; in_flight arrive at 0).
  std::vector<double> rates;
  int in_flight = 0;
  uint64_t seed = 1;  // the Poisson arrivals (the same times for every setting at a rate)
  // Evenly spaced arrivals, one every 1 / rate seconds (GuideLLM's "constant" profile), instead
  // of Poisson ones.
  bool constant = false;
};

// Percentiles of one latency over the requests (or ITL gaps), seconds; NaN when there is none.
struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  int64_t count = 0;
};

// Latency limits a request must meet to count towards goodput; 0 = no limit.
struct OnlineSlo {
  double ttft_s = 0;  // time to first token
  double tpot_s = 0;  // time per output token after the first
  bool any() const { return ttft_s > 0 || tpot_s > 0; }
};

// One (load, setting).
struct OnlineRow {
  double rate = 0;        // requests/s; 0 for a closed loop
  int in_flight = 0;      // closed loop: requests outstanding; 0 for Poisson arrivals
  int k = 0;              // chain length, 0 = plain decoding
  int max_running = 0;    // the running-request limit the row ran under
  int64_t requests = 0;   // finished (all of them)
  double duration_s = 0;  // last finish - first arrival
  double output_tokens = 0;
  double throughput = 0;          // output tokens / duration, tokens/s
  double request_throughput = 0;  // requests / duration
  double tokens_per_step = 0;     // per decoding request-step, bonus included
  double mean_running = 0;        // requests in the running set per step
  int64_t steps = 0;
  int64_t preemptions = 0;
  LatencyStats ttft, tpot, itl, e2e;  // seconds
  int64_t slo_met = 0;                // requests that met the SLOs (all of them without SLOs)
  double goodput = 0;                 // output tokens of those / duration, tokens/s
};

struct OnlineOptions {
  std::vector<int> chain_lengths = {0, 3};  // settings, each in [0, k_max of the workload]
  EngineLimits limits;
  ArrivalOptions arrivals;
  OnlineSlo slo;
  // Called after each (load, setting) with (done, total); may be empty.
  std::function<void(int, int)> progress;
};

struct OnlineReport {
  EngineLimits limits;
  OnlineSlo slo;
  int64_t requests = 0;         // per replay
  std::vector<OnlineRow> rows;  // by load (rates ascending, or the closed loop), then K
  // Per load (in the rows' order), the K with the highest goodput (the smaller on ties).
  std::vector<int> best_k;
};

// The largest number of requests one replay takes.
inline constexpr int64_t kMaxOnlineRequests = int64_t{1} << 22;

// Replays `requests` (their arrival_s are replaced by the arrivals) for each load and setting.
// InvalidArgument naming the field and value: a rate <= 0 or not finite ("rates[1] = 0: must be
// > 0 requests/s"), no rate and in_flight < 1, limits that cannot hold one request
// ("kv_cache_tokens = 100: request 3 needs 1,200 tokens (prompt 1,000 + output 200)", an SLO
// below 0 or not finite ("slo.tpot_s = -1: must be >= 0 (0 = no limit)"), a
// max_running < 1, a token budget < 1, or without chunked prefill below a prompt), a K above what
// the acceptance gives, a request without a prompt or an output, a bad source index.
absl::StatusOr<OnlineReport> RunOnline(const std::vector<OnlineRequest>& requests,
                                       const OnlineWorkload& workload,
                                       const OnlineStepPricer& pricer,
                                       const OnlineOptions& options);

// Fills r->best_k from r->rows (consecutive rows of one load, by rate and in_flight): per load the
// K with the highest goodput, the smaller on ties. RunOnline calls it; call it again after
// merging the rows of several replays.
void RankSettings(OnlineReport* r);

// One trace request decoded as `copies` identical requests that all arrive at 0 and accept the
// same tokens (SpecDecode-Bench's batches of B), its prefill included, chains of k (0 = plain
// decoding), under `limits`: the seconds until the last copy finishes. Errors as RunOnline's.
absl::StatusOr<double> CopiesSeconds(const planner::AcceptanceTraceRequest& request, int copies,
                                     int k, const OnlineStepPricer& pricer,
                                     const EngineLimits& limits);

// The largest K the workload's acceptance gives (traces: the largest acc_len - 1; rates: their
// length); with both, the smaller.
int WorkloadMaxK(const OnlineWorkload& workload, const std::vector<OnlineRequest>& requests);

nlohmann::json OnlineReportToJson(const OnlineReport& report);
// One line per row: load, K, throughput, and the p50 / p90 / p99 of TTFT, TPOT, ITL, E2E in ms
// ('\n'-terminated).
std::string FormatOnlineTable(const OnlineReport& report);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_ONLINE_H_
