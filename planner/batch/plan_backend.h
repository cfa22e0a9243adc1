// PlanBackend: where a decoding loop gets its plans from. The runtime plans every step through one
// of these, so the same loop runs with the planner linked in (InProcessPlanBackend, the default) or
// with a specplan-server over gRPC (client/client.h RemotePlanBackend, `--planner host:port`).
// Both give the same plans for the same inputs (tests/service/remote_backend_test.cc).
//
// The interface is Torch- and gRPC-free (DESIGN.md dependency rule): plain planner structs in,
// plain planner structs out, absl::Status errors that name the offending field and value.
#ifndef SPECPLAN_PLANNER_BATCH_PLAN_BACKEND_H_
#define SPECPLAN_PLANNER_BATCH_PLAN_BACKEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "planner/batch/batch_plan.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

// The cost side of a best-first plan: C(n) = T_draft + T_aux + T_verify(n + 1, c)
// (costmodel::CycleCost). A remote backend evaluates `latency` at s = 1..n_max + 1 and sends the
// values, so any LatencyModel works remotely, including ones the server cannot know.
struct PlanCost {
  const costmodel::LatencyModel* latency = nullptr;  // not owned; required (non-null)
  costmodel::DrafterCost drafter;                    // T_draft
  double t_aux_s = 0;                                // seconds per cycle, >= 0
  int64_t context = 0;                               // c: tokens already in the target's KV cache
};

// The cost side of a batch plan (costmodel::BatchCycleCost): C = T_draft(B) + T_aux +
// T_verify({(n_i + 1, c_i)}). A remote backend evaluates `latency` for single passes of
// s = 1 .. Σ_i (cap_i + 1) tokens at the batch's mean context and sends the values, which the
// server prices a batch with by its total tokens. That is exactly the local pricing for a latency
// model that prices a batch by its total tokens at the mean context (LatencyModel's default
// VerifyBatchSeconds, e.g. a measured grid), and an approximation for one with its own batch
// pricing (the roofline's and fitted profiles' per-sequence attention terms).
struct BatchPlanCost {
  const costmodel::LatencyModel* latency = nullptr;  // not owned; required (non-null)
  costmodel::DrafterCost drafter;                    // T_draft(B)
  double t_aux_s = 0;                                // seconds per cycle, >= 0
};

class PlanBackend {
 public:
  virtual ~PlanBackend() = default;

  // Best-first plan over `marginals` with BestFirstPlanner::Plan's contract: `cost` may be null
  // only in BudgetMode::kFixed (then cycle_s / speedup are NaN); it is not retained. Fills every
  // field of *plan, including the curve (controller / scan modes). *plan's buffers are reused.
  virtual absl::Status PlanBestFirst(const Marginals& marginals, const BestFirstOptions& options,
                                     const PlanCost* cost, BestFirstPlan* plan) = 0;

  // planner::MergeTrees(a, b, options) into *out (buffers reused).
  virtual absl::Status Merge(const Tree& a, const Tree& b, const MergeOptions& options,
                             MergedTree* out) = 0;

  // BatchPlanner::Plan's contract: `cost` may be null only in BudgetMode::kFixed with the goodput
  // objective; it is not retained. Fills every field of *plan (buffers reused). Every request
  // carries marginals (a path-conditioned provider is an in-process callback).
  virtual absl::Status PlanBatch(const std::vector<BatchRequest>& requests,
                                 const BatchPlanOptions& options, const BatchPlanCost* cost,
                                 BatchPlan* plan) = 0;

  // "in-process", or "remote HOST:PORT".
  virtual std::string Name() const = 0;
};

// Plans with the linked planner: BestFirstPlanner::Plan and MergeTrees with workspaces kept across
// calls, so that the steady state does not allocate. Not thread-safe (one per decoding loop).
class InProcessPlanBackend final : public PlanBackend {
 public:
  InProcessPlanBackend() = default;
  // Pre-sizes the best-first workspace for budgets up to n_max draft nodes.
  void Reserve(int n_max) { best_first_.Reserve(n_max); }

  absl::Status PlanBestFirst(const Marginals& marginals, const BestFirstOptions& options,
                             const PlanCost* cost, BestFirstPlan* plan) override;
  absl::Status Merge(const Tree& a, const Tree& b, const MergeOptions& options,
                     MergedTree* out) override;
  absl::Status PlanBatch(const std::vector<BatchRequest>& requests, const BatchPlanOptions& options,
                         const BatchPlanCost* cost, BatchPlan* plan) override;
  std::string Name() const override { return "in-process"; }

 private:
  BestFirstPlanner best_first_;
  BatchPlanner batch_;
  MergeWorkspace merge_ws_;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_BATCH_PLAN_BACKEND_H_
