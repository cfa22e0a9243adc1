#include "planner/tree/tree.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace specplan::planner {

absl::Status ValidateTree(const Tree& tree) {
  const size_t n = tree.tokens.size();
  if (n == 0) return absl::InvalidArgumentError("tokens: empty tree (the root is required)");
  if (n > static_cast<size_t>(kMaxTreeNodes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens: ", n, " nodes exceeds the limit of ", kMaxTreeNodes));
  }
  if (tree.parents.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("parents: length ", tree.parents.size(), " does not match tokens length ", n));
  }
  if (!tree.depths.empty() && tree.depths.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("depths: length ", tree.depths.size(), " does not match tokens length ", n));
  }
  if (!tree.path_probs.empty() && tree.path_probs.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("path_probs: length ", tree.path_probs.size(),
                                                   " does not match tokens length ", n));
  }
  if (tree.parents[0] != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parents[0] = ", tree.parents[0], ": the root's parent must be -1"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (tree.tokens[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokens[", i, "] = ", tree.tokens[i], ": token ids must be >= 0"));
    }
    if (i > 0) {
      const int32_t p = tree.parents[i];
      if (p < 0 || static_cast<size_t>(p) >= i) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parents[", i, "] = ", p, ": must be in [0, ", i, ") (topological order)"));
      }
    }
    if (!tree.depths.empty()) {
      const int32_t want = i == 0 ? 0 : tree.depths[tree.parents[i]] + 1;
      if (tree.depths[i] != want) {
        return absl::InvalidArgumentError(absl::StrCat("depths[", i, "] = ", tree.depths[i],
                                                       ": expected ", want, " from parents"));
      }
    }
    if (!tree.path_probs.empty()) {
      const double r = tree.path_probs[i];
      if (!(r >= 0.0 && r <= 1.0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("path_probs[", i, "] = ", r, ": must be in [0, 1]"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace specplan::planner
