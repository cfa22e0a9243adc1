// Tests of calibrate (profiler/calibration.h). Over 500 lines because it runs end to end on the
// CPU (single passes and batch passes), on CUDA where present (skipped otherwise), refits samples
// with known coefficients, and checks that bad input or a failed run writes nothing.
#include "profiler/calibration.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "costmodel/fit/samples_file.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "plot/chart.h"
#include "tests/profiler/test_util.h"

namespace specplan::profiler {
namespace {

namespace fs = std::filesystem;
using costmodel::LatencySample;

std::string Message(const absl::Status& st) { return std::string(st.message()); }

// Whether plot::RenderPng works in this build (it returns UNIMPLEMENTED until plot/ lands).
bool PlotLibraryWorks() {
  plot::Chart c;
  plot::Series s;
  s.x = {1, 2};
  s.y = {1, 2};
  c.series.push_back(s);
  return plot::RenderPng({c}, 200, 200).ok();
}

// A measured calibration of `model` on `device` over the (s, c) grid, `repeats` timed passes per
// point after one warm-up, written to `out`.
CalibrateOptions GridOptions(const std::string& gpu, const std::string& model,
                             const std::string& device, std::vector<int64_t> s_grid,
                             std::vector<int64_t> c_grid, int repeats, const std::string& out) {
  CalibrateOptions o;
  o.gpu = gpu;
  o.model = model;
  o.device = device;
  o.s_grid = std::move(s_grid);
  o.c_grid = std::move(c_grid);
  o.repeats = repeats;
  o.warmup = 1;
  o.out = out;
  return o;
}

// A small CPU calibration of the tiny model into `dir`.
CalibrateOptions TinyCpuOptions(const testing::TempDir& dir) {
  return GridOptions("cpu", "tiny", "cpu", {1, 4, 16}, {0, 64}, 2, dir.File("cpu/tiny-fp32.json"));
}

// The quickest calibration that still fits (three cells, one pass each, no plot): for the tests
// of where a profile may be written, not of what it measures.
CalibrateOptions QuickTinyCpuOptions(const testing::TempDir& dir) {
  CalibrateOptions o = TinyCpuOptions(dir);
  o.s_grid = {1, 2, 4};
  o.c_grid = {0};
  o.repeats = 1;
  o.plot = false;
  return o;
}

TEST(ParseGridTest, SortsAndValidates) {
  auto g = ParseGrid(" 8, 1,4 ", "--s-grid", 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ(*ParseGrid("0", "--c-grid", 0), (std::vector<int64_t>{0}));
  struct Case {
    std::string text, flag, expect;
    int64_t min;
  };
  const Case cases[] = {
      {"", "--s-grid", "--s-grid: empty", 1},
      {"1,x", "--s-grid", "--s-grid: 'x' is not an integer", 1},
      {"0,2", "--s-grid", "--s-grid: 0 is out of range (must be >= 1)", 1},
      {"-1", "--c-grid", "--c-grid: -1 is out of range (must be >= 0)", 0},
      {"4,4", "--s-grid", "--s-grid: 4 appears twice", 1},
      {"1,,2", "--s-grid", "empty entry", 1},
  };
  for (const Case& c : cases) {
    auto r = ParseGrid(c.text, c.flag, c.min);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(Message(r.status()).find(c.expect), std::string::npos) << r.status();
  }
}

TEST(ResolveTargetTest, BuiltinRegistryAndUnknown) {
  auto tiny = ResolveTarget("tiny", "", costmodel::DType::kFloat32);
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  ASSERT_TRUE(tiny->config.has_value());
  EXPECT_EQ(tiny->spec.name, "tiny");
  // layers, hidden, n_q, n_kv, head_dim, ffn, vocab.
  const costmodel::ModelSpec& spec = tiny->spec;
  EXPECT_EQ(
      std::tie(spec.layers, spec.hidden, spec.n_q, spec.n_kv, spec.head_dim, spec.ffn, spec.vocab),
      std::make_tuple(4, 64, 4, 2, 16, 128, 256));
  EXPECT_TRUE(tiny->spec.gated_mlp);
  EXPECT_EQ(tiny->spec.dtype, costmodel::DType::kFloat32);

  auto neox = ResolveTarget("tiny-neox", "", costmodel::DType::kFloat32);
  ASSERT_TRUE(neox.ok());
  EXPECT_FALSE(neox->spec.gated_mlp);

  // A registry model: the spec is the registry's, the runtime config is synthesised to match.
  auto qwen = ResolveTarget("qwen3-8b", "", costmodel::DType::kBFloat16);
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  auto reg = costmodel::LookupModel("qwen3-8b");
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(qwen->spec.name, "qwen3-8b");
  const runtime::ModelConfig& cfg = *qwen->config;
  EXPECT_EQ(cfg.num_layers, reg->layers);
  EXPECT_EQ(cfg.hidden_size, reg->hidden);
  EXPECT_EQ(cfg.num_heads, reg->n_q);
  EXPECT_EQ(cfg.num_kv_heads, reg->n_kv);
  EXPECT_EQ(cfg.head_dim, reg->head_dim);
  EXPECT_EQ(cfg.intermediate_size, reg->ffn);
  EXPECT_EQ(cfg.vocab_size, reg->vocab);
  EXPECT_TRUE(cfg.qk_norm);
  auto llama = ResolveTarget("llama-3.1-8b", "", costmodel::DType::kBFloat16);
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->config->rope_scaling.type, runtime::RopeScalingType::kLlama3);

  auto bad = ResolveTarget("gpt-17", "", costmodel::DType::kBFloat16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(Message(bad.status()).find("--model 'gpt-17'"), std::string::npos);
  EXPECT_NE(Message(bad.status()).find("--config"), std::string::npos);
}

TEST(ResolveTargetTest, HfConfigFileIsRecordedUnderTheModelName) {
  testing::TempDir dir;
  testing::WriteAll(dir.File("config.json"), R"({"model_type": "llama", "vocab_size": 128,
      "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2})");
  auto t = ResolveTarget("my-model", dir.path().string(), costmodel::DType::kFloat32);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->spec.name, "my-model");
  EXPECT_EQ(t->spec.layers, 2);
  EXPECT_EQ(t->spec.head_dim, 8);
  EXPECT_FALSE(
      ResolveTarget("my-model", dir.File("missing.json"), costmodel::DType::kFloat32).ok());
}

TEST(CalibrationTest, CpuEndToEndOnTheTinyModel) {
  testing::TempDir dir;
  CalibrateOptions o = TinyCpuOptions(dir);
  o.samples_out = dir.File("cells.csv");
  o.holdout = 0.25;  // 2 of 6 cells scored out of the fit
  std::ostringstream progress;
  o.progress = &progress;
  auto r = RunCalibration(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile_path, o.out);
  ASSERT_TRUE(fs::exists(o.out));

  // The file on disk is what the profiles tools read.
  auto p = costmodel::LoadProfile(o.out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpu, "cpu");
  EXPECT_EQ(p->model, "tiny");
  EXPECT_EQ(p->dtype, costmodel::DType::kFloat32);
  EXPECT_EQ(p->timer, "host_clock");
  EXPECT_FALSE(p->device_name.empty());
  EXPECT_EQ(p->software.count("libtorch"), 1u);
  EXPECT_EQ(p->software.count("calibrate"), 1u);
  EXPECT_FALSE(p->created_utc.empty());
  EXPECT_EQ(p->model_spec.hidden, 64);
  ASSERT_EQ(p->samples.size(), 6u);  // 3 x 2 grid, one median per cell
  int heldout = 0;
  for (const costmodel::ProfileSample& x : p->samples) {
    EXPECT_TRUE(x.sample.s == 1 || x.sample.s == 4 || x.sample.s == 16);
    EXPECT_TRUE(x.sample.c == 0 || x.sample.c == 64);
    EXPECT_GT(x.sample.seconds, 0);
    EXPECT_LT(x.sample.seconds, 10);
    heldout += x.heldout ? 1 : 0;
  }
  EXPECT_GE(heldout, 1);
  ASSERT_TRUE(p->table.has_value());  // full grid
  // A fit the loader would reject (e.g. a = 0 for linear on a machine whose tiny-model timings do
  // not grow with s) is dropped with a note; a fit that is present has held-out statistics.
  auto dropped = [&](const std::string& kind) {
    for (const std::string& n : p->notes) {
      if (n.rfind(kind + ": dropped", 0) == 0) return true;
    }
    return false;
  };
  EXPECT_TRUE(p->linear.has_value() || dropped("linear"));
  EXPECT_TRUE(p->per_term.has_value() || dropped("per_term"));
  if (p->linear.has_value()) {
    EXPECT_TRUE(std::isfinite(p->linear->a) && std::isfinite(p->linear->b_s));
  }
  for (const char* kind : {"roofline", "linear", "per_term"}) {
    if (std::string(kind) == "linear" && !p->linear.has_value()) continue;
    if (std::string(kind) == "per_term" && !p->per_term.has_value()) continue;
    ASSERT_EQ(p->heldout.count(kind), 1u) << kind;
    const costmodel::FitStats& s = p->heldout.at(kind);
    EXPECT_EQ(s.n, heldout);
    EXPECT_TRUE(std::isfinite(s.mape) && std::isfinite(s.rmse_s) && std::isfinite(s.max_abs_s))
        << kind;
  }
  EXPECT_TRUE(p->default_model == "linear" || p->default_model == "per_term" ||
              p->default_model == "overlap" || p->default_model == "kernel_sum")
      << p->default_model;
  EXPECT_EQ(p->cv.count(p->default_model), 1u);
  auto model = costmodel::MakeLatencyModel(*p);
  ASSERT_TRUE(model.ok());
  EXPECT_GT((*model)->VerifySeconds(8, 32), 0);

  // Cells: one per grid point, medians, and the CSV is a valid --from-samples input.
  ASSERT_EQ(r->cells.size(), 6u);
  auto again = [&] {
    CalibrateOptions f;
    f.gpu = "cpu";
    f.model = "tiny";
    f.from_samples = o.samples_out;
    f.out = dir.File("refit.json");
    f.plot = false;
    return RunCalibration(f);
  }();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->profile.samples.size(), 6u);

