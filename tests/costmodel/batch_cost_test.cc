// Ragged batch passes: BatchShape's running sums, every latency model's batch form, drafter and
// cycle costs for a batch. Expected values are written from the formulas, not from the code.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/ema_latency.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"

namespace specplan::costmodel {
namespace {

ModelSpec Qwen8b() { return *LookupModel("qwen3-8b"); }
GpuSpec H100() { return *LookupGpu("h100"); }

TEST(BatchShape, GrowKeepsEverySumEqualToABatchBuiltFromScratch) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> c_dist(0, 5000);
  std::vector<SequenceShape> seqs;
  BatchShape grown;
  for (int i = 0; i < 9; ++i) {
    seqs.push_back({1, c_dist(rng)});
    grown.Add(1, seqs.back().c);
  }
  std::uniform_int_distribution<int> pick(0, 8);
  for (int step = 0; step < 200; ++step) {
    const int i = pick(rng);
    const int64_t ds = step % 3;
    seqs[i].s += ds;
    grown.Grow(i, ds);
  }
  const BatchShape fresh(seqs);
  EXPECT_EQ(grown.totals().tokens, fresh.totals().tokens);
  EXPECT_EQ(grown.totals().context, fresh.totals().context);
  EXPECT_EQ(grown.totals().score_pairs, fresh.totals().score_pairs);
  EXPECT_EQ(grown.max_s(), fresh.max_s());
  EXPECT_EQ(grown.verify_sequences(), fresh.verify_sequences());
  EXPECT_EQ(grown.decode_context(), fresh.decode_context());
  EXPECT_EQ(grown.verify_context(), fresh.verify_context());
  double tokens = 0, pairs = 0;
  for (const SequenceShape& q : seqs) {
    tokens += q.s;
    pairs += static_cast<double>(q.s) * static_cast<double>(q.c + q.s);
  }
  EXPECT_EQ(fresh.totals().tokens, tokens);
  EXPECT_EQ(fresh.totals().score_pairs, pairs);
}

// Two sequences (3 over 100) and (5 over 2000) on the roofline: FLOPs, KV and activation bytes
// add up over the sequences; the weights are streamed once.
TEST(BatchRoofline, SumsPerSequenceTermsAndStreamsWeightsOnce) {
  const ModelSpec m = Qwen8b();
  const RooflineTerms a = ComputeRooflineTerms(m, 3, 100);
  const RooflineTerms b = ComputeRooflineTerms(m, 5, 2000);
  const RooflineTerms t = ComputeRooflineTerms(m, BatchShape({{3, 100}, {5, 2000}}).totals());
  EXPECT_DOUBLE_EQ(t.attn_proj_flops, a.attn_proj_flops + b.attn_proj_flops);
  EXPECT_DOUBLE_EQ(t.attn_score_flops, a.attn_score_flops + b.attn_score_flops);
  EXPECT_DOUBLE_EQ(t.ffn_flops, a.ffn_flops + b.ffn_flops);
  EXPECT_DOUBLE_EQ(t.lm_head_flops, a.lm_head_flops + b.lm_head_flops);
  EXPECT_DOUBLE_EQ(t.kv_bytes, a.kv_bytes + b.kv_bytes);
  EXPECT_DOUBLE_EQ(t.activation_bytes, a.activation_bytes + b.activation_bytes);
  EXPECT_DOUBLE_EQ(t.weight_bytes, a.weight_bytes);
  // By hand for the score FLOPs: L * 4 * h_q * (3 * 103 + 5 * 2005).
  EXPECT_DOUBLE_EQ(t.attn_score_flops, m.layers * 4.0 * m.h_q() * (3.0 * 103 + 5.0 * 2005));
}

// An MoE pass streams the experts that all of the batch's tokens route to: two sequences of 8
// tokens stream E (1 - (1 - k/E)^16) experts per layer, not twice E (1 - (1 - k/E)^8).
TEST(BatchRoofline, MoeBatchStreamsTheExpertsOfAllItsTokensOnce) {
  const ModelSpec m = *LookupModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.is_moe());
  const RooflineTerms t = ComputeRooflineTerms(m, BatchShape({{8, 100}, {8, 900}}).totals());
  EXPECT_DOUBLE_EQ(t.weight_bytes, WeightBytes(m, 16));
  EXPECT_DOUBLE_EQ(t.weight_bytes, ComputeRooflineTerms(m, 16, 500).weight_bytes);
  EXPECT_LT(t.weight_bytes, 2 * ComputeRooflineTerms(m, 8, 100).weight_bytes);
  const double E = m.experts, k = m.experts_active;
  EXPECT_NEAR(ExpectedDistinctExperts(m, 16), E * (1 - std::pow(1 - k / E, 16)), 1e-9);
}

