// CompareKernelTables: shared shapes are exact matches, ratios are ours / theirs as the composer
// reads the tables, the summary's median, geometric mean and share within the tolerance, the GEMM
// bands by m; a folder against itself agrees everywhere.
#include "costmodel/compose/kernel_compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/paths/test_paths.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;

// An engine folder of three small tables.
fs::path Folder(const std::string& name, const std::string& gemm, const std::string& generation,
                const std::string& context) {
  const fs::path dir = fs::path(::testing::TempDir()) / "kernel_compare" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "gemm.csv") << "kernel_source,m,n,k,latency_ms\n" << gemm;
  std::ofstream(dir / "generation_attention.csv")
      << "kernel_source,batch_size,kv_len,num_heads,num_key_value_heads,head_dim,latency_ms\n"
      << generation;
  std::ofstream(dir / "context_attention.csv")
      << "kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,latency_ms\n"
      << context;
  return dir;
}

TEST(KernelCompare, SharedShapesRatiosAndBands) {
  const fs::path ours =
      Folder("ours",
             "x,1,64,64,0.010\nx,32,64,64,0.020\nx,1024,64,64,0.500\n"
             "x,8,128,64,0.030\n",
             "x,1,1024,32,8,128,0.020\nx,1,2048,32,8,128,0.030\n", "x,1,128,32,8,128,0.050\n");
  const fs::path theirs =
      Folder("theirs",
             "y,1,64,64,0.011\nx,32,64,64,0.020\ny,1024,64,64,0.400\n"
             "y,2048,64,64,0.800\n",
             "y,1,1024,32,8,128,0.025\ny,1,1024,16,8,128,0.010\n", "y,1,256,32,8,128,0.090\n");
  auto a = LoadEngineKernelTables(ours.string());
  auto b = LoadEngineKernelTables(theirs.string());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const KernelComparison c = CompareKernelTables(*a, *b, 0.10);
  ASSERT_EQ(c.tables.size(), 3u);

  const KernelTableComparison& g = c.tables[0];
  EXPECT_EQ(g.table, "gemm");
  EXPECT_EQ(g.ours_points, 4u);
  EXPECT_EQ(g.theirs_points, 4u);
  ASSERT_EQ(g.shared.size(), 3u);  // (8, 128, 64) and (2048, 64, 64) are one side's only
  EXPECT_EQ(g.shared[0].shape, "m = 1, n = 64, k = 64");
  EXPECT_NEAR(g.shared[0].ratio(), 0.010 / 0.011, 1e-12);
  EXPECT_NEAR(g.shared[2].ratio(), 1.25, 1e-12);
  EXPECT_EQ(g.all.count, 3u);
  EXPECT_NEAR(g.all.median, 1.0, 1e-12);
  EXPECT_NEAR(g.all.geomean, std::cbrt(0.010 / 0.011 * 1.25), 1e-12);
  EXPECT_NEAR(g.all.within, 2.0 / 3.0, 1e-12);  // 0.909 and 1.0 are within 10 %; 1.25 is not
  EXPECT_NEAR(g.all.worst_error, 0.25, 1e-12);
  ASSERT_EQ(g.bands.size(), 3u);
  EXPECT_EQ(g.bands[0].first, "m <= 16");
  EXPECT_EQ(g.bands[0].second.count, 1u);
  EXPECT_EQ(g.bands[1].first, "16 < m <= 512");
  EXPECT_NEAR(g.bands[1].second.median, 1.0, 1e-12);
  EXPECT_EQ(g.bands[2].first, "m > 512");
  EXPECT_NEAR(g.bands[2].second.within, 0.0, 1e-12);

  const KernelTableComparison& gen = c.tables[1];
  EXPECT_EQ(gen.table, "generation_attention");
  ASSERT_EQ(gen.shared.size(), 1u);  // the same heads, batch size and kv_len only
  EXPECT_EQ(gen.shared[0].shape, "32/8/128, b = 1, kv_len = 1024");
  EXPECT_NEAR(gen.shared[0].ratio(), 0.8, 1e-12);
  EXPECT_NEAR(gen.all.within, 0.0, 1e-12);
  EXPECT_NEAR(gen.all.worst_error, -0.2, 1e-12);  // signed: ours is faster
  EXPECT_TRUE(gen.bands.empty());

  const KernelTableComparison& ctx = c.tables[2];
  EXPECT_EQ(ctx.table, "context_attention");
  EXPECT_EQ(ctx.all.count, 0u);  // no shared isl

  // A wider tolerance counts 1.25 in.
  EXPECT_NEAR(CompareKernelTables(*a, *b, 0.25).tables[0].all.within, 1.0, 1e-12);
}

TEST(KernelCompare, AFolderAgreesWithItselfEverywhere) {
  auto t = LoadEngineKernelTables(::specplan::test_paths::SourceDir() +
                                  "/data/kernels/h100_sxm/sglang-0.5.14");
  ASSERT_TRUE(t.ok()) << t.status();
  const KernelComparison c = CompareKernelTables(*t, *t, 0.01);
  for (const KernelTableComparison& table : c.tables) {
    EXPECT_GT(table.all.count, 100u) << table.table;
    EXPECT_EQ(table.all.count, table.ours_points) << table.table;
    EXPECT_EQ(table.all.within, 1.0) << table.table;
    EXPECT_EQ(table.all.median, 1.0) << table.table;
  }
}

}  // namespace
}  // namespace specplan::costmodel
