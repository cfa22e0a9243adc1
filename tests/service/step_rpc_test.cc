// The engine's whole step over the wire (planner.proto DrafterCost.architecture): EstimateLatency
// returns the step the in-process costmodel::StepModel prices from the same stored profile
// (composed drafter tables, engine host defaults), a drafter the profile holds no table for is
// priced by its roofline, PlanTree prices its cycle through costmodel::PlannerTermsFor as the CLI
// does, a request without an architecture is answered as before, and bad step fields are refused
// naming the field and value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"
#include "planner/policies/best_first.h"
#include "service/planner_service.h"
#include "service/profile_store.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"

namespace specplan::service {
namespace {

using ::testing::HasSubstr;
using namespace specplan::service::testing;

bool Same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
#define EXPECT_SAME(a, b) EXPECT_TRUE(Same((a), (b))) << #a << " = " << (a) << " vs " << (b)

// The bundled engine-grade profile of h100 x qwen3-8b under SGLang (with eagle, eagle3 and mtp
// tables) and a fitted a100 x qwen3-4b profile without drafter tables, in one store.
class StepRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<ProfileStore>(TempDir("step").string(), 0.1);
    auto composed = costmodel::LoadProfile(::specplan::test_paths::SourceDir() +
                                           "/calib/h100-sxm/qwen3-8b-bf16@sglang.json");
    ASSERT_TRUE(composed.ok()) << composed.status();
    ASSERT_FALSE(composed->drafters.empty());
    composed_ = *composed;
    bool replaced = false;
    ASSERT_TRUE(store_->Put(*composed, &replaced).ok());
    fitted_ = SyntheticProfile(1.0);
    ASSERT_TRUE(fitted_.drafters.empty());
    ASSERT_TRUE(store_->Put(fitted_, &replaced).ok());
    ServiceOptions options;
    options.log_requests = false;
    service_ = std::make_unique<PlannerService>(store_.get(), options);
  }

  // A cost naming the composed profile (or the fitted one) and `architecture`.
  static v1::CostSpec Cost(bool composed, const std::string& architecture) {
    v1::CostSpec cost;
    cost.mutable_profile()->set_gpu(composed ? "h100" : "a100");
    cost.mutable_profile()->set_model(composed ? "qwen3-8b" : "qwen3-4b");
    cost.mutable_drafter()->set_architecture(architecture);
    return cost;
  }

  // The in-process step model of `profile` (its default latency model, tables and engine).
  struct InProcess {
    std::unique_ptr<costmodel::LatencyModel> verify;
    std::optional<costmodel::StepModel> step;
  };
  static InProcess Reference(const costmodel::Profile& profile,
                             const costmodel::StepOptions& options) {
    InProcess r;
    auto verify = costmodel::MakeLatencyModel(profile, "");
    EXPECT_TRUE(verify.ok()) << verify.status();
    r.verify = *std::move(verify);
    auto step = costmodel::StepModel::Create(r.verify.get(), profile.model_spec, profile.gpu_spec,
                                             &profile.drafters, profile.engine, options);
    EXPECT_TRUE(step.ok()) << step.status();
    r.step = *std::move(step);
    return r;
  }

  absl::Status Estimate(const v1::CostSpec& cost, int64_t s, int64_t c,
                        v1::EstimateLatencyResponse* resp) {
    v1::EstimateLatencyRequest req;
    *req.mutable_cost() = cost;
    req.add_s(s);
    req.add_c(c);
    return service_->DoEstimateLatency(req, resp);
  }

  std::unique_ptr<ProfileStore> store_;
  std::unique_ptr<PlannerService> service_;
  costmodel::Profile composed_, fitted_;
};

void ExpectStepEq(const v1::StepBreakdown& got, const costmodel::StepBreakdown& want) {
  EXPECT_SAME(got.verify_s(), want.verify_s);
  EXPECT_SAME(got.draft_s(), want.draft_s);
  EXPECT_SAME(got.sample_s(), want.sample_s);
  EXPECT_SAME(got.host_s(), want.host_s);
  EXPECT_SAME(got.step_s(), want.step_s());
  EXPECT_EQ(got.draft_forwards(), want.draft_forwards);
}

// Every HostTime term crosses the wire (convert.cc goes field by field through HostTimeTerms by
// name): distinct values per term, then back.
TEST(HostTimeWire, EveryTermRoundTrips) {
  costmodel::HostTime h;
  double v = 0.125;
  for (const costmodel::HostTimeTerm& t : costmodel::HostTimeTerms()) h.*t.member = (v /= 2);
  h.provenance = "test";
  v1::HostTime wire;
  HostTimeToProto(h, &wire);
  EXPECT_EQ(wire.step_s(), h.step_s);
  EXPECT_EQ(wire.ngram_verify_fraction(), h.ngram_verify_fraction);
  const costmodel::HostTime back = HostTimeFromProto(wire);
  for (const costmodel::HostTimeTerm& t : costmodel::HostTimeTerms()) {
    EXPECT_EQ(back.*t.member, h.*t.member) << t.name;
  }
  EXPECT_EQ(back.provenance, "test");
}

