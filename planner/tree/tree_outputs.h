// Kernel-facing outputs of a draft tree:
// clang-format off
//   positions   pos(i) = position_offset + depth(i) (depth positions; offset = c for absolute)
//   mask        row i has bit/byte j set iff j == i or j is an ancestor of i (every row sees the
//               root)
//   retrieve    one row per leaf (leaves in ascending node index), root-to-leaf node indices,
//               padded with -1 to width max_depth + 1
//   parents     the parent list, parents[0] = -1
// clang-format on
// Plan/run split: the caller owns a TreeOutputs and reuses it; ComputeTreeOutputs resizes its
// vectors (capacity is kept), so repeated calls on trees no larger than before do not allocate.
#ifndef SPECPLAN_PLANNER_TREE_TREE_OUTPUTS_H_
#define SPECPLAN_PLANNER_TREE_TREE_OUTPUTS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

struct TreeOutputOptions {
  // Added to every depth; pass c (cached tokens) for absolute positions.
  int64_t position_offset = 0;
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

  // Scratch (not outputs): child counts per node, and WriteRetrieve's row of each node.
  std::vector<int32_t> scratch_children;  // [s]
  std::vector<int32_t> scratch_rows;      // [s]

  bool MaskBit(int i, int j) const {
    return (mask_packed[static_cast<size_t>(i) * mask_words + (j >> 6)] >> (j & 63)) & 1u;
  }
};

// Bytes ComputeTreeOutputs fills for `tree` under `options`: positions and parents, the packed mask
// (s rows of ceil(s / 64) words), the dense mask (s x s) and retrieve (leaves x (depth + 1) int32),
// each only when asked for; from one scan of parents and depths, before anything is allocated.
int64_t TreeOutputsBytes(const Tree& tree, const TreeOutputOptions& options);
// Entries of the tree's retrieve matrix: leaves x (max depth + 1), from one scan of parents and
// depths (TreeOutputsBytes and the ragged layout's size use it).
int64_t RetrieveEntries(const Tree& tree);

// Fills `out` for `tree`. The tree must satisfy ValidateTree (checked cheaply with SPECPLAN_CHECK:
// sizes agree, parents[0] = -1, parents[i] < i); depths are recomputed from parents.
void ComputeTreeOutputs(const Tree& tree, const TreeOutputOptions& options, TreeOutputs* out);
// The same at absolute positions: `options` with position_offset = c, the sequence's cached
// tokens (positions c + depth(i)).
inline void ComputeTreeOutputsAt(const Tree& tree, TreeOutputOptions options, int64_t c,
                                 TreeOutputs* out) {
  options.position_offset = c;
  ComputeTreeOutputs(tree, options, out);
}

// ---- Row writers --------------------------------------------------------------------------------
// The pieces ComputeTreeOutputs is made of, for callers that lay several trees out in one buffer
// (engine_layouts.h). Each writes one tree into caller memory and allocates nothing. `parents` is
// the tree's parent list, [s] with s >= 1, parents[0] = -1 and 0 <= parents[i] < i (checked by
// ScanTree with SPECPLAN_CHECK; the writers below assume a list ScanTree accepted).

// Writes depth(i) to depths[0..s) and the number of children of node i to children[0..s);
// returns the largest depth.
int ScanTree(absl::Span<const int32_t> parents, int64_t* depths, int32_t* children);

// Ancestor mask packed into words of type Word (uint32_t or uint64_t), W = bits of Word: row i is
// words [i * words_per_row, (i + 1) * words_per_row) of out; bit j of the row (word j / W, bit
// j % W) is 1 iff j == i or j is an ancestor of i, bits >= s are 0. Needs words_per_row >=
// ceil(s / W).
template <typename Word>
void WritePackedAncestorMask(absl::Span<const int32_t> parents, int words_per_row, Word* out);

// Ancestor mask one byte per entry: row i starts at out + i * row_stride (row_stride >= s);
// entry j of row i, j < s, is 1 iff j == i or j is an ancestor of i, else 0. Bytes from s to
// row_stride of each row are left as they were.
void WriteDenseAncestorMask(absl::Span<const int32_t> parents, size_t row_stride, uint8_t* out);

// Number of nodes whose child count (from ScanTree) is 0 = rows of the retrieve matrix.
int CountLeaves(absl::Span<const int32_t> children);

// Retrieve matrix from ScanTree's depths and child counts: one row of `width` (>= max depth + 1)
// per leaf, leaves in ascending index, root-to-leaf node indices, -1 padded; writes
// CountLeaves(children) * width entries. `row_of`, when given, is [s] scratch that lets a leaf
// copy the part of its path an earlier row holds (the same output, faster on big trees).
void WriteRetrieve(absl::Span<const int32_t> parents, const int64_t* depths,
                   const int32_t* children, int width, int32_t* out, int32_t* row_of = nullptr);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_TREE_OUTPUTS_H_
