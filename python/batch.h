// The batch planner behind specplan.plan_batch / plan_batch_arrays: per-thread workspace,
// the result object and the one call that plans with the GIL released.
#ifndef SPECPLAN_PYTHON_BATCH_H_
#define SPECPLAN_PYTHON_BATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "ops/cost_request.h"
#include "planner/batch/batch_plan.h"
#include "planner/tree/engine_layouts.h"

namespace specplan::python {

enum class LayoutKind { kNone, kRagged, kSglang };

// The keyword arguments shared by both plan_batch forms, checked.
struct BatchArgs {
  planner::BatchPlanOptions options;
  DrafterArgs drafter;
  LayoutKind layout = LayoutKind::kNone;
  planner::SglangLayoutOptions sglang;
};
// Errors name the keyword and value.
BatchArgs ParseBatchArgs(int n_max, const std::string& mode, py::handle max_ms_per_token,
                         const std::string& drafter, double t_draft_ms, double t_aux_ms,
                         double draft_batch_growth, double acceptance_scale, bool validate,
                         py::handle layout, py::handle tree_mask_mode, py::handle draft_token_num,
                         int64_t pad_token);

// Reused per thread (planners are not thread-safe; the GIL is released while planning).
struct BatchWorkspace {
  planner::BatchPlanner planner;
  std::vector<planner::Marginals> marginals;    // [>= B] copies of requests given as arrays/dicts
  std::vector<planner::BatchRequest> requests;  // [B]

  void Resize(size_t b) {
    if (marginals.size() < b) marginals.resize(b);
    requests.resize(b);
  }
};
BatchWorkspace& ThreadBatchWorkspace();

// plan_batch_arrays' arrays (root_tokens [B], tokens [B, gamma, k], probs [B, gamma, k],
// context_lens [B], optional request_n_max [B] and weights [B]; None = not given) copied into
// ws->marginals and ws->requests (shapes and ranges checked, errors name the argument; the
// marginals' values are validated by the planner when options.validate).
void ReadBatchArrays(py::handle root_tokens, py::handle tokens, py::handle probs,
                     py::handle context_lens, py::handle request_n_max, py::handle weights,
                     BatchWorkspace* ws);

// The cost ops::PlanBatchInto prices the batch with (nullopt without a cost): CostViewOf for the
// batch's largest gamma (the drafter keywords checked either way). *hold keeps a rebuilt step
// model alive.
std::optional<ops::CostView> BatchCostView(const BatchWorkspace& ws, const PyCost* cost,
                                           const BatchArgs& args,
                                           std::shared_ptr<const costmodel::StepModel>* hold);

// The buffers of one specplan.BatchPlan. A BatchPlan that Python frees gives them back to a small
// pool (under the GIL) and the next plan_batch call plans straight into them, capacity kept, so a
// steady engine loop neither copies its plans nor allocates for them.
struct BatchBuffers {
  planner::BatchPlan plan;       // the planner's own result: trees [B], n, Â, price, curve
  std::vector<int64_t> c;        // [B] context lengths
  planner::BatchLayout ragged;   // when layout='ragged'
  planner::SglangLayout sglang;  // when layout='sglang'
  // The trees flattened (request i = nodes offsets[i] .. offsets[i + 1] - 1), filled on the
  // first read of a flat array (BatchPlan.tokens, .parents, .depths, .path_probs, .offsets).
  std::vector<int32_t> tokens, parents, depths;  // [T]
  std::vector<double> path_probs;                // [T]
  std::vector<int64_t> offsets;                  // [B + 1]
};

// What specplan.BatchPlan holds. Constructed and destroyed with the GIL held (the buffer pool).
struct PyBatchPlan : BatchBuffers {
  PyBatchPlan();
  ~PyBatchPlan();
  PyBatchPlan(const PyBatchPlan&) = delete;
  PyBatchPlan& operator=(const PyBatchPlan&) = delete;

  int b = 0;          // B
  bool flat = false;  // tokens .. offsets are filled
  bool latency_bound = false;
  int mode = 0, n_max = 0;
  LayoutKind layout = LayoutKind::kNone;
  std::string latency_model, profile;

  // Fills the flat arrays once.
  void Flatten();
};

// Plans ws->requests (filled by the caller, with ws->c) under `cost` (may be null only in
// 'fixed' with the goodput objective) and returns a specplan.BatchPlan. Releases the GIL for
// the planning, the copy into the result and the layout.
py::object RunBatch(BatchWorkspace* ws, const PyCost* cost, const BatchArgs& args);

}  // namespace specplan::python

#endif  // SPECPLAN_PYTHON_BATCH_H_
