// whatif::BuildChainSchedule: the schedule chosen from chains replayed over the user's acceptance,
// and SGLang's batch-size-aware adaptive configuration rendered from it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "whatif/chain_replay.h"
#include "whatif/schedule.h"

namespace specplan::whatif {
namespace {

// Rows of a replay: per batch size, the plain and K = 1..4 throughputs (K = 0 is plain).
ChainReplayReport Replay(const std::vector<std::pair<int, std::vector<double>>>& per_batch) {
  ChainReplayReport r;
  r.mode = "rates";
  for (const auto& [b, tput] : per_batch) {
    for (size_t k = 0; k < tput.size(); ++k) {
      ChainReplayRow row;
      row.batch = b;
      row.k = static_cast<int>(k);
      row.throughput = tput[k];
      row.ar_throughput = tput[0];
      row.speedup = tput[k] / tput[0];
      r.rows.push_back(row);
    }
  }
  return r;
}

TEST(ChainSchedule, ChoosesTheBestKPerBatchAndShortensItMonotonically) {
  // B = 1 peaks at K = 3, B = 16 at K = 4 (the monotone rule caps it at 3), B = 64 at K = 1,
  // B = 256 nowhere (plain decoding is best).
  const ChainReplayReport replay = Replay({{1, {100, 150, 170, 180, 175}},
                                           {16, {1000, 1500, 1700, 1800, 1850}},
                                           {64, {3000, 3600, 3500, 3200, 3000}},
                                           {256, {9000, 8000, 7000, 6000, 5000}}});
  ScheduleOptions o;
  auto s = BuildChainSchedule(replay, ScheduleFormat::kVllm, o, "m.txt (vllm-prometheus; rates)",
                              "drafter eagle3");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->points.size(), 4u);
  EXPECT_EQ(s->points[0].setting, 3);
  EXPECT_EQ(s->points[1].setting, 3);
  EXPECT_EQ(s->points[1].best_setting, 4);
  EXPECT_EQ(s->points[2].setting, 1);
  EXPECT_EQ(s->points[3].setting, 0);
  EXPECT_DOUBLE_EQ(s->points[2].throughput, 3600);
  EXPECT_DOUBLE_EQ(s->points[3].ar_throughput, 9000);
  EXPECT_THAT(s->constrained_batches, ::testing::ElementsAre(16));
  const std::string text = RenderSchedule(*s, ScheduleSource{});
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["speculative_config"]["num_speculative_tokens"], 3);
  EXPECT_EQ(j["speculative_config"]["num_speculative_tokens_per_batch_size"],
            nlohmann::json::parse("[[1, 63, 3], [64, 255, 1], [256, 4096, 0]]"));
  EXPECT_EQ(j["specplan"]["acceptance"], "m.txt (vllm-prometheus; rates)");
  EXPECT_FALSE(j["specplan"]["sums"].contains("batch_planner"));
  EXPECT_THAT(FormatScheduleSummary(*s, ScheduleSource{}),
              ::testing::HasSubstr("acceptance: m.txt (vllm-prometheus; rates)"));
}

TEST(ChainSchedule, SglangWritesTheAdaptiveConfigurationSglangReads) {
  const ChainReplayReport replay = Replay({{1, {100, 150, 170, 180, 175}},
                                           {64, {3000, 3600, 3500, 3200, 3000}},
                                           {128, {5000, 4000, 3000, 2000, 1000}}});
  auto s = BuildChainSchedule(replay, ScheduleFormat::kSglang, ScheduleOptions{}, "t.jsonl", "x");
  ASSERT_TRUE(s.ok()) << s.status();
  const nlohmann::json j = nlohmann::json::parse(RenderSchedule(*s, ScheduleSource{}));
  // Integer batch-size lower bounds, each with its candidate steps; K = 3 has both neighbours,
  // K = 1 does not, and a range where nothing pays holds SGLang's smallest step.
  EXPECT_EQ(j["1"]["steps"], nlohmann::json::parse("[2, 3, 4]"));
  EXPECT_EQ(j["64"]["steps"], nlohmann::json::parse("[1]"));
  EXPECT_EQ(j["128"]["steps"], nlohmann::json::parse("[1]"));
  EXPECT_THAT(j["specplan"]["usage"].get<std::string>(),
              ::testing::HasSubstr("--speculative-num-steps 3 --speculative-num-draft-tokens 4"));
  EXPECT_THAT(j["specplan"]["note"].get<std::string>(), ::testing::HasSubstr("128-4096"));
  for (const auto& [key, value] : j.items()) {
    if (key == "specplan") continue;
    EXPECT_NO_THROW((void)std::stoi(key)) << key;  // SGLang reads integer keys as ranges
  }
}

TEST(ChainSchedule, RefusesAGridThatDoesNotStartAtOne) {
  const ChainReplayReport replay = Replay({{2, {100, 150}}, {8, {300, 320}}});
  auto s = BuildChainSchedule(replay, ScheduleFormat::kVllm, ScheduleOptions{}, "a", "b");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), ::testing::HasSubstr("batch_sizes: the grid starts at 2"));
  ScheduleOptions bad;
  bad.min_chain = -1;
  EXPECT_FALSE(
      BuildChainSchedule(Replay({{1, {100, 150}}}), ScheduleFormat::kVllm, bad, "a", "b").ok());
}

}  // namespace
}  // namespace specplan::whatif
