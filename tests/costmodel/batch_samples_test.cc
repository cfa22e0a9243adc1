// The batch axis of calibration: samples of b sequences per pass (LatencySample::b), how every fit
// prices them, the table's batch layers, and profiles and sample files that carry them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "costmodel/fit/fit.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/fit/samples_file.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

BatchShape Uniform(int64_t b, int64_t s, int64_t c) {
  BatchShape batch;
  for (int64_t i = 0; i < b; ++i) batch.Add(s, c);
  return batch;
}

// What `truth` says for b sequences of (s, c) over a grid with and without batches.
std::vector<LatencySample> BatchSamples(const LatencyModel& truth, std::vector<int64_t> b_grid,
                                        double noise = 0, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> eps(0.0, noise);
  std::vector<LatencySample> out;
  for (int64_t b : b_grid) {
    for (int64_t c : {0, 512, 2048}) {
      for (int64_t s : {1, 2, 8, 32, 128}) {
        out.push_back({s, c, truth.VerifyBatchSeconds(Uniform(b, s, c)) * (1 + eps(rng)), b});
      }
    }
  }
  return out;
}

TEST(BatchSamples, PredictSampleIsTheSequenceOrTheUniformBatch) {
  const RooflineLatency r = H100Qwen8b();
  EXPECT_EQ(PredictSample(r, {16, 1024, 1.0}), r.VerifySeconds(16, 1024));
  EXPECT_EQ(PredictSample(r, {16, 1024, 1.0, 8}), r.VerifyBatchSeconds(Uniform(8, 16, 1024)));
  // Eight sequences stream the weights once: far less than eight single passes, more than one.
  EXPECT_LT(PredictSample(r, {16, 1024, 1.0, 8}), 8 * r.VerifySeconds(16, 1024));
  EXPECT_GT(PredictSample(r, {16, 1024, 1.0, 8}), r.VerifySeconds(16, 1024));
  const PassTotals t = SampleTotals({16, 1024, 1.0, 8});
  EXPECT_EQ(t.tokens, 128);
  EXPECT_EQ(t.context, 8 * 1024);
  EXPECT_EQ(t.score_pairs, 8 * 16 * (1024 + 16));
}

// The kernel_sum fit prices a batch sample with per-sequence s and waves: exactly what
// KernelSumLatency::VerifyBatchSeconds says for those b sequences, decode (s = 1) and verify rows.
TEST(BatchSamples, KernelSumFeaturesOfAUniformBatchMatchTheBatchPrice) {
  const RooflineLatency r = H100Qwen8b();
  KernelSumCoefficients k;
  k.overhead_s = 1e-3;
  k.decode = 1.5;
  k.verify = 9;
  k.verify_overhead_s = 3e-4;
  k.attention = 0.7;
  k.elementwise = 4;
  k.tile = 64;
  k.attention_tile = 16;  // s = 40 runs 3 waves
  const KernelSumLatency model(r, k);
  for (int64_t s : {1, 5, 40}) {
    for (int64_t b : {1, 3, 32}) {
      const KernelSumFeatures f =
          ComputeKernelSumFeatures(r.model(), r.gpu(), s, 700, k.tile, k.attention_tile, b);
      EXPECT_EQ(f.s, s);
      EXPECT_NEAR(k.Predict(f), model.VerifyBatchSeconds(Uniform(b, s, 700)), 1e-12 * k.Predict(f))
          << "s = " << s << ", b = " << b;
    }
  }
}

