#include "cli/layout_json.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"
#include "planner/tree/engine_layouts.h"

namespace specplan::cli {
namespace {

// Rows of D entries from a flat [B * D] array.
nlohmann::json Rows(const std::vector<int64_t>& flat, int B, int D) {
  nlohmann::json rows = nlohmann::json::array();
  for (int b = 0; b < B; ++b) {
    rows.push_back(std::vector<int64_t>(flat.begin() + static_cast<ptrdiff_t>(b) * D,
                                        flat.begin() + static_cast<ptrdiff_t>(b + 1) * D));
  }
  return rows;
}

// Refused before the JSON is built: one JSON value takes 16 bytes in memory and up to 21
// characters printed, so a layout's JSON is bounded by its entries.
absl::Status CheckJsonEntries(const char* what, int64_t entries) {
  if (entries <= kMaxLayoutJsonEntries) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "its JSON would hold %d entries, over the limit of %d (kMaxLayoutJsonEntries) for the %s "
      "layout: lower --draft-token-num or --n-max, use --tree-mask-mode QLEN_ONLY_BITPACKING, "
      "or take the arrays from Python (specplan.sglang_layout)",
      entries, kMaxLayoutJsonEntries, what));
}

}  // namespace

absl::StatusOr<nlohmann::json> SglangJson(absl::Span<const planner::Tree> trees,
                                          absl::Span<const int64_t> contexts,
                                          const std::string& mode_name, int draft_token_num) {
  using planner::SglangTreeMaskMode;
  planner::SglangLayoutOptions options;
  options.draft_token_num = draft_token_num;
  bool known = false;
  for (const auto m : {SglangTreeMaskMode::kFullMask, SglangTreeMaskMode::kQlenOnly,
                       SglangTreeMaskMode::kQlenOnlyBitpacking}) {
    if (mode_name == planner::SglangTreeMaskModeName(m)) {
      options.mode = m;
      known = true;
    }
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--tree-mask-mode %s: must be FULL_MASK, QLEN_ONLY or QLEN_ONLY_BITPACKING", mode_name));
  }
  // The entries from the shapes alone: the five per-slot arrays and the mask (bit-packed: one
  // integer per row; otherwise one per byte).
  const int d = planner::SglangDraftTokenNum(trees, draft_token_num);
  const int64_t slots = static_cast<int64_t>(trees.size()) * d;
  const int64_t mask =
      options.mode == SglangTreeMaskMode::kQlenOnlyBitpacking
          ? slots
          : planner::SglangMaskBytes(static_cast<int>(trees.size()), d, contexts, options.mode);
  if (absl::Status st = CheckJsonEntries("sglang", 5 * slots + mask); !st.ok()) return st;
  planner::SglangLayout layout;
  if (absl::Status st = planner::ComputeSglangLayout(trees, contexts, options, &layout); !st.ok()) {
    return st;
  }
  const int B = layout.batch_size, D = layout.draft_token_num;
  nlohmann::json j;
  j["draft_token_num"] = D;
  j["tree_mask_mode"] = planner::SglangTreeMaskModeName(layout.mode);
  j["draft_tokens"] = layout.draft_tokens;
  j["positions"] = layout.positions;
  j["retrive_index"] = Rows(layout.retrive_index, B, D);
  j["retrive_next_token"] = Rows(layout.retrive_next_token, B, D);
  j["retrive_next_sibling"] = Rows(layout.retrive_next_sibling, B, D);
  if (layout.mode == SglangTreeMaskMode::kQlenOnlyBitpacking) {
    std::vector<uint32_t> rows;
    rows.reserve(static_cast<size_t>(B) * D);
    for (int b = 0; b < B; ++b) {
      for (int i = 0; i < D; ++i) rows.push_back(layout.PackedRow(b, i));
    }
    j["tree_mask"] = rows;
  } else {
    j["tree_mask"] = layout.tree_mask;
  }
  return j;
}

absl::StatusOr<nlohmann::json> RaggedJson(absl::Span<const planner::Tree> trees,
                                          absl::Span<const int64_t> contexts) {
  int64_t tokens = 0;
  for (const planner::Tree& t : trees) tokens += t.size();
  if (absl::Status st = CheckJsonEntries("ragged", 4 * tokens + 1); !st.ok()) return st;
  planner::BatchLayout layout;
  if (absl::Status st = planner::ComputeBatchLayout(trees, contexts, &layout); !st.ok()) {
    return st;
  }
  return nlohmann::json{{"cu_seqlens", layout.cu_seqlens},
                        {"tokens", layout.tokens},
                        {"positions", layout.positions},
                        {"parents", layout.parents}};
}

}  // namespace specplan::cli
