// The shared client library (client/client.h) against the real specplan-server binary on a
// loopback port: RemotePlanBackend's plans and merges equal InProcessPlanBackend's (random
// marginals, every budget mode, several latency models sent as cost.latency_grid), and the
// latency_grid cost source on the wire (semantics and validation). The runtime's decoders planning
// through the same server: tests/service_runtime/remote_decoder_test.cc.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "client/client.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "planner/batch/plan_backend.h"
#include "planner/policies/best_first.h"
#include "planner/tree/merge.h"
#include "service/convert.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "tests/paths/test_paths.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"
#include "tests/server_process.h"
#include "tests/service/remote_backend_fixture.h"
#include "util/status_macros.h"

namespace specplan::client {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::specplan::v1;
using ::testing::HasSubstr;

using testing::RemoteBackendTest;

// ---------------------------------------------------------------------------------------------
// Helpers

using planner::testing::ExpectSameMerge;
using planner::testing::ExpectSamePlan;
using planner::testing::RandomWeightedTree;
using planner::testing::SteppedLatency;

// Random marginals (tests/planner/random_marginals.h: rows sorted by descending prob, row sums in
// [0.3, 1)) seeded from `rng`, with the distinct tokens 100 + 17 d + r.
planner::Marginals RandomMarginals(std::mt19937_64& rng, int gamma, int k) {
  std::mt19937 row_rng(static_cast<uint32_t>(rng()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return planner::testing::RandomMarginalsWith(
      row_rng, 5, gamma, k, [&] { return u(row_rng) * u(row_rng) + 1e-3; },
      [k](int d) {
        std::vector<int32_t> tokens(k);
        for (int r = 0; r < k; ++r) tokens[r] = 100 + 17 * d + r;
        return tokens;
      });
}

// ---------------------------------------------------------------------------------------------
// RemotePlanBackend == InProcessPlanBackend

TEST_F(RemoteBackendTest, BestFirstPlansEqualInProcessForRandomMarginalsAndLatencyModels) {
  auto remote = RemotePlanBackend::Connect(Address());
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ((*remote)->Name(), "remote " + Address());
  planner::InProcessPlanBackend local;

  // The latency models a caller may hold: a measured sparse grid (what the runtime measures on a
  // CPU model), the calibrated linear roofline of a registry model, a measured (s, c) table, and a
  // stepped analytic cost. None of them is known to the server: all travel as latency_grid.
  const costmodel::GridLatency measured({1, 2, 4, 8, 16, 32, 65},
                                        {1.1e-3, 1.15e-3, 1.3e-3, 1.6e-3, 2.4e-3, 3.9e-3, 7.2e-3},
                                        costmodel::GridSource::kCaller);
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  const costmodel::LinearCalibratedLatency linear(roofline, {1.7, 4e-4});
  costmodel::LatencyTable table;
  table.s_grid = {1, 8, 64};
  table.c_grid = {0, 1024};
  table.seconds = {{5e-3, 5.5e-3, 9e-3}, {6e-3, 6.6e-3, 11e-3}};
  ASSERT_TRUE(costmodel::ValidateLatencyTable(table).ok());
  const costmodel::TableLatency tabled(roofline, table);
  const SteppedLatency stepped;
  const costmodel::LatencyModel* models[] = {&measured, &linear, &tabled, &stepped};

  std::mt19937_64 rng(4242);
  planner::BestFirstPlan want, got;
  int stops = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const planner::Marginals m =
        RandomMarginals(rng, 1 + static_cast<int>(rng() % 10), 1 + static_cast<int>(rng() % 6));
    planner::BestFirstOptions options;
    options.mode = static_cast<planner::BudgetMode>(rng() % 3);
    options.n_max = static_cast<int>(rng() % 80);
    options.l_ar_s = rng() % 4 == 0 ? 3e-3 : 0.0;
    options.acceptance_scale = rng() % 3 == 0 ? 0.5 + 0.25 * static_cast<double>(rng() % 8) : 1.0;
    planner::PlanCost cost;
    cost.latency = models[trial % 4];
    planner::testing::DrawPlanCost(rng, m.gamma, 3e-5, 1e-6, 3000, &cost);
    const bool with_cost = options.mode != planner::BudgetMode::kFixed || rng() % 2 == 0;
    const planner::PlanCost* c = with_cost ? &cost : nullptr;
    ASSERT_TRUE(local.PlanBestFirst(m, options, c, &want).ok());
    const absl::Status st = (*remote)->PlanBestFirst(m, options, c, &got);
    ASSERT_TRUE(st.ok()) << st;
    SCOPED_TRACE(::testing::Message()
                 << "trial " << trial << " mode " << static_cast<int>(options.mode) << " n_max "
                 << options.n_max << " model " << cost.latency->Kind());
    ExpectSamePlan(want, got);
    if (options.mode == planner::BudgetMode::kController && want.n < options.n_max) ++stops;
  }
  EXPECT_GT(stops, 5);  // the controller really stopped early on several inputs
  EXPECT_EQ((*remote)->calls(), 120);
}

TEST_F(RemoteBackendTest, MergesEqualInProcess) {
  RemotePlanBackend remote(Address());
  planner::InProcessPlanBackend local;
  std::mt19937_64 rng(99);
  planner::MergedTree want, got;
  for (int trial = 0; trial < 80; ++trial) {
    const int vocab = 2 + static_cast<int>(rng() % 4);
    const planner::Tree a = RandomWeightedTree(rng, static_cast<int>(rng() % 40), vocab, 3);
    const planner::Tree b = RandomWeightedTree(rng, static_cast<int>(rng() % 40), vocab, 3);
    planner::MergeOptions options;
    options.dedup = rng() % 2 == 0;
    options.n_max = rng() % 2 ? -1 : static_cast<int>(rng() % 50);
    ASSERT_TRUE(local.Merge(a, b, options, &want).ok());
    const absl::Status st = remote.Merge(a, b, options, &got);
    ASSERT_TRUE(st.ok()) << st;
    ExpectSameMerge(want, got);
  }
}

TEST_F(RemoteBackendTest, ErrorsNameTheServerAndTheField) {
  RemotePlanBackend remote(Address());
  std::mt19937_64 rng(1);
  planner::Marginals m = RandomMarginals(rng, 3, 2);
  m.probs[3] = 1.5f;  // row 1, rank 1
  planner::BestFirstOptions options;
  options.mode = planner::BudgetMode::kFixed;
  options.n_max = 4;
  planner::BestFirstPlan plan;
  absl::Status st = remote.PlanBestFirst(m, options, nullptr, &plan);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("server " + Address() + ": marginals.probs[1][1]"));

  // Different roots: the planner's merge error, relayed.
  planner::MergedTree merged;
  st =
      remote.Merge(RandomWeightedTree(rng, 3, 4, 1), RandomWeightedTree(rng, 3, 4, 2), {}, &merged);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("tokens[0]"));

