// Starts the real specplan-server binary on a loopback port: health, a plan, an authorised
// PutProfile, graceful SIGTERM, a restart (from a --config file) that keeps the profile, crashes
// in the middle of PutProfile's write (the test build of the server, fault_server_main.cc, with an
// Env that aborts at the chosen step) followed by a restart, and the Python example client with
// the build-time stubs.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"
#include "tests/server_process.h"

namespace specplan::service {
namespace {

using namespace specplan::service::testing;
using test::ServerBinary;
using test::ServerProcess;

// The server linked with tests/util/fault_env.h: `--fault NAME` before the server's own flags.
std::string FaultServerBinary() {
  return ::specplan::test_paths::BinaryDir() + "/tests/specplan-fault-server";
}
std::vector<std::string> WithFault(const char* fault, std::vector<std::string> args) {
  args.insert(args.begin(), {"--fault", fault});
  return args;
}

// GetProfile for `asked`'s gpu and model answers `want`.
void ExpectServedProfile(v1::Planner::Stub& stub, const costmodel::Profile& asked,
                         const costmodel::Profile& want) {
  grpc::ClientContext ctx;
  v1::GetProfileRequest get;
  get.mutable_profile()->set_gpu(asked.gpu);
  get.mutable_profile()->set_model(asked.model);
  v1::GetProfileResponse got;
  const grpc::Status st = stub.GetProfile(&ctx, get, &got);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(nlohmann::json::parse(got.profile_json()), costmodel::ProfileToJson(want));
}

TEST(ServerBinary, ServesPersistsProfilesAndShutsDownGracefully) {
  ASSERT_TRUE(fs::exists(ServerBinary())) << ServerBinary();
  const fs::path dir = TempDir("bin");
  const fs::path profiles = dir / "profiles";
  const costmodel::Profile v1p = SyntheticProfile(1.0);
  const std::string path =
      costmodel::BundledProfilePath(profiles.string(), v1p.gpu, v1p.model, v1p.dtype);
  ASSERT_TRUE(costmodel::SaveProfile(v1p, path).ok());
  // A stale temp file from an interrupted write must be ignored.
  { std::ofstream(path + ".tmp.99999") << "{\"format\": \"specplan.prof"; }
  { std::ofstream(dir / "token") << "tok-123\n"; }

  const costmodel::Profile v2p = SyntheticProfile(3.0);
  {
    ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", profiles.string(),
                          "--auth-token-file", (dir / "token").string(), "--quiet"});
    ASSERT_GT(server.port(), 0) << server.first_line();
    EXPECT_THAT(server.first_line(), ::testing::HasSubstr("1 profiles"));
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()),
                                       grpc::InsecureChannelCredentials());
    ASSERT_TRUE(
        channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
    grpc::Status st;
    EXPECT_EQ(HealthCheck(channel, "", &st), 1) << st.error_message();
    auto stub = v1::Planner::NewStub(channel);

    v1::PlanTreeRequest req;
    *req.mutable_marginals() = RandomMarginals(16, 8, 1);
    *req.mutable_cost()->mutable_profile()->mutable_gpu() = "a100";
    *req.mutable_cost()->mutable_profile()->mutable_model() = "qwen3-4b";
    req.mutable_cost()->set_context_tokens(1000);
    req.set_n_max(256);
    v1::PlanTreeResponse resp;
    {
      grpc::ClientContext ctx;
      st = stub->PlanTree(&ctx, req, &resp);
      ASSERT_TRUE(st.ok()) << st.error_message();
      EXPECT_GT(resp.plan().n(), 0);
      EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16");
    }
    {
      grpc::ClientContext ctx;
      ctx.AddMetadata("authorization", "Bearer tok-123");
      v1::PutProfileRequest put;
      put.set_profile_json(costmodel::ProfileToJson(v2p).dump());
      v1::PutProfileResponse pr;
      st = stub->PutProfile(&ctx, put, &pr);
      ASSERT_TRUE(st.ok()) << st.error_message();
      EXPECT_TRUE(pr.replaced());
    }
    EXPECT_EQ(server.Terminate(), 0);
  }
  auto on_disk = costmodel::LoadProfile(path);
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(costmodel::ProfileToJson(*on_disk), costmodel::ProfileToJson(v2p));

  // Restart from a config file: the replaced profile is served.
  {
    std::ofstream(dir / "server.toml") << "listen = \"127.0.0.1:0\"\nprofiles-dir = \""
                                       << profiles.string() << "\"\nquiet = true\n";
  }
  ServerProcess server({"--config", (dir / "server.toml").string()});
  ASSERT_GT(server.port(), 0) << server.first_line();
  EXPECT_THAT(server.first_line(), ::testing::HasSubstr("writes disabled"));
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Planner::NewStub(channel);
  ExpectServedProfile(*stub, v1p, v2p);
  EXPECT_EQ(server.Terminate(), 0);
  fs::remove_all(dir);
}

