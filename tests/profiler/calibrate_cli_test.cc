// Runs the built `calibrate` binary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "tests/profiler/test_util.h"

namespace specplan::profiler {
namespace {

namespace fs = std::filesystem;
using testing::RunCalibrate;

TEST(CalibrateCliTest, HelpListsTheFlags) {
  auto r = RunCalibrate("--help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag :
       {"--gpu", "--model", "--config", "--dtype", "--s-grid", "--c-grid", "--b-grid", "--repeats",
        "--out", "--from-samples", "--force", "--device", "--seed", "--mode", "--kernels",
        "--budget-s", "--kernels-dir"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  }
}

// `calibrate --mode runtime --gpu cpu --model tiny --repeats 1 FLAGS` (a measured calibration of
// the tiny model on the CPU, one timed pass per cell) into a fresh directory: its output and the
// profile it wrote (an error when it wrote none).
struct TinyRuntimeRun {
  explicit TinyRuntimeRun(const std::string& flags)
      : result(RunCalibrate("--mode runtime --gpu cpu --model tiny --repeats 1 " + flags +
                            " --out " + out)),
        profile(costmodel::LoadProfile(out)) {}

  testing::TempDir dir;
  const std::string out = dir.File("p/tiny.json");
  testing::CommandResult result;
  absl::StatusOr<costmodel::Profile> profile;
};

TEST(CalibrateCliTest, CpuTinyRunWritesALoadableProfile) {
  TinyRuntimeRun run("--s-grid 1,4,8 --c-grid 0,32");
  const testing::CommandResult& r = run.result;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("calibrate: [6/6]"), std::string::npos) << r.output;  // progress
  EXPECT_NE(r.output.find("profile  " + run.out), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(lowest leave-one-out MAPE)"), std::string::npos) << r.output;
  // A degenerate linear fit (a machine whose tiny-model timings do not grow with s) is dropped
  // with a note rather than written; either way the line names it.
  EXPECT_TRUE(r.output.find("  linear      cv MAPE") != std::string::npos ||
              r.output.find("linear: dropped:") != std::string::npos)
      << r.output;
  const auto& p = run.profile;
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->timer, "host_clock");
  EXPECT_EQ(p->samples.size(), 6u);
}

// --b-grid from the command line: the batch cells are timed (a bad entry is refused in
// RefusesAMismatchedGpuAndBadFlags).
TEST(CalibrateCliTest, BatchGridTimesRaggedPasses) {
  TinyRuntimeRun run("--s-grid 1,4 --c-grid 0,32 --b-grid 1,2 --no-plot");
  const testing::CommandResult& r = run.result;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("calibrate: [8/8] b=2 s=4 c=32"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("batches  b=1: 4, b=2: 4"), std::string::npos) << r.output;
  const auto& p = run.profile;
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->samples.size(), 8u);
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->b_grid, std::vector<int64_t>{2});
}

