// RunBatch and the batch keyword arguments (batch.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "batch.h"
#include "layouts.h"
#include "ops/plan_batch.h"

namespace specplan::python {
namespace {

using planner::BudgetMode;

}  // namespace

namespace {
// Freed results' buffers; touched only with the GIL held.
std::vector<BatchBuffers>& Pool() {
  static auto* pool = new std::vector<BatchBuffers>();  // never destroyed (no exit-order issues)
  return *pool;
}
constexpr size_t kMaxPooled = 4;
}  // namespace

PyBatchPlan::PyBatchPlan() {
  auto& pool = Pool();
  if (!pool.empty()) {
    static_cast<BatchBuffers&>(*this) = std::move(pool.back());
    pool.pop_back();
  }
}

PyBatchPlan::~PyBatchPlan() {
  auto& pool = Pool();
  if (pool.size() < kMaxPooled) pool.push_back(std::move(static_cast<BatchBuffers&>(*this)));
}

void PyBatchPlan::Flatten() {
  if (flat) return;
  const size_t nb = static_cast<size_t>(b);
  offsets.resize(nb + 1);
  offsets[0] = 0;
  for (size_t i = 0; i < nb; ++i) offsets[i + 1] = offsets[i] + plan.trees[i].size();
  const size_t t = static_cast<size_t>(offsets[nb]);
  tokens.resize(t);
  parents.resize(t);
  depths.resize(t);
  path_probs.resize(t);
  for (size_t i = 0; i < nb; ++i) {
    const planner::Tree& tree = plan.trees[i];
    const size_t at = static_cast<size_t>(offsets[i]), s = tree.tokens.size();
    std::memcpy(tokens.data() + at, tree.tokens.data(), s * sizeof(int32_t));
    std::memcpy(parents.data() + at, tree.parents.data(), s * sizeof(int32_t));
    std::memcpy(depths.data() + at, tree.depths.data(), s * sizeof(int32_t));
    std::memcpy(path_probs.data() + at, tree.path_probs.data(), s * sizeof(double));
  }
  flat = true;
}

BatchWorkspace& ThreadBatchWorkspace() {
  thread_local BatchWorkspace ws;
  return ws;
}

BatchArgs ParseBatchArgs(int n_max, const std::string& mode, py::handle max_ms_per_token,
                         const std::string& drafter, double t_draft_ms, double t_aux_ms,
                         double draft_batch_growth, double acceptance_scale, bool validate,
                         py::handle layout, py::handle tree_mask_mode, py::handle draft_token_num,
                         int64_t pad_token) {
  BatchArgs a;
  planner::BatchPlanOptions& o = a.options;
  o.mode = static_cast<BudgetMode>(ParseBudgetMode(mode));
  if (n_max < 0 || n_max > planner::kMaxBatchNodes) {
    ThrowInvalid(absl::StrCat("n_max = ", n_max, ": must be in [0, ", planner::kMaxBatchNodes,
                              "] (draft nodes over the batch)"));
  }
  o.n_max = n_max;
  if (!max_ms_per_token.is_none()) {
    // The operation checks the bound and the mode (ops::Validate, its one home).
    const double x = ReadFloat(max_ms_per_token, "max_ms_per_token");
    o.objective = planner::BatchObjective::kLatencyBound;
    o.max_seconds_per_token = x * 1e-3;
  }
  o.acceptance_scale = acceptance_scale;
  o.validate = validate;
  a.drafter = DrafterArgs{drafter, t_draft_ms, t_aux_ms, draft_batch_growth};
  if (!layout.is_none()) {
    const std::string l = py::isinstance<py::str>(layout) ? layout.cast<std::string>() : "?";
    if (l == "ragged") {
      a.layout = LayoutKind::kRagged;
    } else if (l == "sglang") {
      a.layout = LayoutKind::kSglang;
    } else {
      ThrowInvalid(absl::StrCat("layout = ", py::repr(layout).cast<std::string>(),
                                ": unknown (known: None, 'ragged', 'sglang')"));
    }
  }
  if (a.layout == LayoutKind::kSglang) {
    a.sglang.mode = ParseTreeMaskMode(tree_mask_mode);
    const int64_t d = draft_token_num.is_none() ? 0 : ReadInt(draft_token_num, "draft_token_num");
    if (d < 0 || d > planner::kMaxTreeNodes) {
      ThrowInvalid(absl::StrCat("draft_token_num = ", d, ": must be in [0, ",
                                planner::kMaxTreeNodes, "] (0 or None = the largest tree)"));
    }
    a.sglang.draft_token_num = static_cast<int>(d);
    a.sglang.pad_token = pad_token;
  }
  return a;
}

std::optional<ops::CostView> BatchCostView(const BatchWorkspace& ws, const PyCost* cost,
                                           const BatchArgs& args,
                                           std::shared_ptr<const costmodel::StepModel>* hold) {
  // The drafter cost of the batch's largest gamma; a drafter architecture's step is priced by
  // the operation at the batch's mean context.
  const costmodel::DrafterCost checked =
      MakeDrafter(args.drafter, ops::MaxGamma(ws.requests));  // checks the keywords
  if (cost == nullptr) return std::nullopt;
  ops::CostView view = CostViewOf(*cost, args.drafter, checked.gamma, hold);
  return view;
}

py::object RunBatch(BatchWorkspace* ws, const PyCost* cost, const BatchArgs& args) {
  const planner::BatchPlanOptions& o = args.options;
  if (cost == nullptr &&
      (o.mode != BudgetMode::kFixed || o.objective != planner::BatchObjective::kGoodput)) {
    ThrowInvalid(absl::StrCat("cost = None: mode '", BudgetModeName(static_cast<int>(o.mode)),
                              "' prices every N; pass cost=specplan.Cost(gpu=..., model=...) or "
                              "mode='fixed'"));
  }
  std::shared_ptr<const costmodel::StepModel> hold;
  const std::optional<ops::CostView> view = BatchCostView(*ws, cost, args, &hold);

  auto result = std::make_unique<PyBatchPlan>();
  absl::Status st;
  {
    py::gil_scoped_release release;
    // ops::PlanBatch (the CLI's `specplan plan-batch`): the requests and the result's recycled
    // buffers are swapped in and out of the operation's request and result, not copied.
    thread_local ops::PlanBatchRequest req;
    thread_local ops::PlanBatchResult out;
    using std::swap;
    swap(req.requests, ws->requests);
    req.options = o;
    req.t_draft_ms = args.drafter.t_draft_ms;
    req.draft_batch_growth = args.drafter.draft_batch_growth;
    req.compute_outputs = false;  // BatchPlan.to_dict computes them when asked
    req.layout = args.layout == LayoutKind::kRagged   ? ops::BatchLayoutKind::kRagged
                 : args.layout == LayoutKind::kSglang ? ops::BatchLayoutKind::kSglang
                                                      : ops::BatchLayoutKind::kNone;
    req.sglang = args.sglang;
    swap(out.plan, result->plan);
    swap(out.contexts, result->c);
    swap(out.ragged, result->ragged);
    swap(out.sglang, result->sglang);
    st = ops::PlanBatchInto(req, view ? &*view : nullptr, &ws->planner, &out);
    swap(out.plan, result->plan);
    swap(out.contexts, result->c);
    swap(out.ragged, result->ragged);
    swap(out.sglang, result->sglang);
    swap(req.requests, ws->requests);
  }
  ThrowIfError(st);
  result->b = static_cast<int>(ws->requests.size());
  result->layout = args.layout;
  result->mode = static_cast<int>(o.mode);
  result->n_max = o.n_max;
  result->latency_bound = o.objective == planner::BatchObjective::kLatencyBound;
  if (view) {
    result->latency_model = view->latency_kind;
    result->profile = view->profile_id;
  }
  return py::cast(std::move(result));
}

}  // namespace specplan::python
