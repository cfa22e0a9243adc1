// The operations layer (ops/): each operation's validator names the field and value, its result
// is computed for real on the bundled profiles in calib/, and its JSON form carries the fields
// the front ends print.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ops/cost_request.h"
#include "ops/engine_limits.h"
#include "ops/estimate.h"
#include "ops/merge.h"
#include "ops/plan_batch.h"
#include "ops/plan_tree.h"
#include "ops/validate.h"
#include "planner/tree/tree_json.h"

namespace specplan::ops {
namespace {

using ::testing::HasSubstr;

// gamma positions x k candidates with probabilities p^(r + 1) / 2 per rank r (rows sorted, sums
// below 1), tokens 10 d + r.
planner::Marginals MakeMarginals(int gamma, int k, float p = 0.6f) {
  planner::Marginals m;
  m.root_token = 1;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    float q = p;
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(10 * d + r + 2);
      m.probs.push_back(q / 2);
      q *= p;
    }
  }
  return m;
}

CostRequest H100Llama8bVllm() {
  CostRequest c;
  c.model = "llama-3.1-8b";
  c.gpu = "h100";
  c.engine = "vllm";
  return c;
}

TEST(Validate, NamesFieldAndValue) {
  EXPECT_EQ(CheckContext("requests[3].c", -1).message(),
            "requests[3].c = -1: must be in [0, 16777216]");
  EXPECT_EQ(CheckInRange("b", int64_t{0}, 1, 8, "sequences").message(),
            "b = 0: must be in [1, 8] (sequences)");
  EXPECT_EQ(CheckPositive("x", 0.0).message(), "x = 0: must be > 0");
  EXPECT_EQ(CheckNonNegative("y", NAN).message(), "y = nan: must be >= 0");
  EXPECT_TRUE(CheckInRange("z", 0.5, 0.0, 1.0).ok());
}

TEST(CostRequest, ErrorsNameTheRequestFields) {
  CostRequest c = H100Llama8bVllm();
  c.drafter = "medusa";
  EXPECT_THAT(c.Parse(0).status().message(), HasSubstr("drafter = 'medusa': unknown"));
  c.drafter = "eagle3";
  c.dtype = "int4";
  EXPECT_THAT(c.Parse(0).status().message(), HasSubstr("dtype: unknown value 'int4'"));
  c.dtype = "bf16";
  c.topk = 0;
  EXPECT_THAT(c.Resolve(0).status().message(), HasSubstr("topk = 0: must be in [1, 64]"));
  c.topk = 1;
  c.engine = "tgi";
  EXPECT_THAT(c.Resolve(0).status().message(), HasSubstr("engine = 'tgi': unknown"));
}

// CUDA graphs (ops::CostRequest::GraphsFor): the engine's ladder by default, none for "off" or an
// engine without one, eager for "eager", the request's sizes and limits carried over, and errors
// in the request's words.
TEST(CostRequest, GraphsFollowTheRequestAndTheEngine) {
  CostRequest req;
  auto g = req.GraphsFor("vllm", 80e9);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->has_value());
  EXPECT_EQ((*g)->ladder, costmodel::GraphLadder::kVllmTokens);
  EXPECT_TRUE((*g)->enabled);
  EXPECT_TRUE((*g)->speculative);
  g = req.GraphsFor("sglang", 80e9);
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ((*g)->ladder, costmodel::GraphLadder::kSglangBatch);
  g = req.GraphsFor("trtllm", 80e9);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->has_value());
  req.cuda_graphs = "off";
  EXPECT_FALSE(req.GraphsFor("vllm", 80e9)->has_value());
  req.cuda_graphs = "eager";
  EXPECT_FALSE((*req.GraphsFor("vllm", 80e9))->enabled);
  req.cuda_graphs = "sometimes";
  EXPECT_THAT(std::string(req.GraphsFor("vllm", 80e9).status().message()),
              HasSubstr("cuda_graphs = 'sometimes': must be engine, eager or off"));
  req.cuda_graphs = "engine";
  req.cuda_graph_sizes = {4, 2};
  EXPECT_THAT(std::string(req.GraphsFor("vllm", 80e9).status().message()),
              HasSubstr("cuda_graph_sizes[1] = 2"));
  req.cuda_graph_sizes = {};
  req.eager_launch_us = NAN;
  EXPECT_THAT(std::string(req.GraphsFor("vllm", 80e9).status().message()),
              HasSubstr("eager_launch_us = nan"));
  req.eager_launch_us = 20;
  EXPECT_DOUBLE_EQ((*req.GraphsFor("vllm", 80e9))->eager_launch_s, 20e-6);
  // The engine's limits reach the vLLM ladder: a 256-token budget caps it at 256 tokens.
  EngineLimitRequest limits;
  limits.token_budget = 256;
  limits.max_running = 100;
  const CostRequest with = WithGraphLimits(req, limits);
  const costmodel::CudaGraphs c = **with.GraphsFor("vllm", 80e9);
  EXPECT_EQ(c.max_num_batched_tokens, 256);
  EXPECT_EQ(c.max_num_seqs, 100);
  EXPECT_EQ(costmodel::GraphBuckets(c).CapturedSizes(1).back(), 200);  // min(100 x 2, 512, 256)
  // A cost class drafts nothing: SGLang's plain ladder.
  CostRequest plain;
  plain.drafter = "parallel";
  EXPECT_FALSE((*plain.GraphsFor("sglang", 80e9))->speculative);
}

