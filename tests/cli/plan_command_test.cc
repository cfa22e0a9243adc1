#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

TEST(PlanCommand, ControllerJsonHasTheContractFields) {
  auto r = RunSpecplan("plan --marginals " + SourcePath("examples/marginals.json") +
                       " --model qwen3-8b --gpu h100 --engine specplan --c 1024 --n-max 256 --json "
                       "--repeat 20");
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
    for (const char* key : {"n", "expected_accepted", "cycle_s", "speedup"})
      ASSERT_TRUE(pt.contains(key));
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

TEST(PlanCommand, SglangLayoutKeyAddsOneKeyAndKeepsTheRest) {
  const std::string small = WriteTemp(
      "sglang_marginals.json",
      R"({"root_token": 1, "tokens": [[5, 6], [7, 8]], "probs": [[0.6, 0.3], [0.5, 0.4]]})");
  // Budget 1: the tree is root 1 -> 5, over c = 2 cached tokens.
  struct Case {
    const char* mode;
    std::vector<int> mask;
  };
  const Case cases[] = {
      {"FULL_MASK", {1, 1, 1, 0, /**/ 1, 1, 1, 1}},  // rows of c + D = 4: prefix, then the tree
      {"QLEN_ONLY", {1, 0, /**/ 1, 1}},
      {"QLEN_ONLY_BITPACKING", {0b1, 0b11}},
  };
  for (const Case& c : cases) {
    auto r = RunSpecplan("plan --marginals " + small + " --c 2 --budget 1 --json --layout sglang" +
                         " --tree-mask-mode " + c.mode);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output)["sglang"];
    EXPECT_EQ(j["tree_mask_mode"], c.mode);
    EXPECT_EQ(j["draft_token_num"], 2);
    EXPECT_EQ(j["draft_tokens"], nlohmann::json({1, 5}));
    EXPECT_EQ(j["positions"], nlohmann::json({2, 3}));
    EXPECT_EQ(j["retrive_index"], nlohmann::json::parse("[[0, 1]]"));
    EXPECT_EQ(j["retrive_next_token"], nlohmann::json::parse("[[1, -1]]"));
    EXPECT_EQ(j["retrive_next_sibling"], nlohmann::json::parse("[[-1, -1]]"));
    EXPECT_EQ(j["tree_mask"], nlohmann::json(c.mask)) << c.mode;
  }

  // A larger plan: the other keys are exactly those printed without --layout, and the SGLang walk
  // from slot 0 reaches every node from its parent.
  const std::string base =
      "plan --marginals " + SourcePath("examples/marginals.json") +
      " --model qwen3-8b --gpu h100 --engine specplan --c 1024 --n-max 24 --json";
  auto plain = RunSpecplan(base);
  auto with = RunSpecplan(base + " --layout sglang --draft-token-num 32");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(with.exit_code, 0) << with.output;
  auto j = nlohmann::json::parse(with.output);
  const auto sg = j["sglang"];
  j.erase("sglang");
  EXPECT_EQ(j, nlohmann::json::parse(plain.output));
  const int s = static_cast<int>(j["tokens"].size());
  ASSERT_GT(s, 2);
  ASSERT_EQ(sg["draft_token_num"], 32);
  ASSERT_EQ(sg["tree_mask"].size(), 32u * 32u);
  const auto& next = sg["retrive_next_token"][0];
  const auto& sib = sg["retrive_next_sibling"][0];
  std::vector<int> stack = {0}, seen(32, 0);
  int visited = 0;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    ASSERT_LT(v, s);
    ASSERT_EQ(seen[v]++, 0);
    ++visited;
    EXPECT_EQ(sg["draft_tokens"][v], j["tokens"][v]);
    EXPECT_EQ(sg["positions"][v], j["positions"][v]);
    for (int ch = next[v]; ch != -1; ch = sib[ch]) {
      EXPECT_EQ(j["parents"][ch], v);
      stack.push_back(ch);
    }
  }
  EXPECT_EQ(visited, s);
}

TEST(PlanCommand, SglangLayoutErrorsNameTheProblem) {
  const std::string base =
      "plan --marginals " + SourcePath("examples/marginals.json") + " --c 0 --budget 40";
  ExpectRefused({
      {base + " --json --layout sglang --tree-mask-mode QLEN_ONLY_BITPACKING",
       "draft_token_num = 41: QLEN_ONLY_BITPACKING holds at most 32"},
      {base + " --json --layout sglang --draft-token-num 8",
       "draft_token_num = 8: must be >= the size of trees[0] = 41"},
      {base + " --json --layout sglang --tree-mask-mode FULL", "--tree-mask-mode FULL"},
      {base + " --layout sglang", "needs --json"},
  });
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
  const std::string bad =
      WriteTemp("bad_parents.json", R"({"tokens": [151644, 1, 2], "parents": [-1, 2, 0]})");
  r = RunSpecplan("merge --a " + SourcePath("examples/tree_a.json") + " --b " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("parents[1]"));
}

}  // namespace
}  // namespace specplan