// At batch 1 an 8B target on an H100 is memory-bound far past 64 tokens; 32 requests of 16
// tokens (512 in all) make the pass compute-bound (16.4 GFLOP per token at 989 TFLOP/s is
// 8.3 ms for 512 tokens, against about 5 ms of weights).
TEST(BatchRoofline, ABatchOf32TreesIsComputeBoundWhereOneTreeIsNot) {
  const RooflineLatency r(Qwen8b(), H100());
  EXPECT_EQ(r.Estimate(16, 1024).bound, Bound::kMemory);
  BatchShape batch;
  for (int i = 0; i < 32; ++i) batch.Add(16, 1024);
  EXPECT_EQ(r.Estimate(batch.totals()).bound, Bound::kCompute);
  // Tokens cost more than 32 single passes would suggest per token only once compute-bound:
  // the batch takes less than 32 separate passes, but more than one.
  const double one = r.VerifySeconds(16, 1024);
  const double all = r.VerifyBatchSeconds(batch);
  EXPECT_GT(all, 1.5 * one);
  EXPECT_LT(all, 32 * one);
}

std::vector<std::unique_ptr<LatencyModel>> EveryKind() {
  const RooflineLatency r(Qwen8b(), H100());
  std::vector<std::unique_ptr<LatencyModel>> models;
  models.push_back(std::make_unique<RooflineLatency>(r));
  models.push_back(std::make_unique<LinearCalibratedLatency>(r, LinearCoefficients{1.4, 2e-4}));
  models.push_back(std::make_unique<PerTermLatency>(r, PerTermCoefficients{1.8, 1e-4, 1.3, 1.6}));
  // gemm, attention, weights, kv_attention, p, overhead_s, tile.
  models.push_back(
      std::make_unique<OverlapLatency>(r, OverlapCoefficients{1.6, 3, 1.2, 1.5, 4, 3e-4, 64}));
  // overhead_s, gemm, weights, p, decode, verify, verify_overhead_s, attention, elementwise, tile,
  // attention_tile.
  models.push_back(std::make_unique<KernelSumLatency>(
      r, KernelSumCoefficients{1e-3, 1.1, 1.05, 8, 1.5, 3, 2e-5, 2, 1.2, 64, 16}));
  LatencyTable t;
  t.s_grid = {1, 16, 64};
  t.c_grid = {0, 1024, 4096};
  t.seconds = {{6e-3, 6.2e-3, 7e-3}, {6.3e-3, 6.5e-3, 7.4e-3}, {7e-3, 7.3e-3, 8.4e-3}};
  models.push_back(std::make_unique<TableLatency>(r, t));
  return models;
}

TEST(BatchLatency, OneSequenceGivesExactlyTheSingleSequencePrice) {
  auto models = EveryKind();
  std::shared_ptr<const LatencyModel> base(EveryKind()[1].release());
  auto ema = std::make_unique<EmaCorrectedLatency>(base, 0.5, 1.2);
  models.push_back(std::move(ema));
  for (const auto& m : models) {
    for (int64_t s : {1, 2, 17, 64, 200}) {
      for (int64_t c : {0, 700, 4096, 20000}) {
        EXPECT_EQ(m->VerifyBatchSeconds(BatchShape(s, c)), m->VerifySeconds(s, c))
            << m->Kind() << " s=" << s << " c=" << c;
      }
    }
  }
}

TEST(BatchLatency, EveryKindGrowsWithTheBatchAndChargesTheWeightsOnce) {
  for (const auto& m : EveryKind()) {
    BatchShape batch(4, 1024);
    double prev = m->VerifyBatchSeconds(batch);
    const double single = prev;
    for (int b = 2; b <= 16; ++b) {
      batch.Add(4, 1024);
      const double t = m->VerifyBatchSeconds(batch);
      EXPECT_GE(t, prev) << m->Kind() << " B=" << b;
      prev = t;
    }
    // Sixteen requests share one weight stream: far cheaper than sixteen passes.
    EXPECT_LT(prev, 4 * single) << m->Kind();
  }
}

