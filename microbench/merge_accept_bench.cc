// Benchmarks of merged-tree dual drafting and acceptance (planner/tree/merge.h,
// planner/acceptance/acceptance.h). Workspaces and outputs are reused across iterations, as an
// engine would on its decode loop.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "planner/acceptance/acceptance.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::planner {
namespace {

// A bushy draft tree of n nodes (root included), with path_probs decreasing along paths.
Tree MakeTree(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tree t;
  t.Reserve(n);
  t.ResetRoot(0);
  for (int i = 1; i < n; ++i) {
    const int parent = static_cast<int>(rng() % i);
    const double edge = 0.1 + 0.9 * static_cast<double>(rng() % 1000) / 1000.0;
    t.AddNode(parent, static_cast<int32_t>(rng() % vocab), t.path_probs[parent] * edge);
  }
  return t;
}

// Args: nodes per input tree, dedup (0/1), n_max (-1: none).
void BM_MergeTrees(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Tree a = MakeTree(n, 32, 1);
  const Tree b = MakeTree(n, 32, 2);
  MergeOptions options;
  options.dedup = state.range(1) != 0;
  options.n_max = static_cast<int>(state.range(2));
  MergeWorkspace ws;
  MergedTree out;
  for (auto _ : state) {
    const absl::Status s = MergeTrees(a, b, options, &ws, &out);
    benchmark::DoNotOptimize(s.ok());
    benchmark::DoNotOptimize(out.tree.tokens.data());
  }
  state.counters["merged_nodes"] = out.tree.size();
}
BENCHMARK(BM_MergeTrees)
    ->ArgNames({"n", "dedup", "n_max"})
    ->Args({64, 0, -1})
    ->Args({64, 1, -1})
    ->Args({64, 1, 64})
    ->Args({256, 0, -1})
    ->Args({256, 1, -1})
    ->Args({256, 1, 256});

// Merge plus the verifier inputs (packed mask, positions, retrieve) of the merged tree.
void BM_MergeTreesWithOutputs(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Tree a = MakeTree(n, 32, 1);
  const Tree b = MakeTree(n, 32, 2);
  MergeWorkspace ws;
  MergedTree merged;
  TreeOutputs outputs;
  const TreeOutputOptions out_options;
  for (auto _ : state) {
    const absl::Status s = MergeTrees(a, b, MergeOptions{}, &ws, &merged);
    benchmark::DoNotOptimize(s.ok());
    ComputeTreeOutputs(merged.tree, out_options, &outputs);
    benchmark::DoNotOptimize(outputs.mask_packed.data());
  }
}
BENCHMARK(BM_MergeTreesWithOutputs)->ArgName("n")->Arg(64)->Arg(256);

// Greedy acceptance on a tree of n nodes; argmax chosen so that a long path matches.
void BM_AcceptGreedy(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int vocab = 4;
  const Tree t = MakeTree(n, vocab, 3);
  std::mt19937_64 rng(4);
  std::vector<int32_t> argmax(n);
  for (int32_t& x : argmax) x = static_cast<int32_t>(rng() % vocab);
  GreedyAcceptWorkspace ws;
  AcceptResult r;
  for (auto _ : state) {
    AcceptGreedy(t, argmax, &ws, &r);
    benchmark::DoNotOptimize(r.bonus_token);
  }
  state.counters["accepted"] = r.accepted_length;
}
BENCHMARK(BM_AcceptGreedy)->ArgName("n")->Arg(64)->Arg(1024);

// Rejection-sampling acceptance over a small tree with a real-sized vocabulary row per node.
void BM_AcceptSampling(benchmark::State& state) {
  const int n = 64;
  const int vocab = static_cast<int>(state.range(0));
  const Tree t = MakeTree(n, vocab, 5);
  std::mt19937_64 rng(6);
  std::vector<float> target(static_cast<size_t>(n) * vocab);
  for (float& p : target) p = static_cast<float>(rng() % 1000 + 1);
  std::vector<float> draft = target;
  SampleAcceptWorkspace ws;
  AcceptResult r;
  const DraftMode mode = state.range(1) ? DraftMode::kWithReplacement : DraftMode::kPointMass;
  for (auto _ : state) {
    AcceptSampling(t, vocab, target, draft, mode, rng, &ws, &r);
    benchmark::DoNotOptimize(r.bonus_token);
  }
}
BENCHMARK(BM_AcceptSampling)
    ->ArgNames({"vocab", "draft_probs"})
    ->Args({32000, 0})
    ->Args({32000, 1});

}  // namespace
}  // namespace specplan::planner

BENCHMARK_MAIN();
