#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

const char* kSmall =
    R"({"root_token": 1, "tokens": [[5, 6], [7, 8]], "probs": [[0.6, 0.3], [0.5, 0.4]]})";

TEST(PlanBatchCommand, JsonHasTheContractFieldsPerRequestAndCurve) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(
      RunJson("plan-batch --requests " + SourcePath("examples/batch_requests.jsonl") +
                  " --model qwen3-8b --gpu h100 --engine specplan --latency-model "
                  "roofline --n-max 2048 --json",
              &j));
  ASSERT_EQ(j["requests"].size(), 8u);
  int total = 0;
  double accepted = 0;
  for (const auto& q : j["requests"]) {
    const int n = q["n"];
    total += n;
    accepted += q["expected_accepted"].get<double>();
    for (const char* key : {"tokens", "parents", "depths", "positions"}) {
      ASSERT_EQ(q[key].size(), static_cast<size_t>(n + 1)) << key;
    }
    EXPECT_EQ(q["positions"][0], q["c"]);  // absolute: c_i + depth
    EXPECT_GE(q["retrieve"].size(), 1u);
  }
  EXPECT_EQ(j["n_total"], total);
  EXPECT_LE(j["requests"][2]["n"].get<int>(), 8);  // that line's n_max
  const auto& curve = j["curve"];
  ASSERT_GE(curve.size(), static_cast<size_t>(total + 1));
  const auto& chosen = curve[total];
  EXPECT_EQ(chosen["n"], total);
  EXPECT_NEAR(chosen["expected_accepted"].get<double>(), accepted, 1e-9);
  EXPECT_NEAR(chosen["goodput"].get<double>(),
              chosen["expected_accepted"].get<double>() / chosen["cycle_s"].get<double>(), 1e-6);
  EXPECT_EQ(j["latency_model"], "roofline");
}

TEST(PlanBatchCommand, FixedBudgetIsTheTotalOverTheBatch) {
  const std::string file = WriteTemp(
      "batch_small.jsonl", std::string(R"({"marginals": )") + kSmall + R"(, "c": 0})" + "\n\n" +
                               R"({"marginals": )" + kSmall + R"(, "c": 10, "weight": 3})" + "\n");
  auto r = RunSpecplan("plan-batch --requests " + file + " --budget 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["n_total"], 5);
  // Weight 3 makes the second request's nodes worth three times as much: it fills its lattice
  // (2 + 4 = 6 nodes > 5) before the first request gets any whose rho is below 1/3 of its own.
  EXPECT_GT(j["requests"][1]["n"].get<int>(), j["requests"][0]["n"].get<int>());
  EXPECT_TRUE(j["curve"].empty());
  EXPECT_EQ(j["requests"][1]["positions"][0], 10);
}

// The batch in the engine layouts: the ragged arrays concatenate the requests' trees, and the
// SGLang layout pads every request to the largest tree.
TEST(PlanBatchCommand, LayoutsCarryEveryRequestsTree) {
  const std::string file =
      WriteTemp("batch_layout.jsonl", std::string(R"({"marginals": )") + kSmall +
                                          R"(, "c": 5, "n_max": 3})" + "\n" + R"({"marginals": )" +
                                          kSmall + R"(, "c": 9, "n_max": 0})" + "\n");
  auto r = RunSpecplan("plan-batch --requests " + file + " --budget 6 --json --layout ragged");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["requests"][0]["n"], 3);
  ASSERT_EQ(j["requests"][1]["n"], 0);
  EXPECT_EQ(j["ragged"]["cu_seqlens"], nlohmann::json::parse("[0, 4, 5]"));
  // Request 0: root 1, then 5 (rho .6), 6 (.3 at depth 1) before 7 (.3 = .6 x .5 at depth 2: ties
  // go to the smaller depth) -> depths 0 1 1 2 over c = 5; request 1 is its root at c = 9.
  EXPECT_EQ(j["ragged"]["positions"], nlohmann::json::parse("[5, 6, 6, 7, 9]"));
  EXPECT_EQ(j["ragged"]["parents"], nlohmann::json::parse("[-1, 0, 0, 1, -1]"));
  EXPECT_EQ(j["ragged"]["tokens"][4], 1);  // request 1: its root only
  r = RunSpecplan("plan-batch --requests " + file +
                  " --budget 6 --json --layout sglang --tree-mask-mode QLEN_ONLY_BITPACKING");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  const auto& sg = j["sglang"];
  EXPECT_EQ(sg["draft_token_num"], 4);
  EXPECT_EQ(sg["retrive_index"], nlohmann::json::parse("[[0, 1, 2, 3], [4, 5, 6, 7]]"));
  EXPECT_EQ(sg["retrive_next_token"][1], nlohmann::json::parse("[-1, -1, -1, -1]"));
  EXPECT_EQ(sg["tree_mask"].size(), 8u);
  r = RunSpecplan("plan-batch --requests " + file + " --budget 6 --layout ragged");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--layout ragged needs --json"));
}

TEST(PlanBatchCommand, HumanOutputSaysWhenSpeculationDoesNotPay) {
  const std::string weak = R"({"root_token": 1, "tokens": [[5, 6]], "probs": [[0.02, 0.01]]})";
  std::string lines;
  for (int i = 0; i < 4; ++i)
    lines += std::string(R"({"marginals": )") + weak + R"(, "c": 4096})" + "\n";
  const std::string file = WriteTemp("batch_weak.jsonl", lines);
  auto r = RunSpecplan(
      "plan-batch --requests " + file +
      " --model qwen3-8b --gpu h100 --engine specplan --latency-model roofline --n-max 64 "
      "--t-draft-ms 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("N* = 0 draft nodes"));
  EXPECT_THAT(r.output, HasSubstr("speculation does not pay at this load"));
}

TEST(PlanBatchCommand, BadLinesNameTheFileLineRequestAndField) {
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::string good = std::string(R"({"marginals": )") + kSmall + R"(, "c": 0})";
  const std::vector<Case> cases = {
      {good + "\n{not json\n", "bad.jsonl:2:3: not valid JSON"},
      {good + "\n" + R"({"marginals": )" + kSmall + R"(, "c": -3})", "(requests[1]): c = -3"},
      {R"({"c": 0})", "(requests[0]): marginals: missing"},
      {R"({"marginals": {"root_token": 1, "tokens": [[5]], "probs": [[1.5]]}, "c": 0})",
       "(requests[0]): marginals.probs[0][0] = 1.5"},
      {std::string(R"({"marginals": )") + kSmall + R"(, "c": 0, "weight": 0})",
       "(requests[0]): weight = 0"},
      {std::string(R"({"marginals": )") + kSmall + R"(, "c": 0, "extra": 1})",
       "(requests[0]): extra: unknown field"},
      {"\n\n", "no requests"},
  };
  for (const Case& c : cases) {
    const std::string file = WriteTemp("bad.jsonl", c.text);
    auto r = RunSpecplan("plan-batch --requests " + file + " --budget 4");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.expect));
  }
  const std::string file = WriteTemp("ok.jsonl", good + "\n");
  auto r = RunSpecplan("plan-batch --requests " + file + " --budget 4 --max-ms-per-token 5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--max-ms-per-token 5: a latency bound chooses the budget"));
}

}  // namespace
}  // namespace specplan