TEST(Estimate, ValidatorNamesFieldAndValue) {
  EstimateRequest req;
  req.cost = H100Llama8bVllm();
  req.b = 0;
  EXPECT_EQ(Estimate(req).status().message(),
            "b = 0: must be in [1, 65536] (sequences in the pass)");
  req.b = 1;
  req.c = -5;
  EXPECT_THAT(Estimate(req).status().message(), HasSubstr("c = -5: must be in [0, 16777216]"));
}

TEST(Estimate, PricesTheWholeStepOnTheBundledProfile) {
  EstimateRequest req;
  req.cost = H100Llama8bVllm();
  req.s = 4;
  req.c = 1024;
  auto r = Estimate(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->engine, "vllm");
  EXPECT_FALSE(r->profile.empty());
  ASSERT_TRUE(r->step.has_value());
  ASSERT_TRUE(r->ar_step.has_value());
  EXPECT_GT(r->predicted_s, 0);
  EXPECT_GT(r->step->draft_s, 0);
  EXPECT_GT(r->step->host_s, 0);
  EXPECT_DOUBLE_EQ(r->cycle_s, r->draft_s + r->aux_s + r->verify_s);
  EXPECT_DOUBLE_EQ(r->verify_s, r->step->verify_s);
  EXPECT_EQ(r->n, 3);
  EXPECT_EQ(r->draft_steps, 3);

  const nlohmann::json j = ToJson(req, *r);
  EXPECT_EQ(j["s"], 4);
  EXPECT_EQ(j["c"], 1024);
  EXPECT_EQ(j["engine"], "vllm");
  EXPECT_EQ(j["cycle"]["drafter"], "eagle3");
  EXPECT_EQ(j["step"]["draft_steps"], 3);
  EXPECT_DOUBLE_EQ(j["ar_step_s"].get<double>(), r->ar_step->step_s());
  EXPECT_FALSE(j.contains("speedup"));  // no acceptance given
}

TEST(Estimate, RefusesAPassThatCannotFitUnlessWarned) {
  EstimateRequest req;
  req.cost = H100Llama8bVllm();
  req.c = kMaxContext;
  req.b = 4096;
  auto refused = Estimate(req);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("b = 4096"));
  req.warn_memory = true;
  auto warned = Estimate(req);
  ASSERT_TRUE(warned.ok()) << warned.status();
  EXPECT_THAT(warned->memory_warning, HasSubstr("b = 4096"));
}

TEST(PlanTree, ValidatorNamesFieldAndValue) {
  const planner::Marginals m = MakeMarginals(4, 2);
  PlanTreeRequest req;
  EXPECT_EQ(PlanTree(req).status().message(), "marginals: required");
  req.marginals = &m;
  req.c = -1;
  EXPECT_THAT(PlanTree(req).status().message(), HasSubstr("c = -1: must be in [0, "));
  req.c = 0;
  req.options.n_max = -3;
  EXPECT_THAT(PlanTree(req).status().message(), HasSubstr("n_max = -3: must be in [0, "));
}

TEST(PlanTree, ControllerOnTheBundledProfile) {
  const planner::Marginals m = MakeMarginals(8, 4);
  PlanTreeRequest req;
  req.marginals = &m;
  req.c = 512;
  req.options.n_max = 32;
  req.cost = H100Llama8bVllm();
  auto r = PlanTree(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->priced);
  EXPECT_THAT(r->profile, HasSubstr("@vllm"));
  EXPECT_GT(r->plan.n, 0);
  EXPECT_GT(r->plan.speedup, 0);
  ASSERT_EQ(r->outputs.positions.size(), static_cast<size_t>(r->plan.n + 1));
  EXPECT_EQ(r->outputs.positions[0], 512);  // c + depth 0

  const nlohmann::json j = ToJson(req, *r);
  EXPECT_EQ(j["mode"], "controller");
  EXPECT_EQ(j["n"], r->plan.n);
  EXPECT_EQ(j["c"], 512);
  EXPECT_TRUE(j.contains("curve"));
  EXPECT_EQ(j["profile"], r->profile);
}

