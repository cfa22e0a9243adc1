// The PlanBatch RPC against a real server on a loopback port: B = 1 equals the single-request
// planner (and the PlanTree RPC) node for node, larger batches equal planner::BatchPlanner
// in-process, the engine layouts equal the planner's, errors name the request index and field,
// the server limits answer RESOURCE_EXHAUSTED, GetStats counts the calls, and PlannerClient::
// PlanBatch gives back the in-process structs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "client/client.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "planner/batch/batch_plan.h"
#include "planner/policies/best_first.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree_outputs.h"
#include "service/convert.h"
#include "service_test_util.h"

namespace specplan::service {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using namespace specplan::service::testing;

class PlanBatchRpcTest : public ServerFixture {
 protected:
  void SetUp() override { Start(ServiceLimits{}); }
  void Start(const ServiceLimits& limits) {
    dir_ = TempDir("batch");
    ServerConfig config;
    config.service.limits = limits;
    StartServer(config);
  }

  grpc::Status Call(const v1::PlanBatchRequest& req, v1::PlanBatchResponse* resp) {
    grpc::ClientContext ctx;
    return stub().PlanBatch(&ctx, req, resp);
  }
};

// A batch of `b` random requests (γ = 8, K = 4) over different contexts, every third capped.
v1::PlanBatchRequest RandomBatch(int b, uint64_t seed) {
  v1::PlanBatchRequest req;
  for (int i = 0; i < b; ++i) {
    v1::BatchEntry* e = req.add_requests();
    *e->mutable_marginals() = RandomMarginals(8, 4, seed + i);
    e->set_context_tokens(64 << (i % 6));
    if (i % 3 == 2) {
      e->set_has_n_max(true);
      e->set_n_max(5);
    }
    if (i % 4 == 1) e->set_weight(2.0);
  }
  *req.mutable_cost() = InlineCost(0);
  req.set_mode(v1::BUDGET_MODE_SCAN);
  req.set_n_max(256);
  return req;
}

TEST_F(PlanBatchRpcTest, BatchOfOneEqualsTheSingleRequestPlannerAndPlanTree) {
  const v1::Marginals wire = RandomMarginals(16, 8, 3);
  const planner::Marginals m = ToPlanner(wire);
  const auto model = *costmodel::LookupModel("qwen3-8b");
  const auto gpu = *costmodel::LookupGpu("h100");
  const costmodel::RooflineLatency roofline(model, gpu);
  for (const auto mode : {planner::BudgetMode::kController, planner::BudgetMode::kScan,
                          planner::BudgetMode::kFixed}) {
    for (const int n_max : {0, 7, 200}) {
      SCOPED_TRACE(::testing::Message() << "mode " << static_cast<int>(mode) << " n_max " << n_max);
      const int64_t c = 700;
      v1::PlanBatchRequest req;
      v1::BatchEntry* e = req.add_requests();
      *e->mutable_marginals() = wire;
      e->set_context_tokens(c);
      *req.mutable_cost() = InlineCost(0);
      req.set_mode(BudgetModeToProto(mode));
      req.set_n_max(n_max);
      v1::PlanBatchResponse resp;
      ASSERT_TRUE(Call(req, &resp).ok());
      ASSERT_EQ(resp.requests_size(), 1);

      planner::BestFirstOptions options;
      options.mode = mode;
      options.n_max = n_max;
      const costmodel::CycleCost cycle(&roofline, costmodel::DrafterCost{}, 0, c);
      planner::BestFirstPlanner single;
      planner::BestFirstPlan want;
      ASSERT_TRUE(single.Plan(m, options, &cycle, &want).ok());
      const v1::BatchPlanEntry& got = resp.requests(0);
      ExpectTreeEq(want.tree, got.tree());
      EXPECT_EQ(got.n(), want.n);
      EXPECT_EQ(resp.n_total(), want.n);
      EXPECT_DOUBLE_EQ(got.expected_accepted(), want.expected_accepted);
      EXPECT_EQ(resp.latency_model(), "roofline");

      // The PlanTree RPC on the same input plans the same tree.
      v1::PlanTreeRequest tree_req;
      *tree_req.mutable_marginals() = wire;
      *tree_req.mutable_cost() = InlineCost(c);
      tree_req.set_mode(req.mode());
      tree_req.set_n_max(n_max);
      v1::PlanTreeResponse tree_resp;
      grpc::ClientContext ctx;
      ASSERT_TRUE(stub().PlanTree(&ctx, tree_req, &tree_resp).ok());
      EXPECT_THAT(got.tree().tokens(), ElementsAreArray(tree_resp.plan().tree().tokens()));
      EXPECT_THAT(got.tree().parents(), ElementsAreArray(tree_resp.plan().tree().parents()));
      EXPECT_THAT(got.outputs().positions(), ElementsAreArray(tree_resp.outputs().positions()));
      EXPECT_THAT(got.outputs().retrieve(), ElementsAreArray(tree_resp.outputs().retrieve()));
      EXPECT_THAT(got.outputs().mask_packed(), ElementsAreArray(tree_resp.outputs().mask_packed()));
    }
  }
}

TEST_F(PlanBatchRpcTest, BatchesEqualTheInProcessBatchPlanner) {
  const auto model = *costmodel::LookupModel("qwen3-8b");
  const auto gpu = *costmodel::LookupGpu("h100");
  const costmodel::RooflineLatency roofline(model, gpu);
  for (const int b : {2, 7, 24}) {
    for (const auto mode :
         {v1::BUDGET_MODE_CONTROLLER, v1::BUDGET_MODE_SCAN, v1::BUDGET_MODE_FIXED}) {
      SCOPED_TRACE(::testing::Message() << "B " << b << " mode " << mode);
      v1::PlanBatchRequest req = RandomBatch(b, 100 * b);
      req.set_mode(mode);
      req.mutable_cost()->mutable_drafter()->set_t_net_s(4e-4);
      req.mutable_cost()->mutable_drafter()->set_batch_growth(0.05);
      req.mutable_cost()->set_t_aux_s(1e-4);
      req.set_acceptance_scale(b == 7 ? 1.7 : 0.0);  // 0: uncalibrated (s = 1)
      v1::PlanBatchResponse resp;
      ASSERT_TRUE(Call(req, &resp).ok());

      std::vector<planner::Marginals> marginals;
      std::vector<planner::BatchRequest> requests;
      ASSERT_TRUE(BatchRequestsFromProto(req, ServiceLimits{}, &marginals, &requests).ok());
      planner::BatchPlanOptions options;
      ASSERT_TRUE(BatchOptionsFromProto(req, ServiceLimits{}, &options).ok());
      EXPECT_EQ(options.acceptance_scale, b == 7 ? 1.7 : 1.0);
      costmodel::DrafterCost drafter;
      drafter.gamma = 8;
      drafter.t_net_s = 4e-4;
      drafter.batch_growth = 0.05;
      const costmodel::BatchCycleCost cost(&roofline, drafter, 1e-4);
      planner::BatchPlanner planner;
      planner::BatchPlan want;
      ASSERT_TRUE(planner.Plan(requests, options, &cost, &want).ok());

      ASSERT_EQ(resp.requests_size(), b);
      EXPECT_EQ(resp.n_total(), want.n_total);
      EXPECT_DOUBLE_EQ(resp.goodput(), want.goodput);
      EXPECT_DOUBLE_EQ(resp.ar_goodput(), want.ar_goodput);
      EXPECT_DOUBLE_EQ(resp.cycle_s(), want.cycle_s);
      EXPECT_EQ(resp.speculation_pays(), want.speculation_pays);
      ASSERT_EQ(resp.curve().n_size(), static_cast<int>(want.curve.size()));
      for (size_t p = 0; p < want.curve.size(); ++p) {
        EXPECT_EQ(resp.curve().n(p), want.curve[p].n);
        EXPECT_DOUBLE_EQ(resp.curve().goodput(p), want.curve[p].goodput);
        EXPECT_DOUBLE_EQ(resp.curve().expected_accepted(p), want.curve[p].expected_accepted);
      }
      for (int i = 0; i < b; ++i) {
        const v1::BatchPlanEntry& got = resp.requests(i);
        ExpectTreeEq(want.trees[i], got.tree());
        EXPECT_EQ(got.n(), want.n[i]);
        EXPECT_DOUBLE_EQ(got.expected_accepted(), want.expected_accepted[i]);
        EXPECT_DOUBLE_EQ(got.price(), want.price[i]);
        if (i % 3 == 2) {
          EXPECT_LE(got.n(), 5);
        }
        planner::TreeOutputs out;
        planner::TreeOutputOptions o;
        o.position_offset = requests[i].c;
        planner::ComputeTreeOutputs(want.trees[i], o, &out);
        EXPECT_THAT(got.outputs().positions(), ElementsAreArray(out.positions));
        EXPECT_THAT(got.outputs().retrieve(), ElementsAreArray(out.retrieve));
      }
    }
  }
}

TEST_F(PlanBatchRpcTest, LatencyBoundAndFixedModeWithoutCost) {
  v1::PlanBatchRequest req = RandomBatch(4, 9);
  req.set_mode(v1::BUDGET_MODE_SCAN);
  req.set_objective(v1::BATCH_OBJECTIVE_LATENCY_BOUND);
  req.set_max_seconds_per_token(3e-3);
  v1::PlanBatchResponse resp;
  ASSERT_TRUE(Call(req, &resp).ok());
  if (resp.bound_met()) {
    for (const auto& e : resp.requests()) {
      EXPECT_LE(resp.cycle_s() / e.expected_accepted(), 3e-3 * (1 + 1e-12));
    }
  }
  EXPECT_GT(resp.curve().n_size(), 0);

  req = RandomBatch(4, 9);
  req.clear_cost();
  req.set_mode(v1::BUDGET_MODE_FIXED);
  req.set_n_max(30);
  ASSERT_TRUE(Call(req, &resp).ok());
  EXPECT_EQ(resp.n_total(), 30);
  EXPECT_TRUE(std::isnan(resp.goodput()));
  EXPECT_EQ(resp.latency_model(), "");
  EXPECT_EQ(resp.curve().n_size(), 0);
}

TEST_F(PlanBatchRpcTest, EngineLayoutsEqualThePlanners) {
  v1::PlanBatchRequest req = RandomBatch(5, 77);
  req.set_mode(v1::BUDGET_MODE_FIXED);
  req.set_n_max(20);
  req.set_layout(v1::BATCH_LAYOUT_RAGGED);
  v1::PlanBatchResponse resp;
  ASSERT_TRUE(Call(req, &resp).ok());
  std::vector<planner::Tree> trees(resp.requests_size());
  std::vector<int64_t> contexts;
  for (int i = 0; i < resp.requests_size(); ++i) {
    const v1::Tree& t = resp.requests(i).tree();
    trees[i].tokens.assign(t.tokens().begin(), t.tokens().end());
    trees[i].parents.assign(t.parents().begin(), t.parents().end());
    trees[i].depths.assign(t.depths().begin(), t.depths().end());
    contexts.push_back(req.requests(i).context_tokens());
  }
  planner::BatchLayout ragged;
  ASSERT_TRUE(planner::ComputeBatchLayout(trees, contexts, &ragged).ok());
  EXPECT_THAT(resp.ragged().cu_seqlens(), ElementsAreArray(ragged.cu_seqlens));
  EXPECT_THAT(resp.ragged().tokens(), ElementsAreArray(ragged.tokens));
  EXPECT_THAT(resp.ragged().positions(), ElementsAreArray(ragged.positions));
  EXPECT_THAT(resp.ragged().parents(), ElementsAreArray(ragged.parents));
  EXPECT_THAT(resp.ragged().mask_packed(), ElementsAreArray(ragged.mask_packed));
  EXPECT_THAT(resp.ragged().retrieve(), ElementsAreArray(ragged.retrieve));
  EXPECT_THAT(resp.ragged().retrieve_offsets(), ElementsAreArray(ragged.retrieve_offsets));
  EXPECT_FALSE(resp.has_sglang());

  req.set_layout(v1::BATCH_LAYOUT_SGLANG);
  req.set_tree_mask_mode("QLEN_ONLY_BITPACKING");
  ASSERT_TRUE(Call(req, &resp).ok());
  planner::SglangLayoutOptions o;
  o.mode = planner::SglangTreeMaskMode::kQlenOnlyBitpacking;
  planner::SglangLayout sglang;
  ASSERT_TRUE(planner::ComputeSglangLayout(trees, contexts, o, &sglang).ok());
  EXPECT_EQ(resp.sglang().draft_token_num(), sglang.draft_token_num);
  EXPECT_EQ(resp.sglang().tree_mask_mode(), "QLEN_ONLY_BITPACKING");
  EXPECT_EQ(resp.sglang().tree_mask_bytes_per_row(), sglang.tree_mask_bytes_per_row);
  EXPECT_THAT(resp.sglang().draft_tokens(), ElementsAreArray(sglang.draft_tokens));
  EXPECT_THAT(resp.sglang().positions(), ElementsAreArray(sglang.positions));
  EXPECT_THAT(resp.sglang().retrive_next_token(), ElementsAreArray(sglang.retrive_next_token));
  EXPECT_THAT(resp.sglang().retrive_next_sibling(), ElementsAreArray(sglang.retrive_next_sibling));
  EXPECT_EQ(resp.sglang().tree_mask(),
            std::string(sglang.tree_mask.begin(), sglang.tree_mask.end()));
  EXPECT_FALSE(resp.has_ragged());

  // A D smaller than the largest tree is refused with the request's fields named.
  req.set_draft_token_num(2);
  const grpc::Status st = Call(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("draft_token_num 2"));
}

struct BadCase {
  std::string name;
  std::function<void(v1::PlanBatchRequest&)> mutate;
  grpc::StatusCode code;
  std::string message;
};

TEST_F(PlanBatchRpcTest, BadInputNamesTheRequestAndField) {
  const float nan = std::nanf("");
  const std::vector<BadCase> cases = {
      {"nan prob", [&](auto& r) { r.mutable_requests(3)->mutable_marginals()->set_probs(9, nan); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[3].marginals.probs[2][1] = nan"},
      {"prob > 1", [](auto& r) { r.mutable_requests(1)->mutable_marginals()->set_probs(0, 1.5f); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[1].marginals.probs[0][0] = 1.5"},
      {"ragged rows",
       [](auto& r) { r.mutable_requests(4)->mutable_marginals()->mutable_tokens()->RemoveLast(); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[4].marginals.tokens: 31 entries"},
      {"no marginals", [](auto& r) { r.mutable_requests(2)->clear_marginals(); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[2].marginals: required"},
      {"negative context", [](auto& r) { r.mutable_requests(0)->set_context_tokens(-3); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[0].context_tokens = -3"},
      {"negative weight", [](auto& r) { r.mutable_requests(5)->set_weight(-1); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[5].weight = -1"},
      {"nan weight", [](auto& r) { r.mutable_requests(5)->set_weight(std::nan("")); },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[5].weight = nan"},
      {"negative cap",
       [](auto& r) {
         r.mutable_requests(1)->set_has_n_max(true);
         r.mutable_requests(1)->set_n_max(-2);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "requests[1].n_max = -2"},
      {"cap over --max-n",
       [](auto& r) {
         r.mutable_requests(1)->set_has_n_max(true);
         r.mutable_requests(1)->set_n_max(513);
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED,
       "requests[1].n_max = 513: exceeds the server limit 512"},
      {"gamma over limit",
       [](auto& r) { *r.mutable_requests(2)->mutable_marginals() = RandomMarginals(33, 2, 1); },
       grpc::StatusCode::RESOURCE_EXHAUSTED,
       "requests[2].marginals.gamma = 33: exceeds the server limit 32"},
      {"empty batch", [](auto& r) { r.clear_requests(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "requests: empty"},
      {"negative n_max", [](auto& r) { r.set_n_max(-1); }, grpc::StatusCode::INVALID_ARGUMENT,
       "n_max = -1"},
      {"n_max over --max-batch-nodes", [](auto& r) { r.set_n_max(1001); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "n_max = 1001: exceeds the server limit 1000"},
      {"too many requests",
       [](auto& r) {
         while (r.requests_size() < 9) *r.add_requests() = r.requests(0);
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "requests: 9 requests exceed the server limit 8"},
      {"unknown mode", [](auto& r) { r.set_mode(static_cast<v1::BudgetMode>(9)); },
       grpc::StatusCode::INVALID_ARGUMENT, "mode = 9"},
      {"unknown objective", [](auto& r) { r.set_objective(static_cast<v1::BatchObjective>(7)); },
       grpc::StatusCode::INVALID_ARGUMENT, "objective = 7"},
      {"latency bound without X",
       [](auto& r) { r.set_objective(v1::BATCH_OBJECTIVE_LATENCY_BOUND); },
       grpc::StatusCode::INVALID_ARGUMENT, "max_seconds_per_token = 0"},
      {"X without latency bound", [](auto& r) { r.set_max_seconds_per_token(1e-3); },
       grpc::StatusCode::INVALID_ARGUMENT, "only with objective = LATENCY_BOUND"},
      {"nan acceptance scale", [](auto& r) { r.set_acceptance_scale(std::nan("")); },
       grpc::StatusCode::INVALID_ARGUMENT, "acceptance_scale = nan"},
      {"missing cost", [](auto& r) { r.clear_cost(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "cost: required"},
      {"bad drafter growth",
       [](auto& r) { r.mutable_cost()->mutable_drafter()->set_batch_growth(-0.5); },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.drafter.batch_growth = -0.5"},
      {"unknown model", [](auto& r) { r.mutable_cost()->mutable_inline_model()->set_model("x"); },
       grpc::StatusCode::NOT_FOUND, "cost.inline_model.model = 'x'"},
      {"unknown layout", [](auto& r) { r.set_layout(static_cast<v1::BatchLayoutKind>(5)); },
       grpc::StatusCode::INVALID_ARGUMENT, "layout = 5"},
      {"unknown mask mode",
       [](auto& r) {
         r.set_layout(v1::BATCH_LAYOUT_SGLANG);
         r.set_tree_mask_mode("DENSE");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "tree_mask_mode = 'DENSE'"},
  };
  TearDown();
  ServiceLimits limits;
  limits.max_gamma = 32;
  limits.max_n = 512;
  limits.max_batch_requests = 8;
  limits.max_batch_nodes = 1000;
  Start(limits);
  {  // A valid request of that size passes.
    v1::PlanBatchResponse resp;
    ASSERT_TRUE(Call(RandomBatch(6, 5), &resp).ok());
  }
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    v1::PlanBatchRequest req = RandomBatch(6, 5);
    c.mutate(req);
    v1::PlanBatchResponse resp;
    const grpc::Status st = Call(req, &resp);
    EXPECT_EQ(st.error_code(), c.code) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(c.message));
  }
  // Every call counted, the refused ones as errors.
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub().GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  bool found = false;
  for (const v1::MethodStats& m : stats.methods()) {
    if (m.method() != "PlanBatch") continue;
    found = true;
    EXPECT_EQ(m.requests(), static_cast<int64_t>(cases.size()) + 1);
    EXPECT_EQ(m.errors(), static_cast<int64_t>(cases.size()));
  }
  EXPECT_TRUE(found);
}

TEST_F(PlanBatchRpcTest, UncappedRequestsAreCappedAtMaxN) {
  TearDown();
  ServiceLimits limits;
  limits.max_n = 10;
  Start(limits);
  v1::PlanBatchRequest req = RandomBatch(3, 1);
  for (auto& e : *req.mutable_requests()) e.set_has_n_max(false);
  req.set_mode(v1::BUDGET_MODE_FIXED);
  req.set_n_max(100);
  v1::PlanBatchResponse resp;
  ASSERT_TRUE(Call(req, &resp).ok());
  EXPECT_EQ(resp.n_total(), 30);
  for (const auto& e : resp.requests()) EXPECT_EQ(e.n(), 10);
}

TEST(PlanBatchLimits, LimitFlagsAreChecked) {
  ServiceLimits limits;
  limits.max_batch_requests = 0;
  EXPECT_THAT(ValidateLimits(limits).message(), HasSubstr("--max-batch-requests = 0"));
  limits = ServiceLimits{};
  limits.max_batch_nodes = planner::kMaxBatchNodes + 1;
  EXPECT_THAT(ValidateLimits(limits).message(), HasSubstr("--max-batch-nodes"));
}

TEST_F(PlanBatchRpcTest, ClientPlanBatchGivesTheInProcessStructs) {
  v1::PlanBatchRequest req = RandomBatch(5, 31);
  std::vector<planner::Marginals> marginals;
  std::vector<planner::BatchRequest> requests;
  ASSERT_TRUE(BatchRequestsFromProto(req, ServiceLimits{}, &marginals, &requests).ok());
  planner::BatchPlanOptions options;
  options.mode = planner::BudgetMode::kController;
  options.n_max = 300;
  client::CostRequest cost;
  cost.model = "qwen3-8b";
  cost.gpu = "h100";
  cost.drafter.gamma = 8;
  client::PlannerClient client(address());
  planner::BatchPlan got;
  std::vector<planner::TreeOutputs> outputs;
  auto used = client.PlanBatch(requests, options, &cost, &got, &outputs);
  ASSERT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(used->latency_model, "roofline");

  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  costmodel::DrafterCost drafter;
  drafter.gamma = 8;
  const costmodel::BatchCycleCost batch_cost(&roofline, drafter, 0);
  planner::BatchPlanner planner;
  planner::BatchPlan want;
  ASSERT_TRUE(planner.Plan(requests, options, &batch_cost, &want).ok());
  ASSERT_EQ(got.trees.size(), want.trees.size());
  for (size_t i = 0; i < want.trees.size(); ++i) {
    EXPECT_EQ(got.trees[i].tokens, want.trees[i].tokens);
    EXPECT_EQ(got.trees[i].parents, want.trees[i].parents);
    EXPECT_EQ(got.trees[i].path_probs, want.trees[i].path_probs);
    EXPECT_EQ(got.n[i], want.n[i]);
    EXPECT_EQ(got.expected_accepted[i], want.expected_accepted[i]);
    EXPECT_EQ(got.price[i], want.price[i]);
    EXPECT_EQ(outputs[i].positions.front(), requests[i].c);
  }
  EXPECT_EQ(got.n_total, want.n_total);
  EXPECT_EQ(got.goodput, want.goodput);
  ASSERT_EQ(got.curve.size(), want.curve.size());
  for (size_t p = 0; p < want.curve.size(); ++p) {
    EXPECT_EQ(got.curve[p].weighted_accepted, want.curve[p].weighted_accepted);
    EXPECT_EQ(got.curve[p].cycle_s, want.curve[p].cycle_s);
  }

  // An error names the server and the request's field.
  marginals[1].probs[0] = 2.0f;
  used = client.PlanBatch(requests, options, &cost, &got, &outputs);
  ASSERT_FALSE(used.ok());
  EXPECT_THAT(used.status().message(), HasSubstr("server " + address()));
  EXPECT_THAT(used.status().message(), HasSubstr("requests[1].marginals.probs[0][0] = 2"));
}

}  // namespace
}  // namespace specplan::service
