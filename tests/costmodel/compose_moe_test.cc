// Mixture-of-experts composition (issue 54): moe.csv and allreduce.csv as the composer reads them
// (bad rows refused with file, line and field), the MoE pass on a small synthetic table, the
// nearest-shape scaling rule, and a leave-one-out check over the shipped MoE tables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "tests/costmodel/scratch_engine_folder.h"
#include "tests/paths/test_paths.h"
#include "util/file.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr const char* kHeader =
    "kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,"
    "moe_ep_size,distribution,latency_ms\n";

// A row of Qwen3-30B-A3B's block shape (2048/768, 128 experts top-8) at one GPU, balanced.
std::string Row(int64_t tokens, double ms, int64_t inter = 768, int64_t tp = 1) {
  return absl::StrCat("k,bfloat16,", tokens, ",2048,", inter, ",8,128,", tp, ",1,balanced,", ms,
                      "\n");
}

TEST(MoeTable, ReadsSeriesInAnyOrderAndInterpolatesInTokens) {
  auto t = MoeTable::Parse(std::string(kHeader) + Row(64, 0.45) + Row(1, 0.05) + Row(16, 0.40),
                           "h100_sxm/x/moe.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  const MoeShape shape{"bfloat16", 2048, 768, 8, 128, 1, 1, "balanced"};
  ASSERT_TRUE(t->Holds(shape));
  EXPECT_EQ(t->KernelSource(shape), "k");
  auto at8 = t->Seconds(shape, 8);
  ASSERT_TRUE(at8.ok());
  EXPECT_NEAR(at8->seconds, (0.05 + 7.0 / 15 * 0.35) * 1e-3, 1e-12);
  EXPECT_FALSE(at8->extrapolated);
  EXPECT_NEAR(t->Seconds(shape, 1)->seconds, 0.05e-3, 1e-15);
  // Past the largest count: the line through the last two points, flagged.
  auto at128 = t->Seconds(shape, 128);
  ASSERT_TRUE(at128.ok());
  EXPECT_NEAR(at128->seconds, (0.45 + 64 * 0.05 / 48) * 1e-3, 1e-12);
  EXPECT_TRUE(at128->extrapolated);
  EXPECT_THAT(at128->why, HasSubstr("past the largest measured num_tokens 64"));
  // Another shard or distribution is another series.
  MoeShape other = shape;
  other.distribution = "power_law_1.2";
  EXPECT_FALSE(t->Holds(other));
  EXPECT_THAT(t->Seconds(other, 4).status().message(),
              HasSubstr("no rows for the MoE block bfloat16 2048/768 128x8 tp1 ep1 power_law_1.2"));
  // A repeat within the tolerance is averaged; a dip is read through its isotonic fit.
  auto r = MoeTable::Parse(
      std::string(kHeader) + Row(1, 0.05) + Row(1, 0.07) + Row(4, 0.2) + Row(8, 0.1) + Row(16, 0.4),
      "m.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->repeats(), 1u);
  EXPECT_NEAR(r->Seconds(shape, 1)->seconds, 0.06e-3, 1e-15);
  EXPECT_NEAR(r->Seconds(shape, 4)->seconds, 0.15e-3, 1e-15);  // 4 and 8 pooled
  EXPECT_NEAR(r->Seconds(shape, 8)->seconds, 0.15e-3, 1e-15);
}

TEST(MoeTable, BadRowsAreRefusedWithFileLineAndField) {
  auto error = [](const std::string& text) {
    auto t = MoeTable::Parse(text, "h100_sxm/vllm-0.24.0/moe.csv");
    return t.ok() ? std::string("ok") : std::string(t.status().message());
  };
  EXPECT_EQ(error(std::string(kHeader) + Row(1, 0.05) + Row(4, 0.1)), "ok");
  // A negative latency.
  EXPECT_THAT(error(std::string(kHeader) + Row(1, 0.05) + Row(4, -0.1)),
              HasSubstr("h100_sxm/vllm-0.24.0/moe.csv:3: latency_ms = '-0.1': expected a finite "
                        "number > 0"));
  // A missing column.
  EXPECT_THAT(error("kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,"
                    "moe_tp_size,moe_ep_size,latency_ms\nk,bfloat16,1,2048,768,8,128,1,1,0.05\n"),
              HasSubstr("moe.csv:1: header"));
  EXPECT_THAT(error("kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,"
                    "moe_tp_size,moe_ep_size,latency_ms\nk,bfloat16,1,2048,768,8,128,1,1,0.05\n"),
              HasSubstr("missing column 'distribution'"));
  // A token count that is not an integer >= 1.
  EXPECT_THAT(error(std::string(kHeader) + "k,bfloat16,0,2048,768,8,128,1,1,balanced,0.05\n"),
              HasSubstr("moe.csv:2: num_tokens = '0': expected an integer >= 1"));
  EXPECT_THAT(error(std::string(kHeader) + "k,bfloat16,2.5,2048,768,8,128,1,1,balanced,0.05\n"),
              HasSubstr("moe.csv:2: num_tokens = '2.5'"));
  // Non-monotone token axis: one token count measured twice, far apart (the interpolation in
  // tokens needs one time per count).
  EXPECT_THAT(error(std::string(kHeader) + Row(16, 0.4) + Row(1, 0.05) + Row(16, 0.04)),
              HasSubstr("moe.csv:4: num_tokens = 16: repeats line 2's token count"));
  // top-k above the expert count, a missing field.
  EXPECT_THAT(error(std::string(kHeader) + "k,bfloat16,1,2048,768,8,4,1,1,balanced,0.05\n"),
              HasSubstr("moe.csv:2: topk = 8: more than num_experts = 4"));
  EXPECT_THAT(error(std::string(kHeader) + "k,bfloat16,1,2048,768,8,128,1,1\n"),
              HasSubstr("moe.csv:2: expected 11 fields, got 9"));
}

TEST(AllReduceTable, ReadsTheGraphVariantAndRefusesBadRows) {
  const std::string text =
      "kernel_source,dtype,num_gpus,message_size,latency_ms\n"
      "X_graph,bfloat16,2,1024,0.004\nX_eager,bfloat16,2,1024,0.02\n"
      "X_graph,bfloat16,2,4096,0.006\nX_eager,bfloat16,2,4096,0.03\n";
  auto t = AllReduceTable::Parse(text, "allreduce.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kernel_sources(), std::vector<std::string>{"X_graph"});
  EXPECT_NEAR(t->Seconds(2, 2048)->seconds, (0.004 + 0.002 / 3) * 1e-3, 1e-15);
  EXPECT_TRUE(t->Seconds(2, 8192)->extrapolated);
  EXPECT_THAT(t->Seconds(4, 1024).status().message(), HasSubstr("no rows for num_gpus = 4"));
  auto bad = AllReduceTable::Parse(
      "kernel_source,dtype,num_gpus,message_size,latency_ms\nX,bfloat16,2,1024,-1\n", "a.csv");
  EXPECT_THAT(bad.status().message(), HasSubstr("a.csv:2: latency_ms = '-1'"));
}

// The composer on a synthetic moe.csv beside the shipped H100 SGLang dense tables.
class ComposeMoe : public testing::ScratchEngineFolder {
 protected:
  void SetUp() override {
    ScratchEngineFolder::SetUp();
    auto m = LookupModel("qwen3-30b-a3b");
    ASSERT_TRUE(m.ok());
    moe_ = *m;
  }
  ModelSpec moe_;
};

TEST_F(ComposeMoe, PassIsAttentionRouterAndTheMeasuredBlock) {
  Write("moe.csv", std::string(kHeader) + Row(1, 0.05) + Row(16, 0.40) + Row(64, 0.45));
  const EngineKernelTables tables = Load();
  auto cost = ComposedCost::Create(&tables, moe_, gpu_, /*unmeasured_terms=*/false);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_FALSE(cost->moe_scaled());
  auto p = cost->Pass(2, 4, 512);  // m = 8 tokens
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->moe_s, 48 * (0.05 + 7.0 / 15 * 0.35) * 1e-3, 1e-12);
  const GemmTable& g = tables.gemm;
  const double qkv = *g.Seconds(8, 32 * 128 + 2 * 4 * 128, 2048);
  const double o = *g.Seconds(8, 2048, 32 * 128);
  const double router = *g.Seconds(8, 128, 2048);
  EXPECT_NEAR(p->gemm_s, 48 * (qkv + o + router), 1e-12);
  EXPECT_NEAR(p->lm_head_s, *g.Seconds(8, 151936, 2048), 1e-15);
  auto attn = cost->Attention(2, 4, 512);
  ASSERT_TRUE(attn.ok());
  EXPECT_NEAR(p->attention_s, 48 * attn->seconds, 1e-12);
  EXPECT_DOUBLE_EQ(p->total_s(), p->gemm_s + p->attention_s + p->lm_head_s + p->moe_s);
  EXPECT_FALSE(p->extrapolated);
  // 4 x 32 = 128 tokens is past the block's 64: flagged, and it says which table.
  auto big = cost->Pass(4, 32, 0);
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(big->extrapolated);
  EXPECT_THAT(big->why, HasSubstr("moe.csv"));
  // More verified tokens touch more experts: the block at s = 16 costs 8x the one at s = 1.
  EXPECT_NEAR(cost->Pass(1, 16, 0)->moe_s / cost->Pass(1, 1, 0)->moe_s, 8.0, 1e-9);
}

TEST_F(ComposeMoe, AShapeTheTableLacksIsScaledFromTheNearestAndSaysSo) {
  // Only a 2048/1536 block measured: Qwen3-30B-A3B's 768-wide experts stream half the bytes and
  // compute half the FLOPs at every token count, so the rule scales by exactly 0.5.
  Write("moe.csv", std::string(kHeader) + Row(1, 0.1, 1536) + Row(64, 0.9, 1536) +
                       "k,bfloat16,1,4096,1536,8,128,1,1,balanced,0.5\n");
  const EngineKernelTables tables = Load();
  auto cost = ComposedCost::Create(&tables, moe_, gpu_, false);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_TRUE(cost->moe_scaled());
  EXPECT_EQ(cost->moe_reference().inter, 1536);
  EXPECT_EQ(cost->moe_reference().hidden, 2048);  // nearer than 4096/1536
  for (double tokens : {1.0, 7.0, 64.0}) EXPECT_NEAR(cost->MoeScale(tokens), 0.5, 1e-12);
  EXPECT_NEAR(cost->MoeBlock(1)->seconds, 0.05e-3, 1e-15);
  ComposeOptions o;
  o.b_grid = {1, 2};
  o.s_grid = {1, 4};
  o.c_grid = {0, 1024};
  auto prof = ComposeProfile(tables, "qwen3-30b-a3b", o);
  ASSERT_TRUE(prof.ok()) << prof.status();
  EXPECT_THAT(prof->provenance, HasSubstr("scaled to the model's bfloat16 2048/768 128x8"));
  EXPECT_THAT(prof->provenance, HasSubstr("by expert weight bytes and FLOPs"));
  bool said = false;
  for (const std::string& n : prof->notes) said = said || n.find("MoE shape not in the table") == 0;
  EXPECT_TRUE(said);
  EXPECT_EQ(prof->software.at("moe_kernels"), "k");
  // Another routing distribution is not measured at all: a named error, nothing composed.
  o.moe.distribution = "power_law_1.2";
  auto refused = ComposeProfile(tables, "qwen3-30b-a3b", o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("no bfloat16 MoE block at moe_tp_size 1, moe_ep_size 1, distribution "
                        "power_law_1.2"));
}

TEST_F(ComposeMoe, NamedErrorsWithoutAMoeTableOrWithABadShard) {
  const EngineKernelTables tables = Load();
  auto none = ComposedCost::Create(&tables, moe_, gpu_, false);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no moe.csv; --model qwen3-30b-a3b"));
  Write("moe.csv", std::string(kHeader) + Row(1, 0.05));
  const EngineKernelTables with = Load();
  MoeCompose ep;
  ep.ep = 3;
  auto bad = ComposedCost::Create(&with, moe_, gpu_, false, ep);
  EXPECT_THAT(bad.status().message(), HasSubstr("--moe-ep 3: must divide --tp 1"));
  MoeCompose fp8;
  fp8.dtype = "fp8";
  EXPECT_THAT(ComposedCost::Create(&with, moe_, gpu_, false, fp8).status().message(),
              HasSubstr("no MoE block of moe_dtype fp8 (held: bfloat16)"));
  // A bad row in the folder's moe.csv stops the load: nothing can be composed from it.
  Write("moe.csv", std::string(kHeader) + Row(1, 0.05) + Row(2, -1));
  auto load = LoadEngineKernelTables(dir_.string());
  ASSERT_FALSE(load.ok());
  EXPECT_THAT(load.status().message(), HasSubstr("moe.csv:3: latency_ms = '-1'"));
}

TEST_F(ComposeMoe, TensorParallelAllReducesComeFromTheMeasuredTable) {
  Write("moe.csv", std::string(kHeader) + Row(1, 0.03, 768, 2) + Row(64, 0.3, 768, 2));
  Write("allreduce.csv",
        "kernel_source,dtype,num_gpus,message_size,latency_ms\n"
        "A_graph,bfloat16,2,2048,0.004\nA_graph,bfloat16,2,131072,0.008\n");
  const EngineKernelTables tables = Load();
  ModelSpec tp2 = moe_;
  tp2.tp = 2;
  auto cost = ComposedCost::Create(&tables, tp2, gpu_, false);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->moe_shape().moe_tp, 2);
  auto p = cost->Pass(1, 1, 0);  // one token: 2048 elements
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->comm_s, 2 * 48 * 0.004e-3, 1e-15);
  EXPECT_NEAR(p->moe_s, 48 * 0.03e-3, 1e-15);
}