TEST(PlanTree, FixedBudgetNeedsNoCost) {
  const planner::Marginals m = MakeMarginals(4, 2);
  PlanTreeRequest req;
  req.marginals = &m;
  req.options.mode = planner::BudgetMode::kFixed;
  req.options.n_max = 5;
  auto r = PlanTree(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->priced);
  EXPECT_EQ(r->plan.n, 5);
  const nlohmann::json j = ToJson(req, *r);
  EXPECT_TRUE(j["speedup"].is_null());
  EXPECT_FALSE(j.contains("latency_model"));
  EXPECT_FALSE(j.contains("curve"));
}

TEST(PlanBatch, MeanContextIsOneRule) {
  const planner::Marginals m = MakeMarginals(4, 2);
  const std::vector<planner::BatchRequest> requests = {{&m, 10}, {&m, 21}, {&m, 0}};
  EXPECT_EQ(MeanContext(requests), 10);  // 31 / 3, integer division
  const std::vector<int64_t> contexts = {10, 21, 0};
  EXPECT_EQ(MeanContext(contexts), 10);
  EXPECT_EQ(MeanContext(absl::Span<const int64_t>()), 0);
  EXPECT_EQ(MaxGamma(requests), 4);
}

TEST(PlanBatch, ValidatorNamesFieldAndValue) {
  const planner::Marginals m = MakeMarginals(4, 2);
  PlanBatchRequest req;
  EXPECT_EQ(PlanBatch(req).status().message(), "requests: empty");
  req.requests = {{&m, 10}, {&m, -7}};
  EXPECT_EQ(PlanBatch(req).status().message(), "requests[1].c = -7: must be in [0, 16777216]");
  req.requests[1].c = 7;
  req.options.mode = planner::BudgetMode::kFixed;
  req.options.objective = planner::BatchObjective::kLatencyBound;
  req.options.max_seconds_per_token = 5e-3;
  EXPECT_THAT(PlanBatch(req).status().message(),
              HasSubstr("max_ms_per_token = 5: a latency bound chooses the budget itself"));
}

TEST(PlanBatch, GoodputOnTheBundledProfile) {
  const planner::Marginals a = MakeMarginals(8, 4, 0.7f), b = MakeMarginals(6, 4, 0.4f);
  PlanBatchRequest req;
  req.requests = {{&a, 1000}, {&b, 3000}};
  req.options.n_max = 64;
  req.cost = H100Llama8bVllm();
  req.layout = BatchLayoutKind::kRagged;
  auto r = PlanBatch(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->priced);
  EXPECT_GT(r->plan.goodput, 0);
  EXPECT_GT(r->plan.ar_goodput, 0);
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[1].positions[0], 3000);
  EXPECT_EQ(r->contexts, (std::vector<int64_t>{1000, 3000}));
  EXPECT_EQ(r->ragged.cu_seqlens.size(), 3u);

  const nlohmann::json j = ToJson(req, *r);
  EXPECT_EQ(j["objective"], "goodput");
  ASSERT_EQ(j["requests"].size(), 2u);
  EXPECT_EQ(j["requests"][1]["c"], 3000);
  EXPECT_EQ(j["n_total"], r->plan.n_total);
  EXPECT_EQ(j["profile"], r->profile);
}

TEST(Merge, ValidatorAndResult) {
  auto a = planner::TreeFromJson(nlohmann::json{{"tokens", {5, 6, 7}}, {"parents", {-1, 0, 1}}});
  auto b = planner::TreeFromJson(nlohmann::json{{"tokens", {5, 6, 8}}, {"parents", {-1, 0, 0}}});
  ASSERT_TRUE(a.ok() && b.ok());
  MergeRequest req;
  EXPECT_EQ(Merge(req).status().message(), "a: required");
  req.a = &*a;
  req.b = &*b;
  req.c = -2;
  EXPECT_THAT(Merge(req).status().message(), HasSubstr("c = -2: must be in [0, "));
  req.c = 100;
  req.options.dedup = true;
  auto r = Merge(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->merged.tree.size(), 4);  // root, 6 (shared), 7, 8
  EXPECT_EQ(r->outputs.positions[0], 100);
  const nlohmann::json j = ToJson(req, *r);
  EXPECT_EQ(j["num_draft"], 3);
  EXPECT_EQ(j["dedup"], true);
  EXPECT_TRUE(j["n_max"].is_null());
  EXPECT_EQ(j["mask"][0], "1000");
  EXPECT_EQ(j["source"][1], "both");
}

}  // namespace
}  // namespace specplan::ops