// Every calibrated form recovers its coefficients from samples that include batches, and predicts
// the batch passes; a fit that read a batch sample as one sequence of (s, c) could not.
TEST(BatchSamples, EveryFitRecoversItsTruthFromBatchSamples) {
  const RooflineLatency r = H100Qwen8b();
  const std::vector<int64_t> b_grid = {1, 4, 16, 64};

  const LinearCalibratedLatency linear_truth(r, {1.6, 2e-3});
  auto linear = FitLinear(r, BatchSamples(linear_truth, b_grid));
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_NEAR(linear->a, 1.6, 1e-6);
  EXPECT_NEAR(linear->b_s, 2e-3, 1e-9);
  // Batch samples only (no b = 1): the same coefficients.
  auto batch_only = FitLinear(r, BatchSamples(linear_truth, {8, 32}));
  ASSERT_TRUE(batch_only.ok());
  EXPECT_NEAR(batch_only->a, 1.6, 1e-6);

  const PerTermLatency per_term_truth(r, {1.8, 1e-3, 1.2, 2.5});
  const auto per_term_samples = BatchSamples(per_term_truth, b_grid);
  auto per_term = FitPerTerm(r, per_term_samples);
  ASSERT_TRUE(per_term.ok()) << per_term.status();
  EXPECT_LT(Evaluate(PerTermLatency(r, *per_term), per_term_samples).mape, 1e-3);

  // gemm, attention, weights, kv_attention, p, overhead_s, tile.
  const OverlapLatency overlap_truth(r, OverlapCoefficients{1.4, 3, 1.1, 2, 3, 2e-3, 16});
  const auto overlap_samples = BatchSamples(overlap_truth, b_grid);
  auto overlap = FitOverlap(r, overlap_samples);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  EXPECT_LT(Evaluate(OverlapLatency(r, *overlap), overlap_samples).mape, 5e-3);

  KernelSumCoefficients k = KernelSumTruth();  // without score FLOPs, on tiles of 64 tokens
  k.attention = 0;
  k.attention_tile = 64;
  const KernelSumLatency kernel_truth(r, k);
  const auto kernel_samples = BatchSamples(kernel_truth, b_grid);
  auto kernel_sum = FitKernelSum(r, kernel_samples);
  ASSERT_TRUE(kernel_sum.ok()) << kernel_sum.status();
  EXPECT_NEAR(kernel_sum->decode, 1.4, 0.05 * 1.4);
  EXPECT_NEAR(kernel_sum->verify, 15, 0.05 * 15);
  EXPECT_LT(Evaluate(KernelSumLatency(r, *kernel_sum), kernel_samples).mape, 2e-3);
  // Evaluate and cross-validation price the batch passes too: the truth scores zero.
  EXPECT_LT(Evaluate(kernel_truth, kernel_samples).mape, 1e-12);
}

TEST(BatchSamples, TableLayersReadUniformBatchesExactlyAndInterpolateInB) {
  const RooflineLatency r = H100Qwen8b();
  const KernelSumLatency truth(r, KernelSumCoefficients{});
  auto table = BuildTable(BatchSamples(truth, {1, 4, 16}));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->b_grid, (std::vector<int64_t>{4, 16}));
  ASSERT_EQ(table->batch_seconds.size(), 2u);
  ASSERT_TRUE(ValidateLatencyTable(*table).ok());
  const TableLatency t(r, *table);
  // On the grid: the measured cell.
  EXPECT_DOUBLE_EQ(t.VerifyBatchSeconds(Uniform(4, 8, 512)),
                   truth.VerifyBatchSeconds(Uniform(4, 8, 512)));
  EXPECT_DOUBLE_EQ(t.VerifyBatchSeconds(Uniform(16, 128, 2048)),
                   truth.VerifyBatchSeconds(Uniform(16, 128, 2048)));
  // B = 10 between the layers 4 and 16: linear in B (the roofline ratio is 1 for this uniform
  // batch's own mean sequence).
  const double t4 = truth.VerifyBatchSeconds(Uniform(4, 8, 512));
  const double t16 = truth.VerifyBatchSeconds(Uniform(16, 8, 512));
  EXPECT_NEAR(t.VerifyBatchSeconds(Uniform(10, 8, 512)), t4 + 0.5 * (t16 - t4), 1e-12);
  // A ragged batch reads its mean sequence and scales by the roofline.
  BatchShape ragged;
  ragged.Add(4, 0);
  ragged.Add(12, 1024);  // mean (8, 512)
  const double mean_read =
      truth.VerifySeconds(8, 512) +
      (truth.VerifyBatchSeconds(Uniform(4, 8, 512)) - truth.VerifySeconds(8, 512)) /
          3;  // B = 2: a third of the way from 1 to 4
  EXPECT_NEAR(t.VerifyBatchSeconds(ragged),
              mean_read * r.VerifyBatchSeconds(ragged) / r.VerifyBatchSeconds(Uniform(2, 8, 512)),
              1e-12);
  // A single sequence still reads the b = 1 layer.
  EXPECT_DOUBLE_EQ(t.VerifySeconds(32, 2048), truth.VerifySeconds(32, 2048));
}

