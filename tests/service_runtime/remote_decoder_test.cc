// The runtime's decoders planning through the real specplan-server (client/client.h's
// RemotePlanBackend): a decoder that plans remotely emits the same tokens as one that plans
// in-process, with every step's remote plan equal to the in-process plan (one sequence, and a batch
// through PlanBatch), and specplan-bench --planner end to end. Its own binary because it is the one
// test that links both the runtime (LibTorch) and the gRPC client: service_tests stays free of
// LibTorch, whose loading costs every test process of a binary that links it most of a second.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "client/client.h"
#include "costmodel/latency/latency_model.h"
#include "planner/batch/plan_backend.h"
#include "runtime/batch_decoder.h"
#include "runtime/decoder.h"
#include "runtime/measured_latency.h"
#include "tests/paths/test_paths.h"
#include "tests/planner/plan_test_util.h"
#include "tests/runtime/test_models.h"
#include "tests/service/remote_backend_fixture.h"
#include "util/status_macros.h"

namespace specplan::client {
namespace {

namespace fs = std::filesystem;

using planner::testing::ExpectSameMerge;
using planner::testing::ExpectSamePlan;
using testing::RemoteBackendTest;

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

}  // namespace
}  // namespace specplan::client