  const std::string log = progress.str();
  EXPECT_NE(log.find("[6/6] s=16 c=64"), std::string::npos) << log;
  EXPECT_NE(log.find("wrote " + o.out), std::string::npos) << log;

  const std::string png = dir.File("cpu/tiny-fp32.png");
  if (PlotLibraryWorks()) {
    EXPECT_EQ(r->png_path, png);
    ASSERT_TRUE(fs::exists(png));
    EXPECT_EQ(testing::ReadAll(png).substr(0, 8), "\x89PNG\r\n\x1a\n");
  } else {
    EXPECT_TRUE(r->png_path.empty());
    EXPECT_FALSE(r->plot_note.empty());
    EXPECT_FALSE(fs::exists(png));
  }
}

// --b-grid: each (b, s, c) cell times one ragged pass of b sequences; the profile's samples, table
// layers and CSV carry b, and the CSV refits to the same samples.
TEST(CalibrationTest, BatchGridTimesRaggedPassesOfEverySize) {
  testing::TempDir dir;
  CalibrateOptions o = TinyCpuOptions(dir);
  o.b_grid = {1, 3};
  o.samples_out = dir.File("cells.csv");
  o.plot = false;
  std::ostringstream progress;
  o.progress = &progress;
  auto r = RunCalibration(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->cells.size(), 12u);  // 2 batch sizes x 3 s x 2 c
  int batch_cells = 0;
  for (const MeasuredCell& cell : r->cells) {
    EXPECT_TRUE(cell.b == 1 || cell.b == 3);
    batch_cells += cell.b == 3 ? 1 : 0;
    EXPECT_GT(cell.median.seconds, 0);
  }
  EXPECT_EQ(batch_cells, 6);
  const std::string log = progress.str();
  EXPECT_NE(log.find("timing 2 batch sizes x 3 x 2 grid"), std::string::npos) << log;
  EXPECT_NE(log.find("[12/12] b=3 s=16 c=64"), std::string::npos) << log;

  auto p = costmodel::LoadProfile(o.out);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->samples.size(), 12u);
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->b_grid, std::vector<int64_t>{3});
  EXPECT_NE(p->software.at("calibrate").find("b_grid=1,3"), std::string::npos);
  // Whichever model is the default, it was scored on the batch passes too.
  EXPECT_EQ(p->cv.at(p->default_model).n, 12);

  const std::string csv = testing::ReadAll(o.samples_out);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "b,s,c,seconds,kernels,kernel_s,span_s,gemm_s,attention_s,other_s");
  auto samples = costmodel::ReadSamplesFile(o.samples_out);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 12u);
  EXPECT_EQ(samples->back().b, 3);
  EXPECT_EQ(samples->back().s, 16);
}

