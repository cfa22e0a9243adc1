// The load generator (service/tools/loadgen.h) against a real in-process server on loopback, and
// the specplan-loadgen binary: loopback-only targets, request / time / rate bounds, percentiles,
// error accounting.
#include "service/tools/loadgen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "planner/marginals/marginals.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"

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

class LoadgenServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.profiles_dir = (TempDir("loadgen") / "none").string();
    server_ = TestServer::Start(config);
    ASSERT_NE(server_, nullptr);
    base_.target = "127.0.0.1:" + std::to_string(server_->running->port);
    base_.warmup_per_client = 5;
    auto m = planner::LoadMarginalsFile(::specplan::test_paths::SourceDir() +
                                        "/examples/marginals.json");
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->gamma, 16);
    ASSERT_EQ(m->k, 8);
    base_.plan_request = MakePlanRequest(*m, 256, 1024, "h100", "qwen3-8b", "");
  }
  // A soak of this server: `clients` clients for at most `seconds` s, a `mix_invalid` share of
  // the calls invalid; the cases are the caller's.
  SoakConfig Soak(int clients, double seconds, double mix_invalid) const {
    SoakConfig c;
    c.target = base_.target;
    c.clients = clients;
    c.seconds = seconds;
    c.mix_invalid = mix_invalid;
    return c;
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

TEST_F(LoadgenServer, ShortSoakGetsTheExpectedStatusForEveryRequest) {
  SoakConfig c = Soak(/*clients=*/3, /*seconds=*/2.5, /*mix_invalid=*/0.5);
  c.qps = 120;
  c.rss_pid = 0;  // the server runs in this process
  c.cases = MakeSoakCases(base_.plan_request);
  ASSERT_TRUE(ValidateSoakConfig(c).ok());
  auto rep = RunSoak(c);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(rep->unexpected, 0) << rep->first_unexpected << "\n" << FormatSoakReport(*rep);
  EXPECT_TRUE(rep->unexpected_by_method_code.empty());
  // 2.5 s at 120/s: 300 scheduled calls, a few may miss the window on a loaded machine.
  EXPECT_LE(rep->requests, 300);
  EXPECT_GE(rep->requests, 150);
  EXPECT_EQ(rep->valid + rep->invalid, rep->requests);
  EXPECT_GT(rep->invalid, rep->requests / 4);
  EXPECT_GT(rep->valid, rep->requests / 4);
  EXPECT_GT(rep->p50_us, 0);
  EXPECT_LE(rep->p50_us, rep->p99_us);
  EXPECT_LE(rep->p99_us, rep->max_us);
  EXPECT_GT(rep->rss_start_kb, 0);
  EXPECT_GT(rep->rss_end_kb, 0);
  // Every status class of the mix was exercised and answered as expected.
  std::map<std::string, int64_t> rejected_by_code;
  int64_t sent = 0;
  for (const SoakCaseReport& cr : rep->cases) {
    EXPECT_EQ(cr.as_expected, cr.sent) << cr.name;
    sent += cr.sent;
    if (cr.expected != "OK") rejected_by_code[cr.expected] += cr.as_expected;
  }
  EXPECT_EQ(sent, rep->requests);
  EXPECT_GT(rejected_by_code["INVALID_ARGUMENT"], 0);
  EXPECT_GT(rejected_by_code["NOT_FOUND"], 0);
  EXPECT_GT(rejected_by_code["RESOURCE_EXHAUSTED"], 0);
  const nlohmann::json j = SoakReportToJson(*rep);
  EXPECT_EQ(j["unexpected"], 0);
  EXPECT_EQ(j["cases"].size(), rep->cases.size());
}

TEST_F(LoadgenServer, SoakCountsWrongExpectationsByMethodAndCode) {
  // The mix declares the documented status of each invalid request.
  const std::vector<SoakCase> cases = MakeSoakCases(base_.plan_request);
  ASSERT_GE(cases.size(), 14u);
  std::map<std::string, std::string> expected;
  for (const SoakCase& sc : cases) expected[sc.name] = absl::StatusCodeToString(sc.expected);
  EXPECT_EQ(expected["plan_nan_probs"], "INVALID_ARGUMENT");
  EXPECT_EQ(expected["plan_unsorted_row"], "INVALID_ARGUMENT");
  EXPECT_EQ(expected["plan_unknown_profile"], "NOT_FOUND");
  EXPECT_EQ(expected["plan_gamma_over_limit"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(expected["merge_non_topological"], "INVALID_ARGUMENT");
  EXPECT_EQ(expected["merge_mismatched_roots"], "INVALID_ARGUMENT");
  // A mix whose "valid" PlanTree is in fact invalid: every call is counted as unexpected, by
  // method and code.
  SoakConfig c = Soak(/*clients=*/1, /*seconds=*/30, /*mix_invalid=*/0);
  c.requests = 10;
  c.cases = {cases[4]};  // plan_nan_probs
  ASSERT_EQ(c.cases[0].name, "plan_nan_probs");
  c.cases[0].expected = absl::StatusCode::kOk;
  auto rep = RunSoak(c);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(rep->requests, 10);
  EXPECT_EQ(rep->unexpected, 10);
  EXPECT_EQ(rep->unexpected_by_method_code["PlanTree INVALID_ARGUMENT"], 10);
  EXPECT_THAT(rep->first_unexpected, HasSubstr("plan_nan_probs: got INVALID_ARGUMENT"));
  EXPECT_EQ(rep->rss_start_kb, -1);
  c.mix_invalid = 1.5;
  EXPECT_THAT(ValidateSoakConfig(c).message(), HasSubstr("--mix-invalid = 1.5"));

  // Each invalid case is rejected for the reason it was built for: the message names the field.
  const std::map<std::string, std::string> reason = {
      {"plan_nan_probs", "got INVALID_ARGUMENT (expected OK): marginals.probs[0][1] = nan"},
      {"plan_unsorted_row", "got INVALID_ARGUMENT (expected OK): marginals.probs[0][1] = "},
      {"plan_unknown_profile", "got NOT_FOUND (expected OK): cost.profile"},
      {"plan_gamma_over_limit", "got RESOURCE_EXHAUSTED (expected OK): marginals.gamma = 1048576"},
      {"plan_n_max_over_limit", "got RESOURCE_EXHAUSTED (expected OK): n_max = 1073741824"},
      {"merge_non_topological", "got INVALID_ARGUMENT (expected OK): a.parents[2] = 4"},
      {"merge_mismatched_roots", "got INVALID_ARGUMENT (expected OK): a.tokens[0] = "},
      {"merge_n_max_over_limit", "got RESOURCE_EXHAUSTED (expected OK): n_max = 1073741824"},
      {"estimate_unknown_profile", "got NOT_FOUND (expected OK): cost.profile"},
      {"estimate_grid_over_limit",
       "got RESOURCE_EXHAUSTED (expected OK): s x c: 300 x 300 = 90000 points"},
  };
  c.mix_invalid = 0;
  int checked = 0;
  for (const SoakCase& sc : cases) {
    if (sc.expected == absl::StatusCode::kOk) continue;
    ASSERT_EQ(reason.count(sc.name), 1u) << sc.name;
    c.cases = {sc};
    c.cases[0].expected = absl::StatusCode::kOk;  // so the status and message are reported
    c.requests = 1;
    rep = RunSoak(c);
    ASSERT_TRUE(rep.ok()) << rep.status();
    EXPECT_EQ(rep->unexpected, 1) << sc.name;
    EXPECT_THAT(rep->first_unexpected, HasSubstr(sc.name + ": got "));
    EXPECT_THAT(rep->first_unexpected, HasSubstr(reason.at(sc.name)));
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

TEST(Loadgen, LatencyHistogramQuantilesWithinOnePercent) {
  LatencyHistogram h;
  EXPECT_EQ(h.Quantile(0.5), 0);
  for (int i = 1; i <= 1000; ++i) h.Add(i * 10.0);
  EXPECT_EQ(h.total, 1000);
  EXPECT_EQ(h.max_us, 10000);
  EXPECT_NEAR(h.Quantile(0.5), 5000, 50);
  EXPECT_GE(h.Quantile(0.5), 5000);
  EXPECT_NEAR(h.Quantile(0.99), 9900, 99);
  EXPECT_EQ(h.Quantile(1.0), 10000);
  LatencyHistogram g;
  g.Add(0.2);
  g.Merge(h);
  EXPECT_EQ(g.total, 1001);
  EXPECT_EQ(g.Quantile(0.0001), 1);  // bucket 0 holds everything <= 1 us
}

TEST(Loadgen, VmRssOfThisProcess) {
  auto rss = ReadVmRssKb(0);
  ASSERT_TRUE(rss.ok()) << rss.status();
  EXPECT_GT(*rss, 100);
  EXPECT_FALSE(ReadVmRssKb(1 << 30).ok());
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
  const std::string bin = ::specplan::test_paths::BinaryDir() + "/service/tools/specplan-loadgen";
  ASSERT_TRUE(fs::exists(bin)) << bin << " not built (target specplan-loadgen)";
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

  // Soak mode: statuses all as expected (exit 0), in-process VmRSS reported.
  const std::string soak = bin + " --start-server --profiles-dir " + (dir / "none").string() +
                           " --soak --clients 2 --seconds 1 --qps 60 --json > " +
                           (dir / "soak.json").string();
  ASSERT_EQ(std::system(soak.c_str()), 0);
  const nlohmann::json s = nlohmann::json::parse(ReadAll(dir / "soak.json"));
  EXPECT_EQ(s["unexpected"], 0);
  EXPECT_GT(s["requests"].get<int64_t>(), 20);
  EXPECT_GT(s["rss_start_kb"].get<int64_t>(), 0);
  EXPECT_EQ(s["mix_invalid"], 0.2);

  const std::string remote =
      bin + " --server 10.1.2.3:50051 --requests 1 2> " + (dir / "err.txt").string();
  EXPECT_NE(std::system(remote.c_str()), 0);
  EXPECT_THAT(ReadAll(dir / "err.txt"), HasSubstr("not a loopback address"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::service
