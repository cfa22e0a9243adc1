// `--server HOST:PORT` gives the same output as in-process, against the real specplan-server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "costmodel/model_registry.h"
#include "costmodel/profile.h"
#include "run_command.h"
#include "tests/server_process.h"

namespace specplan {
namespace {

namespace fs = std::filesystem;
using ::specplan::test::ServerProcess;
using ::specplan::testing::RunSpecplan;
using ::specplan::testing::SourcePath;

void ExpectSameOutput(const std::string& server, const std::string& args) {
  const auto local = RunSpecplan(args);
  const auto remote = RunSpecplan(args + " --server " + server);
  ASSERT_EQ(local.exit_code, 0) << local.output;
  ASSERT_EQ(remote.exit_code, 0) << remote.output;
  EXPECT_EQ(local.output, remote.output) << args;
}

class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("specplan_remote_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("SPECPLAN_CALIB_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(RemoteTest, PlanMergeEstimateMatchInProcess) {
  // The bundled profiles on both sides (the in-process CLI reads them by default): measured and
  // derived profiles, their default models included, must plan the same over the wire.
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string m = SourcePath("examples/marginals.json");
  const std::string a = SourcePath("examples/tree_a.json"), b = SourcePath("examples/tree_b.json");
  ExpectSameOutput(
      server.address(),
      "plan --marginals " + m + " --model qwen3-8b --gpu h100 --c 1024 --n-max 256 --json");
  ExpectSameOutput(
      server.address(),
      "plan --marginals " + m + " --model llama-3.1-8b --gpu a100 --c 64 --n-max 512 --scan");
  ExpectSameOutput(server.address(), "plan --marginals " + m + " --c 9 --budget 40 --json");
  ExpectSameOutput(server.address(), "merge --a " + a + " --b " + b + " --json");
  ExpectSameOutput(server.address(), "merge --a " + a + " --b " + b + " --dedup --n-max 4 --c 3");
  ExpectSameOutput(server.address(),
                   "estimate --model qwen3-4b --gpu h200 --s 33 --c 2048 --drafter causal "
                   "--t-net-ms 2 --t-light-ms 0.1 --json");
  // Errors come back with the field named.
  auto r = RunSpecplan("plan --marginals " + m +
                       " --model nope --gpu h100 --c 0 --n-max 8 --server " + server.address());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("nope"), std::string::npos) << r.output;
}

TEST_F(RemoteTest, PlanBatchMatchesInProcess) {
  // `plan-batch --server` (the PlanBatch RPC) prints byte for byte what the in-process command
  // prints: table and JSON, every mode, the latency bound, layouts, without a cost, and with a
  // measured bundled profile (h100 x qwen3-8b, kernel_sum) on both sides.
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string r = "plan-batch --requests " + SourcePath("examples/batch_requests.jsonl");
  const std::string h100 = r + " --model qwen3-8b --gpu h100";
  ExpectSameOutput(server.address(), h100 + " --n-max 2048 --scan --t-draft-ms 0.5 --json");
  ExpectSameOutput(server.address(), h100 + " --n-max 2048 --scan --t-draft-ms 0.5");
  ExpectSameOutput(server.address(), h100 + " --n-max 512 --json --layout ragged");
  ExpectSameOutput(server.address(), r + " --model llama-3.1-8b --gpu a100 --n-max 512 "
                                         "--max-ms-per-token 4 --drafter ar --t-draft-ms 0.2 "
                                         "--draft-batch-growth 0.1 --t-aux-ms 0.05 --json");
  ExpectSameOutput(server.address(), r + " --model llama-3.1-8b --gpu a100 --n-max 512 "
                                         "--max-ms-per-token 4 --drafter ar --t-draft-ms 0.2");
  ExpectSameOutput(server.address(), r + " --budget 40 --json --layout sglang "
                                         "--tree-mask-mode FULL_MASK");
  ExpectSameOutput(server.address(), r + " --budget 40");
  // Errors: the cost names the model; local-only flags are refused.
  auto bad = RunSpecplan(r + " --model nope --gpu h100 --n-max 8 --server " + server.address());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("nope"), std::string::npos) << bad.output;
  bad = RunSpecplan(h100 + " --n-max 8 --latency-model roofline --server " + server.address());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--latency-model are local"), std::string::npos) << bad.output;
}

TEST_F(RemoteTest, StoredProfilesAreUsedLikeBundledOnes) {
  // A fitted profile in the server's directory and, for the in-process run, the calib dir.
  const auto model = *costmodel::LookupModel("qwen3-8b");
  const auto gpu = *costmodel::LookupGpu("h100");
  const costmodel::RooflineLatency r(model, gpu);
  std::vector<costmodel::LatencySample> samples;
  for (int64_t c : {64, 1024}) {
    for (int64_t s : {1, 16, 64, 256, 1024})
      samples.push_back({s, c, 1.4 * r.VerifySeconds(s, c) + 2e-3});
  }
  auto profile = costmodel::FitProfile(model, gpu, samples);
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_TRUE(costmodel::SaveProfile(
                  *profile, costmodel::BundledProfilePath(dir_.string(), gpu.name, model.name,
                                                          costmodel::DType::kBFloat16))
                  .ok());
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", dir_.string()});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  setenv("SPECPLAN_CALIB_DIR", dir_.c_str(), 1);
  const std::string m = SourcePath("examples/marginals.json");
  ExpectSameOutput(server.address(),
                   "plan --marginals " + m + " --model qwen3-8b --gpu h100 --c 1024 --n-max 256");
  const auto listed = RunSpecplan("profiles --server " + server.address());
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("qwen3-8b"), std::string::npos) << listed.output;
}

}  // namespace
}  // namespace specplan
