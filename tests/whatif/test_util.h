// Shared helpers for the whatif tests: the hand-written fixture trace and a simple latency model.
#ifndef SPECPLAN_TESTS_WHATIF_TEST_UTIL_H_
#define SPECPLAN_TESTS_WHATIF_TEST_UTIL_H_

#include <string>

#include "costmodel/latency/latency_model.h"
#include "tests/paths/test_paths.h"

namespace specplan::whatif::testing {

inline std::string FixturePath() {
  return ::specplan::test_paths::SourceDir() + "/tests/whatif/data/small.jsonl";
}

// T_verify(s, c) = base + per_token * s + per_context * c, seconds.
class AffineLatency : public costmodel::LatencyModel {
 public:
  AffineLatency(double base, double per_token, double per_context = 0)
      : base_(base), per_token_(per_token), per_context_(per_context) {}
  double VerifySeconds(int64_t s, int64_t c) const override {
    return base_ + per_token_ * static_cast<double>(s) + per_context_ * static_cast<double>(c);
  }
  std::string Kind() const override { return "affine"; }

 private:
  double base_, per_token_, per_context_;
};

}  // namespace specplan::whatif::testing

#endif  // SPECPLAN_TESTS_WHATIF_TEST_UTIL_H_
