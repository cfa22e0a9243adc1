// Load generator of the planner service (the `specplan-loadgen` binary, loadgen_main.cc): N
// concurrent gRPC C++ clients, each on its own channel (its own TCP connection), call one RPC
// (Ping or PlanTree) against a loopback server, bounded by a request count AND a time limit, either
// as fast as they can (closed loop, qps = 0) or paced to a target rate, and report throughput and
// latency percentiles.
//
// Latency is measured per call on the client, from the send to the reply. When paced, a call that
// starts late because the previous reply of the same client came after its scheduled send time is
// measured from the scheduled time (the queueing delay counts: no coordinated omission).
//
// Thread-safety: RunLoad is reentrant; it starts `clients` threads and joins them before returning.
#ifndef SPECPLAN_SERVICE_TOOLS_LOADGEN_H_
#define SPECPLAN_SERVICE_TOOLS_LOADGEN_H_

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/marginals/marginals.h"
#include "specplan/v1/planner.pb.h"

namespace specplan::service {

enum class LoadRpc { kPing, kPlanTree };
const char* LoadRpcName(LoadRpc rpc);  // "Ping", "PlanTree"

struct LoadConfig {
  std::string target;                // gRPC target "HOST:PORT" (see CheckLoopbackTarget)
  LoadRpc rpc = LoadRpc::kPing;      //
  int clients = 2;                   // concurrent clients, one channel + one thread each, >= 1
  int64_t requests = 100000;         // measured calls in all (warm-up excluded), >= 1
  double seconds = 10;               // wall-clock limit of the measured phase, seconds, > 0
  double qps = 0;                    // target calls/s over all clients; 0 = closed loop, flat out
  int warmup_per_client = 100;       // unmeasured calls each client makes first, >= 0
  double deadline_s = 5;             // per-call deadline, seconds, > 0
  v1::PlanTreeRequest plan_request;  // sent by every PlanTree call (reused, never copied per call)
  // Extra integer channel arguments of every client channel, e.g. {"grpc.http2.bdp_probe", 0}.
  std::vector<std::pair<std::string, int>> channel_args;
};

struct LoadReport {
  std::string rpc;  // LoadRpcName
  int clients = 0;
  double target_qps = 0;    // 0 = closed loop
  int64_t requests = 0;     // measured calls completed (OK or not)
  int64_t errors = 0;       // calls that did not return OK
  std::string first_error;  // "CODE: message" of the first failed call, "" when none
  double seconds = 0;       // measured wall time
  double qps = 0;           // requests / seconds
  double mean_us = 0, p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;  // client-side latency
  double server_p50_us = 0;       // PlanTree: median of the replies' plan_us (handler time); else 0
  double cpu_us_per_request = 0;  // this process's user + sys CPU per call (includes the server
                                  // when it runs in-process, --start-server)
};

// OK when `target` only reaches this machine: "unix:..." sockets, or a host (optionally behind
// "dns:///", "ipv4:", "ipv6:") whose every resolved address is loopback (127.0.0.0/8, ::1).
// Otherwise FAILED_PRECONDITION naming --server (INVALID_ARGUMENT when it cannot be parsed).
absl::Status CheckLoopbackTarget(const std::string& target);

// Checks the config's bounds; errors name the flag ("--clients = 0: must be >= 1").
absl::Status ValidateLoadConfig(const LoadConfig& config);

// The PlanTree request of the benchmark: `marginals`, controller mode, n_max, the inline roofline
// of (gpu, model) at `context` tokens, or the server profile "GPU/MODEL" when `profile` is set.
// Outputs: the default set (positions, parents, retrieve, packed mask, curve) unless
// `engine_outputs`, which asks only for what a verification kernel needs each step (positions,
// retrieve, packed mask; the tree's tokens and parents always come back) and leaves out the S(n)
// curve.
v1::PlanTreeRequest MakePlanRequest(const planner::Marginals& marginals, int n_max, int64_t context,
                                    const std::string& gpu, const std::string& model,
                                    const std::string& profile, bool engine_outputs = false);

// Runs one measurement. Fails only on a bad config or an unreachable server (the first warm-up
// call of each client must succeed); errors during the measured phase are counted in the report.
absl::StatusOr<LoadReport> RunLoad(const LoadConfig& config);

// A fixed-width table, one row per report:
//   rpc       clients  target_qps   requests  errors  seconds      qps  p50_us ...
std::string FormatLoadTable(const std::vector<LoadReport>& reports);
nlohmann::json LoadReportToJson(const LoadReport& report);

// ---------------------------------------------------------------------------------------------
// Soak mode (`specplan-loadgen --soak`): a mix of valid and invalid PlanTree / MergeTrees /
// EstimateLatency / Ping requests from several clients at a target rate for a long time, checking
// that every call ends with the status its request deserves (OK for valid requests; the documented
// INVALID_ARGUMENT / NOT_FOUND / RESOURCE_EXHAUSTED for invalid ones), and that the server's
// resident memory does not grow.

enum class SoakMethod { kPing, kPlanTree, kMergeTrees, kEstimateLatency };
inline constexpr int kNumSoakMethods = 4;
const char* SoakMethodName(SoakMethod method);  // "Ping", "PlanTree", ...

// One kind of request of the mix. Only the request of `method` is used.
struct SoakCase {
  std::string name;                                   // e.g. "plan_nan_probs"
  SoakMethod method = SoakMethod::kPing;              //
  absl::StatusCode expected = absl::StatusCode::kOk;  // the status the server must answer
  v1::PlanTreeRequest plan;                           // kPlanTree
  v1::MergeTreesRequest merge;                        // kMergeTrees
  v1::EstimateLatencyRequest estimate;                // kEstimateLatency
};

// The mix, derived from the valid PlanTree request `plan` (its marginals and cost):
//   valid:   ping, plan, merge (dedup of two small trees), estimate (3 x 2 grid of plan's cost);
//   invalid: plan_nan_probs, plan_unsorted_row (INVALID_ARGUMENT), plan_unknown_profile
//   (NOT_FOUND),
//            plan_gamma_over_limit, plan_n_max_over_limit (RESOURCE_EXHAUSTED),
//            merge_non_topological, merge_mismatched_roots (INVALID_ARGUMENT),
//            merge_n_max_over_limit (RESOURCE_EXHAUSTED), estimate_unknown_profile (NOT_FOUND),
//            estimate_grid_over_limit (RESOURCE_EXHAUSTED, 300 x 300 points > the default 65536).
// The "over limit" cases assume the server's default limits (--max-gamma 64, --max-n 8191).
// `plan` needs gamma >= 1 and k >= 2.
std::vector<SoakCase> MakeSoakCases(const v1::PlanTreeRequest& plan);

struct SoakConfig {
  std::string target;           // gRPC target "HOST:PORT" (loopback, see CheckLoopbackTarget)
  int clients = 4;              // concurrent clients, one channel + one thread each, >= 1
  int64_t requests = 50000000;  // calls in all, upper bound, >= 1
  double seconds = 600;         // wall-clock limit, seconds, in (0, 3600]
  double qps = 0;               // target calls/s over all clients; 0 = closed loop, flat out
  double mix_invalid = 0.2;     // fraction of calls that send an invalid request, [0, 1]
  double deadline_s = 5;        // per-call deadline, seconds, > 0
  uint64_t seed = 1;            // request choice (each client: seed + index)
  // Whose VmRSS to report: 0 = this process (server in-process), > 0 = that pid, < 0 = none.
  int rss_pid = -1;
  std::vector<SoakCase> cases;  // the mix (MakeSoakCases); >= 1 valid case
};

// Latency histogram with log-spaced buckets (1% wide) from 1 us to 100 s: constant memory, so a
// long soak does not grow the process it measures.
struct LatencyHistogram {
  static constexpr int kBuckets = 1860;  // ceil(ln(1e8) / ln(1.01)) + 10
  std::array<int64_t, kBuckets> counts{};
  int64_t total = 0;
  double max_us = 0;
  void Add(double us);
  void Merge(const LatencyHistogram& other);
  // Upper edge of the bucket holding the nearest-rank q-quantile (<= 1% above it); 0 when empty.
  double Quantile(double q) const;
};

struct SoakCaseReport {
  std::string name;
  std::string method;    // SoakMethodName
  std::string expected;  // absl::StatusCodeToString
  int64_t sent = 0;
  int64_t as_expected = 0;  // calls that ended with `expected`
};

struct SoakReport {
  int clients = 0;
  double target_qps = 0;  // 0 = closed loop
  double mix_invalid = 0;
  double seconds = 0;      // measured wall time
  int64_t requests = 0;    // calls completed
  int64_t valid = 0;       // of which valid requests
  int64_t invalid = 0;     // of which invalid requests
  int64_t unexpected = 0;  // calls whose status differed from the expected one
  // "METHOD CODE" (e.g. "PlanTree INTERNAL") -> count, over unexpected statuses only.
  std::map<std::string, int64_t> unexpected_by_method_code;
  std::string first_unexpected;  // "case: got CODE (expected CODE): message", "" when none
  std::vector<SoakCaseReport> cases;
  double qps = 0;                              // requests / seconds
  double p50_us = 0, p99_us = 0, max_us = 0;   // client-side latency of valid requests
  int64_t rss_start_kb = -1, rss_end_kb = -1;  // VmRSS at the start / end of the run; -1 unknown
};

// VmRSS of `pid` (0 = this process) from /proc/PID/status, in kB.
absl::StatusOr<int64_t> ReadVmRssKb(int pid);

// Checks the config's bounds; errors name the flag ("--mix-invalid = 2: must be in [0, 1]").
absl::Status ValidateSoakConfig(const SoakConfig& config);

// Runs the soak. Fails only on a bad config or an unreachable server (each client's first Ping
// must succeed) or an unreadable VmRSS; statuses of the calls are counted in the report.
absl::StatusOr<SoakReport> RunSoak(const SoakConfig& config);

std::string FormatSoakReport(const SoakReport& report);
nlohmann::json SoakReportToJson(const SoakReport& report);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_TOOLS_LOADGEN_H_
