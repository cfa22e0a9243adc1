#include "planner/tree_outputs.h"

#include <algorithm>
#include <cstring>

#include "util/check.h"

namespace specplan::planner {

void ComputeTreeOutputs(const Tree& tree, const TreeOutputOptions& options, TreeOutputs* out) {
  SPECPLAN_CHECK(out != nullptr);
  const int s = tree.size();
  SPECPLAN_CHECK(s >= 1, "tree must hold at least the root");
  SPECPLAN_CHECK(tree.parents.size() == static_cast<size_t>(s));
  SPECPLAN_CHECK(tree.parents[0] == -1);
  out->size = s;

  // Parents and positions (depth recomputed from parents so a tree without depths works too).
  out->parents.assign(tree.parents.begin(), tree.parents.end());
  out->positions.resize(s);
  out->scratch_children.assign(s, 0);
  int max_depth = 0;
  out->positions[0] = 0;
  for (int i = 1; i < s; ++i) {
    const int p = tree.parents[i];
    SPECPLAN_CHECK(p >= 0 && p < i, "parents must be topological");
    const int64_t d = out->positions[p] + 1;
    out->positions[i] = d;
    max_depth = std::max<int>(max_depth, static_cast<int>(d));
    ++out->scratch_children[p];
  }
  out->max_depth = max_depth;

  // Packed ancestor mask, incrementally: row i = row parent(i) | bit i.
  const int words = (s + 63) / 64;
  out->mask_words = words;
  if (options.packed_mask) {
    out->mask_packed.resize(static_cast<size_t>(s) * words);
    uint64_t* m = out->mask_packed.data();
    std::memset(m, 0, sizeof(uint64_t) * words);
    m[0] = 1u;
    for (int i = 1; i < s; ++i) {
      uint64_t* row = m + static_cast<size_t>(i) * words;
      const uint64_t* prow = m + static_cast<size_t>(tree.parents[i]) * words;
      // Bits above the parent's own index are zero in its row; copy only the live words.
      const int live = tree.parents[i] / 64 + 1;
      std::memcpy(row, prow, sizeof(uint64_t) * live);
      std::memset(row + live, 0, sizeof(uint64_t) * (words - live));
      row[i >> 6] |= uint64_t{1} << (i & 63);
    }
  } else {
    out->mask_packed.clear();
  }

  // Dense ancestor mask, same recurrence on bytes.
  if (options.dense_mask) {
    out->mask_dense.resize(static_cast<size_t>(s) * s);
    uint8_t* m = out->mask_dense.data();
    std::memset(m, 0, static_cast<size_t>(s) * s);
    m[0] = 1;
    for (int i = 1; i < s; ++i) {
      const int p = tree.parents[i];
      uint8_t* row = m + static_cast<size_t>(i) * s;
      std::memcpy(row, m + static_cast<size_t>(p) * s, p + 1);
      row[i] = 1;
    }
  } else {
    out->mask_dense.clear();
  }

  // Retrieve matrix: one row per leaf in ascending index order.
  out->retrieve_width = max_depth + 1;
  int leaves = 0;
  for (int i = 0; i < s; ++i) leaves += out->scratch_children[i] == 0;
  out->num_leaves = leaves;
  if (options.retrieve) {
    const int w = out->retrieve_width;
    out->retrieve.resize(static_cast<size_t>(leaves) * w);
    int row = 0;
    for (int i = 0; i < s; ++i) {
      if (out->scratch_children[i] != 0) continue;
      int32_t* r = out->retrieve.data() + static_cast<size_t>(row) * w;
      const int d = static_cast<int>(out->positions[i]);
      for (int k = d + 1; k < w; ++k) r[k] = -1;
      for (int v = i, k = d; v >= 0; v = tree.parents[v], --k) r[k] = v;
      ++row;
    }
  } else {
    out->retrieve.clear();
  }

  // Shift to absolute positions last (depths were needed above).
  if (options.position_offset != 0) {
    for (int i = 0; i < s; ++i) out->positions[i] += options.position_offset;
  }
}

}  // namespace specplan::planner
