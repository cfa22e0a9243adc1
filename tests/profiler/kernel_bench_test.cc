// calibrate --kernels (profiler/kernel_bench.h): the kernel grid, the CSV writers read back by
// the composer's parsers, a small CPU run end to end (tables, SOURCE.txt, the composed profile),
// the composer reading these tables exactly as it reads aiconfigurator's layout, the budget,
// an interrupted run, and every bad input refused before any timing.
#include "profiler/kernel_bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "costmodel/compose/compose.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/profile_json.h"
#include "tests/profiler/test_util.h"
#include "util/file.h"

namespace specplan::profiler {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

costmodel::ModelSpec Tiny() {
  auto t = ResolveTarget("tiny", "", costmodel::DType::kFloat32);
  EXPECT_TRUE(t.ok()) << t.status();
  return t->spec;
}

bool HasShape(const KernelGrid& g, int64_t n, int64_t k) {
  for (const GemmShape& s : g.gemm_shapes) {
    if (s.n == n && s.k == k) return true;
  }
  return false;
}

TEST(KernelGridTest, CoversTheModelsFusedWidthsAndTheProfileGrid) {
  // tiny: hidden 64, 4 heads / 2 kv heads of 16, ffn 128, vocab 256.
  ProfileGrids pg{{1, 2, 4}, {1, 3, 8}, {0, 64, 256}};
  auto g = KernelGridFor(Tiny(), {}, pg, 0);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(HasShape(*g, (4 + 2 * 2) * 16, 64));  // fused QKV
  EXPECT_TRUE(HasShape(*g, 64, 64));                // O
  EXPECT_TRUE(HasShape(*g, 2 * 128, 64));           // gate/up (= LM head's 256 x 64)
  EXPECT_TRUE(HasShape(*g, 64, 128));               // down
  EXPECT_EQ(g->gemm_shapes.size(), 4u);
  // m: every b s of the profile grid, up to 4 x 8 = 32, sorted and distinct.
  for (int64_t b : pg.b) {
    for (int64_t s : pg.s) {
      EXPECT_TRUE(std::binary_search(g->gemm_m.begin(), g->gemm_m.end(), b * s)) << b * s;
    }
  }
  EXPECT_TRUE(std::is_sorted(g->gemm_m.begin(), g->gemm_m.end()));
  EXPECT_EQ(g->gemm_m.front(), 1);
  EXPECT_EQ(g->gemm_m.back(), 32);
  EXPECT_EQ(g->batch, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(g->kv_len, (std::vector<int64_t>{1, 65, 257, 264}));  // c + 1, max c + max s
  EXPECT_EQ(g->tree_s, (std::vector<int64_t>{3, 8}));             // s > 1
  EXPECT_EQ(g->tree_c, (std::vector<int64_t>{0, 64, 256}));
  EXPECT_EQ(g->isl.front(), 1);
  // The largest isl scores as many pairs as 8 tokens over 256 cached ones.
  EXPECT_GE(g->isl.back() * (g->isl.back() + 1) / 2, 8 * 256 + 36);
  EXPECT_EQ(g->heads.size(), 1u);
  EXPECT_EQ(g->heads[0].ToString(), "4/2/16");
  EXPECT_EQ(g->points(), g->gemm_points() + g->generation_points() + g->context_points() +
                             g->tree_points() + g->elementwise_points());
  EXPECT_EQ(g->tree_points(), 1 * 3 * 2 * 3);
  // The elementwise ops at the widths the composer reads them (tiny is llama-style, no q/k norm).
  using Op = std::pair<std::string, int64_t>;
  EXPECT_EQ(g->elementwise, (std::vector<Op>{{"add_norm", 64},
                                             {"rope", (4 + 2) * 16},
                                             {"kv_store", 2 * 2 * 16},
                                             {"act_mul", 128},
                                             {"embedding", 64}}));
  EXPECT_EQ(g->elementwise_points(), static_cast<int64_t>(5 * g->gemm_m.size()));
  auto qwen3 = ResolveTarget("tiny-qwen3", "", costmodel::DType::kFloat32);
  ASSERT_TRUE(qwen3.ok()) << qwen3.status();
  auto q = KernelGridFor(qwen3->spec, {}, pg, 0);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->elementwise[1].first, "qk_norm");

  // Drafters add their widths: eagle3's 2h-wide QKV input, its 3h fc and 32000-token LM head.
  auto d = KernelGridFor(Tiny(), {"eagle3"}, pg, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(HasShape(*d, (4 + 2 * 2) * 16, 2 * 64));
  EXPECT_TRUE(HasShape(*d, 64, 3 * 64));
  EXPECT_TRUE(HasShape(*d, 32000, 64));

  // Coarsening thins every axis and keeps both ends.
  auto c1 = KernelGridFor(Tiny(), {}, pg, 1);
  ASSERT_TRUE(c1.ok());
  EXPECT_LT(c1->points(), g->points());
  EXPECT_EQ(c1->gemm_m.front(), 1);
  EXPECT_EQ(c1->gemm_m.back(), 32);
  EXPECT_EQ(c1->tree_c, (std::vector<int64_t>{0, 256}));
}

TEST(KernelTablesWriterTest, TheComposersParsersReadBackWhatWasWritten) {
  const KernelTiming t{0.125, 0.1, 0.2, 7};
  const std::string gemm = GemmCsv("torch_linear", {{4, 128, 64, t}, {8, 128, 64, t}});
  EXPECT_EQ(gemm,
            "kernel_source,m,n,k,latency_ms,min_ms,max_ms,repeats\n"
            "torch_linear,4,128,64,0.125,0.1,0.2,7\n"
            "torch_linear,8,128,64,0.125,0.1,0.2,7\n");
  auto g = costmodel::GemmTable::Parse(gemm, "gemm.csv");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_DOUBLE_EQ(*g->Seconds(4, 128, 64), 0.125e-3);
  EXPECT_EQ(g->rows(), 2u);

  const costmodel::AttentionHeads h{4, 2, 16};
  auto gen = costmodel::AttentionTable::Parse(
      AttentionCsv("generation", "s", {{1, 1, 65, h, t}, {1, 1, 129, h, {0.25, 0.2, 0.3, 7}}}),
      "generation_attention.csv", "kv_len");
  ASSERT_TRUE(gen.ok()) << gen.status();
  EXPECT_DOUBLE_EQ(gen->Seconds(h, 1, 97)->seconds, 0.1875e-3);
  auto ctx = costmodel::AttentionTable::Parse(AttentionCsv("context", "s", {{2, 8, 8, h, t}}),
                                              "context_attention.csv", "isl");
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_DOUBLE_EQ(ctx->Seconds(h, 2, 8)->seconds, 0.125e-3);
  const std::string tree_csv = AttentionCsv("tree", "s", {{1, 4, 68, h, t}});
  EXPECT_THAT(tree_csv, HasSubstr("kernel_source,batch_size,s,kv_len,num_heads,"));
  auto tree = costmodel::TreeAttentionTable::Parse(tree_csv, "tree_attention.csv");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_DOUBLE_EQ(tree->Seconds(h, 1, 4, 68)->seconds, 0.125e-3);

  const std::string elementwise = ElementwiseCsv("ops", {{"rope", 2, 96, t}, {"rope", 8, 96, t}});
  EXPECT_THAT(elementwise, HasSubstr("kernel_source,op,m,width,latency_ms,min_ms,max_ms,repeats\n"
                                     "ops,rope,2,96,0.125,0.1,0.2,7\n"));
  auto e = costmodel::ElementwiseTable::Parse(elementwise, "elementwise.csv");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_DOUBLE_EQ(*e->Seconds("rope", 4, 96), 0.125e-3);
}

CalibrateOptions SmallRun(const testing::TempDir& dir) {
  CalibrateOptions o;
  o.gpu = "cpu";
  o.model = "tiny";
  o.device = "cpu";
  o.b_grid = {1, 2};
  o.s_grid = {1, 4};
  o.c_grid = {0, 32};
  o.repeats = 1;
  o.warmup = 0;
  o.out = dir.File("out/cpu/tiny-fp32.json");
  return o;
}

// The columns aiconfigurator's tables have, nothing more (data/kernels/README.md).
std::string KeepColumns(const std::string& csv, size_t n) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    f.resize(n);
    absl::StrAppend(&out, absl::StrJoin(f, ","), "\n");
  }
  return out;
}

