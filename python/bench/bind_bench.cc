// specplan_bench._specplan_bench: a test-only extension module (built into build/python_bench/,
// never installed) that times the PlanBatch call in C++ with no Python in between, so that
// python/bench/plan_batch_bench.py can compare the public Python call (specplan.plan_batch_arrays)
// with the same call from C++ on one machine: ops::PlanBatchInto, the operation both run. It links
// the same binding code as specplan._specplan (specplan_python_core), reads the same arrays with
// the same reader and builds the same cost view, and takes the specplan.Cost objects of the public
// module (pybind11 shares class types between modules).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batch.h"
#include "microbench/bench_marginals.h"
#include "ops/plan_batch.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::python {
namespace {

using microbench::BenchMarginals;  // the workload microbench/batch_plan_bench.cc times

py::dict BenchBatch(int b) {
  if (b < 1 || b > planner::kMaxBatchRequests) {
    ThrowInvalid(absl::StrCat("b = ", b, ": must be in [1, ", planner::kMaxBatchRequests, "]"));
  }
  std::vector<int64_t> roots, c;
  std::vector<int32_t> tokens;
  std::vector<float> probs;
  for (int i = 0; i < b; ++i) {
    const planner::Marginals mg = BenchMarginals(100 + i);
    roots.push_back(mg.root_token);
    tokens.insert(tokens.end(), mg.tokens.begin(), mg.tokens.end());
    probs.insert(probs.end(), mg.probs.begin(), mg.probs.end());
    c.push_back(512 * (1 + i % 8));
  }
  py::dict d;
  d["root_tokens"] = Own(std::move(roots));
  d["tokens"] = Own(std::move(tokens), {b, 16, 8});
  d["probs"] = Own(std::move(probs), {b, 16, 8});
  d["context_lens"] = Own(std::move(c));
  return d;
}

py::array_t<double> PlanBatchCpp(py::object root_tokens, py::object tokens, py::object probs,
                                 py::object context_lens, py::object cost, int n_max,
                                 const std::string& mode, double t_draft_ms, double t_aux_ms,
                                 const std::string& outputs, int repeats) {
  if (outputs != "ragged" && outputs != "tree_outputs" && outputs != "none") {
    ThrowInvalid(
        absl::StrCat("outputs = '", outputs, "': unknown (known: ragged, tree_outputs, none)"));
  }
  if (repeats < 1) ThrowInvalid(absl::StrCat("repeats = ", repeats, ": must be >= 1"));
  // The workload read once, by the reader plan_batch_arrays uses, into this module's workspace;
  // the cycle priced as plan_batch_arrays prices it.
  const BatchArgs args = ParseBatchArgs(n_max, mode, py::none(), "parallel", t_draft_ms, t_aux_ms,
                                        0, 1.0, true, py::none(), py::none(), py::none(), 0);
  BatchWorkspace ws;
  ReadBatchArrays(root_tokens, tokens, probs, context_lens, py::none(), py::none(), &ws);
  const PyCost* pc = ReadCost(cost);
  if (pc == nullptr && args.options.mode != planner::BudgetMode::kFixed) {
    ThrowInvalid("cost = None: only mode 'fixed' plans without a cost");
  }
  std::shared_ptr<const costmodel::StepModel> hold;
  const std::optional<ops::CostView> view = BatchCostView(ws, pc, args, &hold);
  // The operation's request, as plan_batch_arrays builds it (outputs: the ragged layout, or each
  // request's tree outputs as microbench/batch_plan_bench.cc computes them, or none).
  ops::PlanBatchRequest req;
  req.requests = ws.requests;
  req.options = args.options;
  req.t_draft_ms = t_draft_ms;
  req.compute_outputs = outputs == "tree_outputs";
  req.outputs = planner::TreeOutputOptions{};
  req.layout = outputs == "ragged" ? ops::BatchLayoutKind::kRagged : ops::BatchLayoutKind::kNone;
  std::vector<double> seconds(static_cast<size_t>(repeats));
  absl::Status st;
  {
    py::gil_scoped_release release;
    // Kept across calls, as an engine keeps them (the Python path reuses its planner and its
    // results' buffers too).
    thread_local planner::BatchPlanner planner;
    thread_local ops::PlanBatchResult out;
    for (int r = 0; r < repeats && st.ok(); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      st = ops::PlanBatchInto(req, view ? &*view : nullptr, &planner, &out);
      seconds[static_cast<size_t>(r)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  ThrowIfError(st);
  return Own(std::move(seconds));
}

}  // namespace
}  // namespace specplan::python

PYBIND11_MODULE(_specplan_bench, m) {
  namespace sp = specplan::python;
  m.doc() = "Test-only PlanBatch timing helpers (python/bench/plan_batch_bench.py); not installed.";
  sp::RegisterErrors(m);
  m.def("bench_batch", &sp::BenchBatch, sp::py::arg("b"),
        "microbench/batch_plan_bench.cc's batch of b requests (seeds 100 + i, c = 512 (1 + i % 8)) "
        "as the arrays specplan.plan_batch_arrays takes (a dict of root_tokens, tokens, probs, "
        "context_lens).");
  m.def("plan_batch_cpp", &sp::PlanBatchCpp, sp::py::arg("root_tokens"), sp::py::arg("tokens"),
        sp::py::arg("probs"), sp::py::arg("context_lens"), sp::py::arg("cost") = sp::py::none(),
        sp::py::kw_only(), sp::py::arg("n_max") = 4096, sp::py::arg("mode") = "fixed",
        sp::py::arg("t_draft_ms") = 0.5, sp::py::arg("t_aux_ms") = 0.1,
        sp::py::arg("outputs") = "ragged", sp::py::arg("repeats") = 1000,
        "Times BatchPlanner::Plan + outputs ('ragged': ComputeBatchLayout, as plan_batch_arrays("
        "layout='ragged') computes; 'tree_outputs': ComputeTreeOutputs per request, as "
        "microbench/batch_plan_bench.cc does; 'none') in a C++ loop with one planner, plan and "
        "output buffers reused; returns the seconds of each repeat (float64 [repeats]).");
}