// The CUDA pipeline end to end on the tiny model: bf16 by default, a device timer, the device's
// name recorded. Needs a GPU and a CUDA LibTorch.
TEST(CalibrationTest, CudaEndToEndOnTheTinyModel) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch/machine";
  testing::TempDir dir;
  CalibrateOptions o = GridOptions("h100-sxm", "tiny-qwen3", "cuda", {1, 8, 64}, {0, 256}, 3,
                                   dir.File("gpu/tiny-qwen3-bf16.json"));
  o.force = true;  // whatever GPU this is, record it under one registry name
  std::ostringstream progress;
  o.progress = &progress;
  auto r = RunCalibration(o);
  ASSERT_TRUE(r.ok()) << r.status() << "\n" << progress.str();
  auto p = costmodel::LoadProfile(o.out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->dtype, costmodel::DType::kBFloat16);
  EXPECT_TRUE(p->timer == "cupti" || p->timer == "cuda_events") << p->timer;
  EXPECT_NE(p->device_name.find("NVIDIA"), std::string::npos) << p->device_name;
  EXPECT_EQ(p->software.count("cuda_runtime"), 1u) << progress.str();
  ASSERT_EQ(p->samples.size(), 6u);
  for (const costmodel::ProfileSample& x : p->samples) {
    EXPECT_GT(x.sample.seconds, 0);
    EXPECT_LT(x.sample.seconds, 1);
  }
  if (p->timer == "cupti") {
    for (const MeasuredCell& cell : r->cells) {
      EXPECT_GT(cell.median.kernels, 10) << cell.s << " " << cell.c;
      EXPECT_GT(cell.median.gemm_seconds, 0);
      EXPECT_LE(cell.median.kernel_seconds, cell.median.span_seconds * 1.001);
    }
  }
}

