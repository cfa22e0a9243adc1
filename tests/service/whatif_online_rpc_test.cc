// The WhatIfOnline RPC against a real server on loopback, over the bundled profiles: its JSON
// equals the in-process operation's (ops::WhatIfOnline, what `specplan whatif --online --json`
// prints) for the same acceptance, limits and arrivals; bad requests name the field and value; the
// server's bound on the tokens replayed refuses a large request before any replay.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ops/acceptance_op.h"
#include "ops/whatif_online_op.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"

namespace specplan::service {
namespace {

using ::testing::HasSubstr;
using namespace specplan::service::testing;

// Two requests of a SpecDecode-Bench step trace (k_max = 3).
constexpr char kTrace[] =
    "{\"id\": \"a\", \"prompt_tokens\": 10, \"acc_len\": [1, 3, 1, 2, 4, 1, 1]}\n"
    "{\"id\": \"b\", \"prompt_tokens\": 20, \"acc_len\": [1, 2, 2, 1]}\n";

std::unique_ptr<TestServer> Start(int64_t max_online_tokens = 0) {
  ServerConfig config;
  config.profiles_dir = ::specplan::test_paths::SourceDir() + "/calib";
  if (max_online_tokens > 0) config.service.limits.max_online_tokens = max_online_tokens;
  return TestServer::Start(config);
}

v1::WhatIfOnlineRequest Request() {
  v1::WhatIfOnlineRequest req;
  v1::ProfileRef* p = req.mutable_cost()->mutable_profile();
  p->set_gpu("h100");
  p->set_model("llama-3.1-8b");
  p->set_engine("vllm");
  req.mutable_cost()->mutable_drafter()->set_architecture("eagle3");
  req.set_acceptance(kTrace);
  req.set_acceptance_name("run.jsonl");
  req.add_rates(1);
  req.add_rates(4);
  req.add_chains(0);
  req.add_chains(2);
  req.set_num_prompts(20);
  req.set_seed(7);
  req.mutable_limits()->set_max_num_seqs(8);
  req.mutable_limits()->set_max_num_batched_tokens(512);
  req.mutable_limits()->set_enable_chunked_prefill("true");
  return req;
}

grpc::Status Call(TestServer& server, const v1::WhatIfOnlineRequest& req,
                  v1::WhatIfOnlineResponse* resp) {
  grpc::ClientContext ctx;
  return server.stub->WhatIfOnline(&ctx, req, resp);
}

TEST(WhatIfOnlineRpc, EqualsTheInProcessOperation) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  v1::WhatIfOnlineResponse resp;
  const grpc::Status s = Call(*server, Request(), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.profile_id(), "h100-sxm/llama-3.1-8b-bf16@vllm");
  EXPECT_GT(resp.run_us(), 0);

  // The same request in-process, as the CLI runs it.
  ops::WhatIfOnlineRequest op;
  op.cost.model = "llama-3.1-8b";
  op.cost.gpu = "h100";
  op.cost.engine = "vllm";
  op.cost.drafter = "eagle3";
  auto acceptance =
      ops::ParseAcceptance(ops::AcceptanceRequest(), kTrace, "acceptance (run.jsonl)");
  ASSERT_TRUE(acceptance.ok()) << acceptance.status();
  op.acceptance = *acceptance;
  op.num_prompts = 20;
  op.seed = 7;
  op.online.chain_lengths = {0, 2};
  op.online.arrivals.rates = {1, 4};
  op.online.arrivals.seed = 7;
  op.limits.max_running = 8;
  op.limits.token_budget = 512;
  op.limits.chunked_prefill = true;
  auto local = ops::WhatIfOnline(op);
  ASSERT_TRUE(local.ok()) << local.status();

  const nlohmann::json remote = nlohmann::json::parse(resp.json());
  const nlohmann::json here = ops::ToJson(*local);
  ASSERT_EQ(remote["rows"].size(), 4u);
  EXPECT_EQ(remote["limits"]["max_running"], 8);
  EXPECT_EQ(remote["limits"]["token_budget"], 512);
  EXPECT_EQ(remote["rows"], here["rows"]);
  EXPECT_EQ(remote["limits"], here["limits"]);
  EXPECT_EQ(remote["best_k"], here["best_k"]);
  EXPECT_EQ(remote["requests_from"], "trace");
  EXPECT_EQ(remote["trace"]["path"], "acceptance (run.jsonl)");
  EXPECT_EQ(remote.dump(), here.dump());
  EXPECT_EQ(resp.table(), ops::OnlineTable(*local));
}

TEST(WhatIfOnlineRpc, BadRequestsNameTheField) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  auto refused = [&](v1::WhatIfOnlineRequest req, const std::string& message) {
    v1::WhatIfOnlineResponse resp;
    const grpc::Status s = Call(*server, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << message;
    EXPECT_THAT(s.error_message(), HasSubstr(message));
    EXPECT_TRUE(resp.json().empty());
  };
  v1::WhatIfOnlineRequest r = Request();
  r.set_rates(0, 0);
  refused(r, "rates[0] = 0");
  r = Request();
  r.set_max_concurrency(4);
  refused(r, "rates, max_concurrency: give one");
  r = Request();
  r.mutable_cost()->mutable_drafter()->clear_architecture();
  refused(r, "cost.drafter.architecture = ''");
  r = Request();
  r.set_acceptance(std::string(kTrace) + "{\"id\": \"c\", \"acc_len\": [1, 2}\n");
  refused(r, "acceptance (run.jsonl):3");
  r = Request();
  r.clear_acceptance();
  refused(r, "acceptance: empty");
  r = Request();
  r.mutable_limits()->set_enable_chunked_prefill("yes");
  refused(r, "limits.enable_chunked_prefill = 'yes'");
  r = Request();
  r.mutable_limits()->set_max_num_seqs(-3);
  refused(r, "= -3");
  r = Request();
  r.set_slo_ttft_ms(-1);
  refused(r, "slo_ttft_ms");
}

TEST(WhatIfOnlineRpc, TheServerBoundsTheTokensReplayed) {
  // 20 requests of the trace's 7 and 4 steps' tokens, 2 settings x 2 rates: refused under a bound
  // of 100 tokens, before any replay.
  auto server = Start(100);
  ASSERT_NE(server, nullptr);
  v1::WhatIfOnlineResponse resp;
  const grpc::Status s = Call(*server, Request(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("--max-online-tokens"));
  EXPECT_THAT(s.error_message(), HasSubstr("20 requests"));
  // One rate and one setting of 2 requests fit.
  v1::WhatIfOnlineRequest small = Request();
  small.clear_rates();
  small.add_rates(1);
  small.clear_chains();
  small.add_chains(2);
  small.set_num_prompts(2);
  const grpc::Status ok = Call(*server, small, &resp);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
}

}  // namespace
}  // namespace specplan::service