// Reads a moe.csv as raw (shape -> num_tokens -> times) without the table's processing.
std::map<MoeShape, std::map<int64_t, std::vector<double>>> RawSeries(const std::string& text) {
  std::map<MoeShape, std::map<int64_t, std::vector<double>>> out;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (header) {
      header = false;
      continue;
    }
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    MoeShape s;
    int64_t tokens = 0;
    double ms = 0;
    s.dtype = f[1];
    EXPECT_TRUE(absl::SimpleAtoi(f[2], &tokens) && absl::SimpleAtoi(f[3], &s.hidden) &&
                absl::SimpleAtoi(f[4], &s.inter) && absl::SimpleAtoi(f[5], &s.topk) &&
                absl::SimpleAtoi(f[6], &s.experts) && absl::SimpleAtoi(f[7], &s.moe_tp) &&
                absl::SimpleAtoi(f[8], &s.moe_ep) && absl::SimpleAtod(f[10], &ms));
    s.distribution = f[9];
    out[s][tokens].push_back(ms * 1e-3);
  }
  return out;
}

// Leave-one-out over num_tokens on the shipped H100 MoE tables: each interior measured token
// count of every series is held out, the series rebuilt from the others (sorted, repeats
// averaged, isotonic), and the block read there is compared with the held-out measurement.
TEST(ComposeMoeShipped, LeaveOneOutOverTokensWithinFivePercentMedian) {
  const std::string root = ::specplan::test_paths::SourceDir() + "/data/kernels/h100_sxm";
  for (const char* engine : {"sglang-0.5.14", "vllm-0.24.0", "trtllm-1.3.0rc20"}) {
    SCOPED_TRACE(engine);
    auto text = ReadFileToString(root + "/" + engine + "/moe.csv");
    ASSERT_TRUE(text.ok()) << text.status();
    const auto raw = RawSeries(*text);
    ASSERT_FALSE(raw.empty());
    std::vector<double> errors;
    for (const auto& [shape, by_tokens] : raw) {
      std::vector<int64_t> counts;
      for (const auto& [t, unused] : by_tokens) counts.push_back(t);
      for (size_t held = 1; held + 1 < counts.size(); ++held) {
        std::map<MoeShape, std::vector<std::pair<int64_t, double>>> rest;
        for (const auto& [t, times] : by_tokens) {
          if (t == counts[held]) continue;
          for (double sec : times) rest[shape].push_back({t, sec});
        }
        const MoeTable table = MoeTable::FromSeries("loo", std::move(rest));
        auto got = table.Seconds(shape, static_cast<double>(counts[held]));
        ASSERT_TRUE(got.ok());
        const std::vector<double>& times = by_tokens.at(counts[held]);
        double measured = 0;
        for (double sec : times) measured += sec / static_cast<double>(times.size());
        errors.push_back(std::abs(got->seconds / measured - 1));
      }
    }
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2];
    std::cout << engine << ": " << errors.size() << " held-out points, median error "
              << 100 * median << " %\n";
    EXPECT_LT(median, 0.05);
  }
}

