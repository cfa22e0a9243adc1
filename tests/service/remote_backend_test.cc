// The shared client library (client/client.h) against the real specplan-server binary on a
// loopback port: RemotePlanBackend's plans and merges equal InProcessPlanBackend's (random
// marginals, every budget mode, several latency models sent as cost.latency_grid); the
// latency_grid cost source on the wire (semantics and validation); and, when this binary also
// links the runtime (SPECPLAN_TEST_WITH_RUNTIME: both gRPC and Torch in the build), a decoder that
// plans remotely emits the same tokens as one that plans in-process, with every step's remote plan
// equal to the in-process plan (one sequence, and a batch through PlanBatch).
// Over 500 lines because the three parts share one server process and the comparison helpers.
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
#include "tests/server_process.h"
#include "util/status_macros.h"

#ifdef SPECPLAN_TEST_WITH_RUNTIME
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/batch_decoder.h"
#include "runtime/decoder.h"
#include "runtime/measured_latency.h"
#include "tests/runtime/test_models.h"
#endif

namespace specplan::client {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::specplan::v1;
using ::testing::HasSubstr;

using test::ServerBinary;
using test::ServerProcess;

// One server for the whole suite (starting it is the slow part).
class RemoteBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("specplan_remote_backend_" + std::to_string(::getpid())));
    fs::create_directories(*dir_ / "profiles");
    server_ = new ServerProcess(
        {"--listen", "127.0.0.1:0", "--quiet", "--profiles-dir", (*dir_ / "profiles").string()});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(ServerBinary())) << ServerBinary();
    ASSERT_GT(server_->port(), 0) << server_->first_line();
  }
  static std::string Address() { return server_->address(); }
  static std::unique_ptr<v1::Planner::Stub> RawStub() {
    return v1::Planner::NewStub(grpc::CreateChannel(Address(), grpc::InsecureChannelCredentials()));
  }

  static fs::path* dir_;
  static ServerProcess* server_;
};
fs::path* RemoteBackendTest::dir_ = nullptr;
ServerProcess* RemoteBackendTest::server_ = nullptr;

// ---------------------------------------------------------------------------------------------
// Helpers

using planner::testing::ExpectSameMerge;
using planner::testing::ExpectSamePlan;
using planner::testing::RandomWeightedTree;
using planner::testing::SteppedLatency;

// Rows sorted by descending prob, distinct tokens, row sums in [0.3, 1).
planner::Marginals RandomMarginals(std::mt19937_64& rng, int gamma, int k) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  planner::Marginals m;
  m.root_token = 5;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    std::vector<double> row(k);
    double sum = 0;
    for (double& x : row) sum += (x = u(rng) * u(rng) + 1e-3);
    const double mass = 0.3 + 0.69 * u(rng);
    std::sort(row.begin(), row.end(), std::greater<double>());
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(100 + 17 * d + r);
      m.probs.push_back(static_cast<float>(row[r] / sum * mass));
    }
  }
  return m;
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

// ---------------------------------------------------------------------------------------------
// The runtime's decoder planning through the remote backend

#ifdef SPECPLAN_TEST_WITH_RUNTIME

