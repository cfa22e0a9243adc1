#include "ops/merge.h"

#include "absl/strings/str_cat.h"
#include "planner/tree/tree_json.h"
#include "util/enum_names.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

constexpr EnumEntry<planner::MergeSource> kSourceNames[] = {
    {planner::MergeSource::kA, "a"},
    {planner::MergeSource::kB, "b"},
    {planner::MergeSource::kBoth, "both"},
};

}  // namespace

const char* MergeSourceName(planner::MergeSource source) { return EnumName(kSourceNames, source); }

absl::Status Validate(const MergeRequest& req, int64_t max_offset) {
  if (req.a == nullptr) return absl::InvalidArgumentError("a: required");
  if (req.b == nullptr) return absl::InvalidArgumentError("b: required");
  if (req.options.n_max >= 0) {
    if (absl::Status st = CheckInRange("n_max", int64_t{req.options.n_max}, 0,
                                       planner::kMaxTreeNodes, "draft nodes kept");
        !st.ok()) {
      return st;
    }
  }
  return CheckInRange("c", req.c, 0, max_offset, "cached tokens: positions are c + depth");
}

absl::Status MergeInto(const MergeRequest& req, planner::MergeWorkspace* workspace,
                       MergeResult* result, int64_t max_offset) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req, max_offset));
  SPECPLAN_RETURN_IF_ERROR(
      planner::MergeTrees(*req.a, *req.b, req.options, workspace, &result->merged));
  planner::ComputeTreeOutputsAt(result->merged.tree, req.outputs, req.c, &result->outputs);
  return absl::OkStatus();
}

absl::StatusOr<MergeResult> Merge(const MergeRequest& req) {
  planner::MergeWorkspace workspace;
  MergeResult result;
  if (absl::Status st = MergeInto(req, &workspace, &result); !st.ok()) return st;
  return result;
}

std::vector<std::string> MaskRows(const planner::TreeOutputs& out) {
  std::vector<std::string> rows(out.size, std::string(out.size, '0'));
  for (int i = 0; i < out.size; ++i) {
    for (int j = 0; j <= i; ++j) {
      if (out.MaskBit(i, j)) rows[i][j] = '1';
    }
  }
  return rows;
}

std::vector<std::vector<int32_t>> RetrieveRows(const planner::TreeOutputs& out) {
  std::vector<std::vector<int32_t>> rows(out.num_leaves);
  for (int r = 0; r < out.num_leaves; ++r) {
    const int32_t* row = out.retrieve.data() + static_cast<size_t>(r) * out.retrieve_width;
    rows[r].assign(row, row + out.retrieve_width);
  }
  return rows;
}

nlohmann::json ToJson(const MergeRequest& req, const MergeResult& r) {
  std::vector<std::string> sources;
  for (planner::MergeSource s : r.merged.source) sources.push_back(MergeSourceName(s));
  nlohmann::json j = planner::TreeToJson(r.merged.tree);
  j["positions"] = r.outputs.positions;
  j["retrieve"] = RetrieveRows(r.outputs);
  j["mask"] = MaskRows(r.outputs);
  j["phi_a"] = r.merged.phi_a;
  j["phi_b"] = r.merged.phi_b;
  j["source"] = sources;
  j["num_draft"] = r.merged.tree.num_draft();
  j["dedup"] = req.options.dedup;
  j["n_max"] = req.options.n_max < 0 ? nlohmann::json(nullptr) : nlohmann::json(req.options.n_max);
  return j;
}

}  // namespace specplan::ops
