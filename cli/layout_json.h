// JSON forms of the engine layouts (planner/tree/engine_layouts.h) that `plan` and `plan-batch`
// print with --layout.
#ifndef SPECPLAN_CLI_LAYOUT_JSON_H_
#define SPECPLAN_CLI_LAYOUT_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/tree.h"

namespace specplan::cli {

// The most entries (numbers) one --layout JSON may hold: 2^24, about 270 MB of JSON values in
// memory and at most 350 MB printed. Past it SglangJson / RaggedJson refuse with
// RESOURCE_EXHAUSTED before building anything.
inline constexpr int64_t kMaxLayoutJsonEntries = int64_t{1} << 24;

// SGLang's EAGLE verification layout of trees[b] over contexts[b]: draft_token_num,
// tree_mask_mode, draft_tokens and positions ([B * D]), retrive_index / retrive_next_token /
// retrive_next_sibling ([B][D]), tree_mask (bit-packed: one integer per row; otherwise the bytes).
// `mode_name` is FULL_MASK, QLEN_ONLY or QLEN_ONLY_BITPACKING; errors name --tree-mask-mode.
absl::StatusOr<nlohmann::json> SglangJson(absl::Span<const planner::Tree> trees,
                                          absl::Span<const int64_t> contexts,
                                          const std::string& mode_name, int draft_token_num);

// The ragged batch layout's flat arrays: cu_seqlens, tokens, positions, parents.
absl::StatusOr<nlohmann::json> RaggedJson(absl::Span<const planner::Tree> trees,
                                          absl::Span<const int64_t> contexts);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_LAYOUT_JSON_H_