// Without --out the default path is the bundled layout under calib_dir, the shipped profiles
// directory: refused (nothing written) unless --force.
TEST(CalibrationTest, DefaultOutputPathIsTheBundledLayoutAndNeedsForce) {
  testing::TempDir dir;
  CalibrateOptions o = QuickTinyCpuOptions(dir);
  o.out.clear();
  o.calib_dir = dir.File("calib");
  auto refused = RunCalibration(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Message(refused.status()).find(dir.File("calib/cpu/tiny-fp32.json")), std::string::npos)
      << refused.status();
  EXPECT_NE(Message(refused.status()).find("pass --out FILE to write elsewhere, or --force"),
            std::string::npos)
      << refused.status();
  EXPECT_FALSE(fs::exists(dir.File("calib/cpu/tiny-fp32.json")));

  // --out into the shipped directory is refused the same way.
  o.out = dir.File("calib/cpu/mine.json");
  refused = RunCalibration(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Message(refused.status()).find("--out " + o.out), std::string::npos)
      << refused.status();
  EXPECT_FALSE(fs::exists(o.out));

  o.out.clear();
  o.force = true;
  auto r = RunCalibration(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile_path, dir.File("calib/cpu/tiny-fp32.json"));
  EXPECT_TRUE(fs::exists(r->profile_path));
}

