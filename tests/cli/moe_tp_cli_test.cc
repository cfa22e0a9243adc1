// --tp and MoE targets through the real `specplan` binary: estimate, plan and whatif.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

TEST(MoeTpCli, EstimateReportsStreamedExperts) {
  auto r = RunSpecplan("estimate --model qwen3-30b-a3b --gpu h100 --s 16 --c 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  // 128 (1 - (1 - 8/128)^16) = 128 * 0.643932 = 82.423 of 128 experts per layer.
  EXPECT_NEAR(j["experts_streamed"].get<double>(), 82.423, 1e-3);
  EXPECT_EQ(j["tp"], 1);
  EXPECT_EQ(j["comm_s"], 0.0);
  // Weights: 48 layers x (attention 2*2048*4096 + 2*2048*512 = 18,874,368; routed experts
  // 82.4225 * 3*2048*768 = 388,920,...; router 2048*128 = 262,144) + 2*151936*2048 embeddings
  // = 20.209e9 elements, x 2 bytes = 40.418 GB.
  EXPECT_NEAR(j["bytes_terms"]["weights"].get<double>() / 1e9, 40.418, 0.001);
  ExpectSucceeds({{"estimate --model qwen3-30b-a3b --gpu h100 --s 16 --c 0",
                   "MoE: 128 experts, top-8; 16 tokens stream 82.42 distinct"}});
}

TEST(MoeTpCli, EstimateWithTensorParallelism) {
  auto r = RunSpecplan("estimate --model llama-3.3-70b --gpu h100 --s 1 --c 0 --tp 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["tp"], 4);
  EXPECT_EQ(j["allreduces"], 160);  // 2 per layer, 80 layers
  // 160 (6 * 0.47 us + 1.5 * 16384 B / 450 GB/s) = 160 * 2.874613 us.
  EXPECT_NEAR(j["comm_s"].get<double>(), 459.938e-6, 1e-9);
  // Weights per GPU: (80 * 855,638,016 + 2 * 128256 * 8192) / 4 * 2 bytes = 35.27 GB.
  EXPECT_NEAR(j["bytes_terms"]["weights"].get<double>() / 1e9, 35.27, 0.01);
  auto text = RunSpecplan("estimate --model llama-3.3-70b --gpu h100 --s 1 --c 0 --tp 4");
  EXPECT_THAT(text.output, HasSubstr("tensor parallel: tp = 4 GPUs"));
}

TEST(MoeTpCli, BadTpNamesTheFlagAndValue) {
  auto r = RunSpecplan("estimate --model llama-3.3-70b --gpu h100 --s 1 --c 0 --tp 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--tp 3: must divide n_q = 64 (query heads)"));
  r = RunSpecplan("estimate --model llama-3.3-70b --gpu cpu --s 1 --c 0 --tp 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--tp 2: gpu 'cpu' has no interconnect (link_bw = 0)"));
  // qwen3-14b: 40 query heads, 8 KV heads; 5 divides 40 but neither divides 8 nor is a multiple.
  r = RunSpecplan("plan --marginals " + SourcePath("examples/marginals.json") +
                  " --model qwen3-14b --gpu h100 --c 0 --n-max 64 --tp 5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              HasSubstr("--tp 5: must divide n_kv = 8 or be a multiple of it (KV heads)"));
  // A profile fitted at tp = 1 cannot be used at tp = 2.
  r = RunSpecplan("estimate --model qwen3-8b --gpu h100 --s 1 --c 0 --tp 2 --profile " +
                  SourcePath("calib/h100-sxm/qwen3-8b-bf16.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--tp 2: profile"));
  EXPECT_THAT(r.output, HasSubstr("was fitted at tp = 1"));
}

// The example of docs/costmodel.md ("Mixture-of-experts targets"): with the same drafter marginals
// and the same (roofline) latency model, the controller stops at a smaller tree on a MoE target
// than on a dense model whose decode step costs about as much (H100 roofline at c = 1024:
// qwen3-4b 2.68 ms; qwen3-30b-a3b 2.04 ms at s = 1, but 12.15 ms at s = 16, when its 16 tokens
// stream 82 of 128 experts per layer).
TEST(MoeTpCli, PlannerPicksSmallerTreesOnMoe) {
  auto plan = [](const std::string& model) {
    auto r =
        RunSpecplan("plan --marginals " + SourcePath("examples/marginals.json") + " --model " +
                    model + " --gpu h100 --latency-model roofline --c 1024 --n-max 256 --json");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output)["n"].get<int>();
  };
  const int dense = plan("qwen3-4b");
  const int moe = plan("qwen3-30b-a3b");
  EXPECT_LT(moe, dense);
  EXPECT_GT(moe, 0);
}

TEST(MoeTpCli, PlanAndWhatIfAcceptTp) {
  auto r = RunSpecplan("plan --marginals " + SourcePath("examples/marginals.json") +
                       " --model llama-3.3-70b --gpu h100 --c 1024 --n-max 128 --tp 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(nlohmann::json::parse(r.output)["n"].get<int>(), 0);
  r = RunSpecplan("whatif --trace " + SourcePath("tests/whatif/data/small.jsonl") +
                  " --model qwen3-32b --gpu h100 --tp 2 --budgets 1,2,4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSpecplan("whatif --trace " + SourcePath("tests/whatif/data/small.jsonl") +
                  " --model qwen3-32b --gpu h100 --tp 5 --budgets 1,2,4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--tp 5: must divide n_q = 64 (query heads)"));
}

TEST(MoeTpCli, FitRecordsTp) {
  const std::string out = ::testing::TempDir() + "/fit_tp4.json";
  auto r = RunSpecplan("fit --model llama-3.3-70b --gpu h100 --tp 4 --from-samples " +
                       SourcePath("tests/costmodel/data/h100-qwen3-8b.csv") + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tp       4 GPUs"));
  r = RunSpecplan("estimate --model llama-3.3-70b --gpu h100 --s 1 --c 0 --json --profile " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["tp"], 4);  // the profile's tp when --tp is not given
  r = RunSpecplan("fit --model llama-3.3-70b --gpu h100 --tp 3 --from-samples " +
                  SourcePath("tests/costmodel/data/h100-qwen3-8b.csv") + " --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--tp 3: must divide n_q = 64 (query heads)"));
}

}  // namespace
}  // namespace specplan
