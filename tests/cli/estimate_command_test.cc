#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "costmodel/latency_models.h"
#include "run_command.h"

namespace specplan {
namespace {

using ::specplan::testing::RunSpecplan;
using ::testing::HasSubstr;

TEST(EstimateCommand, JsonHasTheContractFields) {
  auto r = RunSpecplan("estimate --model qwen3-8b --gpu h100 --s 64 --c 1024 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  for (const char* key : {"flops", "bytes", "bound", "roofline_s", "predicted_s"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  const costmodel::RooflineLatency ref(*costmodel::LookupModel("qwen3-8b"),
                                       *costmodel::LookupGpu("h100-sxm"));
  const auto e = ref.Estimate(64, 1024);
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), e.terms.total_flops());
  EXPECT_DOUBLE_EQ(j["bytes"].get<double>(), e.terms.total_bytes());
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_DOUBLE_EQ(j["roofline_s"].get<double>(), e.seconds);
  EXPECT_GT(j["predicted_s"].get<double>(), 0);
  EXPECT_EQ(j["gpu"], "h100-sxm");
}

TEST(EstimateCommand, ComputeBoundAtLargeS) {
  auto r = RunSpecplan("estimate --model llama-3.1-8b --gpu a100 --s 4096 --c 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["bound"], "compute");
}

TEST(EstimateCommand, CycleCostAddsDrafterClass) {
  auto r = RunSpecplan(
      "estimate --model qwen3-8b --gpu h100 --s 17 --c 512 --drafter ar --gamma 4 --t-net-ms 1 "
      "--t-head-ms 0.5 --t-aux-ms 0.25 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_DOUBLE_EQ(j["cycle"]["draft_s"].get<double>(), 4 * 1.5e-3);
  EXPECT_NEAR(j["cycle"]["cycle_s"].get<double>(),
              6e-3 + 0.25e-3 + j["predicted_s"].get<double>(), 1e-12);
  EXPECT_EQ(j["cycle"]["n"], 16);
}

TEST(EstimateCommand, UnknownNamesFailListingKnownOnes) {
  auto r = RunSpecplan("estimate --model gpt-9 --gpu h100 --s 1 --c 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("gpt-9"));
  EXPECT_THAT(r.output, HasSubstr("qwen3-8b"));
  r = RunSpecplan("estimate --model qwen3-8b --gpu tpu9 --s 1 --c 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("h100-sxm"));
  r = RunSpecplan("estimate --model qwen3-8b --gpu h100 --s 0 --c 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--s"));
}

TEST(EstimateCommand, ReadsHfConfigAndUserGpuSpec) {
  const std::string dir = ::testing::TempDir();
  {
    FILE* f = fopen((dir + "/config.json").c_str(), "w");
    fputs(R"({"model_type":"qwen2","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,
             "num_key_value_heads":2,"intermediate_size":128,"vocab_size":1000})", f);
    fclose(f);
    f = fopen((dir + "/gpu.json").c_str(), "w");
    fputs(R"({"name":"lab-gpu","peak_flops":1e13,"mem_bw":5e11,"mem_bytes":1.6e10})", f);
    fclose(f);
  }
  auto r = RunSpecplan("estimate --model " + dir + "/config.json --gpu " + dir +
                       "/gpu.json --s 8 --c 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["gpu"], "lab-gpu");
  EXPECT_EQ(j["latency_model"], "roofline");
}

TEST(ProfilesCommand, ChecksAProfileFile) {
  const std::string bad = ::testing::TempDir() + "/bad_profile.json";
  FILE* f = fopen(bad.c_str(), "w");
  fputs(R"({"format":"specplan.profile","version":7})", f);
  fclose(f);
  auto r = RunSpecplan("profiles --check " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("version = 7"));
}

}  // namespace
}  // namespace specplan
