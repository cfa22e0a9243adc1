// Regression tests for inputs found by the fuzzers in fuzz/ (scripts/fuzz.sh). Each case feeds the
// reproducer through the normal API and checks that it is rejected with a Status, not a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/marginals/marginals.h"
#include "planner/tree/tree_json.h"

namespace specplan::planner {
namespace {

using ::testing::HasSubstr;

// tree_json_fuzzer: a number literal beyond double range made nlohmann::json throw out_of_range
// (not parse_error), which escaped ParseTreeJson and terminated the process.
TEST(PlannerFuzzRegression, NumberOverflowInTreeJsonIsAnError) {
  auto t = ParseTreeJson(R"({"tokens": [7, 1], "parents": [-1, 0], "path_probs": [1, 1e400]})");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("number overflow"));
}

// Same input shape through the marginals reader, which parses without exceptions.
TEST(PlannerFuzzRegression, NumberOverflowInMarginalsJsonIsAnError) {
  auto m = ParseMarginalsJsonText(R"({"root_token": 1, "tokens": [[5]], "probs": [[1e400]]})");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace specplan::planner
