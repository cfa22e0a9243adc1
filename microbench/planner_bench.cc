// Planner benchmarks (Google Benchmark). Planning cost is on the decode critical path, so every
// benchmark reuses the planner workspace, the plan and the output buffers (no allocation after the
// first iteration) and counts all outputs an engine needs.
//
// BENCH: BM_BestFirstController/{64,256,1024}   controller (first decrease), gamma=16, K=8,
//                                                roofline-like fake latency, + outputs
// BENCH: BM_BestFirstScan/{64,256,1024}         scan mode (argmax over n = 0..N_max) + outputs
// BENCH: BM_BestFirstFixed/{64,256,1024}        fixed budget N + outputs (positions, packed mask,
//                                                retrieve)
// BENCH: BM_BestFirstFixedPlanOnly/{64,256,1024} fixed budget N, planning only (no outputs)
// BENCH: BM_BestFirstDepthController/{64,256,1024} controller per depth cap d = 1..16 (a drafter
//                                                that pays a forward per level) + outputs
// BENCH: BM_BestFirstDepthScan/{64,256,1024}    scan per depth cap + outputs
// BENCH: BM_TreeOutputs/{64,256,1024}           outputs only for a fixed-budget tree of N nodes
// BENCH: BM_TreeOutputsDense/{64,256,1024}      outputs incl. dense [s][s] uint8 mask
// BENCH: BM_PathConditionedFixed/{64,256}       path-conditioned step loop, marginals provider
// BENCH: BM_BatchLayout                         ragged batch layout (engine_layouts.h) of B = 64
//                                                trees of 64 nodes (63 draft + root), c = 1024
// BENCH: BM_SglangLayout/{mode}/{nodes}         SGLang layout of B = 64 trees of `nodes` nodes,
//                                                c = 1024; mode 0 FULL_MASK, 1 QLEN_ONLY,
//                                                2 QLEN_ONLY_BITPACKING
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/latency/latency_model.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/policies/path_conditioned.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::planner {
namespace {

// Roofline-like verification latency of an 8B model on an H100-class GPU: max(weight streaming,
// compute) plus KV reads and a fixed launch overhead. Convex in s.
class FakeRooflineLatency : public costmodel::LatencyModel {
 public:
  double VerifySeconds(int64_t s, int64_t c) const override {
    const double weight_bytes = 16e9, bw = 3.0e12, flops_per_token = 16e9, peak = 700e12;
    const double kv_bytes_per_token = 131072.0;
    const double memory = (weight_bytes + kv_bytes_per_token * (c + s)) / bw;
    const double compute = flops_per_token * s / peak + 4.0 * 4096 * 36 * s * (c + s) / peak;
    return 2e-4 + std::max(memory, compute);
  }
  std::string Kind() const override { return "fake_roofline"; }
};

Marginals BenchMarginals(int gamma = 16, int k = 8, unsigned seed = 1234) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Marginals m;
  m.root_token = 1;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    std::vector<double> row(k);
    double sum = 0;
    for (auto& x : row) sum += (x = std::pow(u(rng), 3.0));
    for (auto& x : row) x = x / sum * 0.95;
    std::sort(row.begin(), row.end(), std::greater<double>());
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(1000 * d + r);
      m.probs.push_back(static_cast<float>(row[r]));
    }
  }
  return m;
}

void RunMode(benchmark::State& state, BudgetMode mode, bool outputs, bool by_level = false) {
  const Marginals m = BenchMarginals();
  FakeRooflineLatency latency;
  costmodel::DrafterCost drafter;
  drafter.t_net_s = 1e-3;
  if (by_level) {  // an EAGLE-like head: 0.4 ms extend, 0.3 ms per further level
    drafter.depth_s.assign(m.gamma + 1, 0.0);
    for (int d = 1; d <= m.gamma; ++d) drafter.depth_s[d] = 4e-4 + 3e-4 * (d - 1);
    drafter.t_net_s = drafter.depth_s[m.gamma];
  }
  const costmodel::CycleCost cost(&latency, drafter, 2e-4, 1024);
  BestFirstOptions options;
  options.mode = mode;
  options.n_max = static_cast<int>(state.range(0));
  BestFirstPlanner planner;
  BestFirstPlan plan;
  TreeOutputs out;
  TreeOutputOptions out_options;
  out_options.position_offset = 1024;
  for (auto _ : state) {
    if (!planner.Plan(m, options, mode == BudgetMode::kFixed ? nullptr : &cost, &plan).ok()) {
      state.SkipWithError("plan failed");
      break;
    }
    if (outputs) ComputeTreeOutputs(plan.tree, out_options, &out);
    benchmark::DoNotOptimize(plan.tree.tokens.data());
    benchmark::DoNotOptimize(out.mask_packed.data());
  }
  state.counters["n_star"] = plan.n;
  state.counters["expected_accepted"] = plan.expected_accepted;
}

