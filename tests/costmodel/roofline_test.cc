#include "costmodel/latency/roofline.h"

#include <gtest/gtest.h>

#include "costmodel/hardware/model_registry.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

// h_q = 8, h_kv = 4, bp = 2.
ModelSpec TinyGated() { return TinyModel("", 2, 8, 2, 1, 4, 16, 10); }

// h_q = h_kv = 8, a plain (two-matrix) MLP.
ModelSpec TinyNeox() {
  ModelSpec m = TinyModel("gpt_neox", 1, 8, 2, 2, 4, 32, 10);
  m.gated_mlp = false;
  return m;
}

// Hand-computed from BASTION (docs/references.md) Tables 3 and 4 with L=2, h=8, h_q=8, h_kv=4,
// n_q=2, h_ffn=16, V=10, bp=2, s=3, c=5.
TEST(Roofline, GatedTermsMatchHandComputedValues) {
  const RooflineTerms t = ComputeRooflineTerms(TinyGated(), 3, 5);
  EXPECT_DOUBLE_EQ(t.attn_proj_flops, 2304);   // 2 (4*3*8*8 + 4*3*8*4)
  EXPECT_DOUBLE_EQ(t.attn_score_flops, 1536);  // 2 * 4*3*8*8
  EXPECT_DOUBLE_EQ(t.ffn_flops, 4608);         // 2 * 6*3*8*16
  EXPECT_DOUBLE_EQ(t.lm_head_flops, 480);      // 2*3*8*10
  EXPECT_DOUBLE_EQ(t.total_flops(), 8928);     // eq. (8)
  EXPECT_DOUBLE_EQ(t.weight_bytes, 2624);      // 2 [2 (128 + 64 + 384) + 160]
  EXPECT_DOUBLE_EQ(t.kv_bytes, 256);           // 2 [2 (40 + 24)]
  EXPECT_DOUBLE_EQ(t.activation_bytes, 2124);  // 2 [2 (96+96+24+192+96) + 24 + 30]
  EXPECT_DOUBLE_EQ(t.total_bytes(), 5004);     // eq. (9) evaluated directly
}

// GPT-NeoX: plain MLP has two matrices (up, down) and one intermediate tensor.
// L=1, h=8, h_q=h_kv=8, n_q=2, h_ffn=32, V=10, bp=2, s=2, c=4.
TEST(Roofline, NeoxCountsTwoMlpMatrices) {
  const RooflineTerms t = ComputeRooflineTerms(TinyNeox(), 2, 4);
  EXPECT_DOUBLE_EQ(t.attn_proj_flops, 1024);
  EXPECT_DOUBLE_EQ(t.attn_score_flops, 384);
  EXPECT_DOUBLE_EQ(t.ffn_flops, 2048);  // 4 s h h_ffn, not 6
  EXPECT_DOUBLE_EQ(t.lm_head_flops, 320);
  EXPECT_DOUBLE_EQ(t.weight_bytes, 1856);  // MLP weights 2 h h_ffn
  EXPECT_DOUBLE_EQ(t.kv_bytes, 192);
  EXPECT_DOUBLE_EQ(t.activation_bytes, 744);  // FFN I/O 2sh + 2 s h_ffn
}

TEST(Roofline, BoundIsTheLargerSide) {
  auto m = LookupModel("qwen3-8b");
  auto g = LookupGpu("h100");
  // One token over 1k context streams ~16.4 GB of weights: ~4.9 ms at 3.35 TB/s, memory-bound.
  const RooflineEstimate small = EstimateRoofline(*m, *g, 1, 1024);
  EXPECT_EQ(small.bound, Bound::kMemory);
  EXPECT_DOUBLE_EQ(small.seconds, small.memory_s);
  EXPECT_NEAR(small.seconds * 1e3, 4.9, 0.2);
  const RooflineEstimate big = EstimateRoofline(*m, *g, 4096, 1024);
  EXPECT_EQ(big.bound, Bound::kCompute);
  EXPECT_DOUBLE_EQ(big.seconds, big.compute_s);
  // Latency grows with both s and c.
  EXPECT_GT(EstimateRoofline(*m, *g, 64, 8192).seconds, EstimateRoofline(*m, *g, 64, 1024).seconds);
  EXPECT_LT(EstimateRoofline(*m, *g, 2048, 1024).seconds, big.seconds);
}

}  // namespace
}  // namespace specplan::costmodel
