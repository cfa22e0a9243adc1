// The online replay (whatif/online.h) at scale: 10,000 requests at each of 8 Poisson rates
// (1 .. 48 requests/s), chains of K = 3 on the bundled H100 Llama-3.1-8B vLLM profile (composed
// kernel tables, EAGLE-3 drafter, drafting tabulated as the operation does, vLLM's CUDA-graph
// ladder on the target's pass: costmodel/step/cuda_graphs.h), vLLM's default limits
// for an 80 GB GPU (1024 running requests, 8192 tokens per step, chunked prefill) and the KV cache
// that gpu_memory_utilization 0.9 leaves. Prompts 128..1024 tokens, outputs 64..256, acceptance
// drawn from per-position rates 0.8, 0.6, 0.45. The budget (issue 53): <= 10 s on the 2-core VM
// for the whole sweep (BM_OnlineSweep; docs/online.md reports the figure and the machine).
//   BM_OnlineSweep   one iteration = the 8 replays
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "costmodel/cost_spec.h"
#include "costmodel/step/step_model.h"
#include "util/check.h"
#include "whatif/online.h"

namespace {

using specplan::costmodel::ResolvedLatencyModel;
using specplan::costmodel::StepModel;
namespace whatif = specplan::whatif;

const ResolvedLatencyModel& Vllm() {
  static const ResolvedLatencyModel* r = [] {
    specplan::costmodel::CostSpec spec;
    spec.model = "llama-3.1-8b";
    spec.gpu = "h100";
    spec.engine = "vllm";
    spec.calib_dir = std::string(SPECPLAN_SOURCE_DIR) + "/calib";
    auto resolved = specplan::costmodel::ResolveCost(spec);
    SPECPLAN_CHECK(resolved.ok(), "the bundled h100 llama-3.1-8b vllm profile");
    return new ResolvedLatencyModel(*std::move(resolved));
  }();
  return *r;
}

void BM_OnlineSweep(benchmark::State& state) {
  // The step as `whatif --online` builds it: vLLM's CUDA-graph ladder on the target's pass.
  specplan::costmodel::StepOptions options;
  specplan::costmodel::CudaGraphs graphs;
  SPECPLAN_CHECK(
      specplan::costmodel::DefaultCudaGraphs("vllm", Vllm().gpu_spec.mem_bytes, &graphs));
  options.graphs = graphs;
  auto step = StepModel::Create(Vllm().model.get(), Vllm().model_spec, Vllm().gpu_spec,
                                &Vllm().drafters, "vllm", options);
  SPECPLAN_CHECK(step.ok());
  step->TabulateDraft();
  const whatif::StepModelPricer pricer(&*step);
  std::vector<whatif::OnlineRequest> reqs(10000);
  std::mt19937_64 rng(1);
  for (whatif::OnlineRequest& q : reqs) {
    q.prompt_tokens = std::uniform_int_distribution<int64_t>(128, 1024)(rng);
    q.output_tokens = std::uniform_int_distribution<int64_t>(64, 256)(rng);
  }
  whatif::OnlineWorkload work;
  work.rates = {0.8, 0.6, 0.45};
  whatif::OnlineOptions o;
  o.chain_lengths = {3};
  o.limits = whatif::DefaultEngineLimits("vllm", Vllm().gpu_spec.mem_bytes, true);
  auto kv =
      whatif::KvCacheTokens(Vllm().model_spec, Vllm().gpu_spec, 0.9, "gpu_memory_utilization");
  SPECPLAN_CHECK(kv.ok());
  o.limits.kv_cache_tokens = *kv;
  o.arrivals.rates = {1, 2, 4, 8, 16, 24, 32, 48};
  int64_t steps = 0;
  for (auto _ : state) {
    auto report = whatif::RunOnline(reqs, work, pricer, o);
    SPECPLAN_CHECK(report.ok());
    steps = 0;
    for (const whatif::OnlineRow& row : report->rows) steps += row.steps;
    benchmark::DoNotOptimize(report->rows.back().throughput);
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["requests"] = 8.0 * static_cast<double>(reqs.size());
}
BENCHMARK(BM_OnlineSweep)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
