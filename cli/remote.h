// Client side of the CLI's `--server HOST:PORT`: the same requests the in-process commands run,
// sent to a specplan-server, with the responses turned back into the planner's plain structs so
// that the commands print exactly what they print in-process. Without gRPC in the build every call
// returns UNIMPLEMENTED.
#ifndef SPECPLAN_CLI_REMOTE_H_
#define SPECPLAN_CLI_REMOTE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/profile.h"
#include "planner/best_first.h"
#include "planner/marginals.h"
#include "planner/merge.h"
#include "planner/tree_outputs.h"

namespace specplan::cli {

// The cost side of a command, as the user gave it on the command line.
struct RemoteCost {
  std::string model;  // registry name (HF config paths are local-only)
  std::string gpu;    // registry name, or a path to a JSON GPU spec (sent inline)
  costmodel::DType dtype = costmodel::DType::kBFloat16;
  costmodel::DrafterCost drafter;
  double t_aux_s = 0;
  int64_t context = 0;  // c
};

struct RemoteResult {
  std::string latency_model;  // kind the server used
  std::string profile;        // profile id the server used, "" for the bare roofline
};

// PlanTree. `cost` may be null only in fixed mode. Fills *plan and *outputs (positions offset by c,
// packed mask, retrieve) as BestFirstPlanner::Plan + ComputeTreeOutputs would.
absl::StatusOr<RemoteResult> RemotePlanTree(const std::string& server,
                                            const planner::Marginals& marginals,
                                            const planner::BestFirstOptions& options,
                                            const RemoteCost* cost, int64_t c,
                                            planner::BestFirstPlan* plan,
                                            planner::TreeOutputs* outputs);

// MergeTrees with the same options as planner::MergeTrees; outputs with dense mask.
absl::Status RemoteMergeTrees(const std::string& server, const planner::Tree& a,
                              const planner::Tree& b, const planner::MergeOptions& options,
                              int64_t c, planner::MergedTree* merged,
                              planner::TreeOutputs* outputs);

// EstimateLatency at one (s, c): predicted verify seconds and the cycle cost of n = s - 1.
struct RemoteEstimate {
  RemoteResult used;
  double verify_s = 0;
  double cycle_s = 0;
  double draft_s = 0;
  double aux_s = 0;
};
absl::StatusOr<RemoteEstimate> RemoteEstimateLatency(const std::string& server,
                                                     const RemoteCost& cost, int64_t s);

// Every profile the server holds, as (id, profile).
absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> RemoteProfiles(
    const std::string& server);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_REMOTE_H_