TEST_F(StepRpcTest, EstimateReturnsTheStepModelsStepFromTheStoredProfile) {
  for (const auto& [s, topk, draft_steps] :
       std::vector<std::tuple<int64_t, int, int>>{{4, 1, -1}, {9, 4, 3}, {1, 1, 0}}) {
    v1::CostSpec cost = Cost(true, "eagle3");
    cost.mutable_drafter()->set_topk(topk);
    if (draft_steps >= 0) {
      cost.mutable_drafter()->set_has_draft_steps(true);
      cost.mutable_drafter()->set_draft_steps(draft_steps);
    }
    v1::EstimateLatencyResponse resp;
    ASSERT_TRUE(Estimate(cost, s, 1024, &resp).ok());
    costmodel::StepOptions o;
    o.drafter = "eagle3";
    o.topk = topk;
    o.draft_steps = draft_steps;
    const InProcess want = Reference(composed_, o);
    ASSERT_EQ(resp.points_size(), 1);
    const v1::LatencyPoint& p = resp.points(0);
    ExpectStepEq(p.step(), want.step->Step(1, s, 1024));
    ExpectStepEq(p.ar_step(), want.step->ArStep(1, 1024));
    EXPECT_SAME(p.ar_step_s(), want.step->ArStep(1, 1024).step_s());
    EXPECT_EQ(p.step().draft_priced_by(), "kernel tables");
    EXPECT_EQ(p.step().draft_s() > 0, draft_steps != 0);
    // The verify pass and the cost class's cycle are unchanged by the step.
    EXPECT_SAME(p.verify_s(), want.verify->VerifySeconds(s, 1024));
    EXPECT_SAME(p.cycle_s(), p.verify_s());
    // The host time is SGLang's defaults, with their provenance.
    const costmodel::HostTime host = *costmodel::DefaultHostTime("sglang");
    EXPECT_SAME(resp.host().per_draft_forward_s(), host.per_draft_forward_s);
    EXPECT_SAME(resp.host().ngram_verify_fraction(), host.ngram_verify_fraction);
    EXPECT_EQ(resp.host().provenance(), host.provenance);
  }
}

TEST_F(StepRpcTest, ADrafterTheProfileCannotPriceIsPricedByItsRoofline) {
  // The fitted profile holds no drafter tables; the composed one none for a draft model.
  for (const auto& [composed, architecture] :
       std::vector<std::pair<bool, std::string>>{{false, "eagle3"}, {true, "draft:qwen3-0.6b"}}) {
    v1::EstimateLatencyResponse resp;
    ASSERT_TRUE(Estimate(Cost(composed, architecture), 4, 256, &resp).ok()) << architecture;
    costmodel::StepOptions o;
    o.drafter = architecture;
    const InProcess want = Reference(composed ? composed_ : fitted_, o);
    EXPECT_EQ(want.step->draft_priced_by(), "roofline");
    EXPECT_EQ(resp.points(0).step().draft_priced_by(), "roofline") << architecture;
    EXPECT_GT(resp.points(0).step().draft_s(), 0);
    ExpectStepEq(resp.points(0).step(), want.step->Step(1, 4, 256));
  }
  // ngram drafts on the host only: its proposal is the fraction of the step's verify pass, as
  // in process.
  v1::EstimateLatencyResponse resp;
  ASSERT_TRUE(Estimate(Cost(true, "ngram"), 4, 256, &resp).ok());
  costmodel::StepOptions o;
  o.drafter = "ngram";
  const InProcess want = Reference(composed_, o);
  const v1::StepBreakdown& ngram = resp.points(0).step();
  EXPECT_EQ(ngram.draft_priced_by(), "host only");
  EXPECT_EQ(ngram.draft_forwards(), 0);
  ExpectStepEq(ngram, want.step->Step(1, 4, 256));
  EXPECT_GT(ngram.draft_s(), 0);
  EXPECT_SAME(ngram.draft_s(), resp.host().ngram_verify_fraction() * ngram.verify_s());
  EXPECT_SAME(ngram.host_s(), resp.points(0).ar_step().host_s());
}

TEST_F(StepRpcTest, HostOverridesAndDraftingByHandReachTheStep) {
  v1::CostSpec cost = Cost(true, "eagle3");
  v1::HostTimeOverrides* h = cost.mutable_drafter()->mutable_host();
  h->set_has_step_s(true);
  h->set_step_s(1e-3);
  h->set_has_sample_call_s(true);
  h->set_sample_call_s(0);
  cost.mutable_drafter()->set_t_net_s(2e-3);  // T_draft by hand
  v1::EstimateLatencyResponse resp;
  ASSERT_TRUE(Estimate(cost, 4, 1024, &resp).ok());
  const v1::StepBreakdown& step = resp.points(0).step();
  EXPECT_EQ(step.draft_priced_by(), "given");
  EXPECT_SAME(step.draft_s(), 2e-3);
  EXPECT_SAME(step.sample_s(), 0.0);
  EXPECT_SAME(step.host_s(), 1e-3);  // SGLang's per-sequence default is 0
  EXPECT_SAME(resp.host().step_s(), 1e-3);
  EXPECT_THAT(resp.host().provenance(), HasSubstr("given in the request, over SGLang"));
  h->set_provenance("given on the command line");
  ASSERT_TRUE(Estimate(cost, 4, 1024, &resp).ok());
  EXPECT_THAT(resp.host().provenance(), HasSubstr("given on the command line, over SGLang"));
}

