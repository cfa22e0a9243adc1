// Benchmark helpers (private, underscored): the workload of microbench/batch_plan_bench.cc as
// arrays, and the same PlanBatch call timed in a C++ loop with no Python in between, so that
// python/bench/plan_batch_bench.py can compare the Python call with the C++ one on one machine.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batch.h"
#include "microbench/bench_marginals.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::python {
using microbench::BenchMarginals;  // the workload microbench/batch_plan_bench.cc times

void BindBench(py::module_& m) {
  m.def(
      "_bench_batch",
      [](int b) {
        if (b < 1 || b > planner::kMaxBatchRequests)
          ThrowInvalid(absl::StrCat("b = ", b, ": must be in [1, 4096]"));
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
      },
      py::arg("b"),
      "microbench/batch_plan_bench.cc's batch of b requests (seeds 100 + i, c = 512 (1 + i % 8)) "
      "as "
      "the arrays plan_batch_arrays takes.");

  m.def(
      "_bench_plan_batch_cpp",
      [](py::object root_tokens, py::object tokens, py::object probs, py::object context_lens,
         py::object cost, int n_max, const std::string& mode, double t_draft_ms, double t_aux_ms,
         const std::string& outputs, int repeats) {
        if (outputs != "ragged" && outputs != "tree_outputs" && outputs != "none") {
          ThrowInvalid(absl::StrCat("outputs = '", outputs,
                                    "': unknown (known: ragged, tree_outputs, none)"));
        }
        if (repeats < 1) ThrowInvalid(absl::StrCat("repeats = ", repeats, ": must be >= 1"));
        // Read the workload once, as plan_batch_arrays reads it.
        py::object plan =
            py::module_::import("specplan._specplan")
                .attr("plan_batch_arrays")(root_tokens, tokens, probs, context_lens, cost,
                                           py::arg("n_max") = n_max, py::arg("mode") = mode,
                                           py::arg("t_draft_ms") = t_draft_ms,
                                           py::arg("t_aux_ms") = t_aux_ms);
        (void)plan;  // the call above checked every argument and filled this thread's workspace
        BatchWorkspace& ws = ThreadBatchWorkspace();
        const PyCost* pc = ReadCost(cost);
        const BatchArgs args =
            ParseBatchArgs(n_max, mode, py::none(), "parallel", t_draft_ms, t_aux_ms, 0, 1.0, true,
                           py::none(), py::none(), py::none(), 0);
        int gamma = 0;
        for (const auto& r : ws.requests) gamma = std::max(gamma, r.marginals->gamma);
        costmodel::DrafterCost drafter = MakeDrafter(args.drafter, gamma);
        std::optional<costmodel::BatchCycleCost> cycle;
        if (pc != nullptr) {
          // Priced as plan_batch_arrays prices it (the step model's cycle with a drafter).
          double t_aux_s = t_aux_ms * 1e-3;
          PriceStep(*pc, args.drafter, gamma, MeanContext(ws.c), &drafter, &t_aux_s);
          cycle.emplace(pc->model.get(), drafter, t_aux_s);
        }
        std::vector<double> seconds(static_cast<size_t>(repeats));
        absl::Status st;
        {
          py::gil_scoped_release release;
          // Kept across calls, as an engine keeps them (the Python path reuses its planner and
          // its results' buffers too).
          thread_local planner::BatchPlanner planner;
          thread_local planner::BatchPlan out;
          thread_local planner::BatchLayout layout;
          thread_local std::vector<planner::TreeOutputs> tree_out;
          tree_out.resize(ws.requests.size());
          for (int r = 0; r < repeats && st.ok(); ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            st = planner.Plan(ws.requests, args.options, cycle ? &*cycle : nullptr, &out);
            if (outputs == "ragged") {
              st.Update(planner::ComputeBatchLayout(out.trees, ws.c, &layout));
            } else if (outputs == "tree_outputs") {
              for (size_t i = 0; i < ws.requests.size(); ++i) {
                planner::TreeOutputOptions o;
                o.position_offset = ws.requests[i].c;
                planner::ComputeTreeOutputs(out.trees[i], o, &tree_out[i]);
              }
            }
            seconds[static_cast<size_t>(r)] =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          }
        }
        ThrowIfError(st);
        return Own(std::move(seconds));
      },
      py::arg("root_tokens"), py::arg("tokens"), py::arg("probs"), py::arg("context_lens"),
      py::arg("cost") = py::none(), py::kw_only(), py::arg("n_max") = 4096,
      py::arg("mode") = "fixed", py::arg("t_draft_ms") = 0.5, py::arg("t_aux_ms") = 0.1,
      py::arg("outputs") = "ragged", py::arg("repeats") = 1000,
      "Times BatchPlanner::Plan + outputs ('ragged': ComputeBatchLayout, as plan_batch_arrays("
      "layout='ragged') computes; 'tree_outputs': ComputeTreeOutputs per request, as "
      "microbench/batch_plan_bench.cc does; 'none') in a C++ loop with one planner, plan and "
      "output "
      "buffers reused; returns the seconds of each repeat (float64 [repeats]).");
}

}  // namespace specplan::python
