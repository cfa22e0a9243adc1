// The load generator (service/loadgen.h) against a real in-process server on loopback, and the
// specplan-loadgen binary: loopback-only targets, request / time / rate bounds, percentiles,
// error accounting.
#include "service/loadgen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "planner/marginals.h"
#include "service_test_util.h"

namespace specplan::service {
namespace {

using namespace specplan::service::testing;
using ::testing::HasSubstr;

TEST(Loadgen, OnlyLoopbackTargetsAreAccepted) {
  for (const char* ok : {"127.0.0.1:50051", "localhost:1", "[::1]:5", "ipv4:127.0.0.2:7",
                         "dns:///localhost:9", "unix:/tmp/specplan.sock"}) {
    EXPECT_TRUE(CheckLoopbackTarget(ok).ok()) << ok << ": " << CheckLoopbackTarget(ok);
  }
  for (const char* remote :
       {"10.1.2.3:50051", "8.8.8.8:53", "[2001:db8::1]:5", "ipv4:192.168.0.1:1"}) {
    const absl::Status st = CheckLoopbackTarget(remote);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << remote << ": " << st;
    EXPECT_THAT(st.message(), HasSubstr("--allow-remote"));
  }
  EXPECT_EQ(CheckLoopbackTarget("no-port").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLoopbackTarget("[::1:5").code(), absl::StatusCode::kInvalidArgument);
}

TEST(Loadgen, ConfigBoundsNameTheFlag) {
  LoadConfig c;
  c.clients = 0;
  EXPECT_THAT(ValidateLoadConfig(c).message(), HasSubstr("--clients = 0"));
  c = LoadConfig();
  c.requests = 0;
  EXPECT_THAT(ValidateLoadConfig(c).message(), HasSubstr("--requests = 0"));
  c = LoadConfig();
  c.seconds = 0;
  EXPECT_THAT(ValidateLoadConfig(c).message(), HasSubstr("--seconds = 0"));
  c = LoadConfig();
  c.qps = -1;
  EXPECT_THAT(ValidateLoadConfig(c).message(), HasSubstr("--qps = -1"));
  EXPECT_TRUE(ValidateLoadConfig(LoadConfig()).ok());
}

TEST(Loadgen, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(Percentile(v, 0.5), 50);
  EXPECT_EQ(Percentile(v, 0.9), 90);
  EXPECT_EQ(Percentile(v, 0.99), 99);
  EXPECT_EQ(Percentile(v, 1.0), 100);
  EXPECT_EQ(Percentile({7}, 0.99), 7);
  EXPECT_EQ(Percentile({}, 0.5), 0);
}

class LoadgenServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.profiles_dir = (TempDir("loadgen") / "none").string();
    server_ = TestServer::Start(config);
    ASSERT_NE(server_, nullptr);
    base_.target = "127.0.0.1:" + std::to_string(server_->running->port);
    base_.warmup_per_client = 5;
    auto m = planner::LoadMarginalsFile(SPECPLAN_SOURCE_DIR "/examples/marginals.json");
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->gamma, 16);
    ASSERT_EQ(m->k, 8);
    base_.plan_request = MakePlanRequest(*m, 256, 1024, "h100", "qwen3-8b", "");
  }
  std::unique_ptr<TestServer> server_;
  LoadConfig base_;
};

TEST_F(LoadgenServer, StopsAfterTheRequestCount) {
  for (LoadRpc rpc : {LoadRpc::kPing, LoadRpc::kPlanTree}) {
    LoadConfig c = base_;
    c.rpc = rpc;
    c.clients = 3;
    c.requests = 301;
    c.seconds = 60;
    auto rep = RunLoad(c);
    ASSERT_TRUE(rep.ok()) << rep.status();
    EXPECT_EQ(rep->rpc, LoadRpcName(rpc));
    EXPECT_EQ(rep->requests, 301);
    EXPECT_EQ(rep->errors, 0) << rep->first_error;
    EXPECT_GT(rep->qps, 0);
    EXPECT_LT(rep->seconds, 30);
    EXPECT_LE(rep->p50_us, rep->p90_us);
    EXPECT_LE(rep->p90_us, rep->p99_us);
    EXPECT_LE(rep->p99_us, rep->max_us);
    EXPECT_GT(rep->p50_us, 0);
    // PlanTree replies carry the handler time; Ping has none.
    if (rpc == LoadRpc::kPlanTree) {
      EXPECT_GT(rep->server_p50_us, 0);
      EXPECT_LT(rep->server_p50_us, rep->max_us);
    } else {
      EXPECT_EQ(rep->server_p50_us, 0);
    }
  }
  // The server saw the warm-up and the measured calls.
  EXPECT_EQ(server_->running->service->stats().Summaries().size(), 2u);
}

