// Medusa / EAGLE-style "tree choices": a tree topology written as a list of root-to-node paths of
// child ranks. [[0], [1], [0, 0], [0, 1]] = first and second child of the root, then the first and
// second child of the root's first child. The root itself is implicit (never listed).
// Rank = order among siblings by node index (the sibling with the smallest index has rank 0).
#ifndef SPECPLAN_PLANNER_TREE_TREE_CHOICES_H_
#define SPECPLAN_PLANNER_TREE_TREE_CHOICES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

using TreeChoices = std::vector<std::vector<int32_t>>;  // [paths][path length] child ranks

// Token written into imported trees: choices carry topology only.
inline constexpr TokenId kPlaceholderToken = 0;

// Checks that every path is non-empty with ranks >= 0, that no path is repeated, that the prefix
// of every path (path minus its last rank) is listed (or is the root), and that sibling ranks are
// contiguous from 0. Errors name the path index, e.g.
// "paths[3] = [0, 2]: rank 2 but sibling rank 1 ([0, 1]) is missing (ranks must be contiguous)".
absl::Status ValidateTreeChoices(const TreeChoices& paths);

// Writes one path per draft node, in node index order (node i >= 1 -> (*paths)[i - 1]).
// Because parents[i] < i, every path's prefix appears before it. Requires a valid tree.
void ExportTreeChoices(const Tree& tree, TreeChoices* paths);

// Builds the topology described by `paths` into *tree. Nodes are created in Medusa order: sorted
// by (path length, ranks lexicographically), so siblings get increasing indices in rank order and
// ExportTreeChoices(ImportTreeChoices(p)) == p sorted that way. Tokens are unknown: the root gets
// `root_token`, every draft node `placeholder_token`; path_probs are all 1 (unknown, "certain").
// The input order is free; on error *tree is left unspecified.
absl::Status ImportTreeChoices(const TreeChoices& paths, Tree* tree, TokenId root_token = 0,
                               TokenId placeholder_token = kPlaceholderToken);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_TREE_CHOICES_H_
