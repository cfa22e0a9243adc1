// tree_attention.csv (written by `calibrate --kernels`): parsing, lookups along s and kv_len, and
// the composer's use of it for s > 1 (present: the table; absent or outside its s range: the
// max(generation, context) bound), plus the tables' dtype from SOURCE.txt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "tests/costmodel/scratch_engine_folder.h"
#include "tests/paths/test_paths.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kTree[] =
    "kernel_source,batch_size,s,kv_len,num_heads,num_key_value_heads,head_dim,latency_ms,min_ms,"
    "max_ms,repeats\n"
    "t,1,2,2,32,8,128,0.010,0.009,0.011,7\n"
    "t,1,2,1026,32,8,128,0.030,0.029,0.031,7\n"
    "t,1,8,8,32,8,128,0.020,0.019,0.021,7\n"
    "t,1,8,1032,32,8,128,0.060,0.059,0.061,7\n"
    "t,4,2,2,32,8,128,0.040,0.039,0.041,7\n"
    "t,4,2,1026,32,8,128,0.120,0.119,0.121,7\n"
    "t,4,8,8,32,8,128,0.080,0.079,0.081,7\n"
    "t,4,8,1032,32,8,128,0.240,0.239,0.241,7\n";

const AttentionHeads kHeads{32, 8, 128};

