// `--server HOST:PORT` gives the same output as in-process, against the real specplan-server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "run_command.h"
#include "tests/server_process.h"
#include "util/atomic_file.h"

namespace specplan {
namespace {

namespace fs = std::filesystem;
using ::specplan::test::ServerProcess;
using namespace ::specplan::testing;

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
  // The bundled profiles on both sides (the in-process CLI reads them by default): measured,
  // derived and engine-composed profiles, their default models included, must plan the same over
  // the wire. Without --engine both sides take the first of sglang, vllm, trtllm, specplan held;
  // --engine specplan pins the runtime's measured profile.
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string m = SourcePath("examples/marginals.json");
  const std::string a = SourcePath("examples/tree_a.json"), b = SourcePath("examples/tree_b.json");
  ExpectSameOutput(
      server.address(),
      "plan --marginals " + m + " --model qwen3-8b --gpu h100 --c 1024 --n-max 256 --json");
  ExpectSameOutput(server.address(), "plan --marginals " + m +
                                         " --model qwen3-8b --gpu h100 --c 1024 --n-max 256 "
                                         "--engine specplan --json");
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
  // prints: table and JSON, every mode, the latency bound, layouts, without a cost, with the
  // bundled profile a lookup without --engine takes, and with the measured bundled profile
  // (h100 x qwen3-8b, kernel_sum with its batch table: --engine specplan) on both sides.
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string r = "plan-batch --requests " + SourcePath("examples/batch_requests.jsonl");
  const std::string h100 = r + " --model qwen3-8b --gpu h100";
  ExpectSameOutput(server.address(), h100 + " --n-max 2048 --scan --t-draft-ms 0.5 --json");
  ExpectSameOutput(server.address(),
                   h100 + " --engine specplan --n-max 2048 --scan --t-draft-ms 0.5 --json");
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

TEST_F(RemoteTest, HostFileReachesTheServer) {
  // --host-file with --server: the file's terms travel as the step's host_base and the --host-*
  // flags as overrides over them, so the remote step is the in-process one (the flag used to be
  // dropped silently: the server priced the engine's defaults).
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string host = (dir_ / "host.json").string();
  ASSERT_TRUE(WriteFileAtomically(host,
                                  R"({"step_s": 0.0042, "per_sequence_s": 3e-5,
                                      "per_draft_forward_s": 0.0011, "sample_call_s": 0.0002,
                                      "verify_per_token_s": 1e-6, "ngram_verify_fraction": 0.05,
                                      "provenance": "fitted by hand for this test"})")
                  .ok());
  const std::string estimate =
      "estimate --model llama-3.1-8b --gpu h100 --engine vllm --s 4 --c 1024 --json --host-file " +
      host;
  // estimate's JSON names the profile by its path in-process and by its id over the wire; every
  // other field must agree.
  for (const std::string& args : {estimate, estimate + " --host-step-ms 2.5"}) {
    const auto local = RunSpecplan(args);
    const auto remote = RunSpecplan(args + " --server " + server.address());
    ASSERT_EQ(local.exit_code, 0) << local.output;
    ASSERT_EQ(remote.exit_code, 0) << remote.output;
    nlohmann::json l = nlohmann::json::parse(local.output),
                   r = nlohmann::json::parse(remote.output);
    EXPECT_EQ(r["profile"], "h100-sxm/llama-3.1-8b-bf16@vllm");
    l.erase("profile");
    r.erase("profile");
    EXPECT_EQ(l, r) << args;
  }
  ExpectSameOutput(server.address(), "plan --marginals " + SourcePath("examples/marginals.json") +
                                         " --model llama-3.1-8b --gpu h100 --engine vllm --c 1024 "
                                         "--n-max 64 --json --host-file " +
                                         host);
  // The remote answer prices the file's terms, not the engine's defaults.
  const auto remote = RunSpecplan(estimate + " --server " + server.address());
  ASSERT_EQ(remote.exit_code, 0) << remote.output;
  const nlohmann::json j = nlohmann::json::parse(remote.output);
  EXPECT_DOUBLE_EQ(j["step"]["host"]["step_s"].get<double>(), 0.0042) << remote.output;
  EXPECT_DOUBLE_EQ(j["step"]["host"]["verify_per_token_s"].get<double>(), 1e-6) << remote.output;
  // A bad file is refused before any call, naming the flag, as in-process.
  const std::string bad = (dir_ / "bad-host.json").string();
  ASSERT_TRUE(WriteFileAtomically(bad, R"({"step_s": 1e-3})").ok());
  const auto refused =
      RunSpecplan("estimate --model llama-3.1-8b --gpu h100 --s 4 --c 0 --host-file " + bad +
                  " --server " + server.address());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("--host-file"), std::string::npos) << refused.output;
}

// CUDA-graph buckets over the wire: the flags that change the ladder are local (the server prices
// the engine's default ladder, ops::DefaultGraphs) and are refused with --server, not dropped.
TEST_F(RemoteTest, CudaGraphFlagsAreRefusedWithServer) {
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string estimate =
      "estimate --model llama-3.1-8b --gpu h100 --engine vllm --drafter eagle3 --s 4 --c 1024 "
      "--json";
  const auto local = RunSpecplan(estimate);
  const auto remote = RunSpecplan(estimate + " --server " + server.address());
  ASSERT_EQ(local.exit_code, 0) << local.output;
  ASSERT_EQ(remote.exit_code, 0) << remote.output;
  EXPECT_EQ(nlohmann::json::parse(local.output)["step"],
            nlohmann::json::parse(remote.output)["step"]);
  for (const char* flag : {"--cuda-graphs off", "--enforce-eager", "--cuda-graph-max 64",
                           "--cuda-graph-bs 1,2,4", "--eager-launch-us 20"}) {
    const auto refused = RunSpecplan(estimate + " " + flag + " --server " + server.address());
    EXPECT_NE(refused.exit_code, 0) << flag;
    EXPECT_NE(refused.output.find("are local; with --server"), std::string::npos)
        << flag << ": " << refused.output;
  }
}