TEST(BatchSamples, AnIncompleteBatchLayerIsNamedAndTheProfileKeepsTheSingleLayer) {
  const RooflineLatency r = H100Qwen8b();
  std::vector<LatencySample> samples = BatchSamples(r, {1, 8});
  samples.pop_back();  // (b = 8, s = 128, c = 2048) missing
  auto table = BuildTable(samples);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("(s = 128, c = 2048, b = 8)"));
  auto p = FitProfile(r.model(), r.gpu(), samples);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->table.has_value());
  EXPECT_TRUE(p->table->b_grid.empty());
  EXPECT_THAT(p->notes, testing::Contains(HasSubstr("batch layers skipped")));
}

// Batch passes measured on a coarser (s, c) grid than the single sequences (calibrate's batch
// stage: b caches of long contexts do not fit the full grid): the layers keep a grid of their own.
TEST(BatchSamples, BatchLayersOnACoarserGridOfTheirOwn) {
  const RooflineLatency r = H100Qwen8b();
  KernelSumCoefficients k;
  k.verify = 12;
  k.overhead_s = 2e-3;
  const KernelSumLatency truth(r, k);
  std::vector<LatencySample> samples;
  for (int64_t c : {0, 512, 2048, 8192}) {
    for (int64_t s : {1, 2, 8, 32, 128, 512}) samples.push_back({s, c, truth.VerifySeconds(s, c)});
  }
  for (int64_t b : {4, 16}) {
    for (int64_t c : {0, 2048}) {
      for (int64_t s : {1, 8, 32}) {
        samples.push_back({s, c, truth.VerifyBatchSeconds(Uniform(b, s, c)), b});
      }
    }
  }
  auto table = BuildTable(samples);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->s_grid, (std::vector<int64_t>{1, 2, 8, 32, 128, 512}));
  EXPECT_EQ(table->batch_s_grid, (std::vector<int64_t>{1, 8, 32}));
  EXPECT_EQ(table->batch_c_grid, (std::vector<int64_t>{0, 2048}));
  const TableLatency t(r, *table);
  // Measured cells read exactly, single sequences on the fine grid and batches on theirs.
  EXPECT_DOUBLE_EQ(t.VerifySeconds(512, 8192), truth.VerifySeconds(512, 8192));
  EXPECT_DOUBLE_EQ(t.VerifyBatchSeconds(Uniform(16, 32, 2048)),
                   truth.VerifyBatchSeconds(Uniform(16, 32, 2048)));
  // Between b = 1 (fine grid) and b = 4 (coarse): each layer read relative to its own roofline,
  // so a uniform batch of 2 at a cell of both grids lies between the two measurements.
  const double two = t.VerifyBatchSeconds(Uniform(2, 8, 2048));
  EXPECT_GT(two, truth.VerifySeconds(8, 2048));
  EXPECT_LT(two, truth.VerifyBatchSeconds(Uniform(4, 8, 2048)));
  // Past the batch grid (c = 8192, s = 128) the layer is clamped and the roofline carries the rest.
  const double far = t.VerifyBatchSeconds(Uniform(16, 128, 8192));
  EXPECT_NEAR(far / truth.VerifyBatchSeconds(Uniform(16, 128, 8192)), 1.0, 0.5);

  auto p = FitProfile(r.model(), r.gpu(), samples);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->b_grid, (std::vector<int64_t>{4, 16}));
  const nlohmann::json j = ProfileToJson(*p);
  EXPECT_EQ(j["models"]["table"]["batch_s"], nlohmann::json({1, 8, 32}));
  EXPECT_EQ(j["models"]["table"]["batch_c"], nlohmann::json({0, 2048}));
  auto back = ProfileFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ProfileToJson(*back), j);
  // A layer of the wrong shape for the batch grid, and a batch grid without layers, are named.
  nlohmann::json bad = j;
  bad["models"]["table"]["batch_s"] = {1, 8};
  EXPECT_THAT(ProfileFromJson(bad).status().message(),
              HasSubstr("models.table.batch_seconds[0][0]: 3 entries, expected one per s (2)"));
  bad = j;
  bad["models"]["table"]["batch_c"] = {0, 0};
  EXPECT_THAT(ProfileFromJson(bad).status().message(), HasSubstr("batch_c[1] = 0"));
  LatencyTable no_layers = *table;
  no_layers.b_grid.clear();
  no_layers.batch_seconds.clear();
  EXPECT_THAT(ValidateLatencyTable(no_layers).message(), HasSubstr("only with batch layers"));
}

