// Fixed tree policy (D, B, tau): the static-tree baseline of DynaTree (docs/references.md) §4.3 /
// App. A
// (SpecInfer-style static shape, best reported configuration D = 8, B = 3, tau = 0.1, N_max = 256).
#ifndef SPECPLAN_PLANNER_POLICIES_FIXED_TREE_H_
#define SPECPLAN_PLANNER_POLICIES_FIXED_TREE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/policies/policy.h"

namespace specplan::planner {

struct FixedTreeOptions {
  int32_t depth = 8;        // D: nodes at depth < D are expanded; the tree is at most D deep
  int32_t branch = 3;       // B: children per expanded node (its top-B candidates)
  double tau = 0.1;         // a candidate is kept only if its OWN draft prob q(x | path) >= tau
                            // (not its path probability rho); 0 keeps every top-B candidate
  int32_t max_nodes = 256;  // N_max: draft-node budget (root excluded), filled in BFS order
};

// InvalidArgument naming the field: depth in [1, kMaxTreeNodes - 1], branch in
// [1, kMaxCandidatesPerNode], tau in [0, 1], max_nodes in [1, kMaxTreeNodes - 1].
absl::Status ValidateFixedTreeOptions(const FixedTreeOptions& options);

// Level d (d = 0 .. D-1): every node at depth d gets its top-B candidates with prob >= tau, in
// BFS order, until the tree holds max_nodes draft nodes. Nothing else adapts: with enough
// candidates and tau = 0 the tree is the full B-ary tree of depth D (B + B^2 + ... + B^D nodes,
// capped by max_nodes). One forward per level, at most D per step. Node order is BFS.
class FixedTreePolicy final
    : public ConfiguredLevelPolicy<FixedTreePolicy, FixedTreeOptions, ValidateFixedTreeOptions> {
 public:
  std::string Name() const override;

 private:
  friend ConfiguredLevelPolicy;
  explicit FixedTreePolicy(const FixedTreeOptions& options);
  void OnLevel(const NodeDistributions& dists, std::vector<int32_t>& next) override;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_POLICIES_FIXED_TREE_H_
