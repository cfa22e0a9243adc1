// Linear chain policy: greedy top-1 chain of K draft tokens (the "Linear Spec" baseline of
// DynaTree (docs/references.md) §4.3), one node and one drafter forward per level.
#ifndef SPECPLAN_PLANNER_POLICIES_LINEAR_CHAIN_H_
#define SPECPLAN_PLANNER_POLICIES_LINEAR_CHAIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/policies/policy.h"

namespace specplan::planner {

struct LinearChainOptions {
  int32_t k =
      8;  // draft tokens per step (K); DynaTree's Table 1 uses K = 8 (WikiText-2), 5 (PG-19)
};

// InvalidArgument naming the field when k is outside [1, kMaxTreeNodes - 1].
absl::Status ValidateLinearChainOptions(const LinearChainOptions& options);

// Tree shape: root -> x_1 -> ... -> x_K where x_d is the top-1 candidate of q(. | path(x_{d-1})).
// The chain stops early when a row has no candidate (all padding). K forwards per step.
class LinearChainPolicy final : public ConfiguredLevelPolicy<LinearChainPolicy, LinearChainOptions,
                                                             ValidateLinearChainOptions> {
 public:
  std::string Name() const override;

 private:
  friend ConfiguredLevelPolicy;
  explicit LinearChainPolicy(const LinearChainOptions& options);
  void OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) override;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_LINEAR_CHAIN_H_