// Plans remotely and checks every plan / merge against the in-process backend on the same inputs.
class ComparingBackend : public planner::PlanBackend {
 public:
  explicit ComparingBackend(RemotePlanBackend* remote) : remote_(remote) {}
  absl::Status PlanBestFirst(const planner::Marginals& m, const planner::BestFirstOptions& o,
                             const planner::PlanCost* cost, planner::BestFirstPlan* plan) override {
    EXPECT_TRUE(local_.PlanBestFirst(m, o, cost, &want_plan_).ok());
    SPECPLAN_RETURN_IF_ERROR(remote_->PlanBestFirst(m, o, cost, plan));
    ExpectSamePlan(want_plan_, *plan);
    ++plans;
    if (plan->n > 0) ++nonempty_plans;
    return absl::OkStatus();
  }
  absl::Status Merge(const planner::Tree& a, const planner::Tree& b, const planner::MergeOptions& o,
                     planner::MergedTree* out) override {
    EXPECT_TRUE(local_.Merge(a, b, o, &want_merge_).ok());
    SPECPLAN_RETURN_IF_ERROR(remote_->Merge(a, b, o, out));
    ExpectSameMerge(want_merge_, *out);
    ++merges;
    return absl::OkStatus();
  }
  absl::Status PlanBatch(const std::vector<planner::BatchRequest>& requests,
                         const planner::BatchPlanOptions& o, const planner::BatchPlanCost* cost,
                         planner::BatchPlan* plan) override {
    EXPECT_TRUE(local_.PlanBatch(requests, o, cost, &want_batch_).ok());
    SPECPLAN_RETURN_IF_ERROR(remote_->PlanBatch(requests, o, cost, plan));
    EXPECT_EQ(want_batch_.n, plan->n);
    EXPECT_EQ(want_batch_.speculation_pays, plan->speculation_pays);
    EXPECT_EQ(want_batch_.curve.size(), plan->curve.size());
    for (size_t i = 0; i < plan->trees.size() && i < want_batch_.trees.size(); ++i) {
      EXPECT_EQ(want_batch_.trees[i].tokens, plan->trees[i].tokens) << "request " << i;
      EXPECT_EQ(want_batch_.trees[i].parents, plan->trees[i].parents) << "request " << i;
    }
    ++batch_plans;
    if (plan->n_total > 0) ++nonempty_plans;
    return absl::OkStatus();
  }
  std::string Name() const override { return "comparing " + remote_->Name(); }
  int plans = 0, nonempty_plans = 0, merges = 0, batch_plans = 0;

 private:
  RemotePlanBackend* remote_;
  planner::InProcessPlanBackend local_;
  planner::BestFirstPlan want_plan_;
  planner::BatchPlan want_batch_;
  planner::MergedTree want_merge_;
};

TEST_F(RemoteBackendTest, DecoderWithRemotePlannerEmitsTheInProcessTokens) {
  using runtime::Strategy;
  auto remote = RemotePlanBackend::Connect(Address());
  ASSERT_TRUE(remote.ok()) << remote.status();
  auto target = runtime::testing::TinyModel("tiny", 31);
  auto draft = target->Truncated(1);  // a partly agreeing draft: trees are accepted in part
  // A fixed "measured" latency (the runtime's own model type), so that both decoders see the same
  // costs; only the drafter's step time varies, and it travels with each request.
  const costmodel::GridLatency latency({1, 2, 4, 8, 16, 32, 65},
                                       {2e-3, 2.05e-3, 2.2e-3, 2.6e-3, 3.4e-3, 5e-3, 8.5e-3},
                                       costmodel::GridSource::kMeasured);
  std::mt19937_64 rng(77);
  std::vector<std::vector<planner::TokenId>> prompts;
  for (int i = 0; i < 3; ++i) {
    std::vector<planner::TokenId> p = runtime::testing::RandomTokens(4 + i, 256, rng);
    const std::vector<planner::TokenId> q = p;
    for (int r = 0; r < 3; ++r) p.insert(p.end(), q.begin(), q.end());  // n-gram matches
    prompts.push_back(p);
  }
  for (Strategy strategy : {Strategy::kBestFirst, Strategy::kLookup, Strategy::kMerged}) {
    SCOPED_TRACE(runtime::StrategyName(strategy));
    runtime::StrategyOptions options = runtime::StrategyOptions::Defaults(strategy);
    options.latency = &latency;
    // Every step drafts and plans (the speculation gate would skip steps by measured draft time).
    options.gate.enabled = false;
    ComparingBackend comparing(remote->get());
    runtime::StrategyOptions remote_options = options;
    remote_options.plan_backend = &comparing;
    const runtime::Transformer* d = runtime::StrategyNeedsDraft(strategy) ? draft.get() : nullptr;
    auto local_dec = runtime::SpeculativeDecoder::Create(target.get(), d, options, 256);
    auto remote_dec = runtime::SpeculativeDecoder::Create(target.get(), d, remote_options, 256);
    ASSERT_TRUE(local_dec.ok()) << local_dec.status();
    ASSERT_TRUE(remote_dec.ok()) << remote_dec.status();
    for (const auto& prompt : prompts) {
      auto want = (*local_dec)->Generate(prompt, 16);
      auto got = (*remote_dec)->Generate(prompt, 16);
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(want->tokens, got->tokens);
      EXPECT_EQ(got->tokens, runtime::testing::ReferenceGreedy(*target, prompt, 16));
    }
    // Steps planned remotely (bestfirst: every step; lookup: steps whose context had an n-gram
    // match; merged: a merge every step), and some plans were real trees.
    const int64_t iterations = (*remote_dec)->counters().iterations();
    EXPECT_GT(comparing.nonempty_plans, 0);
    if (strategy == Strategy::kBestFirst) {
      EXPECT_EQ(comparing.plans, iterations);
    }
    if (strategy == Strategy::kLookup) {
      EXPECT_LE(comparing.plans, iterations);
    }
    if (strategy == Strategy::kMerged) {
      EXPECT_EQ(comparing.merges, iterations);
    }
  }
}