TEST(BatchSamples, ProfilesCarryTheBatchAxisAndOldOnesStillLoad) {
  const RooflineLatency r = H100Qwen8b();
  KernelSumCoefficients k;
  k.verify = 12;
  k.overhead_s = 2e-3;
  const std::vector<LatencySample> samples = BatchSamples(KernelSumLatency(r, k), {1, 2, 8});
  auto p = FitProfile(r.model(), r.gpu(), samples);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->b_grid, (std::vector<int64_t>{2, 8}));
  // The fits saw the batches: the kernel_sum truth is recovered, scored on every sample.
  EXPECT_EQ(p->cv.at("kernel_sum").n, static_cast<int64_t>(samples.size()));
  EXPECT_LT(p->cv.at("kernel_sum").mape, 0.01);
  EXPECT_THAT(DescribeFit(*p), HasSubstr("batches  b=1: 15, b=2: 15, b=8: 15"));

  const nlohmann::json j = ProfileToJson(*p);
  EXPECT_EQ(j["models"]["table"]["b"], nlohmann::json({2, 8}));
  EXPECT_FALSE(j["models"]["table"].contains("batch_s"));  // the layers share the main grid
  auto back = ProfileFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ProfileToJson(*back), j);
  int64_t batch_samples = 0;
  for (const ProfileSample& x : back->samples) batch_samples += x.sample.b > 1 ? 1 : 0;
  EXPECT_EQ(batch_samples, 30);

  // A single-sequence profile writes no "b" anywhere, so files from before the axis are unchanged.
  auto single = FitProfile(r.model(), r.gpu(), BatchSamples(r, {1}));
  ASSERT_TRUE(single.ok());
  const nlohmann::json sj = ProfileToJson(*single);
  EXPECT_FALSE(sj["models"]["table"].contains("b"));
  EXPECT_FALSE(sj["samples"][0].contains("b"));

  // Bad batch fields are named.
  nlohmann::json bad = j;
  bad["samples"][3]["b"] = 0;
  EXPECT_THAT(ProfileFromJson(bad).status().message(), HasSubstr("samples[3].b = 0"));
  bad = j;
  bad["models"]["table"].erase("batch_seconds");
  EXPECT_THAT(ProfileFromJson(bad).status().message(), HasSubstr("come together"));
  bad = j;
  bad["models"]["table"]["b"] = {1, 8};
  EXPECT_THAT(ProfileFromJson(bad).status().message(), HasSubstr("models.table.b[0] = 1"));
  bad = j;
  bad["models"]["table"]["batch_seconds"][1][0][2] = -1;
  EXPECT_THAT(ProfileFromJson(bad).status().message(),
              HasSubstr("models.table.batch_seconds[1][0][2] = -1"));
}

TEST(BatchSamples, SampleFilesTakeAnOptionalB) {
  auto csv = ParseSamplesCsv("s,c,b,latency_ms\n4,128,1,2.0\n4,128,16,5.5\n", "x.csv");
  ASSERT_TRUE(csv.ok()) << csv.status();
  ASSERT_EQ(csv->size(), 2u);
  EXPECT_EQ((*csv)[0].b, 1);
  EXPECT_EQ((*csv)[1].b, 16);
  EXPECT_DOUBLE_EQ((*csv)[1].seconds, 5.5e-3);
  EXPECT_EQ(ParseSamplesCsv("s,c,seconds\n4,128,0.002\n", "x.csv")->at(0).b, 1);
  EXPECT_THAT(ParseSamplesCsv("s,c,b,seconds\n4,128,0,0.002\n", "x.csv").status().message(),
              HasSubstr("x.csv:2: b = 0: must be in [1, 65536]"));
  EXPECT_THAT(ParseSamplesCsv("s,c,b,seconds\n4,128,two,0.002\n", "x.csv").status().message(),
              HasSubstr("x.csv:2: b = 'two': expected an integer"));

  auto json = ParseSamplesJson(R"([{"s": 2, "c": 0, "b": 8, "seconds": 0.01},
                                   {"s": 2, "c": 0, "seconds": 0.004}])",
                               "x.json");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)[0].b, 8);
  EXPECT_EQ((*json)[1].b, 1);
  EXPECT_THAT(ParseSamplesJson(R"([{"s": 2, "c": 0, "b": 1.5, "seconds": 0.01}])", "x.json")
                  .status()
                  .message(),
              HasSubstr("x.json: [0].b = 1.5: expected an integer"));
}

}  // namespace
}  // namespace specplan::costmodel