// The bundled tensor-parallel profiles (glm-4.5-air at tp 4, qwen3-30b-a3b at tp 2) are found
// over the wire as in-process: the CLI sends ProfileRef.tp instead of an inline roofline at that
// tp (which it did before, so the remote plan was the roofline's), with --engine too.
TEST_F(RemoteTest, TensorParallelProfilesAreUsedLikeBundledOnes) {
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", SourcePath("calib")});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string plan = "plan --marginals " + SourcePath("examples/marginals.json") +
                           " --gpu h100 --c 1024 --n-max 64 --json ";
  ExpectSameOutput(server.address(), plan + "--model glm-4.5-air --tp 4");
  ExpectSameOutput(server.address(), plan + "--model glm-4.5-air --tp 4 --engine vllm");
  ExpectSameOutput(server.address(), plan + "--model qwen3-30b-a3b --tp 2");
  // At a tp no profile is made for, both sides price the roofline at that tp.
  ExpectSameOutput(server.address(), plan + "--model qwen3-8b --tp 2");
  const auto est = RunSpecplan(
      "estimate --model glm-4.5-air --gpu h100 --tp 4 --s 4 --c 1024 "
      "--json --server " +
      server.address());
  ASSERT_EQ(est.exit_code, 0) << est.output;
  EXPECT_NE(est.output.find("h100-sxm/glm-4.5-air-bf16-tp4@sglang"), std::string::npos)
      << est.output;
}

TEST_F(RemoteTest, EngineFlagReachesTheServer) {
  // h100 x qwen3-8b under two engines, in the server's directory and (for the in-process runs)
  // the calib dir: specplan's runtime (the file without "@") and sglang, priced differently.
  const auto model = *costmodel::LookupModel("qwen3-8b");
  const auto gpu = *costmodel::LookupGpu("h100");
  const costmodel::RooflineLatency r(model, gpu);
  for (const auto& [engine, scale] :
       std::vector<std::pair<std::string, double>>{{"specplan", 1.4}, {"sglang", 2.5}}) {
    std::vector<costmodel::LatencySample> samples;
    for (int64_t c : {64, 1024}) {
      for (int64_t s : {1, 16, 64, 256, 1024})
        samples.push_back({s, c, scale * r.VerifySeconds(s, c) + 2e-3 * scale});
    }
    auto profile = costmodel::FitProfile(model, gpu, samples);
    ASSERT_TRUE(profile.ok()) << profile.status();
    profile->engine = engine;
    if (engine == "sglang") profile->engine_version = "0.5.14";
    ASSERT_TRUE(costmodel::SaveProfile(
                    *profile, costmodel::BundledProfilePath(dir_.string(), gpu.name, model.name,
                                                            costmodel::DType::kBFloat16, 1, engine))
                    .ok());
  }
  ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", dir_.string()});
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  setenv("SPECPLAN_CALIB_DIR", dir_.c_str(), 1);
  const std::string plan = "plan --marginals " + SourcePath("examples/marginals.json") +
                           " --model qwen3-8b --gpu h100 --c 1024 --n-max 256 --json";
  // Each engine plans over the wire as in-process, and the two engines' plans differ.
  ExpectSameOutput(server.address(), plan + " --engine sglang");
  ExpectSameOutput(server.address(), plan + " --engine specplan");
  ExpectSameOutput(server.address(), plan);
  const auto sglang = RunSpecplan(plan + " --engine sglang --server " + server.address());
  const auto runtime = RunSpecplan(plan + " --engine specplan --server " + server.address());
  ASSERT_EQ(sglang.exit_code, 0) << sglang.output;
  ASSERT_EQ(runtime.exit_code, 0) << runtime.output;
  EXPECT_NE(sglang.output, runtime.output);
  // Without --engine the server takes sglang (first of sglang, vllm, trtllm, specplan held).
  EXPECT_EQ(RunSpecplan(plan + " --server " + server.address()).output, sglang.output);

  // The server says which profile it used: the engine's id.
  const std::string estimate =
      "estimate --model qwen3-8b --gpu h100 --s 33 --c 1024 --json --server " + server.address();
  auto est = RunSpecplan(estimate + " --engine sglang");
  ASSERT_EQ(est.exit_code, 0) << est.output;
  EXPECT_NE(est.output.find("h100-sxm/qwen3-8b-bf16@sglang"), std::string::npos) << est.output;
  est = RunSpecplan(estimate + " --engine specplan");
  ASSERT_EQ(est.exit_code, 0) << est.output;
  EXPECT_EQ(est.output.find("@"), std::string::npos) << est.output;
  EXPECT_NE(est.output.find("h100-sxm/qwen3-8b-bf16"), std::string::npos) << est.output;

  // An engine the server does not hold: NOT_FOUND naming the field and the engines it holds.
  est = RunSpecplan(estimate + " --engine vllm");
  EXPECT_NE(est.exit_code, 0);
  EXPECT_NE(est.output.find("profile.engine = 'vllm'"), std::string::npos) << est.output;
  EXPECT_NE(est.output.find("sglang, specplan"), std::string::npos) << est.output;

  // `profiles --server` carries each profile's engine.
  const auto listed = RunSpecplan("profiles --server " + server.address());
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("sglang"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("0.5.14"), std::string::npos) << listed.output;
}

}  // namespace
}  // namespace specplan
