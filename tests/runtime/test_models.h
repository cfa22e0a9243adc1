// Shared helpers for the runtime tests: tiny random models and random trees.
#ifndef SPECPLAN_TESTS_RUNTIME_TEST_MODELS_H_
#define SPECPLAN_TESTS_RUNTIME_TEST_MODELS_H_

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "planner/tree.h"
#include "runtime/model_config.h"
#include "runtime/transformer.h"

namespace specplan::runtime::testing {

inline std::unique_ptr<Transformer> TinyModel(const std::string& name, uint64_t seed,
                                              torch::ScalarType dtype = torch::kFloat32) {
  auto config = BuiltinConfig(name);
  EXPECT_TRUE(config.ok()) << config.status();
  RuntimeOptions options;
  options.dtype = dtype;
  auto model = Transformer::CreateRandom(*config, seed, options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// A random tree with `n` draft nodes: each node's parent is uniform over earlier nodes; tokens
// uniform in [0, vocab).
inline planner::Tree RandomTree(int n, int vocab, std::mt19937_64& rng) {
  planner::Tree t;
  t.ResetRoot(static_cast<int32_t>(rng() % vocab));
  for (int i = 1; i <= n; ++i) {
    const int parent = static_cast<int>(rng() % i);
    t.AddNode(parent, static_cast<int32_t>(rng() % vocab), 1.0);
  }
  return t;
}

inline std::vector<int64_t> RandomTokens(int n, int vocab, std::mt19937_64& rng) {
  std::vector<int64_t> t(n);
  for (auto& x : t) x = static_cast<int64_t>(rng() % vocab);
  return t;
}

// Greedy continuation by full recomputation (no cache reuse): the simplest reference.
inline std::vector<int64_t> ReferenceGreedy(const Transformer& model, std::vector<int64_t> seq,
                                            int new_tokens) {
  std::vector<int64_t> out;
  for (int i = 0; i < new_tokens; ++i) {
    KvCache cache = model.NewCache(static_cast<int64_t>(seq.size()));
    torch::Tensor logits = model.ForwardCausal(seq, 0, &cache);
    const int64_t next = logits[logits.size(0) - 1].argmax().item<int64_t>();
    out.push_back(next);
    seq.push_back(next);
  }
  return out;
}

}  // namespace specplan::runtime::testing

#endif  // SPECPLAN_TESTS_RUNTIME_TEST_MODELS_H_