// Kills the server inside PutProfile's atomic write at each fault point; after a restart without
// the fault exactly one profile is served and it is complete: the previous version when the crash
// came before the rename, the new one after it. The temp file a crash leaves is never loaded, and
// the next PutProfile succeeds.
TEST(ServerBinary, CrashDuringPutProfileKeepsACompleteProfile) {
  ASSERT_TRUE(fs::exists(ServerBinary())) << ServerBinary();
  ASSERT_TRUE(fs::exists(FaultServerBinary())) << FaultServerBinary();
  const costmodel::Profile old_p = SyntheticProfile(1.0);
  const costmodel::Profile new_p = SyntheticProfile(3.0);
  ASSERT_NE(costmodel::ProfileToJson(old_p), costmodel::ProfileToJson(new_p));
  struct Case {
    const char* fault;
    bool new_survives;  // the rename happened before the crash
    bool tmp_left;      // a temp file stays behind
  };
  for (const Case& c :
       {Case{"abort_mid_tmp_write", false, true}, Case{"abort_after_tmp_write", false, true},
        Case{"abort_before_rename", false, true}, Case{"abort_after_rename", true, false}}) {
    SCOPED_TRACE(c.fault);
    const fs::path dir = TempDir(std::string("crash_") + c.fault);
    const fs::path profiles = dir / "profiles";
    const std::string path =
        costmodel::BundledProfilePath(profiles.string(), old_p.gpu, old_p.model, old_p.dtype);
    ASSERT_TRUE(costmodel::SaveProfile(old_p, path).ok());
    { std::ofstream(dir / "token") << "tok-9\n"; }
    const std::vector<std::string> args = {
        "--listen",        "127.0.0.1:0",       "--profiles-dir",
        profiles.string(), "--auth-token-file", (dir / "token").string(),
        "--quiet"};
    auto put = [&](int port, const costmodel::Profile& p) {
      auto stub = v1::Planner::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                           grpc::InsecureChannelCredentials()));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      ctx.AddMetadata("authorization", "Bearer tok-9");
      v1::PutProfileRequest req;
      req.set_profile_json(costmodel::ProfileToJson(p).dump());
      v1::PutProfileResponse resp;
      return stub->PutProfile(&ctx, req, &resp);
    };
    {
      ServerProcess server(WithFault(c.fault, args), FaultServerBinary());
      ASSERT_GT(server.port(), 0) << server.first_line();
      const grpc::Status st = put(server.port(), new_p);
      EXPECT_FALSE(st.ok());
      EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
      EXPECT_EQ(server.WaitExit(), 128 + SIGABRT);
    }
    // On disk: exactly one complete profile file, plus the crash's temp file when it came first.
    int json_files = 0, tmp_files = 0;
    for (const auto& e : fs::recursive_directory_iterator(profiles)) {
      if (!e.is_regular_file()) continue;
      const std::string name = e.path().filename().string();
      if (e.path().extension() == ".json") ++json_files;
      if (name.find(".json.tmp.") != std::string::npos) ++tmp_files;
    }
    EXPECT_EQ(json_files, 1);
    EXPECT_EQ(tmp_files, c.tmp_left ? 1 : 0);
    const costmodel::Profile& expected = c.new_survives ? new_p : old_p;
    auto on_disk = costmodel::LoadProfile(path);
    ASSERT_TRUE(on_disk.ok()) << on_disk.status();
    EXPECT_EQ(costmodel::ProfileToJson(*on_disk), costmodel::ProfileToJson(expected));

    // Restart without the fault: the complete profile is served, the temp file is not a profile.
    ServerProcess server(args);
    ASSERT_GT(server.port(), 0) << server.first_line();
    EXPECT_THAT(server.first_line(), ::testing::HasSubstr("(1 profiles"));
    auto stub = v1::Planner::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
    {
      grpc::ClientContext ctx;
      v1::ListProfilesResponse list;
      ASSERT_TRUE(stub->ListProfiles(&ctx, v1::ListProfilesRequest(), &list).ok());
      ASSERT_EQ(list.profiles_size(), 1);
      EXPECT_EQ(list.profiles(0).path(), path);
    }
    ExpectServedProfile(*stub, old_p, expected);
    // Writes work again despite the stale temp file.
    const grpc::Status st = put(server.port(), new_p);
    EXPECT_TRUE(st.ok()) << st.error_message();
    on_disk = costmodel::LoadProfile(path);
    ASSERT_TRUE(on_disk.ok()) << on_disk.status();
    EXPECT_EQ(costmodel::ProfileToJson(*on_disk), costmodel::ProfileToJson(new_p));
    EXPECT_EQ(server.Terminate(), 0);
    fs::remove_all(dir);
  }
}

