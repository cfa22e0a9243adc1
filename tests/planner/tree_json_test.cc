#include "planner/tree/tree_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

namespace specplan::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TreeJsonTest, ParsesTokensParentsAndComputesDepths) {
  absl::StatusOr<Tree> tree =
      ParseTreeJson(R"({"tokens": [7, 1, 2, 3, 4], "parents": [-1, 0, 0, 1, 3]})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_THAT(tree->tokens, ElementsAre(7, 1, 2, 3, 4));
  EXPECT_THAT(tree->parents, ElementsAre(-1, 0, 0, 1, 3));
  EXPECT_THAT(tree->depths, ElementsAre(0, 1, 1, 2, 3));
  EXPECT_TRUE(tree->path_probs.empty());
  EXPECT_TRUE(ValidateTree(*tree).ok());
}

TEST(TreeJsonTest, ReadsOptionalPathProbsAndDepths) {
  absl::StatusOr<Tree> tree = ParseTreeJson(
      R"({"tokens": [7, 1, 2], "parents": [-1, 0, 1], "depths": [0, 1, 2],
          "path_probs": [1, 0.5, 0.25], "comment": "ignored"})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_THAT(tree->path_probs, ElementsAre(1.0, 0.5, 0.25));
  EXPECT_THAT(tree->depths, ElementsAre(0, 1, 2));
}

TEST(TreeJsonTest, RootOnlyTree) {
  absl::StatusOr<Tree> tree = ParseTreeJson(R"({"tokens": [3], "parents": [-1]})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->size(), 1);
  EXPECT_THAT(tree->depths, ElementsAre(0));
}

struct BadCase {
  const char* json;
  const char* message;  // substring the error must contain
};

TEST(TreeJsonTest, ErrorsNameTheField) {
  const BadCase cases[] = {
      {R"({"parents": [-1]})", "tokens: missing"},
      {R"({"tokens": [1]})", "parents: missing"},
      {R"({"tokens": 5, "parents": [-1]})", "tokens = 5: must be an array"},
      {R"({"tokens": [1, "a"], "parents": [-1, 0]})", "tokens[1] = \"a\": must be an integer"},
      {R"({"tokens": [1, 2.5], "parents": [-1, 0]})", "tokens[1] = 2.5: must be an integer"},
      {R"({"tokens": [1, 4294967296], "parents": [-1, 0]})", "tokens[1] = 4294967296: out of"},
      {R"({"tokens": [1, -2], "parents": [-1, 0]})", "tokens[1] = -2"},
      {R"({"tokens": [1, 2, 3, 4, 5], "parents": [-1, 0, 1, 2, 9]})", "parents[4] = 9"},
      {R"({"tokens": [1, 2, 3], "parents": [-1, 0, 2]})", "parents[2] = 2"},
      {R"({"tokens": [1, 2], "parents": [0, 0]})", "parents[0] = 0"},
      {R"({"tokens": [1, 2], "parents": [-1]})", "parents: length 1"},
      {R"({"tokens": [], "parents": []})", "tokens: empty"},
      {R"({"tokens": [1, 2], "parents": [-1, 0], "depths": [0, 2]})", "depths[1] = 2"},
      {R"({"tokens": [1, 2], "parents": [-1, 0], "path_probs": [1, 1.5]})", "path_probs[1] = 1.5"},
      {R"({"tokens": [1, 2], "parents": [-1, 0], "path_probs": [1, "x"]})",
       "path_probs[1] = \"x\": must be a number"},
      {R"([1, 2])", "tree: expected a JSON object"},
      {R"({"tokens": [1], )", "tree JSON:1:16: not valid JSON"},
      {"{\"tokens\": [1, 2],\n \"parents\": [-1, NaN]}", "tree JSON:2:18: not valid JSON"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<Tree> tree = ParseTreeJson(c.json);
    ASSERT_FALSE(tree.ok()) << c.json;
    EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(std::string(tree.status().message()), HasSubstr(c.message)) << c.json;
  }
}

TEST(TreeJsonTest, RoundTripsRandomTrees) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 30);
    Tree tree;
    tree.ResetRoot(static_cast<int32_t>(rng() % 1000));
    for (int i = 1; i < n; ++i) {
      const int parent = static_cast<int>(rng() % i);
      tree.AddNode(parent, static_cast<int32_t>(rng() % 1000),
                   tree.path_probs[parent] * ((rng() % 100) / 100.0));
    }
    absl::StatusOr<Tree> back = TreeFromJson(TreeToJson(tree));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->tokens, tree.tokens);
    EXPECT_EQ(back->parents, tree.parents);
    EXPECT_EQ(back->depths, tree.depths);
    EXPECT_EQ(back->path_probs, tree.path_probs);
    // Through text as well.
    absl::StatusOr<Tree> text = ParseTreeJson(TreeToJson(tree).dump());
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(text->parents, tree.parents);
  }
}

TEST(TreeJsonTest, WritesDepthsWhenTreeHasNone) {
  Tree tree;
  tree.tokens = {5, 6, 7};
  tree.parents = {-1, 0, 1};
  const nlohmann::json j = TreeToJson(tree);
  EXPECT_EQ(j["depths"], nlohmann::json({0, 1, 2}));
  EXPECT_FALSE(j.contains("path_probs"));
}

}  // namespace
}  // namespace specplan::planner
