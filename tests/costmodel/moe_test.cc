// Mixture-of-experts targets: expert routing in the roofline (hand-computed values), the registry
// against the published configs, and the HF config reader for qwen3_moe, gpt_oss and mixtral.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "costmodel/hardware/hf_config.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline.h"
#include "tests/costmodel/cost_test_util.h"
#include "tests/paths/test_paths.h"

namespace specplan::costmodel {
namespace {

// L = 2, h = 8, h_q = 8, h_kv = 4, n_q = 2, E = 4 experts of width h_e = 6, top-2, V = 10, bp = 2.
ModelSpec TinyMoe() {
  ModelSpec m = TinyModel("qwen3_moe", 2, 8, 2, 1, 4, 0, 10);
  m.experts = 4;
  m.experts_active = 2;
  m.expert_ffn = 6;
  return m;
}

std::string Fixture(const std::string& name) {
  return ::specplan::test_paths::SourceDir() + "/tests/costmodel/data/hf/" + name;
}

TEST(Moe, DistinctExpertsUniformRouting) {
  const ModelSpec m = TinyMoe();
  ASSERT_TRUE(ValidateModelSpec(m).ok()) << ValidateModelSpec(m);
  // E (1 - (1 - k/E)^T) = 4 (1 - 0.5^T).
  EXPECT_DOUBLE_EQ(ExpectedDistinctExperts(m, 0), 0);
  EXPECT_DOUBLE_EQ(ExpectedDistinctExperts(m, 1), 2);    // one token: exactly k experts
  EXPECT_DOUBLE_EQ(ExpectedDistinctExperts(m, 3), 3.5);  // 4 (1 - 1/8)
  // Qwen3-30B-A3B, 128 experts top-8: 128 (1 - (15/16)^16) = 128 * 0.643932 = 82.42.
  auto q = LookupModel("qwen3-30b-a3b");
  ASSERT_TRUE(q.ok());
  EXPECT_NEAR(ExpectedDistinctExperts(*q, 16), 82.423, 1e-3);
  // (15/16)^64 = 0.016075: 64 tokens touch 125.94 of the 128 experts.
  EXPECT_NEAR(ExpectedDistinctExperts(*q, 64), 125.942, 1e-3);
  ModelSpec dense = m;
  dense.experts = dense.experts_active = dense.expert_ffn = 0;
  dense.ffn = 16;
  EXPECT_EQ(ExpectedDistinctExperts(dense, 5), 0);
}

TEST(Moe, DistinctExpertsSkewedRouting) {
  ModelSpec m = TinyMoe();
  m.experts = 2;
  m.experts_active = 1;
  m.routing_skew = 1;
  ASSERT_TRUE(ValidateModelSpec(m).ok());
  // Zipf weights 1 : 1/2 -> p = 2/3, 1/3. Two tokens: (1 - (1/3)^2) + (1 - (2/3)^2) = 8/9 + 5/9,
  // fewer than the uniform 2 (1 - 1/4) = 1.5.
  EXPECT_NEAR(ExpectedDistinctExperts(m, 2), 13.0 / 9, 1e-12);
  // E = 3, k = 2, a = 2: weights 1 : 1/4 : 1/9 = 36/49, 9/49, 4/49; k w = 72/49 is clamped to 1
  // (an expert is chosen at most once per token): one token sees 1 + 18/49 + 8/49 = 75/49.
  m.experts = 3;
  m.experts_active = 2;
  m.routing_skew = 2;
  EXPECT_NEAR(ExpectedDistinctExperts(m, 1), 75.0 / 49, 1e-12);
  // a = 0 through the skewed branch's formula equals the uniform closed form.
  m.routing_skew = 1e-300;
  EXPECT_NEAR(ExpectedDistinctExperts(m, 5), 3 * (1 - std::pow(1.0 / 3, 5)), 1e-9);
}

// bp [L (2 h h_q + 2 h h_kv + 3 h D(T) h_e + h E) + 2 V h] with attention 2*8*8 + 2*8*4 = 192,
// router 8*4 = 32 and embeddings 2*10*8 = 160.
TEST(Moe, WeightBytesStreamOnlyRoutedExperts) {
  const ModelSpec m = TinyMoe();
  // T = 1: D = 2, experts 3*8*2*6 = 288: 2 [2 (192 + 288 + 32) + 160] = 2368.
  EXPECT_DOUBLE_EQ(WeightBytes(m, 1), 2368);
  // T = 3: D = 3.5, experts 3*8*3.5*6 = 504: 2 [2 (192 + 504 + 32) + 160] = 3232.
  EXPECT_DOUBLE_EQ(WeightBytes(m, 3), 3232);
  // Many tokens: all 4 experts, 3*8*4*6 = 576: 2 [2 (192 + 576 + 32) + 160] = 3520.
  EXPECT_NEAR(WeightBytes(m, 200), 3520, 1e-9);
  // A shared expert of width 5 is always streamed: + bp L 3 h 5 = 2*2*120 = 480.
  ModelSpec shared = m;
  shared.shared_expert_ffn = 5;
  EXPECT_DOUBLE_EQ(WeightBytes(shared, 1), 2368 + 480);
  EXPECT_DOUBLE_EQ(ComputeRooflineTerms(m, 3, 5).weight_bytes, WeightBytes(m, 3));
}

// s = 3, c = 5: FFN FLOPs use k = 2 experts per token (F = k h_e = 12) plus the router.
TEST(Moe, FlopsAndActivationsUseActiveExperts) {
  const RooflineTerms t = ComputeRooflineTerms(TinyMoe(), 3, 5);
  EXPECT_DOUBLE_EQ(t.attn_proj_flops, 2304);  // 2 (4*3*8*8 + 4*3*8*4), as dense
  EXPECT_DOUBLE_EQ(t.attn_score_flops, 1536);
  EXPECT_DOUBLE_EQ(t.ffn_flops, 3840);  // 2 (6*3*8*12) + router 2 (2*3*8*4) = 3456 + 384
  EXPECT_DOUBLE_EQ(t.lm_head_flops, 480);
  EXPECT_DOUBLE_EQ(t.kv_bytes, 256);  // 2 [2 (2*5*4 + 2*3*4)]
  // 2 [2 (4*3*8 + 4*3*8 + 2*3*4 + 4*3*12 + 2*2*3*8) + 3*8 + 3*10] = 2 [2 * 456 + 54]
  EXPECT_DOUBLE_EQ(t.activation_bytes, 1932);
  EXPECT_EQ(t.allreduces, 0);
}

// The point of modelling routing: on a MoE target a pass of s tokens streams more weights as s
// grows, so the marginal token costs more than on a dense model of the same active size.
TEST(Moe, VerifyingMoreTokensStreamsMoreWeights) {
  auto moe = LookupModel("qwen3-30b-a3b");
  auto gpu = LookupGpu("h100");
  ASSERT_TRUE(moe.ok() && gpu.ok());
  const double r1 = EstimateRoofline(*moe, *gpu, 1, 0).seconds;
  const double r16 = EstimateRoofline(*moe, *gpu, 16, 0).seconds;
  // D(1) = 8, D(16) = 82.4 experts per layer: the weight bytes grow about 5x.
  EXPECT_GT(WeightBytes(*moe, 16) / WeightBytes(*moe, 1), 4.5);
  EXPECT_GT(r16 / r1, 4.0);
}

TEST(Moe, RegistryMatchesPublishedConfigs) {
  struct Want {
    const char* name;
    int64_t layers, hidden, n_q, n_kv, head_dim, experts, k, expert_ffn, vocab;
    double params_b;  // published total parameters, billions
  };
  const Want want[] = {
      {"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 128, 8, 768, 151936, 30.5},
      {"qwen3-235b-a22b", 94, 4096, 64, 4, 128, 128, 8, 1536, 151936, 235.1},
      {"gpt-oss-20b", 24, 2880, 64, 8, 64, 32, 4, 2880, 201088, 20.9},
      {"gpt-oss-120b", 36, 2880, 64, 8, 64, 128, 4, 2880, 201088, 116.8},
      {"mixtral-8x7b", 32, 4096, 32, 8, 128, 8, 2, 14336, 32000, 46.7},
  };
  for (const Want& w : want) {
    SCOPED_TRACE(w.name);
    auto m = LookupModel(w.name);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->layers, w.layers);
    EXPECT_EQ(m->hidden, w.hidden);
    EXPECT_EQ(m->n_q, w.n_q);
    EXPECT_EQ(m->n_kv, w.n_kv);
    EXPECT_EQ(m->head_dim, w.head_dim);
    EXPECT_EQ(m->experts, w.experts);
    EXPECT_EQ(m->experts_active, w.k);
    EXPECT_EQ(m->expert_ffn, w.expert_ffn);
    EXPECT_EQ(m->vocab, w.vocab);
    EXPECT_EQ(m->ffn, 0);
    EXPECT_NEAR(m->ParameterCount() / 1e9, w.params_b, 0.1);
    EXPECT_TRUE(ValidateModelSpec(*m).ok());
  }
}

TEST(Moe, ReadsTheThreeMoeConfigTypes) {
  const char* files[] = {"qwen3_moe_config.json", "gpt_oss_config.json", "mixtral_config.json"};
  const char* registry[] = {"qwen3-30b-a3b", "gpt-oss-20b", "mixtral-8x7b"};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(files[i]);
    auto parsed = ModelSpecFromHfConfigFile(Fixture(files[i]));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    auto want = LookupModel(registry[i]);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(parsed->model_type, want->model_type);
    EXPECT_EQ(parsed->experts, want->experts);
    EXPECT_EQ(parsed->experts_active, want->experts_active);
    EXPECT_EQ(parsed->expert_ffn, want->expert_ffn);
    EXPECT_EQ(parsed->ffn, 0);
    EXPECT_EQ(parsed->head_dim, want->head_dim);  // mixtral: hidden / heads = 128
    EXPECT_EQ(parsed->ParameterCount(), want->ParameterCount());
  }
  // gpt_oss also accepts transformers' num_experts_per_tok.
  auto j = nlohmann::json::parse(R"({"model_type": "gpt_oss", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 32,
      "vocab_size": 100})");
  auto spec = ModelSpecFromHfConfig(j, "tiny-oss");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->experts_active, 2);
  EXPECT_EQ(spec->expert_ffn, 32);
}

