// `specplan profiles` says what it knows of each profile's accuracy: a composed (engine-grade)
// profile was not fitted, and says so, instead of an empty "held-out MAPE:".
#include <sstream>

#include "tests/cli/run_command.h"

namespace {

using namespace ::specplan::testing;

TEST(ProfilesCommand, EngineGradeProfilesSayTheyWereNotFitted) {
  const CommandResult r = RunSpecplan("profiles");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("MAPE:  ")));  // a label with nothing after it
  std::istringstream lines(r.output);
  int composed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("@sglang.json") == std::string::npos) continue;
    ++composed;
    EXPECT_THAT(line, HasSubstr("MAPE: none (composed from kernel timings, not fitted)"));
  }
  EXPECT_GT(composed, 0) << r.output;
  // Fitted profiles keep their scores.
  EXPECT_THAT(r.output, HasSubstr("cv MAPE: "));
}

}  // namespace
