#include "client/remote_planner.h"

#include <memory>
#include <string>
#include <utility>

#include "client/client.h"
#include "util/status_macros.h"

namespace specplan::client {

absl::StatusOr<std::unique_ptr<planner::PlanBackend>> ConnectRemotePlanner(
    const std::string& address, double timeout_s) {
  SPECPLAN_ASSIGN_OR_RETURN(auto backend, RemotePlanBackend::Connect(address, timeout_s));
  return std::unique_ptr<planner::PlanBackend>(std::move(backend));
}

}  // namespace specplan::client
