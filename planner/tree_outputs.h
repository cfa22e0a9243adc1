// Kernel-facing outputs of a draft tree (see ../shared/DESIGN.md "Tree"):
//   positions   pos(i) = position_offset + depth(i)         (depth positions; offset = c for
//   absolute) mask        row i has bit/byte j set iff j == i or j is an ancestor of i (every row
//   sees the root) retrieve    one row per leaf (leaves in ascending node index), root-to-leaf node
//   indices,
//               padded with -1 to width max_depth + 1
//   parents     the parent list, parents[0] = -1
// Plan/run split: the caller owns a TreeOutputs and reuses it; ComputeTreeOutputs resizes its
// vectors (capacity is kept), so repeated calls on trees no larger than before do not allocate.
#ifndef SPECPLAN_PLANNER_TREE_OUTPUTS_H_
#define SPECPLAN_PLANNER_TREE_OUTPUTS_H_

#include <cstdint>
#include <vector>

#include "planner/tree.h"

namespace specplan::planner {

struct TreeOutputOptions {
  int64_t position_offset =
      0;                    // added to every depth; pass c (cached tokens) for absolute positions
  bool packed_mask = true;  // fill TreeOutputs::mask_packed
  bool dense_mask = false;  // fill TreeOutputs::mask_dense (s * s bytes)
  bool retrieve = true;     // fill TreeOutputs::retrieve
};

struct TreeOutputs {
  int size = 0;            // s = tree.size() (draft nodes + root)
  int mask_words = 0;      // uint64 words per packed mask row = ceil(s / 64)
  int num_leaves = 0;      // nodes without children = rows of retrieve
  int retrieve_width = 0;  // columns of retrieve = max depth + 1
  int max_depth = 0;       // deepest node's depth

  std::vector<int64_t> positions;     // [s] position_offset + depth(i)
  std::vector<int32_t> parents;       // [s] parent index, parents[0] = -1
  std::vector<uint64_t> mask_packed;  // [s][mask_words] bit j of row i = word j / 64, bit j % 64
  std::vector<uint8_t> mask_dense;    // [s][s] 1 iff j == i or j is an ancestor of i, else 0
  std::vector<int32_t> retrieve;  // [num_leaves][retrieve_width] root-to-leaf indices, -1 padded

  // Scratch (not an output): child counts per node.
  std::vector<int32_t> scratch_children;  // [s]

  bool MaskBit(int i, int j) const {
    return (mask_packed[static_cast<size_t>(i) * mask_words + (j >> 6)] >> (j & 63)) & 1u;
  }
};

// Fills `out` for `tree`. The tree must satisfy ValidateTree (checked cheaply with SPECPLAN_CHECK:
// sizes agree, parents[0] = -1, parents[i] < i); depths are recomputed from parents.
void ComputeTreeOutputs(const Tree& tree, const TreeOutputOptions& options, TreeOutputs* out);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_OUTPUTS_H_
