// specplan-bench's `--planner HOST:PORT`: the planner::PlanBackend of a remote specplan-server
// (library specplan_remote_planner, built in every configuration). With gRPC in the build,
// remote_planner.cc connects client.h's RemotePlanBackend; without it, remote_planner_disabled.cc
// says the build has no client. Kept apart from specplan_client so that specplan-bench links the
// same library either way and runtime/ holds no gRPC client code.
#ifndef SPECPLAN_CLIENT_REMOTE_PLANNER_H_
#define SPECPLAN_CLIENT_REMOTE_PLANNER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "planner/batch/plan_backend.h"

namespace specplan::client {

// A backend whose server answered within timeout_s seconds; UNAVAILABLE naming the address
// otherwise, UNIMPLEMENTED in a build without gRPC.
absl::StatusOr<std::unique_ptr<planner::PlanBackend>> ConnectRemotePlanner(
    const std::string& address, double timeout_s);

}  // namespace specplan::client

#endif  // SPECPLAN_CLIENT_REMOTE_PLANNER_H_