TEST(CalibrateCliTest, RefusesAMismatchedGpuAndBadFlags) {
  testing::TempDir dir;
  const std::string out = dir.File("x.json");
  // Refused by calibrate itself (exit status 1), the message naming the flag.
  struct Case {
    std::string args;
    std::vector<std::string> expect;
  };
  const Case cases[] = {
      // --device cpu: on a CUDA machine the device would default to the GPU.
      {"--gpu h100 --model tiny --device cpu", {"only valid --gpu is 'cpu'", "--force"}},
      {"--gpu cpu --model tiny --s-grid 1,x", {"--s-grid: 'x' is not an integer"}},
      {"--gpu cpu --model tiny --b-grid 1,x", {"--b-grid: 'x' is not an integer"}},
      {"--gpu cpu --model tiny --timer sometimes", {"--timer = 'sometimes'"}},
  };
  for (const Case& c : cases) {
    auto r = RunCalibrate(c.args + " --out " + out);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    for (const std::string& e : c.expect) {
      EXPECT_NE(r.output.find(e), std::string::npos) << c.args << "\n" << r.output;
    }
  }

  auto r = RunCalibrate("--model tiny --out " + out);  // --gpu is required
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--gpu"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

// Where calibrate cannot run (a GPU that is not this machine's device, or no CUDA), the error
// names the engine-grade profiles shipped for that GPU and model, and the compose command.
TEST(CalibrateCliTest, ACalibrationThatCannotRunHereNamesTheEngineProfiles) {
  testing::TempDir dir;
  const std::string calib = dir.File("calib");
  std::vector<std::string> shipped;
  for (const char* engine : {"sglang", "vllm"}) {
    shipped.push_back(costmodel::BundledProfilePath(calib, "a100-80g", "qwen3-8b",
                                                    costmodel::DType::kBFloat16, 1, engine));
    fs::create_directories(fs::path(shipped.back()).parent_path());
    testing::WriteAll(shipped.back(), "{}");  // only their names are read
  }
  const std::string compose =
      "specplan profiles compose --kernels DIR --engine NAME --model qwen3-8b --out FILE";
  const std::string out = dir.File("never.json");
  setenv("SPECPLAN_CALIB_DIR", calib.c_str(), 1);
  // --device cpu: what a GPU-less machine runs on (and the same on any machine).
  auto r = RunCalibrate("--gpu a100 --model qwen3-8b --device cpu --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("only valid --gpu is 'cpu'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Engine-grade profiles of a100-80g x qwen3-8b (bf16) ship instead "
                          "(specplan commands take them with --engine NAME): " +
                          shipped[0] + ", " + shipped[1]),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("@trtllm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(compose), std::string::npos) << r.output;
  // --device cuda: where there is no CUDA it cannot run either; with a GPU other than an A100
  // the device check refuses it. Both say the same.
  r = RunCalibrate("--gpu a100 --model qwen3-8b --device cuda --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(shipped[0]), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(compose), std::string::npos) << r.output;

  // Nothing shipped for the pair: the compose command alone.
  r = RunCalibrate("--gpu h200 --model qwen3-8b --device cpu --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("No engine-grade profile ships for h200 x qwen3-8b (bf16); compose one "
                          "from an engine's kernel timings: " +
                          compose),
            std::string::npos)
      << r.output;
  // A runtime-only model (tiny) is not a registry model compose takes: the hint says what runs
  // instead of a compose command that would fail.
  r = RunCalibrate("--gpu h100 --model tiny --device cpu --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("profiles compose --kernels"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--model tiny is not in the cost model's registry"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("calibrate --gpu cpu --model tiny --out FILE"), std::string::npos)
      << r.output;
  // --gpu cpu is this machine: nothing to stand in for.
  r = RunCalibrate("--gpu cpu --model tiny --device cpu --s-grid 1,x --out " + out);
  EXPECT_EQ(r.output.find("compose"), std::string::npos) << r.output;
  unsetenv("SPECPLAN_CALIB_DIR");
  EXPECT_FALSE(fs::exists(out));
}

// Eight external samples: s = 1..8 at c = 0 and c = 512.
constexpr char kSamplesCsv[] =
    "s,c,seconds\n1,0,0.010\n2,0,0.011\n4,0,0.012\n8,0,0.014\n"
    "1,512,0.012\n2,512,0.013\n4,512,0.014\n8,512,0.016\n";

TEST(CalibrateCliTest, FromSamplesFitsWithoutAModel) {
  testing::TempDir dir;
  const std::string csv = dir.File("s.csv");
  testing::WriteAll(csv, kSamplesCsv);
  const std::string out = dir.File("ext.json");
  auto r = RunCalibrate("--gpu h200 --model llama-3.1-8b --from-samples " + csv + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto p = costmodel::LoadProfile(out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->timer, "external");
  EXPECT_EQ(p->gpu, "h200");

  testing::WriteAll(csv, "s,c,seconds\n1,0,0.010\n2,zero,0.011\n");
  r = RunCalibrate("--gpu h200 --model llama-3.1-8b --from-samples " + csv + " --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("s.csv:3: c = 'zero': expected an integer"), std::string::npos)
      << r.output;
  EXPECT_TRUE(costmodel::LoadProfile(out).ok());  // the earlier profile is intact
}

// Nothing shipped is overwritten by default: --from-samples without --out would write the bundled
// calib/<gpu>/<model>-<dtype>.json, so it is refused naming the path, --out and --force, and the
// shipped profile keeps its bytes.
TEST(CalibrateCliTest, FromSamplesNeverOverwritesAShippedProfileByDefault) {
  testing::TempDir dir;
  const std::string csv = dir.File("s.csv");
  testing::WriteAll(csv, kSamplesCsv);
  const std::string shipped = costmodel::BundledProfilePath(
      costmodel::DefaultCalibDir(), "h100-sxm", "qwen3-8b", costmodel::DType::kBFloat16);
  ASSERT_TRUE(fs::exists(shipped)) << shipped;
  const std::string before = testing::ReadAll(shipped);
  auto r = RunCalibrate("--gpu h100 --model qwen3-8b --from-samples " + csv);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no --out: default path " + shipped), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pass --out FILE to write elsewhere, or --force"), std::string::npos)
      << r.output;
  r = RunCalibrate("--gpu h100 --model qwen3-8b --from-samples " + csv + " --out " + shipped);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--out " + shipped + ": inside the shipped profiles directory"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(testing::ReadAll(shipped), before);
}

// --tp: samples measured at tensor parallelism are fitted per GPU and the profile records tp; a
// MoE target (which the runtime cannot run) is fitted from samples; --tp without --from-samples
// and a tp the heads do not split by are refused naming the flag.
TEST(CalibrateCliTest, FromSamplesAtTensorParallelismAndMoe) {
  testing::TempDir dir;
  const std::string csv = dir.File("tp.csv");
  testing::WriteAll(csv, kSamplesCsv);
  const std::string out = dir.File("tp.json");
  auto r = RunCalibrate("--gpu h100 --model llama-3.3-70b --tp 4 --from-samples " + csv +
                        " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto p = costmodel::LoadProfile(out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->model_spec.tp, 4);

  r = RunCalibrate("--gpu h100 --model qwen3-30b-a3b --from-samples " + csv + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  p = costmodel::LoadProfile(out);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->model_spec.experts, 128);

  r = RunCalibrate("--gpu h100 --model llama-3.3-70b --tp 3 --from-samples " + csv + " --out " +
                   out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--tp 3: must divide n_q = 64 (query heads)"), std::string::npos)
      << r.output;
  r = RunCalibrate("--mode runtime --gpu cpu --model tiny --tp 2 --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--tp 2: only with --from-samples"), std::string::npos) << r.output;
  r = RunCalibrate("--gpu cpu --model tiny --tp 2 --out " + out);  // kernels mode
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--tp 2: calibrate times one local device"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace specplan::profiler
