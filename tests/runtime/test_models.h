// Shared helpers for the runtime tests: tiny random models, random trees and prompts, reference
// outputs (greedy tokens, exact sampling marginals, other implementations' logits).
#ifndef SPECPLAN_TESTS_RUNTIME_TEST_MODELS_H_
#define SPECPLAN_TESTS_RUNTIME_TEST_MODELS_H_

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"
#include "runtime/decoder.h"
#include "runtime/model_config.h"
#include "runtime/safetensors.h"
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

// The three drafts the exactness tests pair with a target: the target itself (every greedy chain
// is accepted), its first layer (accepted in part), an independent tiny-draft (rarely accepted).
struct DraftKind {
  const char* name;
  std::unique_ptr<Transformer> (*make)(const Transformer& target);
};
inline const DraftKind kDraftKinds[] = {
    {"same", [](const Transformer& t) { return t.Truncated(t.config().num_layers); }},
    {"first_layer", [](const Transformer& t) { return t.Truncated(1); }},
    {"independent", [](const Transformer&) { return TinyModel("tiny-draft", 99); }},
};

// The exactness suites' parameter: a strategy name (ParseStrategy) and an index into kDraftKinds.
using StrategyAndDraft = std::tuple<std::string, int>;

class StrategyAndDraftTest : public ::testing::TestWithParam<StrategyAndDraft> {
 protected:
  Strategy ParamStrategy() const { return *ParseStrategy(std::get<0>(GetParam())); }
  const DraftKind& ParamDraftKind() const { return kDraftKinds[std::get<1>(GetParam())]; }

  // The parameter's strategy with the speculation gate off: every step drafts (the gate's own
  // exactness test is decoder_test.cc's GatedStepsEqualArTokens).
  StrategyOptions UngatedOptions() const {
    StrategyOptions o = StrategyOptions::Defaults(ParamStrategy());
    o.gate.enabled = false;
    return o;
  }

  // What a failure of the parameter's run on the models of `seed` names: "<strategy> draft <kind>
  // seed <seed>".
  std::string RunName(uint64_t seed) const {
    return std::string(StrategyName(ParamStrategy())) + " draft " + ParamDraftKind().name +
           " seed " + std::to_string(seed);
  }

  // The tiny target with weights `seed` and the parameter's draft for it.
  struct TargetAndDraft {
    std::unique_ptr<Transformer> target, draft;
  };
  TargetAndDraft ParamModels(uint64_t seed) const {
    TargetAndDraft m;
    m.target = TinyModel("tiny", seed);
    m.draft = ParamDraftKind().make(*m.target);
    return m;
  }
};

// Every one of `strategies` with every draft kind, for INSTANTIATE_TEST_SUITE_P.
inline auto WithEveryDraftKind(std::vector<std::string> strategies) {
  return ::testing::Combine(::testing::ValuesIn(std::move(strategies)),
                            ::testing::Range(0, static_cast<int>(std::size(kDraftKinds))));
}

