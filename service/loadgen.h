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
#ifndef SPECPLAN_SERVICE_LOADGEN_H_
#define SPECPLAN_SERVICE_LOADGEN_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/marginals.h"
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

// Nearest-rank percentile (q in [0, 1]) of `sorted` (ascending); 0 when empty.
double Percentile(const std::vector<double>& sorted, double q);

// A fixed-width table, one row per report:
//   rpc       clients  target_qps   requests  errors  seconds      qps  p50_us ...
std::string FormatLoadTable(const std::vector<LoadReport>& reports);
nlohmann::json LoadReportToJson(const LoadReport& report);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_LOADGEN_H_
