// Composing the shipped engine-grade profiles (costmodel/compose/compose.h): the 9 engine folders
// of data/kernels/ x 3 models, loading the tables included, as `specplan profiles compose` does.
// The goal (issue: engine-grade costs) is all 27 in under 10 s.
#include <benchmark/benchmark.h>

#include <string>

#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "util/check.h"

namespace {

const char* kFolders[] = {
    "a100_sxm/sglang-0.5.10", "a100_sxm/vllm-0.14.0", "a100_sxm/trtllm-1.0.0",
    "h100_sxm/sglang-0.5.14", "h100_sxm/vllm-0.24.0", "h100_sxm/trtllm-1.3.0rc20",
    "l40s/sglang-0.5.14",     "l40s/vllm-0.24.0",     "l40s/trtllm-1.3.0rc20"};

void BM_ComposeAllShippedProfiles(benchmark::State& state) {
  for (auto _ : state) {
    int composed = 0;
    for (const char* folder : kFolders) {
      auto tables = specplan::costmodel::LoadEngineKernelTables(std::string(SPECPLAN_SOURCE_DIR) +
                                                                "/data/kernels/" + folder);
      SPECPLAN_CHECK(tables.ok());
      for (const char* model : {"qwen3-8b", "qwen3-4b", "llama-3.1-8b"}) {
        auto p = specplan::costmodel::ComposeProfile(*tables, model, {});
        SPECPLAN_CHECK(p.ok());
        benchmark::DoNotOptimize(p->table);
        ++composed;
      }
    }
    SPECPLAN_CHECK(composed == 27);
  }
  state.SetLabel("27 profiles, tables loaded");
}
BENCHMARK(BM_ComposeAllShippedProfiles)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
