// The strategy objects behind DraftStrategy: the factory makes each named strategy with the
// counters it should expose; the decode loop calls Observe once per verification step; peak
// memory resets and reads per phase.
#include <gtest/gtest.h>

#include <string>

#include "costmodel/latency/grid_latency.h"
#include "planner/batch/plan_backend.h"
#include "runtime/decoder.h"
#include "runtime/peak_memory.h"
#include "runtime/strategies/draft_strategy.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

using testing::TinyModel;

TEST(DraftStrategyTest, FactoryMakesEachNamedStrategy) {
  auto target = TinyModel("tiny", 3);
  auto draft = target->Truncated(1);
  planner::InProcessPlanBackend backend;
  const costmodel::GridLatency latency({1, 64}, {1e-3, 2e-3}, costmodel::GridSource::kMeasured);
  for (const char* name : {"ar", "linear", "fixed", "dynatree", "bestfirst", "lookup", "merged"}) {
    SCOPED_TRACE(name);
    const Strategy s = *ParseStrategy(name);
    StrategyContext ctx;
    ctx.target = target.get();
    ctx.draft = StrategyNeedsDraft(s) ? draft.get() : nullptr;
    ctx.max_len = 64;
    ctx.backend = &backend;
    // A strategy that prices steps needs a T_verify model (MakeStrategyContext measures one).
    if (StrategyNeedsLatency(StrategyOptions::Defaults(s))) {
      StrategyOptions none = StrategyOptions::Defaults(s);
      none.latency = nullptr;
      EXPECT_FALSE(CreateDraftStrategy(none, ctx).ok());
      ctx.latency = &latency;
    }
    auto strategy = CreateDraftStrategy(StrategyOptions::Defaults(s), ctx);
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    EXPECT_EQ(std::string((*strategy)->Name()), name);
    const bool has_policy = s == Strategy::kLinear || s == Strategy::kFixed ||
                            s == Strategy::kDynaTree || s == Strategy::kMerged;
    EXPECT_EQ((*strategy)->policy_stats() != nullptr, has_policy);
    EXPECT_EQ((*strategy)->PolicyName().empty(), !has_policy);
    EXPECT_EQ((*strategy)->drafter_counters() != nullptr, StrategyNeedsDraft(s));
    if (StrategyNeedsDraft(s)) {
      ctx.draft = nullptr;
      EXPECT_FALSE(CreateDraftStrategy(StrategyOptions::Defaults(s), ctx).ok());
    }
  }
}

TEST(DraftStrategyTest, PolicyObservesEveryVerificationStep) {
  auto target = TinyModel("tiny", 4);
  auto draft = target->Truncated(2);
  for (Strategy s : {Strategy::kLinear, Strategy::kDynaTree, Strategy::kMerged}) {
    SCOPED_TRACE(StrategyName(s));
    StrategyOptions o = StrategyOptions::Defaults(s);
    o.gate.enabled = false;  // every step drafts (with the gate, dynatree's policy sees fewer)
    auto dec = SpeculativeDecoder::Create(target.get(), draft.get(), o, 128);
    ASSERT_TRUE(dec.ok()) << dec.status();
    ASSERT_TRUE((*dec)->Generate({1, 2, 3, 1, 2, 3}, 24).ok());
    const planner::PolicyStats* ps = (*dec)->policy_stats();
    ASSERT_NE(ps, nullptr);
    EXPECT_EQ(ps->steps, (*dec)->counters().iterations());
    EXPECT_EQ(ps->observed_steps, (*dec)->counters().iterations());
    // The policy observes its own tree's accepted nodes only (all of them when not merged).
    if (s == Strategy::kMerged) {
      EXPECT_LE(ps->accepted, (*dec)->counters().accepted());
    } else {
      EXPECT_EQ(ps->accepted, (*dec)->counters().accepted());
    }
  }
}

TEST(PeakMemoryTest, ResetsAndReadsTheHostHighWaterMark) {
  const torch::Device cpu(torch::kCPU);
  if (!ResetPeakMemory(cpu)) GTEST_SKIP() << "/proc/self/clear_refs is not writable here";
  const PeakMemory before = ReadPeakMemory(cpu);
  EXPECT_GT(before.host_rss_bytes, 0);
  EXPECT_EQ(before.device_bytes, -1);  // not on CUDA
  {
    std::vector<char> big(64 << 20, 1);  // touch 64 MiB
    volatile char sink = big[big.size() - 1];
    (void)sink;
  }
  const PeakMemory after = ReadPeakMemory(cpu);
  EXPECT_GE(after.host_rss_bytes, before.host_rss_bytes + (60 << 20));
  ASSERT_TRUE(ResetPeakMemory(cpu));
  EXPECT_LT(ReadPeakMemory(cpu).host_rss_bytes, after.host_rss_bytes);
}

}  // namespace
}  // namespace specplan::runtime