TEST(Moe, BadMoeConfigsNameTheField) {
  auto base = nlohmann::json::parse(R"({"model_type": "qwen3_moe", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
      "intermediate_size": 128, "vocab_size": 100})");
  ASSERT_TRUE(ModelSpecFromHfConfig(base, "x").ok());
  auto error = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json j = base;
    if (value.is_null()) {
      j.erase(key);
    } else {
      j[key] = value;
    }
    auto r = ModelSpecFromHfConfig(j, "x");
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_NE(error("moe_intermediate_size", nullptr).find("moe_intermediate_size"),
            std::string::npos);
  EXPECT_NE(error("num_experts_per_tok", 9)
                .find("num_experts_per_tok = 9: must be <= the expert "
                      "count 8"),
            std::string::npos);
  EXPECT_NE(error("mlp_only_layers", nlohmann::json::array({0})).find("mlp_only_layers = [0]"),
            std::string::npos);
  EXPECT_NE(error("decoder_sparse_step", 2).find("decoder_sparse_step = 2"), std::string::npos);
  EXPECT_NE(error("num_experts", 0).find("num_experts = 0: must be > 0"), std::string::npos);
}

TEST(Moe, ValidationNamesTheExpertField) {
  auto msg = [](const ModelSpec& m) { return std::string(ValidateModelSpec(m).message()); };
  ModelSpec m = TinyMoe();
  m.experts_active = 5;
  EXPECT_EQ(msg(m), "experts_active = 5: must be in [1, experts = 4]");
  m = TinyMoe();
  m.ffn = 16;
  EXPECT_EQ(msg(m),
            "ffn = 16: must be 0 for a MoE model (experts = 4); the expert width is "
            "expert_ffn");
  m = TinyMoe();
  m.routing_skew = -1;
  EXPECT_EQ(msg(m), "routing_skew = -1: must be in [0, 16] (0 = uniform routing)");
  m = TinyMoe();
  m.experts = 0;  // dense, but expert fields left set
  m.ffn = 16;
  EXPECT_EQ(msg(m), "experts_active = 2: must be 0 when experts = 0");
}