void BM_BestFirstController(benchmark::State& state) {
  RunMode(state, BudgetMode::kController, true);
}
void BM_BestFirstScan(benchmark::State& state) { RunMode(state, BudgetMode::kScan, true); }
void BM_BestFirstFixed(benchmark::State& state) { RunMode(state, BudgetMode::kFixed, true); }
void BM_BestFirstFixedPlanOnly(benchmark::State& state) {
  RunMode(state, BudgetMode::kFixed, false);
}
void BM_BestFirstDepthController(benchmark::State& state) {
  RunMode(state, BudgetMode::kController, true, /*by_level=*/true);
}
void BM_BestFirstDepthScan(benchmark::State& state) {
  RunMode(state, BudgetMode::kScan, true, /*by_level=*/true);
}

void RunOutputs(benchmark::State& state, bool dense) {
  const Marginals m = BenchMarginals();
  BestFirstPlanner planner;
  BestFirstPlan plan;
  if (!planner.PlanFixed(m, static_cast<int>(state.range(0)), &plan).ok()) {
    state.SkipWithError("plan failed");
    return;
  }
  TreeOutputs out;
  TreeOutputOptions options;
  options.dense_mask = dense;
  for (auto _ : state) {
    ComputeTreeOutputs(plan.tree, options, &out);
    benchmark::DoNotOptimize(out.mask_packed.data());
    benchmark::DoNotOptimize(out.mask_dense.data());
  }
  state.counters["leaves"] = out.num_leaves;
}
void BM_TreeOutputs(benchmark::State& state) { RunOutputs(state, false); }
void BM_TreeOutputsDense(benchmark::State& state) { RunOutputs(state, true); }

class MarginalsProvider : public DistributionProvider {
 public:
  explicit MarginalsProvider(const Marginals& m) : m_(m) {}
  absl::Status Expand(const Tree& tree, absl::Span<const int32_t> nodes, int k,
                      absl::Span<TokenProb> out, absl::Span<int32_t> counts) override {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int d = tree.depths[nodes[i]];
      counts[i] = k;
      for (int r = 0; r < k; ++r) out[i * k + r] = {m_.token(d, r), m_.prob(d, r)};
    }
    return absl::OkStatus();
  }

 private:
  const Marginals& m_;
};

void BM_PathConditionedFixed(benchmark::State& state) {
  const Marginals m = BenchMarginals();
  MarginalsProvider provider(m);
  PathConditionedPlanner planner;
  PathConditionedOptions options;
  options.budget.mode = BudgetMode::kFixed;
  options.budget.n_max = static_cast<int>(state.range(0));
  options.gamma = m.gamma;
  options.k = m.k;
  BestFirstPlan plan;
  for (auto _ : state) {
    if (!planner.Run(m.root_token, options, nullptr, provider, &plan).ok()) {
      state.SkipWithError("plan failed");
      break;
    }
    benchmark::DoNotOptimize(plan.tree.tokens.data());
  }
  state.counters["requests"] = planner.num_requests();
  state.counters["expanded"] = planner.num_expanded();
}

// B best-first trees of `nodes` nodes (root included), each from its own random marginals.
std::vector<Tree> BenchBatch(int batch, int nodes) {
  std::vector<Tree> trees;
  BestFirstPlanner planner;
  BestFirstPlan plan;
  for (int b = 0; b < batch; ++b) {
    if (!planner.PlanFixed(BenchMarginals(16, 8, 1000 + b), nodes - 1, &plan).ok()) return {};
    trees.push_back(plan.tree);
  }
  return trees;
}

void BM_BatchLayout(benchmark::State& state) {
  const std::vector<Tree> trees = BenchBatch(64, 64);
  const std::vector<int64_t> context(trees.size(), 1024);
  BatchLayout out;
  for (auto _ : state) {
    if (!ComputeBatchLayout(trees, context, &out).ok()) {
      state.SkipWithError("layout failed");
      break;
    }
    benchmark::DoNotOptimize(out.mask_packed.data());
    benchmark::DoNotOptimize(out.retrieve.data());
  }
  state.counters["tokens"] = out.total_tokens;
}

void BM_SglangLayout(benchmark::State& state) {
  const std::vector<Tree> trees = BenchBatch(64, static_cast<int>(state.range(1)));
  const std::vector<int64_t> context(trees.size(), 1024);
  SglangLayoutOptions options;
  options.mode = static_cast<SglangTreeMaskMode>(state.range(0));
  SglangLayout out;
  for (auto _ : state) {
    if (!ComputeSglangLayout(trees, context, options, &out).ok()) {
      state.SkipWithError("layout failed");
      break;
    }
    benchmark::DoNotOptimize(out.tree_mask.data());
    benchmark::DoNotOptimize(out.retrive_next_sibling.data());
  }
  state.counters["mask_bytes"] = static_cast<double>(out.tree_mask.size());
}

BENCHMARK(BM_BestFirstController)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BestFirstScan)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BestFirstFixed)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BestFirstFixedPlanOnly)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BestFirstDepthController)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BestFirstDepthScan)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TreeOutputs)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TreeOutputsDense)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PathConditionedFixed)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BatchLayout)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SglangLayout)
    ->Args({0, 64})
    ->Args({1, 64})
    ->Args({1, 32})
    ->Args({2, 32})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace specplan::planner

// ---------------------------------------------------------------------------------------------
// Merge / acceptance benchmarks (other helpers): add below this line.
// ---------------------------------------------------------------------------------------------

BENCHMARK_MAIN();