// The shipped MoE profiles (calib/h100-sxm/, README) are what the composer makes of the shipped
// tables, with the EAGLE-3 head composed beside each target.
TEST(ComposeMoeShipped, ShippedMoeProfilesAreTheComposersOutput) {
  const std::string root = ::specplan::test_paths::SourceDir();
  const std::pair<const char*, int64_t> targets[] = {
      {"qwen3-30b-a3b", 1}, {"qwen3-30b-a3b", 2}, {"gpt-oss-20b", 1}, {"glm-4.5-air", 4}};
  int checked = 0;
  for (const char* engine : {"sglang-0.5.14", "vllm-0.24.0", "trtllm-1.3.0rc20"}) {
    auto tables = LoadEngineKernelTables(root + "/data/kernels/h100_sxm/" + engine);
    ASSERT_TRUE(tables.ok()) << tables.status();
    for (const auto& [model, tp] : targets) {
      const std::string path = BundledProfilePath(root + "/calib", "h100-sxm", model,
                                                  DType::kBFloat16, tp, tables->engine);
      SCOPED_TRACE(path);
      auto shipped = LoadProfile(path);
      ASSERT_TRUE(shipped.ok()) << shipped.status();
      ComposeOptions o;
      o.tp = tp;
      o.drafters = {"eagle3"};
      auto fresh = ComposeProfile(*tables, model, o);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      EXPECT_EQ(shipped->provenance, fresh->provenance);
      EXPECT_EQ(shipped->notes, fresh->notes);
      ASSERT_EQ(shipped->table->b_grid, fresh->table->b_grid);
      for (size_t b = 0; b < fresh->table->batch_seconds.size(); ++b) {
        for (size_t c = 0; c < fresh->table->batch_seconds[b].size(); ++c) {
          for (size_t s = 0; s < fresh->table->batch_seconds[b][c].size(); ++s) {
            ASSERT_NEAR(shipped->table->batch_seconds[b][c][s],
                        fresh->table->batch_seconds[b][c][s],
                        1e-9 * fresh->table->batch_seconds[b][c][s]);
          }
        }
      }
      ASSERT_EQ(shipped->drafters.count("eagle3"), 1u);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12);
}

}  // namespace
}  // namespace specplan::costmodel
