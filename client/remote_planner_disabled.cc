#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/remote_planner.h"

namespace specplan::client {

absl::StatusOr<std::unique_ptr<planner::PlanBackend>> ConnectRemotePlanner(
    const std::string& address, double /*timeout_s*/) {
  return absl::UnimplementedError(absl::StrCat(
      "--planner ", address,
      ": this specplan-bench was built without gRPC (configure with -DSPECPLAN_WITH_GRPC=ON)"));
}

}  // namespace specplan::client
