#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace specplan {
namespace {

using ::specplan::testing::RunSpecplan;
using ::specplan::testing::WriteTemp;
using ::specplan::testing::SourcePath;
using ::testing::HasSubstr;

TEST(PlanCommand, ControllerJsonHasTheContractFields) {
  auto r = RunSpecplan("plan --marginals " + SourcePath("examples/marginals.json") +
                       " --model qwen3-8b --gpu h100 --c 1024 --n-max 256 --json --repeat 20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  const int n = j["n"];
  ASSERT_GT(n, 0);
  ASSERT_LE(n, 256);
  for (const char* key : {"tokens", "parents", "depths", "path_probs", "positions"}) {
    ASSERT_EQ(j[key].size(), static_cast<size_t>(n + 1)) << key;
  }
  EXPECT_EQ(j["parents"][0], -1);
  EXPECT_EQ(j["path_probs"][0], 1.0);
  EXPECT_EQ(j["positions"][0], 1024);  // absolute: c + depth
  double sum = 0;
  for (const auto& p : j["path_probs"]) sum += p.get<double>();
  EXPECT_NEAR(j["expected_accepted"].get<double>(), sum, 1e-9);  // root included
  ASSERT_GT(j["retrieve"].size(), 0u);
  // The curve runs from n = 0 to the first decrease; the chosen n is its maximum.
  const auto& curve = j["curve"];
  ASSERT_GE(curve.size(), static_cast<size_t>(n + 1));
  double best = 0;
  for (const auto& pt : curve) {
    for (const char* key : {"n", "expected_accepted", "cycle_s", "speedup"}) ASSERT_TRUE(pt.contains(key));
    best = std::max(best, pt["speedup"].get<double>());
  }
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), best);
  EXPECT_GT(j["plan_us"].get<double>(), 0);
}

TEST(PlanCommand, BudgetBuildsExactlyMinOfBudgetAndLattice) {
  const std::string small = WriteTemp(
      "small_marginals.json",
      R"({"root_token": 1, "tokens": [[5, 6], [7, 8]], "probs": [[0.6, 0.3], [0.5, 0.4]]})");
  auto r = RunSpecplan("plan --marginals " + small + " --c 0 --budget 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["n"], 3);
  // The lattice has 2 + 4 = 6 nodes.
  r = RunSpecplan("plan --marginals " + small + " --c 0 --budget 100 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["n"], 6);
  EXPECT_NEAR(j["expected_accepted"].get<double>(), 1 + 0.9 + 0.9 * 0.9, 1e-6);
}

TEST(PlanCommand, BadMarginalsNameTheField) {
  struct Case {
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {R"({"root_token": 1, "tokens": [[5, 6]], "probs": [[0.6, 1.3]]})", "probs[0][1]"},
      {R"({"root_token": 1, "tokens": [[5, 6]], "probs": [[0.3, 0.6]]})", "probs[0]"},
      {R"({"root_token": 1, "tokens": [[5, 5]], "probs": [[0.6, 0.3]]})", "tokens[0]"},
      {R"({"root_token": 1, "tokens": [[5, 6], [7]], "probs": [[0.6, 0.3], [0.5]]})", "tokens[1]"},
      {R"({"tokens": [[5, 6]], "probs": [[0.6, 0.3]]})", "root_token"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteTemp("bad_marginals.json", c.json);
    auto r = RunSpecplan("plan --marginals " + path + " --c 0 --budget 4");
    EXPECT_NE(r.exit_code, 0) << c.json;
    EXPECT_THAT(r.output, HasSubstr(c.expect)) << c.json;
  }
  auto r = RunSpecplan("plan --marginals /nonexistent.json --c 0 --budget 4");
  EXPECT_NE(r.exit_code, 0);
  r = RunSpecplan("plan --marginals " + SourcePath("examples/marginals.json") +
                  " --c 0 --n-max 4 --budget 4");
  EXPECT_NE(r.exit_code, 0);
}

TEST(MergeCommand, MergesExampleTreesWithBlockMask) {
  auto r = RunSpecplan("merge --a " + SourcePath("examples/tree_a.json") + " --b " +
                       SourcePath("examples/tree_b.json") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["tokens"].size(), 10u);  // 1 root + 5 + 4
  for (const char* key : {"parents", "depths", "positions", "mask"}) {
    ASSERT_EQ(j[key].size(), 10u) << key;
  }
  // Block structure: no node of A sees a node of B or vice versa; all see the root.
  for (int i = 1; i < 10; ++i) {
    const std::string row = j["mask"][i];
    EXPECT_EQ(row[0], '1');
    for (int k = 1; k < 10; ++k) {
      if ((i <= 5) != (k <= 5)) {
        EXPECT_EQ(row[k], '0') << i << "," << k;
      }
    }
  }
  r = RunSpecplan("merge --a " + SourcePath("examples/tree_a.json") + " --b " +
                  SourcePath("examples/tree_b.json") + " --dedup --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["tokens"].size(), 8u);  // two shared prefixes
}

TEST(MergeCommand, DifferentRootsAreRejected) {
  const std::string b = WriteTemp("other_root.json", R"({"tokens": [9, 1], "parents": [-1, 0]})");
  auto r = RunSpecplan("merge --a " + SourcePath("examples/tree_a.json") + " --b " + b);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("151644"));
  EXPECT_THAT(r.output, HasSubstr("9"));
  const std::string bad = WriteTemp("bad_parents.json", R"({"tokens": [151644, 1, 2], "parents": [-1, 2, 0]})");
  r = RunSpecplan("merge --a " + SourcePath("examples/tree_a.json") + " --b " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("parents[1]"));
}

}  // namespace
}  // namespace specplan
