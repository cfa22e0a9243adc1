// --engine on estimate, plan, plan-batch and whatif, and `profiles` grouped by engine, through the
// real `specplan` binary over a calib dir of profiles written here (SPECPLAN_CALIB_DIR), so that
// what ships in calib/ does not move them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "run_command.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan {
namespace {

namespace fs = std::filesystem;
using namespace ::specplan::testing;
using costmodel::EngineProfile;

// A calib dir with h100-sxm/qwen3-8b under specplan's runtime (the file without "@") and sglang
// (priced 2.5x the runtime's slope), as SPECPLAN_CALIB_DIR for the commands run.
class EngineFlagTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("specplan_engine_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    runtime_ = Ship(EngineProfile("specplan", 1.0, ""));
    sglang_ = Ship(EngineProfile("sglang", 2.5, "0.5.14"));
    setenv("SPECPLAN_CALIB_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SPECPLAN_CALIB_DIR");
    fs::remove_all(dir_);
  }
  std::string Ship(const costmodel::Profile& p) {
    const std::string path =
        costmodel::BundledProfilePath(dir_.string(), p.gpu, p.model, p.dtype, 1, p.engine);
    EXPECT_TRUE(costmodel::SaveProfile(p, path).ok());
    return path;
  }
  static nlohmann::json Json(const CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output);
  }

  fs::path dir_;
  std::string runtime_, sglang_;
};

TEST_F(EngineFlagTest, EstimatePicksTheEnginesProfileAndSaysWhich) {
  const std::string base = "estimate --model qwen3-8b --gpu h100 --s 16 --c 1024 ";
  const auto by_default = Json(RunSpecplan(base + "--json"));  // sglang comes first
  EXPECT_EQ(by_default["profile"], sglang_);
  EXPECT_EQ(by_default["engine"], "sglang");
  EXPECT_EQ(by_default["engine_version"], "0.5.14");
  const auto sglang = Json(RunSpecplan(base + "--engine sglang --json"));
  EXPECT_EQ(sglang["predicted_s"], by_default["predicted_s"]);
  const auto runtime = Json(RunSpecplan(base + "--engine specplan --json"));
  EXPECT_EQ(runtime["profile"], runtime_);
  EXPECT_EQ(runtime["engine"], "specplan");
  EXPECT_TRUE(runtime["engine_version"].is_null());
  EXPECT_GT(sglang["predicted_s"].get<double>(), 1.5 * runtime["predicted_s"].get<double>());

  auto text = RunSpecplan(base + "--engine sglang");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("profile " + sglang_ + ", engine sglang 0.5.14)"));
  // The bare roofline names no engine.
  const auto bare = Json(RunSpecplan("estimate --model qwen3-4b --gpu h200 --s 4 --c 0 --json"));
  EXPECT_TRUE(bare["profile"].is_null());
  EXPECT_TRUE(bare["engine"].is_null());
}

