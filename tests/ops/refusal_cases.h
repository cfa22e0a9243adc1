// Shared by the operations' validator tests: a table of edits to a valid request, each with the
// refusal ops::Validate must give it, checked one edit at a time.
#ifndef SPECPLAN_TESTS_OPS_REFUSAL_CASES_H_
#define SPECPLAN_TESTS_OPS_REFUSAL_CASES_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace specplan::ops::testing {

// One edit that makes a valid request invalid, and (a substring of) the message Validate gives.
template <typename Request>
struct RefusalCase {
  std::function<void(Request&)> edit;
  std::string message;
};

// For each case: a copy of `valid` with the case's edit fails Validate (found by argument-dependent
// lookup in the request's namespace) with a message that contains the case's.
template <typename Request>
void ExpectRefusals(const Request& valid, const std::vector<RefusalCase<Request>>& cases) {
  for (const RefusalCase<Request>& c : cases) {
    SCOPED_TRACE(c.message);
    Request req = valid;
    c.edit(req);
    EXPECT_THAT(std::string(Validate(req).message()), ::testing::HasSubstr(c.message));
  }
}

}  // namespace specplan::ops::testing

#endif  // SPECPLAN_TESTS_OPS_REFUSAL_CASES_H_
