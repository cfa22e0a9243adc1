// Load across replicas (`specplan-loadgen --targets A,B,C` or a dns:/// target; fleet mode): N
// clients, each on its own channel balanced round robin over every replica with the clients'
// retry policy (service/channel.h), send PlanTree and PlanBatch requests for a fixed time, flat
// out or paced, while timed events (kill a replica, restart it, replace a profile, SIGTERM one)
// run beside them. It reports, per segment between events: calls, failed calls, p50/p99/max,
// calls per replica (the x-replica trailer), and it checks EVERY answer against in-process
// planning of the same input (PlannerService::DoPlanTree / DoPlanBatch over the same profiles):
// an answer must equal, field for field (plan_us aside), the expected answer under one of the
// given profile versions, and the report says which version answered when (so a profile switch
// is visible, and a mix of two versions is a mismatch).
//
// Thread-safety: RunFleet starts `clients` threads plus one for the events and joins them.
#ifndef SPECPLAN_SERVICE_TOOLS_FLEET_LOAD_H_
#define SPECPLAN_SERVICE_TOOLS_FLEET_LOAD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "service/tools/loadgen.h"
#include "specplan/v1/planner.pb.h"

namespace specplan::service {

// One request of the mix and its expected answers.
struct FleetInput {
  bool batch = false;                  // PlanBatch (else PlanTree)
  v1::PlanTreeRequest tree;            // !batch
  v1::PlanBatchRequest batch_request;  // batch
  // expected[v]: the reply (plan_us cleared, deterministic serialisation) under profile version v.
  std::vector<std::string> expected;
};

// The mix for `plan` (the loadgen's PlanTree request: its marginals and cost): PlanTree at
// n_max 64 / 256 and contexts c / 4c, and PlanBatch of 4 requests (contexts c, 2c, 3c, 4c, the
// marginals' rows rotated per request) at N_max 256 in the ragged layout. Expected answers not
// filled.
std::vector<FleetInput> MakeFleetInputs(const v1::PlanTreeRequest& plan);

// Fills every input's `expected` with one answer per directory in `profile_dirs` (in order,
// version 0, 1, ...), planned in this process by a PlannerService over a ProfileStore of that
// directory. Errors name the directory and the failing input.
absl::Status ComputeExpected(const std::vector<std::string>& profile_dirs,
                             std::vector<FleetInput>* inputs);

// The normalised bytes an answer is compared by.
std::string NormalisedReply(v1::PlanTreeResponse reply);
std::string NormalisedReply(v1::PlanBatchResponse reply);

struct FleetEvent {
  double at_s = 0;            // seconds after the measured phase starts
  std::string name;           // e.g. "kill -9 replica 2"; names the segment that starts here
  std::function<void()> run;  // runs on the event thread; may block (the next event waits)
};

struct FleetConfig {
  std::string target;   // gRPC target (PlannerTarget of --targets)
  int clients = 4;      // >= 1, one channel and one thread each
  double seconds = 60;  // measured phase, (0, 3600]
  double qps = 0;       // over all clients; 0 = closed loop, flat out
  double deadline_s = 5;
  int warmup_per_client = 20;      // unmeasured calls each client makes first (must succeed)
  std::vector<FleetInput> inputs;  // call i of a client sends inputs[(client + i) % size]
  std::vector<FleetEvent> events;  // sorted by at_s
};

struct FleetSegment {
  std::string name;  // "start" or the event's name
  double from_s = 0, to_s = 0;
  int64_t requests = 0;    // calls started in this segment and completed
  int64_t failed = 0;      // of which returned non-OK (after the channel's retries)
  int64_t mismatched = 0;  // of which OK but equal to no expected answer
  double qps = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  std::map<std::string, int64_t> per_replica;  // x-replica -> calls answered
  std::vector<int64_t> per_version;            // [versions] answers equal to version v
};

struct FleetReport {
  std::string target;
  int clients = 0;
  double target_qps = 0;
  double seconds = 0;
  int64_t requests = 0, failed = 0, mismatched = 0, checked = 0;  // checked = OK and compared
  int64_t plan_tree = 0, plan_batch = 0;                          // calls per RPC
  double qps = 0, p50_us = 0, p99_us = 0, max_us = 0;
  std::map<std::string, int64_t> per_replica;
  std::vector<int64_t> per_version;
  std::vector<double> first_seen_s, last_seen_s;  // [versions] first / last answer of version v
                                                  // (-1 = never)
  std::string first_failure;                      // "t=12.3s PlanTree UNAVAILABLE: ..."
  std::string first_mismatch;                     // "t=... PlanBatch input 3: ..."
  std::vector<FleetSegment> segments;
  std::vector<std::string> event_log;  // "t=20.00s kill -9 replica 2"
};

absl::Status ValidateFleetConfig(const FleetConfig& config);
// Fails only on a bad config or when a client's warm-up fails (nothing reachable).
absl::StatusOr<FleetReport> RunFleet(const FleetConfig& config);

std::string FormatFleetReport(const FleetReport& report);

// specplan-loadgen's fleet mode (loadgen_main.cc): builds the inputs from the loadgen's PlanTree
// flags, the expected answers, the events (`AT_S=COMMAND`, run with `sh -c`), optionally probes
// the flat-out rate (at_fraction > 0) and a one-replica baseline, runs and prints. Returns the
// process exit status (0, 1 on a bad flag or unreachable replicas, 3 on failures or mismatches).
int FleetMain(const std::string& targets, bool allow_remote, const std::string& profiles_dir,
              std::vector<std::string> expect_profiles, const std::vector<std::string>& events,
              const LoadConfig& base, double at_fraction, double probe_seconds,
              const std::string& scaling_baseline, bool json, const std::string& marginals_path,
              int n_max, int64_t context, const std::string& gpu, const std::string& model,
              const std::string& profile, bool engine_outputs);
nlohmann::json FleetReportToJson(const FleetReport& report);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_TOOLS_FLEET_LOAD_H_