TEST_F(EngineFlagTest, EveryCommandNamesAMissingOrUnknownEngine) {
  const std::string missing = costmodel::BundledProfilePath(dir_.string(), "h100-sxm", "qwen3-8b",
                                                            costmodel::DType::kBFloat16, 1, "vllm");
  const std::string expect = "--engine vllm: no profile for h100-sxm x qwen3-8b (bf16) at " +
                             missing + "; shipped for this GPU and model: sglang, specplan";
  const std::string cost = " --model qwen3-8b --gpu h100 --engine vllm";
  const std::vector<std::string> runs = {
      "estimate --s 8 --c 64" + cost,
      "plan --marginals " + SourcePath("examples/marginals.json") + " --c 64 --n-max 16" + cost,
      "plan-batch --requests " + SourcePath("examples/batch_requests.jsonl") + " --n-max 64" + cost,
      "whatif --trace " + SourcePath("tests/whatif/data/small.jsonl") + " --budgets 1,2" + cost,
      "whatif --concurrency 1,4 --t-draft-ms 1" + cost,
  };
  for (const std::string& args : runs) {
    auto r = RunSpecplan(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_THAT(r.output, HasSubstr(expect)) << args;
    auto unknown = RunSpecplan(args.substr(0, args.size() - 4) + "tgi");  // "vllm" -> "tgi"
    EXPECT_EQ(unknown.exit_code, 1) << args;
    EXPECT_THAT(unknown.output,
                HasSubstr("--engine tgi: unknown (known: sglang, vllm, trtllm, specplan)"))
        << args;
  }
  // An explicit profile of another engine.
  auto r = RunSpecplan(
      "estimate --s 8 --c 64 --model qwen3-8b --gpu h100 --engine specplan "
      "--profile " +
      sglang_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              HasSubstr("--engine specplan: profile " + sglang_ + " describes engine 'sglang'"));
}

TEST_F(EngineFlagTest, PlanAndPlanBatchPriceWithTheNamedEngine) {
  const std::string plan = "plan --marginals " + SourcePath("examples/marginals.json") +
                           " --model qwen3-8b --gpu h100 --c 1024 --budget 16 --json";
  const auto dflt = Json(RunSpecplan(plan));
  const auto sglang = Json(RunSpecplan(plan + " --engine sglang"));
  const auto runtime = Json(RunSpecplan(plan + " --engine specplan"));
  EXPECT_EQ(dflt["cycle_s"], sglang["cycle_s"]);
  EXPECT_GT(sglang["cycle_s"].get<double>(), 1.5 * runtime["cycle_s"].get<double>());

  const std::string batch = "plan-batch --requests " + SourcePath("examples/batch_requests.jsonl") +
                            " --model qwen3-8b --gpu h100 --budget 64 --json";
  const auto b_dflt = Json(RunSpecplan(batch));
  const auto b_sglang = Json(RunSpecplan(batch + " --engine SGLang"));  // any case
  const auto b_runtime = Json(RunSpecplan(batch + " --engine specplan"));
  EXPECT_EQ(b_dflt["cycle_s"], b_sglang["cycle_s"]);
  EXPECT_GT(b_sglang["cycle_s"].get<double>(), 1.5 * b_runtime["cycle_s"].get<double>());
}

TEST_F(EngineFlagTest, WhatIfNamesTheProfileAndItsEngine) {
  const std::string base = "whatif --trace " + SourcePath("tests/whatif/data/small.jsonl") +
                           " --model qwen3-8b --gpu h100 --budgets 1,2";
  auto text = RunSpecplan(base);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output,
              HasSubstr("qwen3-8b on h100-sxm (bf16), profile h100-sxm/qwen3-8b-bf16@sglang "
                        "(engine sglang 0.5.14)\n"));
  text = RunSpecplan(base + " --engine specplan");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("profile h100-sxm/qwen3-8b-bf16 (engine specplan)\n"));
  const auto j = Json(RunSpecplan(base + " --engine sglang --json"));
  EXPECT_EQ(j["profile"], "h100-sxm/qwen3-8b-bf16@sglang");
  EXPECT_EQ(j["engine"], "sglang");
  EXPECT_EQ(j["engine_version"], "0.5.14");
  const auto runtime = Json(RunSpecplan(base + " --engine specplan --json"));
  EXPECT_GT(runtime["rows"][0]["speedup"].get<double>(), 0);
  EXPECT_NE(runtime["rows"][0]["cycle_s"], j["rows"][0]["cycle_s"]);

  // --concurrency: the same line, the same keys.
  const std::string conc = "whatif --model qwen3-8b --gpu h100 --t-draft-ms 1 --concurrency 1,4";
  auto table = RunSpecplan(conc + " --engine sglang");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output,
              HasSubstr("profile h100-sxm/qwen3-8b-bf16@sglang (engine sglang 0.5.14)\n"));
  const auto cj = Json(RunSpecplan(conc + " --engine specplan --json"));
  EXPECT_EQ(cj["profile"], "h100-sxm/qwen3-8b-bf16");
  EXPECT_EQ(cj["engine"], "specplan");
}

TEST_F(EngineFlagTest, ProfilesAreListedByEngine) {
  auto r = RunSpecplan("profiles --dir " + dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string composed = "engine sglang (composed from engine kernel timings)\n";
  const std::string measured = "engine specplan (measured on specplan's runtime";
  const size_t at_sglang = r.output.find(composed);
  const size_t at_runtime = r.output.find(measured);
  ASSERT_NE(at_sglang, std::string::npos) << r.output;
  ASSERT_NE(at_runtime, std::string::npos) << r.output;
  EXPECT_LT(at_sglang, at_runtime);  // KnownEngines() order: the lookup's order
  const size_t sglang_line = r.output.find(sglang_);
  const size_t runtime_line = r.output.find(runtime_);
  EXPECT_GT(sglang_line, at_sglang);
  EXPECT_LT(sglang_line, at_runtime);
  EXPECT_GT(runtime_line, at_runtime);
  EXPECT_THAT(r.output, HasSubstr("qwen3-8b         bf16  sglang 0.5.14 default="));
  EXPECT_THAT(r.output, Not(HasSubstr("engine vllm")));  // no heading for an empty group

  auto check = RunSpecplan("profiles --check " + sglang_);
  ASSERT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr(composed));
  EXPECT_THAT(check.output, HasSubstr("sglang 0.5.14 default="));
  EXPECT_THAT(check.output, Not(HasSubstr(measured)));
  // Without --dir: SPECPLAN_CALIB_DIR, the same listing.
  auto bundled = RunSpecplan("profiles");
  ASSERT_EQ(bundled.exit_code, 0) << bundled.output;
  EXPECT_EQ(bundled.output, r.output);
}

}  // namespace
}  // namespace specplan
