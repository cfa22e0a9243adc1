#include "planner/marginals/marginals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

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

// ValidateMarginals screens whole marginals four entries at a time and runs the per-entry checks
// only when the screen fails; whatever path it takes, it must accept exactly the marginals that
// this plain statement of the rules accepts, and name the first bad entry when it refuses. Every
// kind of defect is planted at every place a four-lane block can put it (first lane, last lane,
// across a row start, in the last k % 4 entries) for k = 1..13.
bool PlainRulesHold(const Marginals& m) {
  for (int d = 0; d < m.gamma; ++d) {
    double sum = 0;
    for (int r = 0; r < m.k; ++r) {
      const float p = m.prob(d, r);
      if (m.token(d, r) < 0 || !(p >= 0.0f && p <= 1.0f)) return false;
      if (r > 0 && p > m.prob(d, r - 1)) return false;
      for (int r2 = 0; r2 < r; ++r2) {
        if (m.token(d, r2) == m.token(d, r)) return false;
      }
      sum += p;
    }
    if (sum > 1.0 + kMarginalsRowSumTolerance) return false;
  }
  return true;
}

TEST(MarginalsTest, ValidationAgreesWithThePlainRulesForEveryDefectAndPlace) {
  int refused = 0;
  int accepted = 0;
  for (int k = 1; k <= 13; ++k) {
    for (int gamma = 1; gamma <= 3; ++gamma) {
      const int n = gamma * k;
      Marginals base;
      base.root_token = 0;
      base.gamma = gamma;
      base.k = k;
      for (int d = 0; d < gamma; ++d) {
        for (int r = 0; r < k; ++r) {
          base.tokens.push_back(1000 * d + 7 * r);
          base.probs.push_back(0.9f / static_cast<float>(k) * static_cast<float>(k - r) /
                               static_cast<float>(k));
        }
      }
      ASSERT_TRUE(ValidateMarginals(base).ok()) << "k " << k << " gamma " << gamma;
      for (int at = 0; at < n; ++at) {
        const int r = at % k;
        for (int defect = 0; defect < 7; ++defect) {
          Marginals m = base;
          switch (defect) {
            case 0:
              m.tokens[at] = -1 - at;
              break;
            case 1:
              m.tokens[at] = m.tokens[at - r + (r + 1 + at) % k];
              break;  // a repeat, or itself
            case 2:
              m.probs[at] = std::numeric_limits<float>::quiet_NaN();
              break;
            case 3:
              m.probs[at] = 1.5f;
              break;
            case 4:
              m.probs[at] = -0.25f;
              break;
            case 5:
              m.probs[at] += 0.3f;
              break;  // a rise, unless at a row start
            case 6:
              m.probs[at - r] = 1.0f;
              break;  // the row sums to more than 1, if k > 1
          }
          const absl::Status st = ValidateMarginals(m);
          ASSERT_EQ(st.ok(), PlainRulesHold(m)) << "k " << k << " gamma " << gamma << " at " << at
                                                << " defect " << defect << ": " << st;
          if (st.ok()) {
            ++accepted;
            continue;
          }
          ++refused;
          const std::string msg(st.message());
          const std::string row = absl::StrCat("[", at / k, "]");
          EXPECT_THAT(msg, HasSubstr(row)) << msg;  // names the row of the planted defect
        }
      }
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(accepted, 50);  // repeats of itself, rises at row starts, k = 1 sums
}

}  // namespace
}  // namespace specplan::planner
