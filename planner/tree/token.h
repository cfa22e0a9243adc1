// The one token-id type shared by the planner and the runtime. Vocabulary sizes must fit it (the
// runtime rejects a config whose vocab_size does not); slots, positions, lengths and shapes stay
// int64_t.
#ifndef SPECPLAN_PLANNER_TREE_TOKEN_H_
#define SPECPLAN_PLANNER_TREE_TOKEN_H_

#include <cstdint>
#include <limits>

namespace specplan::planner {

using TokenId = int32_t;

// Largest vocabulary the runtime accepts (ids in [0, V) fit TokenId).
inline constexpr int64_t kMaxVocabSize = static_cast<int64_t>(std::numeric_limits<TokenId>::max());

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_TOKEN_H_