TEST(KernelCalibrationTest, WritesTheTablesAndAComposedProfileOnTheCpu) {
  testing::TempDir dir;
  CalibrateOptions o = SmallRun(dir);
  std::ostringstream progress;
  o.progress = &progress;
  auto r = RunKernelCalibration(o);
  ASSERT_TRUE(r.ok()) << r.status();
  const fs::path folder = r->kernels_dir;
  EXPECT_EQ(folder.parent_path().filename(), "cpu");
  EXPECT_EQ(folder.parent_path().parent_path(), fs::path(dir.File("out/cpu/kernels")));
  EXPECT_THAT(folder.filename().string(), ::testing::StartsWith("specplan-libtorch"));
  EXPECT_EQ(r->tables, (std::vector<std::string>{"gemm.csv", "generation_attention.csv",
                                                 "context_attention.csv", "tree_attention.csv",
                                                 "elementwise.csv"}));
  for (const std::string& f : r->tables) EXPECT_TRUE(fs::exists(folder / f)) << f;
  auto source = ReadFileToString((folder / "SOURCE.txt").string());
  ASSERT_TRUE(source.ok());
  EXPECT_THAT(*source, HasSubstr("device "));
  EXPECT_THAT(*source, HasSubstr("dtype fp32"));
  EXPECT_THAT(*source, HasSubstr("timer host_clock"));
  EXPECT_THAT(*source, HasSubstr("libtorch "));
  // Progress: each grid's size before it starts, the wall time at the end.
  EXPECT_THAT(progress.str(), HasSubstr("calibrate: gemm: "));
  EXPECT_THAT(progress.str(), HasSubstr("calibrate: tree attention: 1 heads x 2 b x 1 s x 2 c"));
  EXPECT_THAT(progress.str(), HasSubstr("calibrate: elementwise: 5 ops x "));
  // Every op of the grid at every m, as the composer reads them.
  auto elementwise = ReadFileToString((folder / "elementwise.csv").string());
  ASSERT_TRUE(elementwise.ok());
  auto parsed = costmodel::ElementwiseTable::Parse(*elementwise, "elementwise.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (const char* op : {"add_norm", "rope", "kv_store", "act_mul", "embedding"}) {
    EXPECT_THAT(*elementwise, HasSubstr(absl::StrCat("specplan_runtime_ops,", op, ",1,")));
  }
  EXPECT_TRUE(parsed->Seconds("act_mul", 8, 128).has_value());
  EXPECT_THAT(progress.str(), HasSubstr(" s wall "));

  auto p = costmodel::LoadProfile(o.out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->engine, "specplan");
  EXPECT_EQ(p->timer, "host_clock");
  EXPECT_EQ(p->gpu, "cpu");
  EXPECT_EQ(p->model, "tiny");
  EXPECT_EQ(p->dtype, costmodel::DType::kFloat32);
  EXPECT_THAT(p->provenance, HasSubstr("calibrate --kernels"));
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->s_grid, o.s_grid);
  EXPECT_EQ(p->table->c_grid, o.c_grid);
  EXPECT_EQ(p->table->b_grid, std::vector<int64_t>{2});
  EXPECT_EQ(p->drafters.size(), 3u);  // eagle, eagle3, mtp: composed from the same tables
  EXPECT_EQ(p->software.count("libtorch"), 1u);

  // The composer reads these tables exactly as it reads aiconfigurator's: the same rows in
  // aiconfigurator's columns (no spread columns) compose the same cells.
  const fs::path plain = fs::path(dir.File("plain/cpu")) / folder.filename();
  fs::create_directories(plain);
  const std::pair<const char*, size_t> files[] = {{"gemm.csv", 5},
                                                  {"generation_attention.csv", 7},
                                                  {"context_attention.csv", 7},
                                                  {"tree_attention.csv", 8},
                                                  {"elementwise.csv", 5}};
  for (const auto& [file, columns] : files) {
    std::ofstream(plain / file) << KeepColumns(*ReadFileToString((folder / file).string()),
                                               columns);
  }
  std::ofstream(plain / "SOURCE.txt") << "device " << p->device_name << "\ndtype fp32\n";
  auto tables = costmodel::LoadEngineKernelTables(plain.string());
  ASSERT_TRUE(tables.ok()) << tables.status();
  costmodel::ComposeOptions co;
  co.dtype = costmodel::DType::kFloat32;
  co.gpu = "cpu";
  co.b_grid = o.b_grid;
  co.s_grid = o.s_grid;
  co.c_grid = o.c_grid;
  auto again = costmodel::ComposeProfile(*tables, Tiny(), co);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->table->seconds, p->table->seconds);
  EXPECT_EQ(again->table->batch_seconds, p->table->batch_seconds);
  for (const auto& [name, d] : p->drafters) {
    EXPECT_EQ(again->drafters.at(name).table.seconds, d.table.seconds) << name;
  }
}

