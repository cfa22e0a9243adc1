// The state machine behind one PlanSession stream (protocol in planner.proto): a tree policy
// (planner/policies/policy.h: fixed, linear, DynaTree, EAGLE-2) or the path-conditioned best-first
// planner (planner/policies/path_conditioned.h), driven by the engine's NodeDistributions messages.
//
//   start        -> ExpandRequest (or SessionPlan when the tree is final at once)
//   distributions-> ExpandRequest | SessionPlan
//   observe      -> SessionObserved
//   next_step    -> ExpandRequest | SessionPlan (same policy object: history carries over)
// Out-of-order messages are FAILED_PRECONDITION; malformed ones INVALID_ARGUMENT naming the field
// ("distributions.probs[0][2] = 1.5: must be in [0, 1]"); limits RESOURCE_EXHAUSTED. After an
// error the caller ends the stream.
#ifndef SPECPLAN_SERVICE_PLAN_SESSION_H_
#define SPECPLAN_SERVICE_PLAN_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "planner/policies/best_first.h"
#include "planner/policies/path_conditioned.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree_outputs.h"
#include "service/convert.h"
#include "service/cost_resolver.h"
#include "specplan/v1/planner.pb.h"

namespace specplan::service {

class PlanSessionDriver {
 public:
  // `costs` resolves costs and provides the limits; it must outlive the driver.
  explicit PlanSessionDriver(const CostResolver* costs);

  // Handles one client message; fills *out with the reply (left unset when there is none).
  absl::Status Handle(const v1::SessionClientMessage& in, v1::SessionServerMessage* out);

 private:
  enum class Kind { kNone, kPolicy, kBestFirst };

  absl::Status Start(const v1::SessionStart& start, v1::SessionServerMessage* out);
  absl::Status Distributions(const v1::NodeDistributions& d, v1::SessionServerMessage* out);
  absl::Status Observe(int32_t accepted, v1::SessionServerMessage* out);
  absl::Status BeginStep(int32_t root_token, v1::SessionServerMessage* out);
  // The next ExpandRequest, or the final plan.
  absl::Status Emit(v1::SessionServerMessage* out);

  const CostResolver* costs_;
  Kind kind_ = Kind::kNone;
  std::string name_;
  Outputs outputs_;
  int64_t position_offset_ = 0;
  int32_t step_ = -1;
  int32_t round_ = 0;
  bool final_ = false;     // the current step's tree is final
  bool observed_ = false;  // ... and its acceptance was observed

  // Policies.
  std::unique_ptr<planner::TreePolicy> policy_;
  planner::NodeDistributions dists_;

  // Best-first over path-conditioned distributions.
  std::optional<ResolvedCost> cost_;
  planner::PathConditionedOptions pc_options_;
  planner::PathConditionedPlanner pc_;
  planner::BestFirstPlan plan_;
  std::vector<int32_t> expected_nodes_;
  std::vector<planner::TokenProb> reply_;
  std::vector<int32_t> reply_counts_;
  int32_t final_depth_ = 0;
  int64_t bf_observed_steps_ = 0;
  int64_t bf_accepted_ = 0;

  planner::TreeOutputs tree_outputs_;
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_PLAN_SESSION_H_
