// Integration tests of the planner service: a real gRPC server on a loopback port (in-process)
// and real stubs; results are compared with the in-process planner / cost model. Over 500 lines
// because every RPC of the service shares one server fixture here; each RPC's tests are a block.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "planner/policies/best_first.h"
#include "planner/policies/fixed_tree.h"
#include "planner/policies/linear_chain.h"
#include "planner/policies/path_conditioned.h"
#include "planner/policies/policy.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree_outputs.h"
#include "service/convert.h"
#include "service_test_util.h"

namespace specplan::service {
namespace {

using ::testing::HasSubstr;
using namespace specplan::service::testing;

class ServiceTest : public ServerFixture {
 protected:
  void SetUp() override {
    dir_ = TempDir("svc");
    profile_ = SyntheticProfile();
    profile_path_ = costmodel::BundledProfilePath(dir_.string(), "a100-80g", "qwen3-4b",
                                                  costmodel::DType::kBFloat16);
    ASSERT_EQ(profile_.gpu, "a100-80g");
    ASSERT_TRUE(costmodel::SaveProfile(profile_, profile_path_).ok());
    ServerConfig config;
    config.service.auth_token = "s3cret";
    config.service.limits.max_gamma = 32;
    config.service.limits.max_k = 16;
    config.service.limits.max_n = 512;
    StartServer(config);
  }

  v1::ProfileRef Ref() const {
    v1::ProfileRef ref;
    ref.set_gpu("a100-80g");
    ref.set_model("qwen3-4b");
    ref.set_dtype("bf16");
    return ref;
  }