TEST(Moe, JsonRoundTripAndOldSpecsLoadDense) {
  ModelSpec m = TinyMoe();
  m.name = "tiny-moe";
  m.shared_expert_ffn = 5;
  m.routing_skew = 0.75;
  m.tp = 2;
  const nlohmann::json j = ModelSpecToJson(m);
  EXPECT_EQ(j.at("experts"), 4);
  EXPECT_EQ(j.at("tp"), 2);
  auto back = ModelSpecFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  // experts, experts_active, expert_ffn, shared_expert_ffn, routing_skew, tp.
  EXPECT_EQ(std::tie(back->experts, back->experts_active, back->expert_ffn, back->shared_expert_ffn,
                     back->routing_skew, back->tp),
            std::make_tuple(4, 2, 6, 5, 0.75, 2));
  // A dense spec at tp = 1 writes none of the new keys, so older readers still take it; a spec
  // without them loads dense at tp = 1.
  auto dense = LookupModel("qwen3-8b");
  ASSERT_TRUE(dense.ok());
  const nlohmann::json dj = ModelSpecToJson(*dense);
  EXPECT_FALSE(dj.contains("experts"));
  EXPECT_FALSE(dj.contains("tp"));
  auto dback = ModelSpecFromJson(dj);
  ASSERT_TRUE(dback.ok());
  EXPECT_EQ(dback->experts, 0);
  EXPECT_EQ(dback->tp, 1);
  nlohmann::json bad = j;
  bad["experts_active"] = 9;
  EXPECT_EQ(ModelSpecFromJson(bad).status().message(),
            "model_spec.experts_active = 9: must be in [1, experts = 4]");
}

}  // namespace
}  // namespace specplan::costmodel