// An unknown fault name is refused at start (exit 1), never ignored.
TEST(ServerBinary, UnknownFaultIsRefused) {
  const fs::path dir = TempDir("badfault");
  ServerProcess server(WithFault("abort_sometimes", {"--listen", "127.0.0.1:0", "--profiles-dir",
                                                     dir.string(), "--quiet"}),
                       FaultServerBinary());
  EXPECT_EQ(server.port(), 0) << server.first_line();
  EXPECT_EQ(server.WaitExit(), 1);
  fs::remove_all(dir);
}

// The WhatIf limits come from the command line: --max-whatif-budgets 2 refuses a 3-budget sweep
// with the limit named; an out-of-range value is refused at start.
TEST(ServerBinary, WhatIfLimitFlags) {
  const fs::path dir = TempDir("whatif_limits");
  {
    ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", dir.string(), "--quiet",
                          "--max-whatif-budgets", "2"});
    ASSERT_GT(server.port(), 0) << server.first_line();
    auto stub = v1::Planner::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
    v1::WhatIfRequest req;
    req.mutable_cost()->mutable_inline_model()->set_gpu("h100");
    req.mutable_cost()->mutable_inline_model()->set_model("qwen3-8b");
    for (int b : {1, 2, 4}) req.add_budgets(b);
    v1::WhatIfResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const grpc::Status st = stub->WhatIf(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::RESOURCE_EXHAUSTED) << st.error_message();
    EXPECT_THAT(st.error_message(), ::testing::HasSubstr("limit 2"));
  }
  ServerProcess bad({"--listen", "127.0.0.1:0", "--profiles-dir", dir.string(), "--quiet",
                     "--max-whatif-steps", "0"});
  EXPECT_EQ(bad.port(), 0) << bad.first_line();
  EXPECT_NE(bad.WaitExit(), 0);
  fs::remove_all(dir);
}