  costmodel::Profile profile_;
  std::string profile_path_;
};

// ---------------------------------------------------------------------------------------------
// PlanTree

TEST_F(ServiceTest, PlanTreeEqualsInProcessPlannerOverModesAndBudgets) {
  const costmodel::RooflineLatency latency(*costmodel::LookupModel("qwen3-8b"),
                                           *costmodel::LookupGpu("h100"));
  int cases = 0;
  for (int gamma : {1, 4, 16}) {
    for (int k : {1, 3, 8}) {
      const v1::Marginals wire = RandomMarginals(gamma, k, 100 * gamma + k);
      const planner::Marginals m = ToPlanner(wire);
      for (auto mode : {v1::BUDGET_MODE_CONTROLLER, v1::BUDGET_MODE_SCAN, v1::BUDGET_MODE_FIXED}) {
        for (int n_max : {0, 5, 64, 256}) {
          const int64_t c = 777;
          v1::PlanTreeRequest req;
          *req.mutable_marginals() = wire;
          *req.mutable_cost() = InlineCost(c);
          req.mutable_cost()->mutable_drafter()->set_t_net_s(0.4e-3);
          req.mutable_cost()->set_t_aux_s(0.05e-3);
          req.set_mode(mode);
          req.set_n_max(n_max);
          req.mutable_outputs()->set_positions(true);
          req.mutable_outputs()->set_retrieve(true);
          req.mutable_outputs()->set_packed_mask(true);
          req.mutable_outputs()->set_dense_mask(true);
          req.mutable_outputs()->set_parents(true);
          req.mutable_outputs()->set_curve(true);
          v1::PlanTreeResponse resp;
          grpc::ClientContext ctx;
          const grpc::Status st = stub().PlanTree(&ctx, req, &resp);
          ASSERT_TRUE(st.ok()) << st.error_message();

          // In-process reference.
          costmodel::DrafterCost drafter;
          drafter.gamma = gamma;
          drafter.t_net_s = 0.4e-3;
          const costmodel::CycleCost cost(&latency, drafter, 0.05e-3, c);
          planner::BestFirstOptions options;
          options.mode = mode == v1::BUDGET_MODE_CONTROLLER ? planner::BudgetMode::kController
                         : mode == v1::BUDGET_MODE_SCAN     ? planner::BudgetMode::kScan
                                                            : planner::BudgetMode::kFixed;
          options.n_max = n_max;
          planner::BestFirstPlanner bf;
          planner::BestFirstPlan plan;
          ASSERT_TRUE(bf.Plan(m, options, &cost, &plan).ok());
          planner::TreeOutputs outputs;
          planner::TreeOutputOptions oo;
          oo.position_offset = c;
          oo.dense_mask = true;
          planner::ComputeTreeOutputs(plan.tree, oo, &outputs);

          SCOPED_TRACE(::testing::Message() << "gamma=" << gamma << " k=" << k << " mode=" << mode
                                            << " n_max=" << n_max);
          ExpectTreeEq(plan.tree, resp.plan().tree());
          EXPECT_EQ(resp.plan().n(), plan.n);
          EXPECT_DOUBLE_EQ(resp.plan().expected_accepted(), plan.expected_accepted);
          EXPECT_DOUBLE_EQ(resp.plan().speedup(), plan.speedup);
          EXPECT_DOUBLE_EQ(resp.plan().cycle_s(), plan.cycle_s);
          EXPECT_DOUBLE_EQ(resp.plan().l_ar_s(), plan.l_ar_s);
          EXPECT_EQ(resp.plan().lattice_exhausted(), plan.lattice_exhausted);
          const v1::Curve& curve = resp.plan().curve();
          ASSERT_EQ(curve.n_size(), static_cast<int>(plan.curve.size()));
          ASSERT_EQ(curve.expected_accepted_size(), curve.n_size());
          ASSERT_EQ(curve.cycle_s_size(), curve.n_size());
          ASSERT_EQ(curve.speedup_size(), curve.n_size());
          for (size_t i = 0; i < plan.curve.size(); ++i) {
            EXPECT_EQ(curve.n(i), plan.curve[i].n);
            EXPECT_DOUBLE_EQ(curve.expected_accepted(i), plan.curve[i].expected_accepted);
            EXPECT_DOUBLE_EQ(curve.cycle_s(i), plan.curve[i].cycle_s);
            EXPECT_DOUBLE_EQ(curve.speedup(i), plan.curve[i].speedup);
          }
          EXPECT_THAT(resp.outputs().positions(), ::testing::ElementsAreArray(outputs.positions));
          EXPECT_THAT(resp.outputs().retrieve(), ::testing::ElementsAreArray(outputs.retrieve));
          EXPECT_THAT(resp.outputs().mask_packed(),
                      ::testing::ElementsAreArray(outputs.mask_packed));
          EXPECT_EQ(resp.outputs().mask_dense(),
                    std::string(outputs.mask_dense.begin(), outputs.mask_dense.end()));
          EXPECT_EQ(resp.outputs().num_leaves(), outputs.num_leaves);
          EXPECT_EQ(resp.outputs().retrieve_width(), outputs.retrieve_width);
          EXPECT_EQ(resp.latency_model(), "roofline");
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 3 * 3 * 4);
}

TEST_F(ServiceTest, PlanTreeWithProfileUsesItsDefaultModelAndEmaVariant) {
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = RandomMarginals(8, 4, 5);
  *req.mutable_cost()->mutable_profile() = Ref();
  req.mutable_cost()->set_context_tokens(300);
  req.set_mode(v1::BUDGET_MODE_SCAN);
  req.set_n_max(40);
  v1::PlanTreeResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub().PlanTree(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16");
  EXPECT_EQ(resp.latency_model(), profile_.default_model);
  auto model = costmodel::MakeLatencyModel(profile_);
  ASSERT_TRUE(model.ok());
  costmodel::DrafterCost drafter;
  drafter.gamma = 8;
  const costmodel::CycleCost cost(model->get(), drafter, 0, 300);
  planner::BestFirstOptions options;
  options.mode = planner::BudgetMode::kScan;
  options.n_max = 40;
  planner::BestFirstPlanner bf;
  planner::BestFirstPlan plan;
  ASSERT_TRUE(bf.Plan(ToPlanner(req.marginals()), options, &cost, &plan).ok());
  EXPECT_EQ(resp.plan().n(), plan.n);
  EXPECT_DOUBLE_EQ(resp.plan().speedup(), plan.speedup);

  // Registry alias "a100" resolves to the canonical "a100-80g" profile.
  req.mutable_cost()->mutable_profile()->set_gpu("a100");
  req.mutable_cost()->mutable_profile()->set_latency_model("ema");
  v1::PlanTreeResponse resp2;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub().PlanTree(&ctx2, req, &resp2).ok());
  EXPECT_EQ(resp2.profile_id(), "a100-80g/qwen3-4b-bf16");
  EXPECT_EQ(resp2.latency_model(), "ema+" + profile_.default_model);
  EXPECT_DOUBLE_EQ(resp2.plan().speedup(), plan.speedup);  // bias 1 before any report
}

TEST_F(ServiceTest, PlanTreeFixedModeNeedsNoCost) {
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = RandomMarginals(4, 3, 9);
  req.set_mode(v1::BUDGET_MODE_FIXED);
  req.set_n_max(10);
  v1::PlanTreeResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub().PlanTree(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.plan().n(), 10);
  EXPECT_EQ(resp.plan().tree().tokens_size(), 11);
  EXPECT_TRUE(std::isnan(resp.plan().speedup()));
  EXPECT_EQ(resp.outputs().positions(0), 0);
}

// ---------------------------------------------------------------------------------------------
// Bad input: every class gets the right code and a message naming the field and value.

struct BadCase {
  const char* name;
  std::function<void(v1::PlanTreeRequest&)> mutate;
  grpc::StatusCode code;
  const char* substring;
};

TEST_F(ServiceTest, PlanTreeBadInputClasses) {
  const float nan = std::nanf("");
  // The request's cost as a reference to the bundled profile gpu/model, for a case to edit.
  auto profile = [](v1::PlanTreeRequest& r, const char* gpu, const char* model) {
    v1::ProfileRef* p = r.mutable_cost()->mutable_profile();
    p->set_gpu(gpu);
    p->set_model(model);
    return p;
  };
  const std::vector<BadCase> cases = {
      {"nan prob", [&](auto& r) { r.mutable_marginals()->set_probs(10, nan); },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.probs[1][2] = nan"},
      {"prob > 1", [](auto& r) { r.mutable_marginals()->set_probs(0, 1.5f); },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.probs[0][0] = 1.5"},
      {"negative prob", [](auto& r) { r.mutable_marginals()->set_probs(3, -0.25f); },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.probs[0][3] = -0.25"},
      {"unsorted row",
       [](auto& r) {
         auto* m = r.mutable_marginals();
         std::swap(*m->mutable_probs()->Mutable(8), *m->mutable_probs()->Mutable(9));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.probs[1][1] = "},
      {"ragged rows", [](auto& r) { r.mutable_marginals()->mutable_tokens()->RemoveLast(); },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.tokens: 23 entries, expected gamma * k"},
      {"repeated token",
       [](auto& r) { r.mutable_marginals()->set_tokens(1, r.marginals().tokens(0)); },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.tokens[0][1]"},
      {"negative root", [](auto& r) { r.mutable_marginals()->set_root_token(-3); },
       grpc::StatusCode::INVALID_ARGUMENT, "marginals.root_token = -3"},
      {"no marginals", [](auto& r) { r.clear_marginals(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "marginals: required"},
      {"gamma over limit", [](auto& r) { *r.mutable_marginals() = RandomMarginals(33, 2, 1); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "marginals.gamma = 33: exceeds the server limit 32"},
      {"k over limit", [](auto& r) { *r.mutable_marginals() = RandomMarginals(2, 17, 1); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "marginals.k = 17"},
      {"n_max over limit", [](auto& r) { r.set_n_max(513); }, grpc::StatusCode::RESOURCE_EXHAUSTED,
       "n_max = 513: exceeds the server limit 512"},
      {"negative n_max", [](auto& r) { r.set_n_max(-1); }, grpc::StatusCode::INVALID_ARGUMENT,
       "n_max = -1"},
      {"unknown mode", [](auto& r) { r.set_mode(static_cast<v1::BudgetMode>(9)); },
       grpc::StatusCode::INVALID_ARGUMENT, "mode = 9"},
      {"nan l_ar", [](auto& r) { r.set_l_ar_s(std::nan("")); }, grpc::StatusCode::INVALID_ARGUMENT,
       "l_ar_s = nan"},
      {"negative acceptance scale", [](auto& r) { r.set_acceptance_scale(-1); },
       grpc::StatusCode::INVALID_ARGUMENT,
       "acceptance_scale = -1: must be 0 (uncalibrated) or in (0, 64]"},
      {"acceptance scale over 64", [](auto& r) { r.set_acceptance_scale(65); },
       grpc::StatusCode::INVALID_ARGUMENT, "acceptance_scale = 65"},
      {"missing cost", [](auto& r) { r.clear_cost(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "cost: required"},
      {"unknown profile", [&](auto& r) { profile(r, "h100-sxm", "nope"); },
       grpc::StatusCode::NOT_FOUND, "cost.profile: no profile 'h100-sxm/nope-bf16'"},
      {"bad profile dtype", [&](auto& r) { profile(r, "a100-80g", "qwen3-4b")->set_dtype("int3"); },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.profile.dtype = 'int3'"},
      {"unknown latency model",
       [&](auto& r) { profile(r, "a100-80g", "qwen3-4b")->set_latency_model("magic"); },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.profile.latency_model = 'magic'"},
      {"unknown gpu", [](auto& r) { r.mutable_cost()->mutable_inline_model()->set_gpu("tpu9"); },
       grpc::StatusCode::NOT_FOUND, "cost.inline_model.gpu = 'tpu9'"},
      {"negative context", [](auto& r) { r.mutable_cost()->set_context_tokens(-1); },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.context_tokens = -1"},
      {"bad drafter class",
       [](auto& r) { r.mutable_cost()->mutable_drafter()->set_drafter_class("psychic"); },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.drafter.drafter_class = 'psychic'"},
      {"negative t_aux", [](auto& r) { r.mutable_cost()->set_t_aux_s(-1e-3); },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.t_aux_s = -0.001"},
      {"bad gpu spec",
       [](auto& r) {
         auto* g = r.mutable_cost()->mutable_inline_model()->mutable_gpu_spec();
         g->set_peak_flops(1e15);
         g->set_mem_bw(-1);
         g->set_mem_bytes(1e10);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "cost.inline_model.gpu_spec.mem_bw"},
  };
  for (const BadCase& bc : cases) {
    SCOPED_TRACE(bc.name);
    v1::PlanTreeRequest req;
    *req.mutable_marginals() = RandomMarginals(3, 8, 3);
    *req.mutable_cost() = InlineCost(100);
    req.set_n_max(32);
    bc.mutate(req);
    v1::PlanTreeResponse resp;
    grpc::ClientContext ctx;
    const grpc::Status st = stub().PlanTree(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), bc.code) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(bc.substring));
  }
  // The server is still up, and no bad request touched the stored profile.
  v1::PingResponse pong;
  grpc::ClientContext ctx;
  EXPECT_TRUE(stub().Ping(&ctx, v1::PingRequest(), &pong).ok());
  EXPECT_EQ(ReadAll(profile_path_), ReadAll(profile_path_));  // readable
  auto reloaded = costmodel::LoadProfile(profile_path_);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(costmodel::ProfileToJson(*reloaded), costmodel::ProfileToJson(profile_));
}

v1::Tree WireTree(std::vector<int32_t> tokens, std::vector<int32_t> parents,
                  std::vector<double> probs = {}) {
  v1::Tree t;
  t.mutable_tokens()->Assign(tokens.begin(), tokens.end());
  t.mutable_parents()->Assign(parents.begin(), parents.end());
  t.mutable_path_probs()->Assign(probs.begin(), probs.end());
  return t;
}

TEST_F(ServiceTest, MergeTreesEqualsInProcessAndRejectsBadTrees) {
  const v1::Tree a = WireTree({5, 1, 2, 3}, {-1, 0, 0, 1}, {1, 0.6, 0.3, 0.4});
  const v1::Tree b = WireTree({5, 1, 9, 4}, {-1, 0, 1, 0}, {1, 0.5, 0.2, 0.1});
  for (bool dedup : {false, true}) {
    for (int budget : {-1, 2, 4}) {
      v1::MergeTreesRequest req;
      *req.mutable_a() = a;
      *req.mutable_b() = b;
      req.set_dedup(dedup);
      req.set_budget(budget >= 0);
      req.set_n_max(std::max(budget, 0));
      req.set_position_offset(100);
      v1::MergeTreesResponse resp;
      grpc::ClientContext ctx;
      const grpc::Status st = stub().MergeTrees(&ctx, req, &resp);
      ASSERT_TRUE(st.ok()) << st.error_message();
      planner::Tree ta, tb;
      ASSERT_TRUE(TreeFromProto(a, ServiceLimits{}, "a", &ta).ok());
      ASSERT_TRUE(TreeFromProto(b, ServiceLimits{}, "b", &tb).ok());
      planner::MergeOptions mo;
      mo.dedup = dedup;
      mo.n_max = budget;
      auto merged = planner::MergeTrees(ta, tb, mo);
      ASSERT_TRUE(merged.ok());
      ExpectTreeEq(merged->tree, resp.tree());
      EXPECT_THAT(resp.phi_a(), ::testing::ElementsAreArray(merged->phi_a));
      EXPECT_THAT(resp.phi_b(), ::testing::ElementsAreArray(merged->phi_b));
      ASSERT_EQ(resp.source_size(), merged->tree.size());
      EXPECT_EQ(resp.source(0), v1::MERGE_SOURCE_BOTH);
      EXPECT_EQ(resp.outputs().positions(0), 100);
    }
  }
  struct MergeBad {
    v1::Tree a, b;
    grpc::StatusCode code;
    const char* substring;
  };
  std::vector<int32_t> big_tokens(600, 1), big_parents(600, 0);
  big_parents[0] = -1;
  const std::vector<MergeBad> bad = {
      {WireTree({5, 1, 2}, {-1, 0, 2}), b, grpc::StatusCode::INVALID_ARGUMENT,
       "a.parents[2] = 2: must be in [0, 2)"},
      {a, WireTree({7, 1}, {-1, 0}), grpc::StatusCode::INVALID_ARGUMENT, "b.tokens[0] = 7"},
      {a, WireTree({5, 1}, {-1}), grpc::StatusCode::INVALID_ARGUMENT, "b.parents: length 1"},
      {a, WireTree({}, {}), grpc::StatusCode::INVALID_ARGUMENT, "b.tokens: empty"},
      {WireTree(big_tokens, big_parents), b, grpc::StatusCode::RESOURCE_EXHAUSTED,
       "a.tokens: 600 nodes"},
      {a, WireTree({5, 1}, {-1, 0}, {1, 1.5}), grpc::StatusCode::INVALID_ARGUMENT,
       "b.path_probs[1] = 1.5"},
  };
  for (const MergeBad& mb : bad) {
    v1::MergeTreesRequest req;
    *req.mutable_a() = mb.a;
    *req.mutable_b() = mb.b;
    v1::MergeTreesResponse resp;
    grpc::ClientContext ctx;
    const grpc::Status st = stub().MergeTrees(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), mb.code) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(mb.substring));
  }
}

// ---------------------------------------------------------------------------------------------
// EstimateLatency

TEST_F(ServiceTest, EstimateLatencyMatchesCostModelOnAGrid) {
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  v1::EstimateLatencyRequest req;
  *req.mutable_cost() = InlineCost(0);
  req.mutable_cost()->mutable_drafter()->set_drafter_class("ar");
  req.mutable_cost()->mutable_drafter()->set_gamma(5);
  req.mutable_cost()->mutable_drafter()->set_t_net_s(1e-3);
  req.mutable_cost()->set_t_aux_s(2e-4);
  for (int64_t s : {1, 17, 64, 1024}) req.add_s(s);
  for (int64_t c : {0, 1024, 32768}) req.add_c(c);
  req.set_roofline_terms(true);
  v1::EstimateLatencyResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub().EstimateLatency(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.points_size(), 12);
  EXPECT_EQ(resp.latency_model(), "roofline");
  costmodel::DrafterCost drafter;
  drafter.cls = costmodel::DrafterClass::kAutoregressive;
  drafter.gamma = 5;
  drafter.t_net_s = 1e-3;
  int i = 0;
  for (int64_t c : {0, 1024, 32768}) {
    const costmodel::CycleCost cycle(&roofline, drafter, 2e-4, c);
    for (int64_t s : {1, 17, 64, 1024}) {
      const v1::LatencyPoint& p = resp.points(i++);
      EXPECT_EQ(p.s(), s);
      EXPECT_EQ(p.c(), c);
      EXPECT_DOUBLE_EQ(p.verify_s(), roofline.VerifySeconds(s, c));
      EXPECT_DOUBLE_EQ(p.cycle_s(), cycle.Seconds(s - 1));
      EXPECT_DOUBLE_EQ(p.draft_s(), 5e-3);
      const costmodel::RooflineEstimate e = roofline.Estimate(s, c);
      EXPECT_DOUBLE_EQ(p.roofline_memory_s(), e.memory_s);
      EXPECT_EQ(p.roofline_bound(), costmodel::BoundName(e.bound));
    }
  }
  // With the stored profile: its default model.
  v1::EstimateLatencyRequest req2;
  *req2.mutable_cost()->mutable_profile() = Ref();
  req2.add_s(33);
  req2.add_c(700);
  v1::EstimateLatencyResponse resp2;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub().EstimateLatency(&ctx2, req2, &resp2).ok());
  auto model = costmodel::MakeLatencyModel(profile_);
  ASSERT_TRUE(model.ok());
  EXPECT_DOUBLE_EQ(resp2.points(0).verify_s(), (*model)->VerifySeconds(33, 700));

  // Bad grids.
  v1::EstimateLatencyRequest bad = req;
  bad.set_s(1, 0);
  grpc::ClientContext ctx3;
  grpc::Status st = stub().EstimateLatency(&ctx3, bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("s[1] = 0"));
  bad = req;
  bad.clear_s();
  bad.clear_c();
  for (int k = 0; k < 300; ++k) bad.add_s(k + 1);
  for (int k = 0; k < 300; ++k) bad.add_c(k);
  grpc::ClientContext ctx4;
  st = stub().EstimateLatency(&ctx4, bad, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("300 x 300 = 90000 points"));
}

// ---------------------------------------------------------------------------------------------
// Profiles

TEST_F(ServiceTest, ListAndGetProfiles) {
  v1::ListProfilesResponse list;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub().ListProfiles(&ctx, v1::ListProfilesRequest(), &list).ok());
  ASSERT_EQ(list.profiles_size(), 1);
  const v1::ProfileInfo& info = list.profiles(0);
  EXPECT_EQ(info.id(), "a100-80g/qwen3-4b-bf16");
  EXPECT_EQ(info.model(), "qwen3-4b");
  EXPECT_EQ(info.dtype(), "bf16");
  EXPECT_EQ(info.default_model(), profile_.default_model);
  EXPECT_THAT(info.latency_models(), ::testing::Contains("roofline"));
  EXPECT_THAT(info.latency_models(), ::testing::Contains("linear"));
  EXPECT_EQ(info.path(), profile_path_);

  v1::GetProfileRequest get;
  *get.mutable_profile() = Ref();
  v1::GetProfileResponse got;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub().GetProfile(&ctx2, get, &got).ok());
  auto parsed = costmodel::ProfileFromJson(nlohmann::json::parse(got.profile_json()));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(costmodel::ProfileToJson(*parsed), costmodel::ProfileToJson(profile_));
  EXPECT_EQ(got.acceptance().steps(), 0);
  EXPECT_DOUBLE_EQ(got.correction().bias(), 1.0);

  get.mutable_profile()->set_model("qwen3-14b");
  grpc::ClientContext ctx3;
  const grpc::Status st = stub().GetProfile(&ctx3, get, &got);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("profile: no profile 'a100-80g/qwen3-14b-bf16'"));
}

TEST_F(ServiceTest, PutProfileWithoutTokenIsRefusedAndChangesNothing) {
  const std::string before = ReadAll(profile_path_);
  v1::PutProfileRequest req;
  req.set_profile_json(costmodel::ProfileToJson(SyntheticProfile(2.0)).dump());
  for (const char* auth : {"", "Bearer wrong", "s3cret", "Basic s3cret"}) {
    SCOPED_TRACE(auth);
    grpc::ClientContext ctx;
    if (auth[0] != '\0') ctx.AddMetadata("authorization", auth);
    v1::PutProfileResponse resp;
    const grpc::Status st = stub().PutProfile(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(st.error_message(), HasSubstr("authorization"));
  }
  // Authorised but invalid: INVALID_ARGUMENT naming the field, nothing changes either.
  nlohmann::json broken = costmodel::ProfileToJson(SyntheticProfile(2.0));
  broken["models"]["linear"]["a"] = "x";
  for (const std::string& text : {std::string("{not json"), broken.dump()}) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    v1::PutProfileRequest bad;
    bad.set_profile_json(text);
    v1::PutProfileResponse resp;
    const grpc::Status st = stub().PutProfile(&ctx, bad, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("profile_json"));
  }
  nlohmann::json escape = costmodel::ProfileToJson(SyntheticProfile(2.0));
  escape["gpu"] = "../evil";
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    v1::PutProfileRequest bad;
    bad.set_profile_json(escape.dump());
    v1::PutProfileResponse resp;
    const grpc::Status st = stub().PutProfile(&ctx, bad, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("profile_json.gpu = '../evil'"));
  }
  EXPECT_EQ(ReadAll(profile_path_), before);
  v1::GetProfileRequest get;
  *get.mutable_profile() = Ref();
  v1::GetProfileResponse got;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub().GetProfile(&ctx, get, &got).ok());
  EXPECT_EQ(nlohmann::json::parse(got.profile_json()), costmodel::ProfileToJson(profile_));
  // Only the original file exists (no temp files or escaped paths).
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(ServiceTest, PutProfileReplacesTheFileAndIsUsedAtOnce) {
  const costmodel::Profile v2 = SyntheticProfile(2.0);
  v1::PutProfileRequest req;
  req.set_profile_json(costmodel::ProfileToJson(v2).dump());
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");
  v1::PutProfileResponse resp;
  const grpc::Status st = stub().PutProfile(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(resp.replaced());
  EXPECT_EQ(resp.info().id(), "a100-80g/qwen3-4b-bf16");
  EXPECT_EQ(resp.info().path(), profile_path_);
  auto on_disk = costmodel::LoadProfile(profile_path_);
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(costmodel::ProfileToJson(*on_disk), costmodel::ProfileToJson(v2));

  auto model = costmodel::MakeLatencyModel(v2);
  auto old_model = costmodel::MakeLatencyModel(profile_);
  ASSERT_TRUE(model.ok() && old_model.ok());
  v1::EstimateLatencyRequest est;
  *est.mutable_cost()->mutable_profile() = Ref();
  est.add_s(64);
  est.add_c(512);
  v1::EstimateLatencyResponse er;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub().EstimateLatency(&ctx2, est, &er).ok());
  EXPECT_DOUBLE_EQ(er.points(0).verify_s(), (*model)->VerifySeconds(64, 512));
  EXPECT_GT(er.points(0).verify_s(), 1.5 * (*old_model)->VerifySeconds(64, 512));

  // A new id is created under its canonical path and listed.
  costmodel::Profile other = v2;
  other.dtype = costmodel::DType::kFloat16;
  other.model_spec.dtype = costmodel::DType::kFloat16;
  v1::PutProfileRequest req3;
  req3.set_profile_json(costmodel::ProfileToJson(other).dump());
  grpc::ClientContext ctx3;
  ctx3.AddMetadata("authorization", "Bearer s3cret");
  ASSERT_TRUE(stub().PutProfile(&ctx3, req3, &resp).ok());
  EXPECT_FALSE(resp.replaced());
  EXPECT_TRUE(fs::exists(dir_ / "a100-80g" / "qwen3-4b-fp16.json"));
  v1::ListProfilesResponse list;
  grpc::ClientContext ctx4;
  ASSERT_TRUE(stub().ListProfiles(&ctx4, v1::ListProfilesRequest(), &list).ok());
  EXPECT_EQ(list.profiles_size(), 2);
}

TEST(ServiceNoAuth, PutProfileIsDisabledWithoutATokenFile) {
  const fs::path dir = TempDir("noauth");
  auto server = StartServerOn(dir);
  ASSERT_NE(server, nullptr);
  v1::PutProfileRequest req;
  req.set_profile_json(costmodel::ProfileToJson(SyntheticProfile()).dump());
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer anything");
  v1::PutProfileResponse resp;
  const grpc::Status st = server->stub->PutProfile(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(fs::is_empty(dir));
  server.reset();
  fs::remove_all(dir);
}

TEST_F(ServiceTest, ReportAcceptanceKeepsStatsAndEmaCorrection) {
  auto model = costmodel::MakeLatencyModel(profile_);
  ASSERT_TRUE(model.ok());
  v1::ReportAcceptanceRequest req;
  *req.mutable_profile() = Ref();
  for (int i = 0; i < 10; ++i) {
    v1::AcceptanceStep* s = req.add_steps();
    s->set_accepted_length(i % 4);
    s->set_draft_nodes(15);
    s->set_expected_accepted(3.0);
    s->set_context_tokens(512);
    s->set_verify_s(1.3 * (*model)->VerifySeconds(16, 512));  // 30% slower than predicted
  }
  v1::ReportAcceptanceResponse resp;
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");  // a write: the shared statistics
  ASSERT_TRUE(stub().ReportAcceptance(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.acceptance().steps(), 10);
  EXPECT_EQ(resp.acceptance().accepted_tokens(), 0 + 1 + 2 + 3 + 0 + 1 + 2 + 3 + 0 + 1);
  EXPECT_DOUBLE_EQ(resp.acceptance().mean_accepted(), 1.3);
  EXPECT_DOUBLE_EQ(resp.acceptance().acceptance_rate(), 13.0 / 150);
  EXPECT_NEAR(resp.acceptance().realised_over_expected(), (13.0 + 10) / 10 / 3.0, 1e-12);
  // The gate estimator's kappa: EMA (factor 0.95) of the same ratios, starting at the first.
  double kappa = 0;
  for (int i = 0; i < 10; ++i) {
    const double r = (i % 4 + 1.0) / 3.0;
    kappa = i == 0 ? r : 0.95 * kappa + 0.05 * r;
  }
  EXPECT_NEAR(resp.acceptance().realised_over_expected_recent(), kappa, 1e-12);
  EXPECT_EQ(resp.correction().observations(), 10);
  EXPECT_DOUBLE_EQ(resp.correction().alpha(), 0.1);
  const double want_bias = 1 + 0.3 * (1 - std::pow(0.9, 10));  // EMA from 1 towards 1.3
  EXPECT_NEAR(resp.correction().bias(), want_bias, 1e-9);

  // GetProfile reports the same, and latency_model "ema" plans with the corrected model.
  v1::GetProfileRequest get;
  *get.mutable_profile() = Ref();
  v1::GetProfileResponse got;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub().GetProfile(&ctx2, get, &got).ok());
  EXPECT_EQ(got.acceptance().steps(), 10);
  EXPECT_NEAR(got.correction().bias(), want_bias, 1e-9);
  v1::EstimateLatencyRequest est;
  *est.mutable_cost()->mutable_profile() = Ref();
  est.mutable_cost()->mutable_profile()->set_latency_model("ema");
  est.add_s(16);
  est.add_c(512);
  v1::EstimateLatencyResponse er;
  grpc::ClientContext ctx3;
  ASSERT_TRUE(stub().EstimateLatency(&ctx3, est, &er).ok());
  EXPECT_NEAR(er.points(0).verify_s(), want_bias * (*model)->VerifySeconds(16, 512), 1e-15);

  // Bad steps are refused as a whole: nothing is counted.
  req.mutable_steps(3)->set_draft_nodes(1);
  grpc::ClientContext ctx4;
  ctx4.AddMetadata("authorization", "Bearer s3cret");
  grpc::Status st = stub().ReportAcceptance(&ctx4, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("steps[3].draft_nodes = 1"));
  req.mutable_steps(3)->set_draft_nodes(15);
  req.mutable_steps(5)->set_verify_s(std::nan(""));
  grpc::ClientContext ctx5;
  ctx5.AddMetadata("authorization", "Bearer s3cret");
  st = stub().ReportAcceptance(&ctx5, req, &resp);
  EXPECT_THAT(st.error_message(), HasSubstr("steps[5].verify_s = nan"));
  req.mutable_profile()->set_model("qwen3-14b");
  req.mutable_steps(5)->set_verify_s(0);
  grpc::ClientContext ctx6;
  ctx6.AddMetadata("authorization", "Bearer s3cret");
  st = stub().ReportAcceptance(&ctx6, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext ctx7;
  ASSERT_TRUE(stub().GetProfile(&ctx7, get, &got).ok());
  EXPECT_EQ(got.acceptance().steps(), 10);
}

// ---------------------------------------------------------------------------------------------
// Health, stats, concurrency, deadlines

TEST_F(ServiceTest, HealthIsServingAndStatsCountCalls) {
  grpc::Status st;
  EXPECT_EQ(HealthCheck(server_->channel, "", &st), 1) << st.error_message();
  EXPECT_EQ(HealthCheck(server_->channel, "specplan.v1.Planner", &st), 1) << st.error_message();
  for (int i = 0; i < 5; ++i) {
    grpc::ClientContext ctx;
    v1::PingResponse pong;
    ASSERT_TRUE(stub().Ping(&ctx, v1::PingRequest(), &pong).ok());
  }
  {
    grpc::ClientContext ctx;
    v1::PlanTreeRequest bad;
    v1::PlanTreeResponse resp;
    EXPECT_FALSE(stub().PlanTree(&ctx, bad, &resp).ok());
  }
  grpc::ClientContext ctx;
  ctx.AddMetadata("x-request-id", "abc-123");
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub().GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  auto it = ctx.GetServerTrailingMetadata().find("x-request-id");
  ASSERT_NE(it, ctx.GetServerTrailingMetadata().end());
  EXPECT_EQ(std::string(it->second.data(), it->second.size()), "abc-123");
  std::map<std::string, v1::MethodStats> by_name;
  for (const auto& m : stats.methods()) by_name[m.method()] = m;
  ASSERT_TRUE(by_name.count("Ping"));
  EXPECT_EQ(by_name["Ping"].requests(), 5);
  EXPECT_EQ(by_name["Ping"].errors(), 0);
  EXPECT_GT(by_name["Ping"].p50_us(), 0);
  EXPECT_LE(by_name["Ping"].p50_us(), by_name["Ping"].p99_us());
  EXPECT_EQ(by_name["PlanTree"].requests(), 1);
  EXPECT_EQ(by_name["PlanTree"].errors(), 1);
  EXPECT_GT(stats.uptime_s(), 0);
}

TEST_F(ServiceTest, ManyConcurrentClientsGetIdenticalPlans) {
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = RandomMarginals(16, 8, 77);
  *req.mutable_cost() = InlineCost(2048);
  req.set_n_max(256);
  v1::PlanTreeResponse want;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub().PlanTree(&ctx, req, &want).ok());
  }
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      // Half the clients on their own channel.
      auto channel =
          t % 2 ? grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->running->port),
                                      grpc::InsecureChannelCredentials())
                : server_->channel;
      auto stub = v1::Planner::NewStub(channel);
      for (int i = 0; i < 40; ++i) {
        grpc::ClientContext ctx;
        v1::PlanTreeResponse got;
        if (!stub->PlanTree(&ctx, req, &got).ok()) {
          ++failures;
          continue;
        }
        got.set_plan_us(want.plan_us());
        if (got.SerializeAsString() != want.SerializeAsString()) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(ServiceTest, ExpiredDeadlineIsDeadlineExceeded) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() - std::chrono::milliseconds(1));
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = RandomMarginals(4, 4, 1);
  *req.mutable_cost() = InlineCost(0);
  v1::PlanTreeResponse resp;
  EXPECT_EQ(stub().PlanTree(&ctx, req, &resp).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

// ---------------------------------------------------------------------------------------------
// PlanSession

// Deterministic drafter: node u's candidates are tokens 10 * u + j + 1 with probs 0.6, 0.25, 0.1,
// 0.04, ... (first `k`), identical on both sides of the wire.
void FillDists(const std::vector<int32_t>& nodes, int k, planner::NodeDistributions* d) {
  d->nodes = nodes;
  d->ResizeRows(k);
  static const float kProbs[] = {0.6f, 0.25f, 0.1f, 0.04f, 0.005f, 0.003f, 0.001f, 0.0005f};
  for (int r = 0; r < d->num_nodes(); ++r) {
    for (int j = 0; j < k; ++j) d->Set(r, j, 10 * nodes[r] + j + 1, kProbs[j % 8]);
  }
}

v1::NodeDistributions ToWire(const planner::NodeDistributions& d) {
  v1::NodeDistributions w;
  w.mutable_nodes()->Assign(d.nodes.begin(), d.nodes.end());
  w.set_k(d.k);
  w.mutable_tokens()->Assign(d.tokens.begin(), d.tokens.end());
  w.mutable_probs()->Assign(d.probs.begin(), d.probs.end());
  return w;
}

using Stream = grpc::ClientReaderWriter<v1::SessionClientMessage, v1::SessionServerMessage>;

// Answers expand requests until the final plan arrives; returns it.
v1::SessionPlan DriveToFinal(Stream* stream, const v1::SessionServerMessage& first, int k,
                             int* forwards) {
  v1::SessionServerMessage msg = first;
  *forwards = 0;
  while (msg.has_expand()) {
    const auto& e = msg.expand();
    std::vector<int32_t> nodes(e.nodes().begin(), e.nodes().end());
    planner::NodeDistributions d;
    FillDists(nodes, e.k() > 0 ? e.k() : k, &d);
    v1::SessionClientMessage out;
    *out.mutable_distributions() = ToWire(d);
    EXPECT_TRUE(stream->Write(out));
    EXPECT_TRUE(stream->Read(&msg));
    ++*forwards;
  }
  EXPECT_TRUE(msg.has_final_plan());
  return msg.final_plan();
}

TEST_F(ServiceTest, PlanSessionDrivesFixedPolicyToCompletionOverSteps) {
  planner::FixedTreeOptions fo;
  fo.depth = 3;
  fo.branch = 2;
  fo.tau = 0.0;
  fo.max_nodes = 10;
  auto reference = planner::FixedTreePolicy::Create(fo);
  ASSERT_TRUE(reference.ok());
  const planner::DrafterFn drafter = [](const planner::Tree&, planner::NodeDistributions& d) {
    FillDists(d.nodes, 3, &d);
    return absl::OkStatus();
  };

  grpc::ClientContext ctx;
  auto stream = stub().PlanSession(&ctx);
  v1::SessionClientMessage start;
  start.mutable_start()->set_root_token(42);
  start.mutable_start()->set_context_tokens(100);
  auto* fixed = start.mutable_start()->mutable_fixed();
  fixed->set_depth(3);
  fixed->set_branch(2);
  fixed->set_tau(0.0);
  fixed->set_max_nodes(10);
  ASSERT_TRUE(stream->Write(start));
  for (int step = 0; step < 3; ++step) {
    const int32_t root = 42 + step;
    v1::SessionServerMessage first;
    ASSERT_TRUE(stream->Read(&first));
    int forwards = 0;
    const v1::SessionPlan plan = DriveToFinal(stream.get(), first, 3, &forwards);
    auto want = planner::RunPolicy(**reference, root, drafter);
    ASSERT_TRUE(want.ok());
    ExpectTreeEq(**want, plan.plan().tree());
    EXPECT_EQ(plan.step(), step);
    EXPECT_EQ(plan.plan().n(), 10);
    EXPECT_EQ(forwards, 3);
    EXPECT_EQ(plan.forwards(), 3);
    EXPECT_EQ(plan.policy(), (*reference)->Name());
    EXPECT_EQ(plan.outputs().positions(0), 100);
    EXPECT_EQ(plan.outputs().size(), 11);

    v1::SessionClientMessage observe;
    observe.set_observe_accepted_length(2);
    ASSERT_TRUE(stream->Write(observe));
    v1::SessionServerMessage observed;
    ASSERT_TRUE(stream->Read(&observed));
    ASSERT_TRUE(observed.has_observed());
    EXPECT_EQ(observed.observed().observed_steps(), step + 1);
    if (step < 2) {
      v1::SessionClientMessage next;
      next.set_next_step_root_token(root + 1);
      ASSERT_TRUE(stream->Write(next));
    }
  }
  stream->WritesDone();
  const grpc::Status st = stream->Finish();
  EXPECT_TRUE(st.ok()) << st.error_message();
}

TEST_F(ServiceTest, PlanSessionLinearAndPathConditionedBestFirstMatchInProcess) {
  // Linear chain K = 5.
  {
    grpc::ClientContext ctx;
    auto stream = stub().PlanSession(&ctx);
    v1::SessionClientMessage start;
    start.mutable_start()->set_root_token(3);
    start.mutable_start()->mutable_linear()->set_k(5);
    ASSERT_TRUE(stream->Write(start));
    v1::SessionServerMessage first;
    ASSERT_TRUE(stream->Read(&first));
    int forwards = 0;
    const v1::SessionPlan plan = DriveToFinal(stream.get(), first, 2, &forwards);
    EXPECT_EQ(forwards, 5);
    EXPECT_EQ(plan.plan().n(), 5);
    EXPECT_THAT(plan.plan().tree().parents(), ::testing::ElementsAre(-1, 0, 1, 2, 3, 4));
    EXPECT_THAT(plan.plan().tree().tokens(), ::testing::ElementsAre(3, 1, 11, 21, 31, 41));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  // Path-conditioned best-first, controller mode with an inline cost.
  struct Provider : planner::DistributionProvider {
    absl::Status Expand(const planner::Tree&, absl::Span<const int32_t> nodes, int k,
                        absl::Span<planner::TokenProb> out, absl::Span<int32_t> counts) override {
      planner::NodeDistributions d;
      FillDists(std::vector<int32_t>(nodes.begin(), nodes.end()), k, &d);
      for (size_t i = 0; i < nodes.size(); ++i) {
        counts[i] = k;
        for (int j = 0; j < k; ++j) out[i * k + j] = {d.token(i, j), d.prob(i, j)};
      }
      return absl::OkStatus();
    }
  } provider;
  for (auto mode : {v1::BUDGET_MODE_CONTROLLER, v1::BUDGET_MODE_SCAN}) {
    const costmodel::RooflineLatency latency(*costmodel::LookupModel("qwen3-8b"),
                                             *costmodel::LookupGpu("h100"));
    costmodel::DrafterCost drafter;
    drafter.gamma = 6;
    const costmodel::CycleCost cost(&latency, drafter, 0, 4096);
    planner::PathConditionedOptions po;
    po.budget.mode = mode == v1::BUDGET_MODE_SCAN ? planner::BudgetMode::kScan
                                                  : planner::BudgetMode::kController;
    po.budget.n_max = 48;
    po.gamma = 6;
    po.k = 4;
    planner::PathConditionedPlanner pc;
    planner::BestFirstPlan want;
    ASSERT_TRUE(pc.Run(9, po, &cost, provider, &want).ok());

    grpc::ClientContext ctx;
    auto stream = stub().PlanSession(&ctx);
    v1::SessionClientMessage start;
    start.mutable_start()->set_root_token(9);
    auto* bf = start.mutable_start()->mutable_best_first();
    *bf->mutable_cost() = InlineCost(4096);
    bf->set_mode(mode);
    bf->set_n_max(48);
    bf->set_gamma(6);
    bf->set_k(4);
    ASSERT_TRUE(stream->Write(start));
    v1::SessionServerMessage first;
    ASSERT_TRUE(stream->Read(&first));
    int forwards = 0;
    const v1::SessionPlan plan = DriveToFinal(stream.get(), first, 4, &forwards);
    ExpectTreeEq(want.tree, plan.plan().tree());
    EXPECT_EQ(plan.plan().n(), want.n);
    EXPECT_DOUBLE_EQ(plan.plan().speedup(), want.speedup);
    EXPECT_EQ(forwards, pc.num_requests());
    EXPECT_EQ(plan.outputs().positions(0), 4096);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
}

// A server with --max-sessions 2: two open streams are served, a third is refused with
// RESOURCE_EXHAUSTED naming the limit, and once one closes a new one is served again.
class SessionLimitTest : public ServerFixture {
 protected:
  void SetUp() override {
    dir_ = TempDir("sessions");
    ServerConfig config;
    config.service.limits.max_sessions = 2;
    StartServer(config);
  }
};

struct OpenSession {
  grpc::ClientContext ctx;
  std::unique_ptr<Stream> stream;
};

// Opens a stream and starts a fixed-tree session; true when the server answered its first step.
bool Open(v1::Planner::Stub& stub, OpenSession* s) {
  s->stream = stub.PlanSession(&s->ctx);
  v1::SessionClientMessage start;
  start.mutable_start()->set_root_token(42);
  start.mutable_start()->set_context_tokens(100);
  auto* fixed = start.mutable_start()->mutable_fixed();
  fixed->set_depth(2);
  fixed->set_branch(2);
  fixed->set_max_nodes(4);
  if (!s->stream->Write(start)) return false;
  v1::SessionServerMessage first;
  return s->stream->Read(&first);
}

TEST_F(SessionLimitTest, StreamsPastTheLimitAreRefused) {
  OpenSession a, b, c;
  ASSERT_TRUE(Open(stub(), &a));
  ASSERT_TRUE(Open(stub(), &b));
  EXPECT_FALSE(Open(stub(), &c));
  const grpc::Status refused = c.stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("2 streams are open"));
  EXPECT_THAT(refused.error_message(), HasSubstr("--max-sessions 2"));
  a.stream->WritesDone();
  EXPECT_TRUE(a.stream->Finish().ok());
  OpenSession d;
  EXPECT_TRUE(Open(stub(), &d));
  for (OpenSession* s : {&b, &d}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

TEST(ServiceLimits, MaxSessionsIsChecked) {
  ServiceLimits l;
  EXPECT_TRUE(ValidateLimits(l).ok());
  l.max_sessions = 0;
  EXPECT_THAT(std::string(ValidateLimits(l).message()), HasSubstr("--max-sessions = 0"));
}

TEST_F(ServiceTest, PlanSessionRejectsBadMessagesNamingTheField) {
  using Message = v1::SessionClientMessage;
  // Each case writes one bad message (after a valid fixed-tree start where `after_start`, whose
  // first expand the message may answer), after which the stream must fail.
  struct Case {
    const char* name;
    bool after_start;
    std::function<void(const v1::SessionServerMessage& expand, Message* m)> fill;
    grpc::StatusCode code;
    const char* substring;
  };
  const std::vector<Case> cases = {
      {"distributions before start", false,
       [](const auto&, Message* m) { m->mutable_distributions()->set_k(1); },
       grpc::StatusCode::FAILED_PRECONDITION, "distributions: send start first"},
      {"no policy", false, [](const auto&, Message* m) { m->mutable_start()->set_root_token(1); },
       grpc::StatusCode::INVALID_ARGUMENT, "start.policy: required"},
      {"bad fixed option", false,
       [](const auto&, Message* m) { m->mutable_start()->mutable_fixed()->set_tau(2.0); },
       grpc::StatusCode::INVALID_ARGUMENT, "start.fixed.tau"},
      {"budget over limit", false,
       [](const auto&, Message* m) { m->mutable_start()->mutable_dynatree()->set_n_max(10000); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "start.dynatree.n_max = 10000"},
      {"unknown best_first profile", false,
       [](const auto&, Message* m) {
         auto* p = m->mutable_start()->mutable_best_first()->mutable_cost()->mutable_profile();
         p->set_gpu("h100");
         p->set_model("nope");
       },
       grpc::StatusCode::NOT_FOUND, "start.best_first.cost.profile: no profile"},
      {"prob out of range", true,
       [](const v1::SessionServerMessage& e, Message* m) {
         planner::NodeDistributions d;
         FillDists({e.expand().nodes().begin(), e.expand().nodes().end()}, 3, &d);
         d.probs[1] = 1.5f;
         *m->mutable_distributions() = ToWire(d);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "distributions.probs[0][1] = 1.5"},
      {"wrong nodes", true,
       [](const auto&, Message* m) {
         planner::NodeDistributions d;
         FillDists({5}, 3, &d);
         *m->mutable_distributions() = ToWire(d);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "distributions.nodes[0] = 5"},
      {"observe before final", true,
       [](const auto&, Message* m) { m->set_observe_accepted_length(1); },
       grpc::StatusCode::FAILED_PRECONDITION, "observe_accepted_length"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    grpc::ClientContext ctx;
    auto stream = stub().PlanSession(&ctx);
    v1::SessionServerMessage expand;
    if (c.after_start) {
      Message start;
      start.mutable_start()->set_root_token(1);
      start.mutable_start()->mutable_fixed()->set_depth(2);
      stream->Write(start);
      stream->Read(&expand);
    }
    Message m;
    c.fill(expand, &m);
    stream->Write(m);
    stream->WritesDone();
    v1::SessionServerMessage drain;
    while (stream->Read(&drain)) {
    }
    const grpc::Status st = stream->Finish();
    EXPECT_EQ(st.error_code(), c.code) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(c.substring));
  }
}

}  // namespace
}  // namespace specplan::service