TEST(KernelCalibrationTest, BudgetCoarsensTheGrid) {
  testing::TempDir dir;
  CalibrateOptions o = SmallRun(dir);
  o.s_grid = {1, 2, 4, 8};
  o.c_grid = {0, 16, 32, 64};
  o.budget_s = 1e-3;  // less than any grid: coarsened to the coarsest
  std::ostringstream progress;
  o.progress = &progress;
  auto r = RunKernelCalibration(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(progress.str(), HasSubstr("--budget-s 0: grid thinned"));
  EXPECT_THAT(progress.str(), HasSubstr("still over the budget"));
  auto tree = ReadFileToString((fs::path(r->kernels_dir) / "tree_attention.csv").string());
  ASSERT_TRUE(tree.ok());
  // Coarsest tree grid: s in {2, 8}, c in {0, 64}, b in {1, 2}: 8 rows plus the header.
  EXPECT_EQ(std::count(tree->begin(), tree->end(), '\n'), 9);
  EXPECT_TRUE(costmodel::LoadProfile(o.out).ok());
}

TEST(KernelCalibrationTest, AnInterruptedRunLeavesTheFinishedTablesAndNoProfile) {
  testing::TempDir dir;
  CalibrateOptions o = SmallRun(dir);
  fs::path folder;
  // Interrupt as soon as the first table (gemm.csv) is finished.
  o.cancel = [&] {
    for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
      if (e.path().filename() == "gemm.csv") return true;
    }
    return false;
  };
  auto r = RunKernelCalibration(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("no profile written"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("Tables finished: gemm.csv in "));
  EXPECT_FALSE(fs::exists(o.out));
  int tables = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;  // no half-written file
    EXPECT_NE(name, "generation_attention.csv");
    if (name == "gemm.csv") ++tables;
  }
  EXPECT_EQ(tables, 1);
}