// The test name of a parameter: "bestfirst_first_layer".
inline std::string StrategyAndDraftName(const ::testing::TestParamInfo<StrategyAndDraft>& info) {
  return std::get<0>(info.param) + "_" + kDraftKinds[std::get<1>(info.param)].name;
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

inline std::vector<planner::TokenId> RandomTokens(int n, int vocab, std::mt19937_64& rng) {
  std::vector<planner::TokenId> t(n);
  for (auto& x : t) x = static_cast<planner::TokenId>(rng() % vocab);
  return t;
}

// ||got - ref|| / ||ref|| in float64 on the host (logits rows or blocks, on any device).
inline double RelativeError(const torch::Tensor& got, const torch::Tensor& ref) {
  const torch::Tensor g = got.to(torch::kCPU, torch::kFloat64);
  const torch::Tensor r = ref.to(torch::kCPU, torch::kFloat64);
  return (g - r).norm().item<double>() / r.norm().item<double>();
}

// Reference logits of another implementation for given ids (tests/runtime/data: HuggingFace's
// reference.safetensors, llama.cpp's logits.safetensors): tensors "input_ids" [T] int64 and
// "logits" [T][V] float32.
struct ReferenceLogits {
  std::vector<planner::TokenId> ids;
  torch::Tensor logits;  // [T][V] float32
};
inline ReferenceLogits LoadReferenceLogits(const std::string& path) {
  auto file = SafetensorsFile::Open(path);
  EXPECT_TRUE(file.ok()) << path << ": " << file.status();
  ReferenceLogits r;
  if (!file.ok()) return r;
  const torch::Tensor ids = *(*file)->Get("input_ids");
  r.ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  r.logits = (*file)->Get("logits")->clone();
  return r;
}

// Logits [T][V] of every token of `seq` by a fresh causal pass from position 0.
inline torch::Tensor CausalLogits(const Transformer& model,
                                  const std::vector<planner::TokenId>& seq) {
  KvCache cache = model.NewCache(static_cast<int64_t>(seq.size()));
  return model.ForwardCausal(seq, 0, &cache);
}

// Logits [V] of the last token of `seq` by a fresh causal pass.
inline torch::Tensor LastLogits(const Transformer& model,
                                const std::vector<planner::TokenId>& seq) {
  torch::Tensor logits = CausalLogits(model, seq);
  return logits[logits.size(0) - 1];
}

// One-pass verification of `tree` over the c tokens already in `cache` (depth positions offset by
// c, the tree's ancestor mask): logits [s][V] on the model's device.
inline torch::Tensor VerifyTree(const Transformer& model, const planner::Tree& tree, int64_t c,
                                KvCache* cache) {
  planner::TreeOutputOptions opt;
  opt.position_offset = c;
  opt.dense_mask = true;
  planner::TreeOutputs out;
  planner::ComputeTreeOutputs(tree, opt, &out);
  return model.Forward(
      torch::tensor(tree.tokens, torch::kInt32), torch::tensor(out.positions, torch::kInt64), c,
      TreeAttentionMask(out.mask_dense, tree.size(), c, model.options().device), cache);
}

// The root-to-`node` path of `tree`: its tokens and the cache slots (c + index) verification wrote
// them to.
struct TreePath {
  std::vector<planner::TokenId> tokens;
  std::vector<int64_t> slots;
};
inline TreePath PathTo(const planner::Tree& tree, int node, int64_t c) {
  TreePath p;
  for (int u = node; u >= 0; u = tree.parents[u]) {
    p.tokens.insert(p.tokens.begin(), tree.tokens[u]);
    p.slots.insert(p.slots.begin(), c + u);
  }
  return p;
}

// c random tokens (ids below `vocab`) prefilled into a fresh 64-slot cache of `model`, then a
// random tree of n draft nodes verified after them; `accepted` is the path to the tree's last node.
struct VerifiedRandomTree {
  std::vector<planner::TokenId> prefix;
  planner::Tree tree;
  KvCache cache;
  TreePath accepted;
};
inline VerifiedRandomTree VerifyRandomTree(const Transformer& model, int vocab, int c, int n,
                                           std::mt19937_64& rng) {
  VerifiedRandomTree v;
  v.prefix = RandomTokens(c, vocab, rng);
  v.tree = RandomTree(n, vocab, rng);
  v.cache = model.NewCache(64);
  model.ForwardCausal(v.prefix, 0, &v.cache);
  VerifyTree(model, v.tree, c, &v.cache);
  v.accepted = PathTo(v.tree, v.tree.size() - 1, c);
  return v;
}

// Greedy continuation by full recomputation (no cache reuse): the simplest reference.
inline std::vector<planner::TokenId> ReferenceGreedy(const Transformer& model,
                                                     std::vector<planner::TokenId> seq,
                                                     int new_tokens) {
  std::vector<planner::TokenId> out;
  for (int i = 0; i < new_tokens; ++i) {
    KvCache cache = model.NewCache(static_cast<int64_t>(seq.size()));
    torch::Tensor logits = model.ForwardCausal(seq, 0, &cache);
    const auto next =
        static_cast<planner::TokenId>(logits[logits.size(0) - 1].argmax().item<int64_t>());
    out.push_back(next);
    seq.push_back(next);
  }
  return out;
}

// `count` prompts of min_len .. min_len + len_spread - 1 random ids in [0, 256); every other one
// is its first part repeated `repeats` more times (it gives the n-gram drafter matches).
inline std::vector<std::vector<planner::TokenId>> RandomPrompts(int count, uint64_t seed,
                                                                int min_len, int len_spread,
                                                                int repeats) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<planner::TokenId>> prompts;
  for (int i = 0; i < count; ++i) {
    std::vector<planner::TokenId> p =
        RandomTokens(min_len + static_cast<int>(rng() % len_spread), 256, rng);
    if (i % 2 == 1) {
      const std::vector<planner::TokenId> q = p;
      for (int r = 0; r < repeats; ++r) p.insert(p.end(), q.begin(), q.end());
    }
    prompts.push_back(p);
  }
  return prompts;
}

// `prompt` decoded alone by a fresh SpeculativeDecoder (max_context 256); *counters gets its
// counters when given.
inline std::vector<planner::TokenId> DecodeAlone(const Transformer& target,
                                                 const Transformer* draft,
                                                 const StrategyOptions& options,
                                                 const std::vector<planner::TokenId>& prompt,
                                                 int new_tokens,
                                                 DecodeCounters* counters = nullptr) {
  auto dec = SpeculativeDecoder::Create(&target, draft, options, 256);
  EXPECT_TRUE(dec.ok()) << dec.status();
  if (!dec.ok()) return {};
  auto out = (*dec)->Generate(prompt, new_tokens);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ(static_cast<int>(out->tokens.size()), new_tokens);
  if (counters) *counters = (*dec)->counters();
  return out->tokens;
}

// The sampling-distribution tests' target: 8 tokens, 2 layers, peaked (init_scale 2).
inline std::unique_ptr<Transformer> EightTokenModel() {
  ModelConfig config = *BuiltinConfig("tiny");
  config.vocab_size = 8;
  config.num_layers = 2;
  return *Transformer::CreateRandom(config, 3, RuntimeOptions(), /*init_scale=*/2.0);
}

// The exact distribution of the second token sampled after `prompt` at temperature 1:
// sum_t1 p(t1 | prompt) p(t2 | prompt, t1), by causal passes over every t1.
inline std::vector<double> ExactSecondTokenMarginal(const Transformer& model,
                                                    const std::vector<planner::TokenId>& prompt) {
  const int64_t V = model.config().vocab_size;
  std::vector<double> exact(static_cast<size_t>(V), 0.0);
  const torch::Tensor p1 = torch::softmax(LastLogits(model, prompt), -1);
  for (int64_t t1 = 0; t1 < V; ++t1) {
    std::vector<planner::TokenId> seq = prompt;
    seq.push_back(static_cast<planner::TokenId>(t1));
    const torch::Tensor p2 = torch::softmax(LastLogits(model, seq), -1);
    for (int64_t t2 = 0; t2 < V; ++t2) {
      exact[static_cast<size_t>(t2)] += p1[t1].item<double>() * p2[t2].item<double>();
    }
  }
  return exact;
}

}  // namespace specplan::runtime::testing

#endif  // SPECPLAN_TESTS_RUNTIME_TEST_MODELS_H_
