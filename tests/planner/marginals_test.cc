#include "planner/marginals/marginals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace specplan::planner {
namespace {

using ::testing::HasSubstr;

std::string Err(const std::string& text) {
  auto m = ParseMarginalsJsonText(text);
  EXPECT_FALSE(m.ok()) << text;
  return m.ok() ? "" : std::string(m.status().message());
}

TEST(MarginalsTest, ParsesValidJson) {
  auto m = ParseMarginalsJsonText(
      R"({"root_token": 5, "tokens": [[1, 2], [3, 4], [5, 6]],
          "probs": [[0.6, 0.3], [0.5, 0.5], [0.9, 0.0]]})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->root_token, 5);
  EXPECT_EQ(m->gamma, 3);
  EXPECT_EQ(m->k, 2);
  EXPECT_EQ(m->token(1, 1), 4);
  EXPECT_FLOAT_EQ(m->prob(2, 0), 0.9f);
  // Round trip through MarginalsToJson.
  auto again = ParseMarginalsJson(MarginalsToJson(*m));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tokens, m->tokens);
  EXPECT_EQ(again->probs, m->probs);
}

TEST(MarginalsTest, JsonErrorsNameTheField) {
  // Each bad file and the piece of the error that names its field.
  const std::pair<const char*, const char*> bad[] = {
      {R"({"root_token": 1, "tokens": [[1, 2], [3]], "probs": [[0.5, 0.1], [0.2]]})",
       "tokens[1]: row has 1 entries, expected 2 (ragged rows)"},
      {R"({"root_token": 1, "tokens": [[1, 2]], "probs": [[0.5]]})",
       "probs[0]: row has 1 entries, expected 2"},
      {R"({"root_token": 1, "tokens": [[1, 2]], "probs": [[0.5, 0.6]]})", "probs[0][1] = 0.6"},
      {R"({"root_token": 1, "tokens": [[1, 2]], "probs": [[1.5, 0.1]]})",
       "probs[0][0] = 1.5: must be a number in [0, 1]"},
      {R"({"root_token": 1, "tokens": [[1, 1]], "probs": [[0.5, 0.1]]})",
       "tokens[0][1] = 1: repeats tokens[0][0]"},
      {R"({"root_token": 1, "tokens": [[1, 2]], "probs": [[0.7, 0.6]]})",
       "probs[0]: row sums to 1.3"},
      {R"({"root_token": 1, "tokens": [[1, "x"]], "probs": [[0.5, 0.1]]})", "tokens[0][1] = \"x\""},
      {R"({"root_token": -3, "tokens": [[1]], "probs": [[0.5]]})", "root_token = -3"},
      {R"({"tokens": [[1]], "probs": [[0.5]]})", "root_token: missing"},
      {R"({"root_token": 1, "probs": [[0.5]]})", "tokens: missing"},
      {R"({"root_token": 1, "tokens": [[1]], "probs": [[0.5], [0.5]]})",
       "probs: 2 rows, expected 1"},
      {R"({"root_token": 1, "tokens": [], "probs": []})", "tokens: 0 rows"},
      {"{not json", "marginals:1:3: not valid JSON"},
      // NaN is not JSON: named by line and column.
      {"{\"root_token\": 1,\n \"tokens\": [[1]],\n \"probs\": [[NaN]]}",
       "marginals:3:13: not valid JSON: syntax error while parsing value - invalid literal"},
  };
  for (const auto& [json, error] : bad) EXPECT_THAT(Err(json), HasSubstr(error));
  // Limits.
  nlohmann::json big;
  big["root_token"] = 0;
  big["tokens"] = nlohmann::json::array();
  big["probs"] = nlohmann::json::array();
  for (int d = 0; d <= kMaxMarginalsGamma; ++d) {
    big["tokens"].push_back({1});
    big["probs"].push_back({0.5});
  }
  auto m = ParseMarginalsJson(big);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("65 rows (gamma)"));
}

TEST(MarginalsTest, ValidateStructNaNAndShapes) {
  Marginals m;
  m.root_token = 0;
  m.gamma = 3;
  m.k = 1;
  m.tokens = {1, 2, 3};
  m.probs = {0.5f, std::numeric_limits<float>::quiet_NaN(), 0.1f};
  EXPECT_THAT(std::string(ValidateMarginals(m).message()),
              HasSubstr("probs[1][0] = nan: must be a number in [0, 1]"));
  m.probs = {0.5f, 0.2f};
  EXPECT_THAT(std::string(ValidateMarginals(m).message()), HasSubstr("probs: 2 entries"));
  m.probs = {0.5f, 0.2f, 0.1f};
  EXPECT_TRUE(ValidateMarginals(m).ok());
  m.k = 0;
  EXPECT_THAT(std::string(ValidateMarginals(m).message()), HasSubstr("k = 0"));
}

TEST(MarginalsTest, LoadFileReportsPath) {
  auto missing = LoadMarginalsFile("/nonexistent/marginals.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/marginals.json"));
  const std::string path = ::testing::TempDir() + "/marginals_test.json";
  {
    std::ofstream f(path);
    f << R"({"root_token": 2, "tokens": [[4, 5]], "probs": [[0.5, 0.25]]})";
  }
  auto m = LoadMarginalsFile(path);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->tokens, (std::vector<int32_t>{4, 5}));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace specplan::planner