  // A path-conditioned provider cannot travel: refused before any RPC, naming the request.
  struct NoProvider : planner::DistributionProvider {
    absl::Status Expand(const planner::Tree&, absl::Span<const int32_t>, int,
                        absl::Span<planner::TokenProb>, absl::Span<int32_t>) override {
      return absl::OkStatus();
    }
  } provider;
  planner::Marginals ok = RandomMarginals(rng, 3, 2);
  std::vector<planner::BatchRequest> batch(2);
  batch[0].marginals = &ok;
  batch[1].provider = &provider;
  planner::BatchPlan batch_plan;
  planner::BatchPlanOptions batch_options;
  batch_options.mode = planner::BudgetMode::kFixed;
  const int64_t calls = remote.calls();
  st = remote.PlanBatch(batch, batch_options, nullptr, &batch_plan);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("requests[1].provider"));
  EXPECT_EQ(remote.calls(), calls);
  PlannerClient client(Address());
  EXPECT_EQ(client.PlanBatch(batch, batch_options, nullptr, &batch_plan, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Nothing listens on port 1: Connect fails fast and names the server.
  auto dead = RemotePlanBackend::Connect("127.0.0.1:1", 0.5);
  ASSERT_FALSE(dead.ok());
  EXPECT_EQ(dead.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(dead.status().message()), HasSubstr("127.0.0.1:1"));
}

TEST_F(RemoteBackendTest, OneClientServesManyCallsAndTheCliCalls) {
  PlannerClient client(Address());
  ASSERT_TRUE(client.WaitReady(10).ok());
  std::mt19937_64 rng(5);
  const planner::Marginals m = RandomMarginals(rng, 4, 3);
  planner::BestFirstOptions options;
  options.mode = planner::BudgetMode::kFixed;
  options.n_max = 10;
  planner::BestFirstPlanner direct;
  planner::BestFirstPlan want, got;
  ASSERT_TRUE(direct.Plan(m, options, nullptr, &want).ok());
  planner::TreeOutputs outputs;
  for (int i = 0; i < 20; ++i) {
    auto used = client.PlanTree(m, options, nullptr, 7, &got, &outputs);
    ASSERT_TRUE(used.ok()) << used.status();
    ExpectSamePlan(want, got);
    ASSERT_EQ(outputs.positions.size(), got.tree.tokens.size());
    for (size_t j = 0; j < outputs.positions.size(); ++j) {
      EXPECT_EQ(outputs.positions[j], 7 + got.tree.depths[j]);  // absolute positions c + depth
    }
  }
  // The bare roofline of registry names (what `specplan estimate --server` sends).
  CostRequest cost;
  cost.model = "qwen3-8b";
  cost.gpu = "h100";
  cost.context = 512;
  auto est = client.EstimateLatency(cost, 9);
  ASSERT_TRUE(est.ok()) << est.status();
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  EXPECT_DOUBLE_EQ(est->verify_s, roofline.VerifySeconds(9, 512));
  EXPECT_EQ(est->used.latency_model, "roofline");
  auto profiles = client.Profiles();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_TRUE(profiles->empty());  // the suite's server has an empty profiles directory
}

// ---------------------------------------------------------------------------------------------
// cost.latency_grid on the wire

TEST_F(RemoteBackendTest, LatencyGridSemanticsOverEstimateLatency) {
  auto stub = RawStub();
  v1::EstimateLatencyRequest req;
  v1::LatencyGrid* grid = req.mutable_cost()->mutable_latency_grid();
  for (auto [s, t] : {std::pair<int64_t, double>{2, 1e-3}, {4, 2e-3}, {8, 2.5e-3}}) {
    grid->add_s(s);
    grid->add_seconds(t);
  }
  req.mutable_cost()->set_t_aux_s(1e-4);
  for (int64_t s : {1, 2, 3, 4, 6, 8, 12}) req.add_s(s);
  req.add_c(0);
  req.add_c(100000);  // independent of c
  grpc::ClientContext ctx;
  v1::EstimateLatencyResponse resp;
  const grpc::Status st = stub->EstimateLatency(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.latency_model(), "grid");
  EXPECT_EQ(resp.profile_id(), "");
  // Hand-worked: below the grid = first value; exact at points; midpoints interpolate; above the
  // grid the last segment (4 -> 8: slope 1.25e-4 per token) extends.
  const double want[] = {1e-3, 1e-3, 1.5e-3, 2e-3, 2.25e-3, 2.5e-3, 3e-3};
  ASSERT_EQ(resp.points_size(), 14);
  for (int ci = 0; ci < 2; ++ci) {
    for (int i = 0; i < 7; ++i) {
      const v1::LatencyPoint& p = resp.points(ci * 7 + i);
      EXPECT_NEAR(p.verify_s(), want[i], 1e-15) << "s = " << p.s() << " c = " << p.c();
      EXPECT_NEAR(p.cycle_s(), want[i] + 1e-4, 1e-15);
    }
  }
}

TEST_F(RemoteBackendTest, LatencyGridPlanTreeMatchesInProcessAndValidates) {
  auto stub = RawStub();
  std::mt19937_64 rng(8);
  const planner::Marginals m = RandomMarginals(rng, 6, 4);
  v1::PlanTreeRequest req;
  req.mutable_marginals()->set_root_token(m.root_token);
  req.mutable_marginals()->set_gamma(m.gamma);
  req.mutable_marginals()->set_k(m.k);
  for (int32_t t : m.tokens) req.mutable_marginals()->add_tokens(t);
  for (float p : m.probs) req.mutable_marginals()->add_probs(p);
  req.set_mode(v1::BUDGET_MODE_SCAN);
  req.set_n_max(40);
  // A sparse grid: the server interpolates exactly as costmodel::GridLatency does in-process.
  const std::vector<int64_t> s = {1, 4, 16, 41};
  const std::vector<double> secs = {2e-3, 2.1e-3, 2.9e-3, 6e-3};
  for (size_t i = 0; i < s.size(); ++i) {
    req.mutable_cost()->mutable_latency_grid()->add_s(s[i]);
    req.mutable_cost()->mutable_latency_grid()->add_seconds(secs[i]);
  }
  req.mutable_cost()->set_context_tokens(300);
  req.mutable_cost()->mutable_drafter()->set_t_net_s(5e-4);
  {
    grpc::ClientContext ctx;
    v1::PlanTreeResponse resp;
    const grpc::Status st = stub->PlanTree(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.latency_model(), "grid");
    const costmodel::GridLatency grid(s, secs, costmodel::GridSource::kCaller);
    costmodel::DrafterCost dc;
    dc.gamma = m.gamma;  // drafter.gamma 0 = the marginals' gamma
    dc.t_net_s = 5e-4;
    const costmodel::CycleCost cycle(&grid, dc, 0.0, 300);
    planner::BestFirstOptions options;
    options.mode = planner::BudgetMode::kScan;
    options.n_max = 40;
    planner::BestFirstPlanner direct;
    planner::BestFirstPlan want;
    ASSERT_TRUE(direct.Plan(m, options, &cycle, &want).ok());
    EXPECT_EQ(resp.plan().n(), want.n);
    EXPECT_EQ(resp.plan().speedup(), want.speedup);
    EXPECT_EQ(resp.plan().curve().n_size(), 41);
    EXPECT_EQ(resp.outputs().positions(0), 300);  // positions offset by the cost's context
  }
  // Malformed grids: INVALID_ARGUMENT naming the field and the value.
  struct Case {
    std::vector<int64_t> s;
    std::vector<double> seconds;
    std::string message;
  } cases[] = {
      {{}, {}, "cost.latency_grid.s: empty"},
      {{1, 2}, {1e-3}, "cost.latency_grid.seconds: 1 entries, expected 2"},
      {{1, 4, 4}, {1e-3, 2e-3, 3e-3}, "cost.latency_grid.s[2] = 4: must be > s[1] = 4"},
      {{0, 4}, {1e-3, 2e-3}, "cost.latency_grid.s[0] = 0: must be in [1, "},
      {{1, 4},
       {1e-3, -2e-3},
       "cost.latency_grid.seconds[1] = -0.002: must be a number of seconds in [0, 1e+06]"},
      {{1, 4}, {1e-3, NAN}, "cost.latency_grid.seconds[1] = nan"},
  };
  for (const Case& c : cases) {
    v1::PlanTreeRequest bad = req;
    v1::LatencyGrid* g = bad.mutable_cost()->mutable_latency_grid();
    g->clear_s();
    g->clear_seconds();
    for (int64_t x : c.s) g->add_s(x);
    for (double x : c.seconds) g->add_seconds(x);
    grpc::ClientContext ctx;
    v1::PlanTreeResponse resp;
    const grpc::Status st = stub->PlanTree(&ctx, bad, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(st.error_message(), HasSubstr(c.message));
  }
  // No roofline split for a grid.
  v1::EstimateLatencyRequest est;
  *est.mutable_cost() = req.cost();
  est.set_roofline_terms(true);
  grpc::ClientContext ctx;
  v1::EstimateLatencyResponse resp;
  const grpc::Status st = stub->EstimateLatency(&ctx, est, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("roofline_terms"));
}

}  // namespace
}  // namespace specplan::client
