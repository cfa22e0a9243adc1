// specplan-bench's `--planner HOST:PORT`: the planner::PlanBackend of a remote specplan-server.
// With gRPC in the build, remote_planner.cc connects service/client.h's RemotePlanBackend;
// without it, remote_planner_disabled.cc says the build has no client. Kept out of
// specplan_runtime so the runtime library itself never depends on gRPC.
#ifndef SPECPLAN_RUNTIME_REMOTE_PLANNER_H_
#define SPECPLAN_RUNTIME_REMOTE_PLANNER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "planner/batch/plan_backend.h"

namespace specplan::runtime {

// A backend whose server answered within timeout_s seconds; UNAVAILABLE naming the address
// otherwise, UNIMPLEMENTED in a build without gRPC.
absl::StatusOr<std::unique_ptr<planner::PlanBackend>> ConnectRemotePlanner(
    const std::string& address, double timeout_s);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_REMOTE_PLANNER_H_
