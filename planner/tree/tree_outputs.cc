#include "planner/tree/tree_outputs.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/check.h"

namespace specplan::planner {
namespace {

// Largest tree whose retrieve rows ComputeTreeOutputs writes by the plain walk: on the 2-core EPYC
// VM of docs/planner-performance.md it took BM_TreeOutputs/64 from 0.29 to 0.26 us, and at 256
// nodes both walks take 1.13 us (the plain walk's loads grow with the depths of the leaves).
constexpr int kPlainRetrieveMaxNodes = 128;

}  // namespace

int ScanTree(absl::Span<const int32_t> parents, int64_t* depths, int32_t* children) {
  const int s = static_cast<int>(parents.size());
  SPECPLAN_CHECK(s >= 1, "tree must hold at least the root");
  SPECPLAN_CHECK(parents[0] == -1);
  std::memset(children, 0, sizeof(int32_t) * s);
  depths[0] = 0;
  int64_t max_depth = 0;
  for (int i = 1; i < s; ++i) {
    const int p = parents[i];
    SPECPLAN_CHECK(p >= 0 && p < i, "parents must be topological");
    depths[i] = depths[p] + 1;
    max_depth = std::max(max_depth, depths[i]);
    ++children[p];
  }
  return static_cast<int>(max_depth);
}

template <typename Word>
void WritePackedAncestorMask(absl::Span<const int32_t> parents, int words_per_row, Word* out) {
  constexpr int kBits = 8 * sizeof(Word);
  const int s = static_cast<int>(parents.size());
  const int words = words_per_row;
  // Row i = row parent(i) | bit i, built incrementally.
  std::memset(out, 0, sizeof(Word) * words);
  out[0] = 1u;
  for (int i = 1; i < s; ++i) {
    Word* row = out + static_cast<size_t>(i) * words;
    const Word* prow = out + static_cast<size_t>(parents[i]) * words;
    // The parent's row is zero above its own bit, so a copy of the whole row is row parent(i).
    // Rows are copied in blocks of 32 bytes of constant size, which the compiler inlines, then
    // word by word: a memcpy call per row costs more than the copy (1025 rows of 17 words at
    // N = 1024).
    int w = 0;
    constexpr int kBlock = 32 / sizeof(Word);
    for (; w + kBlock <= words; w += kBlock) std::memcpy(row + w, prow + w, 32);
    for (; w < words; ++w) row[w] = prow[w];
    row[i / kBits] |= Word{1} << (i % kBits);
  }
}
template void WritePackedAncestorMask<uint32_t>(absl::Span<const int32_t>, int, uint32_t*);
template void WritePackedAncestorMask<uint64_t>(absl::Span<const int32_t>, int, uint64_t*);

void WriteDenseAncestorMask(absl::Span<const int32_t> parents, size_t row_stride, uint8_t* out) {
  const int s = static_cast<int>(parents.size());
  // Same recurrence on bytes: row i = row parent(i) up to the parent's column, then byte i.
  std::memset(out, 0, s);
  out[0] = 1;
  for (int i = 1; i < s; ++i) {
    const int p = parents[i];
    uint8_t* row = out + static_cast<size_t>(i) * row_stride;
    std::memcpy(row, out + static_cast<size_t>(p) * row_stride, p + 1);
    std::memset(row + p + 1, 0, s - p - 1);
    row[i] = 1;
  }
}

int CountLeaves(absl::Span<const int32_t> children) {
  int leaves = 0;
  for (const int32_t c : children) leaves += c == 0;
  return leaves;
}

void WriteRetrieve(absl::Span<const int32_t> parents, const int64_t* depths,
                   const int32_t* children, int width, int32_t* out, int32_t* row_of) {
  const int s = static_cast<int>(parents.size());
  int32_t* r = out;
  if (row_of == nullptr) {
    for (int i = 0; i < s; ++i) {
      if (children[i] != 0) continue;
      const int d = static_cast<int>(depths[i]);
      for (int k = d + 1; k < width; ++k) r[k] = -1;
      for (int v = i, k = d; v >= 0; v = parents[v], --k) r[k] = v;
      r += width;
    }
    return;
  }
  // row_of[v] = an earlier row through v (-1: none yet). A leaf's walk to the root stops at the
  // first node an earlier row passes through, and that row's prefix up to it is copied: each
  // node is walked once, where the plain walk above follows Σ depth(leaf) dependent loads.
  std::fill(row_of, row_of + s, -1);
  int32_t row = 0;
  for (int i = 0; i < s; ++i) {
    if (children[i] != 0) continue;
    const int d = static_cast<int>(depths[i]);
    for (int k = d + 1; k < width; ++k) r[k] = -1;
    int v = i, k = d;
    for (; v >= 0 && row_of[v] < 0; v = parents[v], --k) {
      r[k] = v;
      row_of[v] = row;
    }
    if (v >= 0) {
      // Copy from[0..k]: blocks of four entries of constant size (inlined) from the top, the
      // last one at 0 possibly overlapping; short prefixes entry by entry.
      const int32_t* from = out + static_cast<size_t>(row_of[v]) * width;
      const int n = k + 1;
      if (n >= 4) {
        for (int j = n; j >= 4; j -= 4) std::memcpy(r + j - 4, from + j - 4, 16);
        std::memcpy(r, from, 16);
      } else {
        for (int j = 0; j < n; ++j) r[j] = from[j];
      }
    }
    r += width;
    ++row;
  }
}

int64_t TreeOutputsBytes(const Tree& tree, const TreeOutputOptions& options) {
  const int64_t s = tree.size();
  int64_t bytes = s * (8 + 4);  // positions, parents
  if (options.packed_mask) bytes += s * ((s + 63) / 64) * 8;
  if (options.dense_mask) bytes += s * s;
  if (options.retrieve) bytes += RetrieveEntries(tree) * 4;
  return bytes;
}

int64_t RetrieveEntries(const Tree& tree) {
  const int64_t s = tree.size();
  std::vector<uint8_t> has_child(static_cast<size_t>(s), 0);
  for (int64_t i = 1; i < s; ++i) has_child[static_cast<size_t>(tree.parents[i])] = 1;
  int64_t leaves = 0;
  for (uint8_t c : has_child) leaves += c == 0 ? 1 : 0;
  return leaves * (tree.max_depth(static_cast<int>(s)) + 1);
}

void ComputeTreeOutputs(const Tree& tree, const TreeOutputOptions& options, TreeOutputs* out) {
  SPECPLAN_CHECK(out != nullptr);
  const int s = tree.size();
  SPECPLAN_CHECK(s >= 1, "tree must hold at least the root");
  SPECPLAN_CHECK(tree.parents.size() == static_cast<size_t>(s));
  const absl::Span<const int32_t> parents(tree.parents);
  out->size = s;

  // Parents and positions (depth recomputed from parents so a tree without depths works too).
  out->parents.assign(tree.parents.begin(), tree.parents.end());
  out->positions.resize(s);
  out->scratch_children.resize(s);
  out->max_depth = ScanTree(parents, out->positions.data(), out->scratch_children.data());

  const int words = (s + 63) / 64;
  out->mask_words = words;
  if (options.packed_mask) {
    out->mask_packed.resize(static_cast<size_t>(s) * words);
    WritePackedAncestorMask<uint64_t>(parents, words, out->mask_packed.data());
  } else {
    out->mask_packed.clear();
  }

  if (options.dense_mask) {
    out->mask_dense.resize(static_cast<size_t>(s) * s);
    WriteDenseAncestorMask(parents, s, out->mask_dense.data());
  } else {
    out->mask_dense.clear();
  }

  out->retrieve_width = out->max_depth + 1;
  out->num_leaves = CountLeaves(out->scratch_children);
  if (options.retrieve) {
    out->retrieve.resize(static_cast<size_t>(out->num_leaves) * out->retrieve_width);
    // Small trees walk every leaf's path (a few dependent loads each); bigger ones copy the part
    // of a path an earlier row holds (WriteRetrieve).
    int32_t* row_of = nullptr;
    if (s > kPlainRetrieveMaxNodes) {
      out->scratch_rows.resize(s);
      row_of = out->scratch_rows.data();
    }
    WriteRetrieve(parents, out->positions.data(), out->scratch_children.data(), out->retrieve_width,
                  out->retrieve.data(), row_of);
  } else {
    out->retrieve.clear();
  }

  // Shift to absolute positions last (depths were needed above).
  if (options.position_offset != 0) {
    for (int i = 0; i < s; ++i) out->positions[i] += options.position_offset;
  }
}

}  // namespace specplan::planner