TEST_F(LoadgenServer, StopsAtTheTimeLimitAndHoldsThePace) {
  LoadConfig c = base_;
  c.rpc = LoadRpc::kPlanTree;
  c.clients = 2;
  c.requests = int64_t{1} << 40;
  c.seconds = 0.5;
  c.qps = 200;
  auto rep = RunLoad(c);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(rep->target_qps, 200);
  // 0.5 s at 200/s: 100 scheduled sends, a few may miss the deadline on a loaded machine.
  EXPECT_LE(rep->requests, 100);
  EXPECT_GE(rep->requests, 60);
  EXPECT_GE(rep->seconds, 0.3);
  EXPECT_LT(rep->seconds, 2.0);
  EXPECT_EQ(rep->errors, 0);
}

TEST_F(LoadgenServer, BadRequestsFailTheWarmupOrAreCounted) {
  LoadConfig c = base_;
  c.rpc = LoadRpc::kPlanTree;
  c.plan_request.mutable_marginals()->set_probs(3, 1.5f);
  c.requests = 20;
  auto rep = RunLoad(c);
  ASSERT_FALSE(rep.ok());
  EXPECT_THAT(rep.status().message(), HasSubstr("marginals.probs[0][3] = 1.5"));
  c.warmup_per_client = 0;
  rep = RunLoad(c);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(rep->requests, 20);
  EXPECT_EQ(rep->errors, 20);
  EXPECT_THAT(rep->first_error, HasSubstr("INVALID_ARGUMENT"));
}

TEST(Loadgen, UnreachableServerIsAnError) {
  LoadConfig c;
  c.target = "127.0.0.1:1";
  c.deadline_s = 0.5;
  c.warmup_per_client = 3;
  auto rep = RunLoad(c);
  ASSERT_FALSE(rep.ok());
  EXPECT_THAT(rep.status().message(), HasSubstr("127.0.0.1:1"));
}

TEST(LoadgenBinary, ReportsJsonAndRefusesRemoteTargets) {
  const std::string bin = SPECPLAN_BINARY_DIR "/service/specplan-loadgen";
  if (!fs::exists(bin)) GTEST_SKIP() << bin << " not built (target specplan-loadgen)";
  const fs::path dir = TempDir("loadgen_bin");
  const std::string cmd = bin + " --start-server --profiles-dir " + (dir / "none").string() +
                          " --rpc ping,plan --clients 2 --requests 200 --seconds 10 --warmup 5"
                          " --at-fraction 0.5 --json > " +
                          (dir / "out.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const nlohmann::json j = nlohmann::json::parse(ReadAll(dir / "out.json"));
  ASSERT_EQ(j["runs"].size(), 4u);  // ping, ping at half rate, plan, plan at half rate
  EXPECT_EQ(j["runs"][0]["rpc"], "Ping");
  EXPECT_EQ(j["runs"][2]["rpc"], "PlanTree");
  EXPECT_EQ(j["runs"][0]["requests"], 200);
  EXPECT_EQ(j["runs"][2]["errors"], 0);
  EXPECT_NEAR(j["runs"][3]["target_qps"].get<double>(), 0.5 * j["runs"][2]["qps"].get<double>(),
              1e-6 * j["runs"][2]["qps"].get<double>());
  ASSERT_EQ(j["plan_over_ping_qps"].size(), 1u);

  const std::string remote =
      bin + " --server 10.1.2.3:50051 --requests 1 2> " + (dir / "err.txt").string();
  EXPECT_NE(std::system(remote.c_str()), 0);
  EXPECT_THAT(ReadAll(dir / "err.txt"), HasSubstr("not a loopback address"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::service
