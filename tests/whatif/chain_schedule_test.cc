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
  // Integer batch-size lower bounds, each with its candidate steps in SGLang main's key
  // (candidate_steps: 0 turns drafting off) and in the key of the release that merged PR #24055
  // (steps: no 0). K = 3 has both neighbours; so has K = 1 where 0 is a step; K = 0 is off, or
  // that release's smallest step.
  EXPECT_EQ(j["1"]["candidate_steps"], nlohmann::json::parse("[2, 3, 4]"));
  EXPECT_EQ(j["1"]["steps"], nlohmann::json::parse("[2, 3, 4]"));
  EXPECT_EQ(j["64"]["candidate_steps"], nlohmann::json::parse("[0, 1, 2]"));
  EXPECT_EQ(j["64"]["steps"], nlohmann::json::parse("[1]"));
  EXPECT_EQ(j["128"]["candidate_steps"], nlohmann::json::parse("[0]"));
  EXPECT_EQ(j["128"]["steps"], nlohmann::json::parse("[1]"));
  EXPECT_THAT(j["specplan"]["usage"].get<std::string>(),
              ::testing::HasSubstr("--speculative-num-steps 3 --speculative-num-draft-tokens 4"));
  EXPECT_THAT(j["specplan"]["note"].get<std::string>(), ::testing::HasSubstr("128-4096"));
  for (const auto& [key, value] : j.items()) {
    if (key == "specplan") continue;
    EXPECT_NO_THROW((void)std::stoi(key)) << key;  // SGLang reads integer keys as ranges
  }
}

// Every range starts at its own K under both loaders: SGLang main starts a slot at the server's
// --speculative-num-steps (the first range's K) when it is among the slot's candidates, else at
// candidates[len / 2]; the release with PR #24055 at steps[len / 2].
TEST(ChainSchedule, SglangRangesStartAtTheirOwnChainUnderBothLoaders) {
  // K = 4 at B = 1 (of k_max 5), 3 at B = 8, 1 at B = 64.
  const ChainReplayReport replay = Replay({{1, {100, 150, 170, 180, 190, 185}},
                                           {8, {800, 900, 950, 1000, 990, 980}},
                                           {64, {3000, 3600, 3500, 3200, 3000, 2900}}});
  auto s = BuildChainSchedule(replay, ScheduleFormat::kSglang, ScheduleOptions{}, "t.jsonl", "x");
  ASSERT_TRUE(s.ok()) << s.status();
  const nlohmann::json j = nlohmann::json::parse(RenderSchedule(*s, ScheduleSource{}));
  const int server_steps = 4;
  EXPECT_THAT(j["specplan"]["usage"].get<std::string>(),
              ::testing::HasSubstr("--speculative-num-steps 4 --speculative-num-draft-tokens 5"));
  for (const auto& [key, k] :
       std::vector<std::pair<std::string, int>>{{"1", 4}, {"8", 3}, {"64", 1}}) {
    const std::vector<int> main = j[key]["candidate_steps"];
    const std::vector<int> old = j[key]["steps"];
    const bool has_server = std::find(main.begin(), main.end(), server_steps) != main.end();
    EXPECT_EQ(has_server ? server_steps : main[main.size() / 2], k) << key;
    EXPECT_EQ(old[old.size() / 2], k) << key;
    EXPECT_TRUE(std::is_sorted(main.begin(), main.end())) << key;
  }
  EXPECT_EQ(j["8"]["candidate_steps"], nlohmann::json::parse("[2, 3]"));  // without the server's 4
  EXPECT_EQ(j["64"]["candidate_steps"], nlohmann::json::parse("[0, 1, 2]"));
  EXPECT_EQ(j["64"]["steps"], nlohmann::json::parse("[1]"));
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
