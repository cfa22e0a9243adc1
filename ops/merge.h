// Operation Merge: the union of two drafters' trees under one shared root (merged-tree dual
// drafting), optionally with prefix sharing (dedup) and a best-first budget, and the verifier
// inputs of the merged tree. Serves `specplan merge` and the service's MergeTrees; the Python
// module's merge_trees is to call it too.
//
//   MergeRequest req;  req.a = &tree_a;  req.b = &tree_b;  req.c = 1024;
//   absl::StatusOr<MergeResult> r = ops::Merge(req);
#ifndef SPECPLAN_OPS_MERGE_H_
#define SPECPLAN_OPS_MERGE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/validate.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::ops {

// The largest position offset Merge takes by default (the CLI's --c limit, 2^40).
inline constexpr int64_t kMaxMergeOffset = int64_t{1} << 40;

struct MergeRequest {
  const planner::Tree* a = nullptr;  // not owned; same root token as b
  const planner::Tree* b = nullptr;
  planner::MergeOptions options;       // dedup; n_max < 0: no budget, else [0, kMaxTreeNodes]
  int64_t c = 0;                       // cached tokens: positions are c + depth
  planner::TreeOutputOptions outputs;  // position_offset is set to c
};

struct MergeResult {
  planner::MergedTree merged;  // tree, phi_a, phi_b, source
  planner::TreeOutputs outputs;
};

// Names of MergeSource values ("a", "b", "both").
const char* MergeSourceName(planner::MergeSource source);

// a and b given; n_max in [-1, kMaxTreeNodes]; c in [0, max_offset]. Errors name the field.
absl::Status Validate(const MergeRequest& req, int64_t max_offset = kMaxMergeOffset);
// Merges into *workspace and *result (reused; no allocation once grown).
absl::Status MergeInto(const MergeRequest& req, planner::MergeWorkspace* workspace,
                       MergeResult* result, int64_t max_offset = kMaxMergeOffset);
absl::StatusOr<MergeResult> Merge(const MergeRequest& req);

// The JSON form (`specplan merge --json`): the merged tree (planner/tree/tree_json.h), positions,
// retrieve, mask (one "0101" string per row), phi_a, phi_b, source, num_draft, dedup, n_max (null
// without a budget).
nlohmann::json ToJson(const MergeRequest& req, const MergeResult& result);
// The ancestor mask as one string of '0'/'1' per row, and the retrieve rows.
std::vector<std::string> MaskRows(const planner::TreeOutputs& outputs);
std::vector<std::vector<int32_t>> RetrieveRows(const planner::TreeOutputs& outputs);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_MERGE_H_