TEST(TreeAttentionTableTest, ReadsTheMeasuredPointsAndInterpolatesInSAndKvLen) {
  auto t = TreeAttentionTable::Parse(kTree, "tree_attention.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->min_s(), 2);
  EXPECT_EQ(t->max_s(), 8);
  EXPECT_TRUE(t->Holds(kHeads));
  EXPECT_FALSE(t->Holds({16, 8, 128}));
  EXPECT_EQ(t->kernel_sources(), std::vector<std::string>{"t"});
  // Measured points, exactly.
  auto at = t->Seconds(kHeads, 1, 2, 1026);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_DOUBLE_EQ(at->seconds, 0.030e-3);
  EXPECT_FALSE(at->extrapolated);
  EXPECT_DOUBLE_EQ(t->Seconds(kHeads, 4, 8, 1032)->seconds, 0.240e-3);
  // Half-way along kv_len at s = 2: the mean of the two points.
  EXPECT_NEAR(t->Seconds(kHeads, 1, 2, 514)->seconds, 0.020e-3, 1e-12);
  // s = 5 is half-way between s = 2 and s = 8 at the same kv_len (each read along kv_len).
  const double s2 = t->Seconds(kHeads, 1, 2, 517)->seconds;
  const double s8 = t->Seconds(kHeads, 1, 8, 517)->seconds;
  EXPECT_NEAR(t->Seconds(kHeads, 1, 5, 517)->seconds, 0.5 * (s2 + s8), 1e-15);
  // Batch between measured batch sizes: linear in b.
  EXPECT_NEAR(t->Seconds(kHeads, 2.5, 2, 2)->seconds, 0.025e-3, 1e-12);
  // Past the largest kv_len: extrapolated and said so.
  auto far = t->Seconds(kHeads, 1, 2, 4000);
  ASSERT_TRUE(far.ok());
  EXPECT_TRUE(far->extrapolated);
  EXPECT_THAT(far->why, HasSubstr("kv_len"));
  // Outside the measured s, and heads it does not hold: named errors.
  EXPECT_EQ(t->Seconds(kHeads, 1, 9, 100).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(t->Seconds(kHeads, 1, 1, 100).status().message()),
              HasSubstr("s = 1 is outside the measured s 2 .. 8"));
  EXPECT_EQ(t->Seconds({16, 8, 128}, 1, 2, 100).status().code(), absl::StatusCode::kNotFound);
}

TEST(TreeAttentionTableTest, RefusesBadRows) {
  auto t = TreeAttentionTable::Parse(
      "batch_size,s,kv_len,num_heads,num_key_value_heads,head_dim,latency_ms\n1,8,4,32,8,128,1\n",
      "tree_attention.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("tree_attention.csv:2: kv_len = 4 < s = 8"));
  t = TreeAttentionTable::Parse(
      "batch_size,kv_len,num_heads,num_key_value_heads,head_dim,latency_ms\n1,8,32,8,128,1\n",
      "tree_attention.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("missing column 's'"));
}

// The shipped H100 SGLang tables, with or without a tree table.
using ComposerTreeTest = testing::ScratchEngineFolder;

TEST_F(ComposerTreeTest, UsesTheTreeTableWhenPresentAndTheBoundOtherwise) {
  // Absent: today's rule, max(generation at c + s, context at the equal-pairs isl).
  const EngineKernelTables plain = Load();
  EXPECT_FALSE(plain.tree.has_value());
  auto bound = ComposedCost::Create(&plain, spec_, gpu_, false);
  ASSERT_TRUE(bound.ok()) << bound.status();
  const int64_t b = 4, s = 5, c = 700;
  const double pairs = 5.0 * 700 + 5.0 * 6 / 2;
  const double n_eq = (std::sqrt(8 * pairs + 1) - 1) / 2;
  const double gen = plain.generation.Seconds(kHeads, b, c + s)->seconds;
  const double ctx = plain.context.Seconds(kHeads, b, n_eq)->seconds;
  auto without = bound->Attention(b, s, c);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_DOUBLE_EQ(without->seconds, std::max(gen, ctx));

  // Present: the tree table at kv_len = c + s for s inside its range.
  Write("tree_attention.csv", kTree);
  const EngineKernelTables with_tree = Load();
  ASSERT_TRUE(with_tree.tree.has_value());
  auto tree_cost = ComposedCost::Create(&with_tree, spec_, gpu_, false);
  ASSERT_TRUE(tree_cost.ok());
  auto with = tree_cost->Attention(b, s, c);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_DOUBLE_EQ(with->seconds, with_tree.tree->Seconds(kHeads, b, s, c + s)->seconds);
  EXPECT_NE(with->seconds, without->seconds);
  // s = 1 still reads the generation table; s past the tree table's range falls back to the
  // bound.
  EXPECT_DOUBLE_EQ(tree_cost->Attention(b, 1, c)->seconds, bound->Attention(b, 1, c)->seconds);
  EXPECT_DOUBLE_EQ(tree_cost->Attention(b, 16, c)->seconds, bound->Attention(b, 16, c)->seconds);

  // The composed profile says which rule priced s > 1 and which kernels the tree table timed.
  ComposeOptions o;
  o.b_grid = {1, 4};
  o.s_grid = {1, 4, 16};
  o.c_grid = {0, 1024};
  o.drafters = {"none"};
  auto prof = ComposeProfile(with_tree, "qwen3-8b", o);
  ASSERT_TRUE(prof.ok()) << prof.status();
  EXPECT_EQ(prof->software.at("tree_attention_kernels"), "t");
  bool said = false;
  for (const std::string& n : prof->notes)
    said |= n.find("at s = 2 .. 8: the tree-attention") != std::string::npos;
  EXPECT_TRUE(said);
  auto prof_plain = ComposeProfile(plain, "qwen3-8b", o);
  ASSERT_TRUE(prof_plain.ok());
  // s = 1 cells are the same; s = 4 cells differ (the tree table), s = 16 the same (the bound).
  EXPECT_DOUBLE_EQ(prof->table->seconds[1][0], prof_plain->table->seconds[1][0]);
  EXPECT_NE(prof->table->seconds[1][1], prof_plain->table->seconds[1][1]);
  EXPECT_DOUBLE_EQ(prof->table->seconds[1][2], prof_plain->table->seconds[1][2]);
}

TEST_F(ComposerTreeTest, TheTablesDtypeComesFromSourceTxtAndMustMatch) {
  std::ofstream(dir_ / "SOURCE.txt", std::ios::app) << "dtype fp32\n";
  auto t = LoadEngineKernelTables(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype, DType::kFloat32);
  ComposeOptions o;
  o.drafters = {"none"};
  o.b_grid = {1};
  o.s_grid = {1};
  o.c_grid = {0};
  auto bf16 = ComposeProfile(*t, "qwen3-8b", o);  // options default to bf16
  ASSERT_FALSE(bf16.ok());
  EXPECT_THAT(std::string(bf16.status().message()),
              HasSubstr("--dtype bf16: the kernel tables hold fp32 timings only"));
  o.dtype = DType::kFloat32;
  EXPECT_TRUE(ComposeProfile(*t, "qwen3-8b", o).ok());

  Write("SOURCE.txt", "dtype int3\n");
  auto bad = LoadEngineKernelTables(dir_.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("SOURCE.txt: dtype 'int3'"));
}

TEST_F(ComposerTreeTest, TheSpecplanEngineComposesOnlyFromASpecplanFolder) {
  ComposeOptions o;
  o.engine = "specplan";
  o.drafters = {"none"};
  auto t = LoadEngineKernelTables(dir_.string());
  ASSERT_TRUE(t.ok());
  auto p = ComposeProfile(*t, "qwen3-8b", o);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("--engine specplan"));
}

}  // namespace
}  // namespace specplan::costmodel