// The example Python client (examples/python_client.py, with the stubs proto/CMakeLists.txt
// generates at build time) against the real binary: its plan equals the C++ client's for the same
// marginals file.
TEST(ServerBinary, PythonClientGetsTheSamePlanAsTheCppClient) {
  const char* python = "/usr/bin/python3";
  if (!fs::exists(python) ||
      std::system("/usr/bin/python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-grpcio / python3-grpc-tools not installed";
  }
  // Generated by the specplan_python_stubs target (proto/CMakeLists.txt), a dependency of the
  // server binary.
  const std::string stubs = ::specplan::test_paths::BinaryDir() + "/python";
  ASSERT_TRUE(fs::exists(stubs + "/specplan/v1/planner_pb2_grpc.py"))
      << "build-time Python stubs missing under " << stubs;
  const fs::path dir = TempDir("py");
  const v1::Marginals wire = RandomMarginals(16, 8, 21);
  {
    nlohmann::json j;
    j["root_token"] = wire.root_token();
    for (int d = 0; d < wire.gamma(); ++d) {
      std::vector<int32_t> t(wire.tokens().begin() + d * wire.k(),
                             wire.tokens().begin() + (d + 1) * wire.k());
      std::vector<float> p(wire.probs().begin() + d * wire.k(),
                           wire.probs().begin() + (d + 1) * wire.k());
      j["tokens"].push_back(t);
      j["probs"].push_back(p);
    }
    std::ofstream(dir / "marginals.json") << j.dump();
  }
  ServerProcess server(
      {"--listen", "127.0.0.1:0", "--profiles-dir", (dir / "none").string(), "--quiet"});
  ASSERT_GT(server.port(), 0) << server.first_line();
  const std::string cmd =
      std::string(python) + " " + ::specplan::test_paths::SourceDir() +
      "/examples/python_client.py --server 127.0.0.1:" + std::to_string(server.port()) +
      " --marginals " + (dir / "marginals.json").string() +
      " --context 500 --n-max 128 --steps 1 --json --drafter '' --stubs-dir " + stubs + " > " +
      (dir / "out.txt").string() + " 2> " + (dir / "err.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadAll(dir / "out.txt") << ReadAll(dir / "err.txt");
  EXPECT_THAT(ReadAll(dir / "err.txt"), ::testing::HasSubstr("stubs from " + stubs));
  const std::string out = ReadAll(dir / "out.txt");
  const nlohmann::json plan = nlohmann::json::parse(out.substr(out.find('{')));

  auto stub = v1::Planner::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()),
                                                       grpc::InsecureChannelCredentials()));
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = wire;
  *req.mutable_cost() = InlineCost(500);
  req.set_n_max(128);
  v1::PlanTreeResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->PlanTree(&ctx, req, &resp).ok());
  EXPECT_EQ(plan["n"].get<int>(), resp.plan().n());
  EXPECT_EQ(
      plan["tokens"].get<std::vector<int32_t>>(),
      std::vector<int32_t>(resp.plan().tree().tokens().begin(), resp.plan().tree().tokens().end()));
  EXPECT_EQ(plan["parents"].get<std::vector<int32_t>>(),
            std::vector<int32_t>(resp.plan().tree().parents().begin(),
                                 resp.plan().tree().parents().end()));
  EXPECT_EQ(
      plan["positions"].get<std::vector<int64_t>>(),
      std::vector<int64_t>(resp.outputs().positions().begin(), resp.outputs().positions().end()));
  EXPECT_DOUBLE_EQ(plan["speedup"].get<double>(), resp.plan().speedup());

  // Then one PlanBatch call (--batch 4 by default): requests at c = 500 + 1024 i, one budget of
  // 512 over the batch, the ragged layout.
  v1::PlanBatchRequest batch_req;
  for (int i = 0; i < 4; ++i) {
    v1::BatchEntry* e = batch_req.add_requests();
    *e->mutable_marginals() = wire;
    e->set_context_tokens(500 + 1024 * i);
  }
  *batch_req.mutable_cost() = InlineCost(0);
  batch_req.set_mode(v1::BUDGET_MODE_CONTROLLER);
  batch_req.set_n_max(512);
  batch_req.set_layout(v1::BATCH_LAYOUT_RAGGED);
  v1::PlanBatchResponse batch_resp;
  grpc::ClientContext batch_ctx;
  ASSERT_TRUE(stub->PlanBatch(&batch_ctx, batch_req, &batch_resp).ok());
  ASSERT_TRUE(plan.contains("batch")) << out;
  const nlohmann::json& batch = plan["batch"];
  EXPECT_EQ(batch["n_total"].get<int>(), batch_resp.n_total());
  EXPECT_GT(batch_resp.n_total(), 0);
  ASSERT_EQ(batch["requests"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const v1::BatchPlanEntry& e = batch_resp.requests(i);
    EXPECT_EQ(batch["requests"][i]["n"].get<int>(), e.n());
    EXPECT_EQ(batch["requests"][i]["tokens"].get<std::vector<int32_t>>(),
              std::vector<int32_t>(e.tree().tokens().begin(), e.tree().tokens().end()));
    EXPECT_EQ(batch["requests"][i]["positions"].get<std::vector<int64_t>>(),
              std::vector<int64_t>(e.outputs().positions().begin(), e.outputs().positions().end()));
    EXPECT_DOUBLE_EQ(batch["requests"][i]["expected_accepted"].get<double>(),
                     e.expected_accepted());
  }
  EXPECT_EQ(batch["curve"].size(), static_cast<size_t>(batch_resp.curve().n_size()));
  EXPECT_DOUBLE_EQ(batch["goodput"].get<double>(), batch_resp.goodput());
  EXPECT_EQ(batch["ragged"]["cu_seqlens"].get<std::vector<int32_t>>(),
            std::vector<int32_t>(batch_resp.ragged().cu_seqlens().begin(),
                                 batch_resp.ragged().cu_seqlens().end()));
  EXPECT_EQ(server.Terminate(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::service
