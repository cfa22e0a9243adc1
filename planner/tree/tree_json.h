// JSON form of a draft tree (planner/tree/tree.h), as read by the CLI and written to reports:
//   {"tokens": [r, t1, t2, ...], "parents": [-1, p1, p2, ...],
//    "depths": [...] (optional; checked against parents when given),
//    "path_probs": [...] (optional; rho(i) in [0, 1], rho(0) = 1)}
// Depths are computed from parents. The parsed tree is checked with ValidateTree, so every
// convention of tree.h holds for a successful result.
#ifndef SPECPLAN_PLANNER_TREE_TREE_JSON_H_
#define SPECPLAN_PLANNER_TREE_TREE_JSON_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/status/statusor.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

// Converts a parsed JSON object into a validated Tree. Errors are InvalidArgument and name the
// field, index and value, e.g. `parents[4] = 9: must be in [0, 4) (topological order)` or
// `tokens[2] = "a": must be an integer`. Unknown keys are ignored. When "path_probs" is absent the
// result's path_probs is empty (ValidateTree allows that).
absl::StatusOr<Tree> TreeFromJson(const nlohmann::json& json);

// Parses JSON text, then TreeFromJson. A syntax error is InvalidArgument
// "<source>:<line>:<column>: not valid JSON: <what>" (util/json_error.h); `source` names the text
// (a file's path).
absl::StatusOr<Tree> ParseTreeJson(std::string_view text, std::string_view source = "tree JSON");

// Writes {"tokens", "parents", "depths"} and "path_probs" when the tree has them. Depths are
// recomputed from parents when tree.depths is empty. Round-trips through TreeFromJson.
nlohmann::json TreeToJson(const Tree& tree);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_TREE_JSON_H_
