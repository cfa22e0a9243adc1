#include "planner/tree/tree_choices.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/check.h"

namespace specplan::planner {
namespace {

std::string PathText(const std::vector<int32_t>& p) {
  return absl::StrCat("[", absl::StrJoin(p, ", "), "]");
}

}  // namespace

absl::Status ValidateTreeChoices(const TreeChoices& paths) {
  if (paths.size() + 1 > static_cast<size_t>(kMaxTreeNodes)) {
    return absl::InvalidArgumentError(absl::StrCat("paths: ", paths.size(),
                                                   " paths exceeds the limit of ",
                                                   kMaxTreeNodes - 1, " draft nodes"));
  }
  std::map<std::vector<int32_t>, size_t> index;
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto& p = paths[i];
    if (p.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("paths[", i, "] = []: empty path (the root is implicit)"));
    }
    for (size_t j = 0; j < p.size(); ++j) {
      if (p[j] < 0) {
        return absl::InvalidArgumentError(absl::StrCat("paths[", i, "] = ", PathText(p), ": rank ",
                                                       p[j], " at position ", j, " must be >= 0"));
      }
    }
    auto [it, inserted] = index.emplace(p, i);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("paths[", i, "] = ", PathText(p), ": duplicate of paths[", it->second, "]"));
    }
  }
  std::vector<int32_t> probe;
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto& p = paths[i];
    if (p.size() > 1) {
      probe.assign(p.begin(), p.end() - 1);
      if (index.find(probe) == index.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "paths[", i, "] = ", PathText(p), ": prefix ", PathText(probe), " is missing"));
      }
    }
    if (p.back() > 0) {
      probe.assign(p.begin(), p.end());
      --probe.back();
      if (index.find(probe) == index.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "paths[", i, "] = ", PathText(p), ": rank ", p.back(), " but sibling rank ",
            probe.back(), " (", PathText(probe), ") is missing (ranks must be contiguous from 0)"));
      }
    }
  }
  return absl::OkStatus();
}

void ExportTreeChoices(const Tree& tree, TreeChoices* paths) {
  SPECPLAN_CHECK(paths != nullptr);
  const int s = tree.size();
  SPECPLAN_CHECK(s >= 1 && tree.parents.size() == static_cast<size_t>(s));
  paths->resize(s - 1);
  std::vector<int32_t> next_rank(s, 0);
  std::vector<int32_t> rank(s, 0);
  for (int i = 1; i < s; ++i) {
    const int p = tree.parents[i];
    SPECPLAN_CHECK(p >= 0 && p < i);
    rank[i] = next_rank[p]++;
    auto& out = (*paths)[i - 1];
    if (p == 0) {
      out.clear();
    } else {
      out = (*paths)[p - 1];
    }
    out.push_back(rank[i]);
  }
}

absl::Status ImportTreeChoices(const TreeChoices& paths, Tree* tree, TokenId root_token,
                               TokenId placeholder_token) {
  SPECPLAN_CHECK(tree != nullptr);
  auto status = ValidateTreeChoices(paths);
  if (!status.ok()) return status;
  std::vector<size_t> order(paths.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (paths[a].size() != paths[b].size()) return paths[a].size() < paths[b].size();
    return paths[a] < paths[b];
  });
  std::map<std::vector<int32_t>, int> node_of;
  tree->ResetRoot(root_token);
  std::vector<int32_t> prefix;
  for (size_t idx : order) {
    const auto& p = paths[idx];
    int parent = 0;
    if (p.size() > 1) {
      prefix.assign(p.begin(), p.end() - 1);
      parent = node_of.at(prefix);
    }
    node_of.emplace(p, tree->AddNode(parent, placeholder_token, 1.0));
  }
  return absl::OkStatus();
}

}  // namespace specplan::planner