// The batch decoder with strategy batch: every step's batch plan comes from the server's PlanBatch
// and equals the in-process plan; the tokens are the in-process decoder's (AR's).
TEST_F(RemoteBackendTest, BatchDecoderWithRemotePlanBatchEmitsTheInProcessTokens) {
  auto remote = RemotePlanBackend::Connect(Address());
  ASSERT_TRUE(remote.ok()) << remote.status();
  auto target = runtime::testing::TinyModel("tiny", 32);
  auto draft = target->Truncated(target->config().num_layers);
  const costmodel::GridLatency latency({1, 2, 4, 8, 16, 32, 65},
                                       {2e-3, 2.05e-3, 2.2e-3, 2.6e-3, 3.4e-3, 5e-3, 8.5e-3},
                                       costmodel::GridSource::kMeasured);
  std::mt19937_64 rng(78);
  std::vector<std::vector<planner::TokenId>> prompts;
  for (int i = 0; i < 5; ++i)
    prompts.push_back(runtime::testing::RandomTokens(3 + 2 * i, 256, rng));
  runtime::StrategyOptions options = runtime::StrategyOptions::Defaults(runtime::Strategy::kBatch);
  options.latency = &latency;
  options.batch_draft_step_s = 1e-4;  // the same drafting price in both runs,
  options.gate_draft_level_s = 1e-9;  // and a gate that drafts every step in both
  ComparingBackend comparing(remote->get());
  runtime::StrategyOptions remote_options = options;
  remote_options.plan_backend = &comparing;
  auto local_dec = runtime::BatchDecoder::Create(target.get(), draft.get(), options, 3, 256);
  auto remote_dec =
      runtime::BatchDecoder::Create(target.get(), draft.get(), remote_options, 3, 256);
  ASSERT_TRUE(local_dec.ok()) << local_dec.status();
  ASSERT_TRUE(remote_dec.ok()) << remote_dec.status();
  auto want = (*local_dec)->Run(prompts, 12);
  auto got = (*remote_dec)->Run(prompts, 12);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ((*want)[i].tokens, (*got)[i].tokens) << "prompt " << i;
    EXPECT_EQ((*got)[i].tokens, runtime::testing::ReferenceGreedy(*target, prompts[i], 12));
  }
  EXPECT_EQ(comparing.batch_plans, (*remote_dec)->counters().passes);
  EXPECT_GT(comparing.nonempty_plans, 0);
  EXPECT_EQ((*local_dec)->counters().draft_nodes(), (*remote_dec)->counters().draft_nodes());
}

// specplan-bench --planner HOST:PORT end to end: every best-first, merged and batch step is
// planned by the server, the report names it, and the greedy outputs still equal AR's.
TEST_F(RemoteBackendTest, BenchWithPlannerFlagPlansRemotelyAndEmitsArTokens) {
  const fs::path out = *dir_ / "bench.json";
  const std::string cmd = ::specplan::test_paths::BinaryDir() +
                          "/runtime/specplan-bench --target random:tiny --draft truncate:2 "
                          "--strategies ar,bestfirst,merged,batch --max-prompts 3 --batch 2 "
                          "--max-new-tokens 10 "
                          "--threads 1 --planner " +
                          Address() + " --json " + out.string() + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report.at("planner"), "remote " + Address());
  const auto& strategies = report.at("strategies");
  for (const char* name : {"bestfirst", "merged", "batch"}) {
    EXPECT_EQ(strategies.at(name).at("greedy_equals_ar"), true) << name;
    EXPECT_EQ(strategies.at(name).at("outputs"), strategies.at("ar").at("outputs")) << name;
  }
}

#endif  // SPECPLAN_TEST_WITH_RUNTIME

}  // namespace
}  // namespace specplan::client