// kernel_sum's attention by hand: the decode rows pay `decode` x their cache, the verify rows one
// verify_overhead_s plus `verify` x waves_i x their cache.
TEST(BatchLatency, KernelSumSplitsDecodeAndVerifyRowsPerSequence) {
  const ModelSpec m = Qwen8b();
  const GpuSpec g = H100();
  const RooflineLatency r(m, g);
  KernelSumCoefficients k;
  k.decode = 1.5;
  k.verify = 3;
  k.verify_overhead_s = 2e-5;
  k.attention_tile = 16;
  const KernelSumLatency model(r, k);
  // (1, 1000) decodes; (8, 2000) verifies in one wave; (40, 3000) in ceil(40/16) = 3 waves.
  const BatchShape batch({{1, 1000}, {8, 2000}, {40, 3000}});
  const double kv_token = 2.0 * m.layers * 2 * m.h_kv() / g.mem_bw;  // bf16: 2 bytes
  const double attn = 1.5 * 1000 * kv_token + 2e-5 + 3 * (1 * 2000 + 3 * 3000) * kv_token;
  const KernelSumFeatures pass = ComputeKernelSumFeatures(m, g, batch.totals(), k.tile);
  EXPECT_NEAR(model.VerifyBatchSeconds(batch), k.PassSeconds(pass) + attn, 1e-15);
  // Without verify rows there is no verify kernel, so no verify_overhead_s.
  const BatchShape decode_only({{1, 1000}, {1, 2000}});
  const KernelSumFeatures dpass = ComputeKernelSumFeatures(m, g, decode_only.totals(), k.tile);
  EXPECT_NEAR(model.VerifyBatchSeconds(decode_only), k.PassSeconds(dpass) + 1.5 * 3000 * kv_token,
              1e-15);
}

// The table measured single sequences: a batch is the equivalent single sequence (S tokens over
// the mean context) scaled by the roofline's batch / single ratio.
TEST(BatchLatency, TablePricesTheEquivalentSequenceScaledByTheRoofline) {
  auto models = EveryKind();
  const LatencyModel& table = *models.back();
  ASSERT_EQ(table.Kind(), "table");
  const RooflineLatency r(Qwen8b(), H100());
  const BatchShape batch({{4, 100}, {12, 2001}});  // S = 16, mean c = 1050.5 -> 1051
  EXPECT_DOUBLE_EQ(
      table.VerifyBatchSeconds(batch),
      table.VerifySeconds(16, 1051) * r.VerifyBatchSeconds(batch) / r.VerifySeconds(16, 1051));
}

// Models that know only (s, c) fall back to the equivalent single sequence.
class SOnlyLatency : public LatencyModel {
 public:
  double VerifySeconds(int64_t s, int64_t c) const override { return 1e-3 * s + 1e-7 * c; }
  std::string Kind() const override { return "s_only"; }
};

TEST(BatchLatency, DefaultPricesAllTokensOverTheMeanContext) {
  const SOnlyLatency m;
  EXPECT_DOUBLE_EQ(m.VerifyBatchSeconds(BatchShape({{2, 10}, {3, 21}})), 1e-3 * 5 + 1e-7 * 16);
  EXPECT_DOUBLE_EQ(m.VerifyBatchSeconds(BatchShape(7, 9)), 1e-3 * 7 + 1e-7 * 9);
}

TEST(BatchCycleCost, DrafterStepsAreBatchedAndOneRequestMatchesCycleCost) {
  DrafterCost ar;
  ar.cls = DrafterClass::kAutoregressive;
  ar.gamma = 4;
  ar.t_net_s = 1e-3;
  ar.t_head_s = 2e-4;
  ar.batch_growth = 0.05;
  // gamma batched steps, each (1 + 0.05 * 7) x 1.2 ms at B = 8.
  EXPECT_DOUBLE_EQ(ar.DraftSeconds(8), 4 * 1.2e-3 * 1.35);
  EXPECT_DOUBLE_EQ(ar.DraftSeconds(1), ar.DraftSeconds());
  DrafterCost par = ar;
  par.cls = DrafterClass::kParallelBlock;
  EXPECT_DOUBLE_EQ(par.DraftSeconds(8), 1.2e-3 * 1.35);

  const RooflineLatency r(Qwen8b(), H100());
  const CycleCost single(&r, ar, 3e-4, 1500);
  const BatchCycleCost batch(&r, ar, 3e-4);
  for (int64_t n : {0, 1, 9, 63, 500}) {
    EXPECT_EQ(batch.Seconds(BatchShape(n + 1, 1500)), single.Seconds(n)) << n;
  }
  BatchShape two({{3, 1500}, {1, 10}});
  EXPECT_DOUBLE_EQ(batch.Seconds(two), ar.DraftSeconds(2) + 3e-4 + r.VerifyBatchSeconds(two));
}

}  // namespace
}  // namespace specplan::costmodel
