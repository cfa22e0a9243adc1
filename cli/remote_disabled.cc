// Built instead of remote.cc (and specplan_client) when gRPC is not part of the build
// (SPECPLAN_WITH_GRPC=OFF): the CLI's remote calls, each returning UNIMPLEMENTED, so that every
// `--server` says how to get it.
#include "cli/remote.h"

namespace specplan::cli {
namespace {
absl::Status Disabled() {
  return absl::UnimplementedError(
      "--server: this specplan was built without gRPC (configure with -DSPECPLAN_WITH_GRPC=ON)");
}
}  // namespace

absl::StatusOr<RemoteResult> RemotePlanTree(const std::string&, const planner::Marginals&,
                                            const planner::BestFirstOptions&, const RemoteCost*,
                                            int64_t, planner::BestFirstPlan*,
                                            planner::TreeOutputs*) {
  return Disabled();
}
absl::StatusOr<RemoteResult> RemotePlanBatch(const std::string&,
                                             const std::vector<planner::BatchRequest>&,
                                             const planner::BatchPlanOptions&, const RemoteCost*,
                                             planner::BatchPlan*,
                                             std::vector<planner::TreeOutputs>*) {
  return Disabled();
}
absl::Status RemoteMergeTrees(const std::string&, const planner::Tree&, const planner::Tree&,
                              const planner::MergeOptions&, int64_t, planner::MergedTree*,
                              planner::TreeOutputs*) {
  return Disabled();
}
absl::StatusOr<RemoteEstimate> RemoteEstimateLatency(const std::string&, const RemoteCost&,
                                                     int64_t) {
  return Disabled();
}
absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> RemoteProfiles(
    const std::string&) {
  return Disabled();
}
absl::StatusOr<RemoteWhatIfResult> RemoteWhatIf(const std::string&, const std::string&,
                                                const std::string&, const RemoteCost&,
                                                const whatif::WhatIfOptions&) {
  return Disabled();
}

}  // namespace specplan::cli
