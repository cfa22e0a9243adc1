// elementwise.csv (written by `calibrate --kernels`): parsing, lookups along m, named errors, and
// the composer's use of it: an op the table measured at the model's width is priced from the
// table, every other op as a memory-bound kernel (max(launch floor, bytes / bandwidth)).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "tests/costmodel/scratch_engine_folder.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

// qwen3-8b's widths: hidden 4096, (32 + 8) x 128 = 5120 for q/k, ffn 12288. rope, kv_store and
// embedding are left out (priced by bandwidth).
constexpr char kElementwise[] = R"(kernel_source,op,m,width,latency_ms,min_ms,max_ms,repeats
t,add_norm,1,4096,0.010,0.009,0.011,7
t,add_norm,64,4096,0.030,0.029,0.031,7
t,qk_norm,1,5120,0.012,0.011,0.013,7
t,act_mul,1,12288,0.006,0.006,0.006,7
)";

TEST(ElementwiseTableTest, ReadsTheMeasuredPointsAndInterpolatesInM) {
  auto t = ElementwiseTable::Parse(kElementwise, "elementwise.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_DOUBLE_EQ(*t->Seconds("add_norm", 1, 4096), 10e-6);
  EXPECT_DOUBLE_EQ(*t->Seconds("add_norm", 64, 4096), 30e-6);
  // Linear in m between measured points; below the smallest, the smallest's time; above the
  // largest, the line through the last two.
  EXPECT_NEAR(*t->Seconds("add_norm", 32, 4096), 10e-6 + 20e-6 * 31.0 / 63.0, 1e-15);
  EXPECT_NEAR(*t->Seconds("add_norm", 127, 4096), 30e-6 + 20e-6, 1e-15);
  // Not measured: no answer, so the composer prices it by bandwidth.
  EXPECT_FALSE(t->Seconds("add_norm", 8, 4097).has_value());
  EXPECT_FALSE(t->Seconds("rope", 8, 5120).has_value());
  EXPECT_THAT(t->kernel_sources(), ::testing::ElementsAre("t"));
}

TEST(ElementwiseTableTest, NoisyDipsAreSmoothedAndRepeatsAveraged) {
  auto t = ElementwiseTable::Parse(
      "kernel_source,op,m,width,latency_ms\n"
      "t,rope,1,64,0.010\nt,rope,2,64,0.006\nt,rope,4,64,0.020\nt,rope,4,64,0.030\n",
      "elementwise.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  // m = 1 and 2 pool to their mean (more tokens never cost less); m = 4's repeats average.
  EXPECT_NEAR(*t->Seconds("rope", 1, 64), 8e-6, 1e-15);
  EXPECT_NEAR(*t->Seconds("rope", 2, 64), 8e-6, 1e-15);
  EXPECT_NEAR(*t->Seconds("rope", 4, 64), 25e-6, 1e-15);
  EXPECT_NEAR(t->max_change(), 1.0 / 3.0, 1e-12);  // 0.006 -> 0.008
}

TEST(ElementwiseTableTest, BadRowsAreNamedWithTheirLine) {
  auto bad = [](const std::string& rows) {
    return ElementwiseTable::Parse("kernel_source,op,m,width,latency_ms\n" + rows,
                                   "elementwise.csv")
        .status();
  };
  EXPECT_THAT(bad("t,layernorm,1,64,0.01\n").message(),
              HasSubstr("elementwise.csv:2: op = 'layernorm': expected one of add_norm, qk_norm, "
                        "rope, kv_store, act_mul, embedding"));
  EXPECT_THAT(bad("t,rope,1,64,0.01\nt,rope,0,64,0.01\n").message(),
              HasSubstr("elementwise.csv:3: m = '0': expected an integer >= 1"));
  EXPECT_THAT(bad("t,rope,1,wide,0.01\n").message(), HasSubstr("width = 'wide'"));
  EXPECT_THAT(bad("t,rope,1,64,nan\n").message(), HasSubstr("latency_ms = 'nan'"));
  EXPECT_THAT(
      ElementwiseTable::Parse("kernel_source,op,m,latency_ms\nt,rope,1,0.01\n", "elementwise.csv")
          .status()
          .message(),
      HasSubstr("missing column 'width'"));
}

// The shipped H100 SGLang tables, with or without elementwise.csv.
using ComposerElementwiseTest = testing::ScratchEngineFolder;

TEST_F(ComposerElementwiseTest, MeasuredOpsComeFromTheTableTheRestFromBandwidth) {
  const EngineKernelTables plain_tables = Load();
  EXPECT_FALSE(plain_tables.elementwise.has_value());
  Write("elementwise.csv", kElementwise);
  const EngineKernelTables tables = Load();
  ASSERT_TRUE(tables.elementwise.has_value());

  auto plain = ComposedCost::Create(&plain_tables, spec_, gpu_, true);
  auto measured = ComposedCost::Create(&tables, spec_, gpu_, true);
  ASSERT_TRUE(plain.ok() && measured.ok());
  const int64_t b = 4, s = 8, c = 512, m = b * s;
  const double md = m, bp = spec_.bytes_per_element(), L = spec_.layers;
  const ElementwiseTable& e = *tables.elementwise;
  // rope, the KV store and the embedding gather are not in the table: bandwidth-priced.
  const double rope = measured->ElementwiseSeconds(2 * md * 5120 * bp);
  const double kv_store = measured->ElementwiseSeconds(2 * 2 * md * 1024 * bp);
  const double embedding = measured->ElementwiseSeconds(2 * md * 4096 * bp);
  const double add_norm = *e.Seconds("add_norm", m, 4096);
  // One measured m: that time at every m.
  EXPECT_DOUBLE_EQ(*e.Seconds("act_mul", m, 12288), 6e-6);
  const double layer = 2 * add_norm + *e.Seconds("qk_norm", m, 5120) + rope + kv_store +
                       *e.Seconds("act_mul", m, 12288);
  auto with = measured->Pass(b, s, c);
  auto without = plain->Pass(b, s, c);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_NEAR(with->elementwise_s, L * layer + embedding + add_norm, 1e-12);
  EXPECT_NE(with->elementwise_s, without->elementwise_s);
  // The GEMM and attention tables are read as before.
  EXPECT_DOUBLE_EQ(with->measured_s(), without->measured_s());

  // The profile says where the elementwise terms came from.
  auto p = ComposeProfile(tables, "qwen3-8b", {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->notes,
              ::testing::Contains(HasSubstr(
                  "elementwise terms (norms, q/k norms, RoPE, SiLU-mul, residual adds, KV-cache "
                  "write, embedding, final norm) from "
                  "h100_sxm/sglang-0.5.14/elementwise.csv where it "
                  "measured the op at the model's width")));
}

}  // namespace
}  // namespace specplan::costmodel