TEST(CalibrationTest, DeviceMismatchIsRefusedUnlessForced) {
  testing::TempDir dir;
  CalibrateOptions o = QuickTinyCpuOptions(dir);
  o.gpu = "h100";
  auto refused = RunCalibration(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(Message(refused.status()).find("--gpu h100-sxm"), std::string::npos);
  EXPECT_NE(Message(refused.status()).find("--force"), std::string::npos);
  EXPECT_FALSE(fs::exists(o.out));

  o.force = true;
  auto forced = RunCalibration(o);
  ASSERT_TRUE(forced.ok()) << forced.status();
  auto p = costmodel::LoadProfile(o.out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpu, "h100-sxm");
  EXPECT_EQ(p->timer, "host_clock");  // what actually timed it
}

TEST(CalibrationTest, BadInputWritesNothing) {
  testing::TempDir dir;
  struct Case {
    std::function<void(CalibrateOptions*)> edit;
    std::string expect;
  };
  const Case cases[] = {
      {[](CalibrateOptions* o) { o->gpu = "z80"; }, "--gpu z80"},
      {[](CalibrateOptions* o) { o->model = "gpt-17"; }, "--model 'gpt-17'"},
      {[](CalibrateOptions* o) { o->dtype = "int3"; }, "--dtype int3"},
      {[](CalibrateOptions* o) { o->device = "tpu"; }, "--device tpu"},
      {[](CalibrateOptions* o) {
         o->s_grid = {0, 1};
       },
       "--s-grid: 0 is out of range"},
      {[](CalibrateOptions* o) { o->c_grid = {-3}; }, "--c-grid: -3 is out of range"},
      {[](CalibrateOptions* o) { o->c_grid = {4096}; }, "exceeds max_position_embeddings = 2048"},
      {[](CalibrateOptions* o) {
         o->s_grid = {1};
         o->c_grid = {0, 1};
       },
       "2 cells; need >= 3"},
      {[](CalibrateOptions* o) { o->repeats = -1; }, "--repeats -1"},
      {[](CalibrateOptions* o) {
         o->b_grid = {2, 4};
       },
       "--b-grid: must include 1"},
      {[](CalibrateOptions* o) {
         o->b_grid = {1, 5000};
       },
       "--b-grid: 5000 is out of range"},
      {[](CalibrateOptions* o) {
         o->b_grid = {1, 2};
         o->from_samples = "cells.csv";
       },
       "--b-grid: only when timing passes here"},
      {[](CalibrateOptions* o) { o->timer = TimerChoice::kCupti; }, "--timer"},
      {[](CalibrateOptions* o) { o->from_samples = "/nonexistent/x.csv"; }, "/nonexistent/x.csv"},
  };
  for (const Case& c : cases) {
    CalibrateOptions o = TinyCpuOptions(dir);
    c.edit(&o);
    auto r = RunCalibration(o);
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_NE(Message(r.status()).find(c.expect), std::string::npos)
        << "got: " << r.status() << "\nwant: " << c.expect;
    EXPECT_FALSE(fs::exists(o.out)) << c.expect;
  }
}

// Samples from a known latency model over the qwen3-8b / H100 roofline, on a grid that has
// memory- and compute-bound passes.
std::vector<LatencySample> SyntheticSamples(const costmodel::LatencyModel& truth) {
  std::vector<LatencySample> out;
  for (int64_t c : {0, 512, 2048, 8192}) {
    for (int64_t s : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}) {
      out.push_back({s, c, truth.VerifySeconds(s, c)});
    }
  }
  return out;
}

std::string ToCsv(const std::vector<LatencySample>& samples) {
  std::string csv = "s,c,seconds\n";
  for (const LatencySample& x : samples) {
    csv += absl::StrFormat("%d,%d,%.17g\n", x.s, x.c, x.seconds);
  }
  return csv;
}

std::string ToJson(const std::vector<LatencySample>& samples) {
  std::string j = "[";
  for (size_t i = 0; i < samples.size(); ++i) {
    j += absl::StrFormat("%s{\"s\": %d, \"c\": %d, \"seconds\": %.17g}", i ? ", " : "",
                         samples[i].s, samples[i].c, samples[i].seconds);
  }
  return j + "]";
}

class FromSamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = costmodel::LookupModel("qwen3-8b");
    auto gpu = costmodel::LookupGpu("h100");
    ASSERT_TRUE(model.ok() && gpu.ok());
    roofline_ = std::make_unique<costmodel::RooflineLatency>(*model, *gpu);
  }
  // Writes `samples` (a samples file's text) to NAME in the test's directory and fits it, as
  // calibrate --from-samples does.
  absl::StatusOr<CalibrationResult> Fit(const std::string& name, const std::string& samples) {
    const std::string file = dir_.File(name);
    testing::WriteAll(file, samples);
    CalibrateOptions o;
    o.gpu = "h100";
    o.model = "qwen3-8b";
    o.holdout = 0.25;
    o.from_samples = file;
    o.out = dir_.File("h100-sxm/qwen3-8b-bf16.json");
    return RunCalibration(o);
  }
  testing::TempDir dir_;
  std::unique_ptr<costmodel::RooflineLatency> roofline_;
};

TEST_F(FromSamplesTest, RecoversLinearCoefficients) {
  costmodel::LinearCalibratedLatency truth(*roofline_, {1.37, 0.0021});
  auto r = Fit("linear.csv", ToCsv(SyntheticSamples(truth)));
  ASSERT_TRUE(r.ok()) << r.status();
  auto p = costmodel::LoadProfile(r->profile_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->timer, "external");
  EXPECT_EQ(p->gpu, "h100-sxm");
  EXPECT_EQ(p->model, "qwen3-8b");
  EXPECT_EQ(p->dtype, costmodel::DType::kBFloat16);  // default for a GPU without a run
  EXPECT_EQ(p->software.at("samples_file"), "linear.csv");
  ASSERT_TRUE(p->linear.has_value());
  EXPECT_NEAR(p->linear->a, 1.37, 1e-9);
  EXPECT_NEAR(p->linear->b_s, 0.0021, 1e-12);
  EXPECT_LT(p->heldout.at("linear").mape, 1e-9);
  EXPECT_GT(p->heldout.at("roofline").mape, 0.05);  // the bare roofline is off
  EXPECT_EQ(p->samples.size(), 48u);
}

TEST_F(FromSamplesTest, RecoversPerTermCoefficientsFromJson) {
  // compute (+ overhead), weights, KV attention.
  costmodel::PerTermLatency truth(*roofline_,
                                  costmodel::PerTermCoefficients{1.6, 0.0005, 1.25, 2.5});
  auto r = Fit("per_term.json", ToJson(SyntheticSamples(truth)));
  ASSERT_TRUE(r.ok()) << r.status();
  const costmodel::Profile& p = r->profile;
  ASSERT_TRUE(p.per_term.has_value());
  EXPECT_NEAR(p.per_term->compute, 1.6, 1e-6);
  EXPECT_NEAR(p.per_term->compute_overhead_s, 0.0005, 1e-8);
  EXPECT_NEAR(p.per_term->weights, 1.25, 1e-6);
  EXPECT_NEAR(p.per_term->kv_attention, 2.5, 1e-5);
  EXPECT_LT(p.heldout.at("per_term").mape, 1e-6);
  EXPECT_EQ(p.default_model, "per_term");
}

TEST_F(FromSamplesTest, AnExistingProfileSurvivesAFailedRun) {
  costmodel::LinearCalibratedLatency truth(*roofline_, {1.2, 0.001});
  auto first = Fit("good.csv", ToCsv(SyntheticSamples(truth)));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string before = testing::ReadAll(first->profile_path);
  ASSERT_FALSE(before.empty());

  auto second = Fit("bad.csv", "s,c,seconds\n1,0,0.01\n2,0,0.02\n4,0,nan\n8,0,0.03\n");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(Message(second.status()).find("bad.csv:4: seconds = nan"), std::string::npos)
      << second.status();
  EXPECT_EQ(testing::ReadAll(first->profile_path), before);

  auto third = Fit("few.csv", "s,c,seconds\n1,0,0.01\n2,0,0.02\n");
  ASSERT_FALSE(third.ok());
  EXPECT_NE(Message(third.status()).find("need >= 3"), std::string::npos) << third.status();
  EXPECT_EQ(testing::ReadAll(first->profile_path), before);
  // No temp files left behind next to the profile.
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(first->profile_path).parent_path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, PlotLibraryWorks() ? 2 : 1);  // the profile (and its PNG)
}

}  // namespace
}  // namespace specplan::profiler