TEST_F(StepRpcTest, WithoutAnArchitectureTheAnswerIsTheVerifyPassAlone) {
  v1::EstimateLatencyResponse resp;
  ASSERT_TRUE(Estimate(Cost(true, ""), 4, 1024, &resp).ok());
  EXPECT_FALSE(resp.points(0).has_step());
  EXPECT_FALSE(resp.points(0).has_ar_step());
  EXPECT_EQ(resp.points(0).ar_step_s(), 0);
  EXPECT_FALSE(resp.has_host());
}

TEST_F(StepRpcTest, PlanTreePricesItsCycleThroughPlannerTermsFor) {
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = RandomMarginals(8, 4, 11);
  const planner::Marginals m = ToPlanner(req.marginals());
  *req.mutable_cost() = Cost(true, "eagle3");
  req.mutable_cost()->set_context_tokens(1024);
  req.set_n_max(64);
  v1::PlanTreeResponse resp;
  ASSERT_TRUE(service_->DoPlanTree(req, &resp).ok());

  costmodel::StepOptions o;
  o.drafter = "eagle3";
  const InProcess ref = Reference(composed_, o);
  const costmodel::PlannerStepTerms terms = costmodel::PlannerTermsFor(*ref.step, m.gamma, 1024);
  const costmodel::CycleCost cycle(ref.verify.get(), terms.drafter, terms.t_aux_s, 1024);
  planner::BestFirstOptions options;
  options.n_max = 64;
  options.l_ar_s = terms.l_ar_s;
  planner::BestFirstPlanner planner;
  planner::BestFirstPlan want;
  ASSERT_TRUE(planner.Plan(m, options, &cycle, &want).ok());
  EXPECT_EQ(resp.plan().n(), want.n);
  EXPECT_SAME(resp.plan().cycle_s(), want.cycle_s);
  EXPECT_SAME(resp.plan().l_ar_s(), terms.l_ar_s);
  EXPECT_SAME(resp.plan().speedup(), want.speedup);

  // A given L_AR stands.
  req.set_l_ar_s(0.5);
  ASSERT_TRUE(service_->DoPlanTree(req, &resp).ok());
  EXPECT_SAME(resp.plan().l_ar_s(), 0.5);
}

TEST_F(StepRpcTest, BadStepFieldsAreRefusedNamingTheField) {
  struct Case {
    std::function<void(v1::CostSpec*)> edit;
    std::string words;
  };
  // draft_steps = n, given explicitly (has_draft_steps).
  auto draft_steps = [](int n) {
    return [n](v1::CostSpec* c) {
      c->mutable_drafter()->set_has_draft_steps(true);
      c->mutable_drafter()->set_draft_steps(n);
    };
  };
  const std::vector<Case> cases = {
      {[](v1::CostSpec* c) { c->mutable_drafter()->set_architecture("medusa"); },
       "cost.drafter.architecture = 'medusa': unknown (known: eagle, eagle3"},
      {[](v1::CostSpec* c) { c->mutable_drafter()->set_architecture("draft:nope-9b"); },
       "cost.drafter.architecture"},
      {[](v1::CostSpec* c) { c->mutable_drafter()->set_topk(65); },
       "cost.drafter.topk = 65: must be in [1, 64]"},
      {draft_steps(65), "cost.drafter.draft_steps = 65"},
      {draft_steps(-2), "cost.drafter.draft_steps = -2"},
      {[](v1::CostSpec* c) { c->mutable_drafter()->set_draft_vocab(-1); },
       "cost.drafter.draft_vocab = -1"},
      {[](v1::CostSpec* c) {
         c->mutable_drafter()->mutable_host()->set_has_step_s(true);
         c->mutable_drafter()->mutable_host()->set_step_s(2);
       },
       "cost.drafter.host.step_s = 2: must be in [0, 1] seconds"},
      {[](v1::CostSpec* c) { c->mutable_drafter()->set_drafter_class("ar"); },
       "cost.drafter.drafter_class = 'ar': with architecture 'eagle3'"},
      {[](v1::CostSpec* c) { c->mutable_drafter()->set_t_net_s(20); },
       "cost.drafter.t_net_s + t_head_s + t_light_s = 20"},
      {[](v1::CostSpec* c) {
         c->clear_profile();
         c->mutable_latency_grid()->add_s(1);
         c->mutable_latency_grid()->add_seconds(1e-3);
       },
       "cost.drafter.architecture = 'eagle3': needs the target's shapes"},
  };
  for (const Case& k : cases) {
    v1::CostSpec cost = Cost(true, "eagle3");
    k.edit(&cost);
    v1::EstimateLatencyResponse resp;
    const absl::Status st = Estimate(cost, 4, 64, &resp);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << k.words << ": " << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr(k.words));
  }
}

}  // namespace
}  // namespace specplan::service
