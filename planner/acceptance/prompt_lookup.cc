#include "planner/acceptance/prompt_lookup.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace specplan::planner {

std::vector<int32_t> PromptLookupRooms(const std::vector<int32_t>& prompt,
                                       const std::vector<int32_t>& generated,
                                       const PromptLookup& lookup, int32_t cap) {
  std::vector<int32_t> tokens = prompt;
  tokens.insert(tokens.end(), generated.begin(), generated.end());
  // The n tokens starting at `start`, as bytes: the key of an n-gram (the vector is not resized
  // below, so the views stay valid).
  const char* bytes = reinterpret_cast<const char*>(tokens.data());
  auto gram = [&](size_t start, int n) {
    return std::string_view(bytes + start * sizeof(int32_t),
                            static_cast<size_t>(n) * sizeof(int32_t));
  };
  const int lo = std::max(1, lookup.min_n);
  const int hi = std::max(lo, lookup.max_n);
  // Per n: each n-gram seen so far -> the index of its earliest last token.
  std::vector<std::unordered_map<std::string_view, int64_t>> earliest(static_cast<size_t>(hi + 1));
  std::vector<int32_t> rooms;
  rooms.reserve(generated.size() + 1);
  int64_t indexed_to = -1;  // n-grams ending at indices <= indexed_to are in `earliest`
  const int64_t p = static_cast<int64_t>(prompt.size());
  for (int64_t i = 0; i <= static_cast<int64_t>(generated.size()); ++i) {
    const int64_t t = p + i;  // the context: tokens[0, t)
    // An earlier occurrence ends at t - 2 at the latest (the suffix itself ends at t - 1).
    while (indexed_to < t - 2) {
      ++indexed_to;
      for (int n = lo; n <= hi; ++n) {
        if (indexed_to - n + 1 < 0) break;
        earliest[static_cast<size_t>(n)].emplace(gram(static_cast<size_t>(indexed_to - n + 1), n),
                                                 indexed_to);
      }
    }
    int32_t room = 0;
    for (int n = hi; n >= lo; --n) {
      if (t - n < 0) continue;
      const auto& seen = earliest[static_cast<size_t>(n)];
      auto it = seen.find(gram(static_cast<size_t>(t - n), n));
      if (it == seen.end()) continue;
      // The proposal starts right after the occurrence and stops at the context's end.
      room = static_cast<int32_t>(std::min<int64_t>(cap, t - (it->second + 1)));
      break;
    }
    rooms.push_back(room);
  }
  return rooms;
}

}  // namespace specplan::planner