// Every bad input is refused before anything is timed: nothing is written.
TEST(KernelCalibrationTest, RefusesBadInputBeforeTiming) {
  testing::TempDir dir;
  auto refused = [&](CalibrateOptions o, absl::StatusCode code, const std::string& text) {
    int polls = 0;
    o.cancel = [&] { return ++polls < 0; };
    auto r = RunKernelCalibration(o);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), code) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(text));
    EXPECT_EQ(polls, 0) << "timed before refusing: " << text;
    EXPECT_TRUE(fs::is_empty(dir.path())) << text;
  };
  CalibrateOptions o = SmallRun(dir);
  o.model = "no-such-model";
  refused(o, absl::StatusCode::kInvalidArgument, "--model 'no-such-model': not a built-in");
  o = SmallRun(dir);
  o.gpu = "h100";  // the device is this CPU
  refused(o, absl::StatusCode::kFailedPrecondition, "only valid --gpu is 'cpu'");
  o = SmallRun(dir);
  o.gpu = "no-such-gpu";
  refused(o, absl::StatusCode::kInvalidArgument, "--gpu no-such-gpu");
  o = SmallRun(dir);
  o.c_grid = {0, 4000000000};  // K/V of 4e9 cached tokens
  refused(o, absl::StatusCode::kResourceExhausted, "the grid does not fit in memory: ");
  o = SmallRun(dir);
  o.b_grid = {2, 4};
  refused(o, absl::StatusCode::kInvalidArgument, "--b-grid 2: must include 1");
  o = SmallRun(dir);
  o.dtype = "fp16";
  refused(o, absl::StatusCode::kInvalidArgument, "--dtype fp16: not timed on the CPU");
  o = SmallRun(dir);
  o.samples_out = dir.File("cells.csv");
  refused(o, absl::StatusCode::kInvalidArgument, "--samples-out: only with --mode runtime");
  o = SmallRun(dir);
  o.model = "qwen3-30b-a3b";
  refused(o, absl::StatusCode::kInvalidArgument, "a mixture-of-experts model");
}

TEST(KernelCalibrationCliTest, TheDefaultModeIsKernelsAndItsErrorsAreNamed) {
  testing::TempDir dir;
  const std::string out = dir.File("p/tiny.json");
  auto r = testing::RunCalibrate(
      "--gpu cpu --model tiny --b-grid 1,2 --s-grid 1,4 --c-grid 0,32 --repeats 1 --warmup 0 "
      "--budget-s 30 --out " +
      out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("engine specplan"));
  EXPECT_THAT(r.output, HasSubstr("tables   "));
  EXPECT_TRUE(fs::exists(dir.File("p/kernels/cpu")));
  auto p = costmodel::LoadProfile(out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->engine, "specplan");

  r = testing::RunCalibrate("--mode runtime --gpu cpu --model tiny --budget-s 5 --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--budget-s: only in kernels mode"));
  r = testing::RunCalibrate("--kernels --mode runtime --gpu cpu --model tiny --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("pick one"));
  r = testing::RunCalibrate("--gpu cpu --model tiny --c-grid 0,4000000000 --out " +
                            dir.File("big.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("the grid does not fit in memory"));
  EXPECT_FALSE(fs::exists(dir.File("big.json")));
}

}  // namespace
}  // namespace specplan::profiler
