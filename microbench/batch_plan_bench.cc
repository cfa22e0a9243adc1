// PlanBatch benchmarks (Google Benchmark): one tree budget over B requests, gamma = 16, K = 8,
// the H100 x Qwen3-8B roofline, requests at contexts 512..4096. Every benchmark reuses the
// planner, the plan and the per-request output buffers, and counts the outputs an engine needs
// (positions, packed mask and retrieve for every request's tree).
//
// BENCH: BM_PlanBatchFixed/{8,64}/4096       fixed total budget N = 4096 + outputs
// BENCH: BM_PlanBatchFixedPrevalidated/{8,64}/4096  the same with the marginals validated once
//                                             before the loop (ValidateMarginals per request) and
//                                             BatchPlanOptions::validate = false in the timed
//                                             calls, as a caller that checks marginals on arrival
// BENCH: BM_PlanBatchFixedPlanOnly/{8,64}/4096  BatchPlanner::Plan alone (validation included),
//                                             without the outputs
// BENCH: BM_PlanBatchScan/{8,64}/4096        argmax of the goodput over N = 0..4096 + outputs
// BENCH: BM_PlanBatchController/{8,64}/4096  first decrease of the goodput + outputs
#include <benchmark/benchmark.h>

#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "microbench/bench_marginals.h"
#include "planner/batch/batch_plan.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::planner {
namespace {

using microbench::BenchMarginals;

void RunBatch(benchmark::State& state, BudgetMode mode, bool validate = true, bool outputs = true) {
  const int B = static_cast<int>(state.range(0));
  std::vector<Marginals> ms;
  std::vector<BatchRequest> reqs;
  for (int i = 0; i < B; ++i) ms.push_back(BenchMarginals(100 + i));
  for (int i = 0; i < B; ++i) reqs.push_back({&ms[i], 512 * (1 + i % 8)});
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  costmodel::DrafterCost drafter;
  drafter.t_net_s = 5e-4;
  const costmodel::BatchCycleCost cost(&roofline, drafter, 1e-4);
  BatchPlanOptions options;
  options.mode = mode;
  options.n_max = static_cast<int>(state.range(1));
  options.validate = validate;
  if (!validate) {
    for (const Marginals& m : ms) {
      if (!ValidateMarginals(m).ok()) {
        state.SkipWithError("invalid marginals");
        return;
      }
    }
  }
  BatchPlanner planner;
  BatchPlan plan;
  std::vector<TreeOutputs> out(static_cast<size_t>(B));
  int64_t nodes = 0;
  for (auto _ : state) {
    if (!planner.Plan(reqs, options, mode == BudgetMode::kFixed ? nullptr : &cost, &plan).ok()) {
      state.SkipWithError("PlanBatch failed");
      return;
    }
    for (int i = 0; outputs && i < B; ++i) {
      TreeOutputOptions o;
      o.position_offset = reqs[i].c;
      ComputeTreeOutputs(plan.trees[i], o, &out[i]);
    }
    benchmark::DoNotOptimize(out.data());
    nodes = plan.n_total;
  }
  state.counters["N"] = static_cast<double>(nodes);
}

void BM_PlanBatchFixed(benchmark::State& state) { RunBatch(state, BudgetMode::kFixed); }
void BM_PlanBatchFixedPrevalidated(benchmark::State& state) {
  RunBatch(state, BudgetMode::kFixed, /*validate=*/false);
}
void BM_PlanBatchFixedPlanOnly(benchmark::State& state) {
  RunBatch(state, BudgetMode::kFixed, /*validate=*/true, /*outputs=*/false);
}
void BM_PlanBatchScan(benchmark::State& state) { RunBatch(state, BudgetMode::kScan); }
void BM_PlanBatchController(benchmark::State& state) { RunBatch(state, BudgetMode::kController); }

BENCHMARK(BM_PlanBatchFixed)->Args({8, 4096})->Args({64, 4096})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlanBatchFixedPrevalidated)
    ->Args({8, 4096})
    ->Args({64, 4096})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlanBatchFixedPlanOnly)
    ->Args({8, 4096})
    ->Args({64, 4096})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlanBatchScan)->Args({8, 4096})->Args({64, 4096})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlanBatchController)->Args({8, 4096})->Args({64, 4096})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace specplan::planner

BENCHMARK_MAIN();
