// Engine layouts: the trees of a batch of requests, laid out as engines' verification kernels
// take them. Request b has a tree of s_b = n_b + 1
// nodes (node 0 = its root, the pending bonus token; n_b = 0 means it does not speculate this
// step) over c_b cached tokens. Node indices inside a request are the tree's own (local) indices.
//
// Two layouts:
//   BatchLayout   ragged, flash-attention style: all requests' nodes back to back, cu_seqlens
//                 offsets, absolute positions, and per request the bit-packed ancestor mask and the
//                 retrieve matrix of tree_outputs.h (same definitions, same code).
//   SglangLayout  SGLang's EAGLE tree verification tensors (build_tree_kernel_efficient in
//                 sgl-kernel's eagle_utils.cu and speculative/eagle_utils.py): every request padded
//                 to draft_token_num slots, retrive_index / retrive_next_token /
//                 retrive_next_sibling and tree_mask in one of its three TreeMaskMode layouts.
//
// Plan/run split: callers own the layout structs and reuse them; the Compute* functions resize
// their vectors (capacity is kept), so repeated calls on batches no larger than before do not
// allocate.
//
// Inputs are checked and rejected with absl::Status naming the field and value, e.g.
// "trees[2].parents[5] = 7: must be in [0, 5) (topological order)" or
// "context_lens[1] = -3: must be >= 0".
#ifndef SPECPLAN_PLANNER_TREE_ENGINE_LAYOUTS_H_
#define SPECPLAN_PLANNER_TREE_ENGINE_LAYOUTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "planner/tree/tree.h"
#include "util/enum_names.h"

namespace specplan::planner {

// ---- Ragged batch
// --------------------------------------------------------------------------------- T = sum_b s_b
// tokens; request b's tokens are rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1. The global
// (flattened) row of request b's node i is cu_seqlens[b] + i.
//
// Example (BatchLayoutTest.HandWorkedBatchOfThree): request 0 = root with children 1, 2 and
// node 1 with children 3, 4, over c_0 = 10; request 1 = root only (n = 0), c_1 = 7; request 2 =
// chain 0 -> 1 -> 2, c_2 = 0:
//   cu_seqlens       = [0, 5, 6, 9]
//   positions        = [10, 11, 11, 12, 12,  7,  0, 1, 2]
//   mask_packed      = [0b1, 0b11, 0b101, 0b1011, 0b10011,  0b1,  0b1, 0b11, 0b111]
//   mask_offsets     = [0, 5, 6, 9]
//   retrieve         = [0, 2, -1,  0, 1, 3,  0, 1, 4,  0,  0, 1, 2]
//   retrieve_offsets = [0, 9, 10, 13]
struct BatchLayout {
  int batch_size = 0;    // B
  int total_tokens = 0;  // T

  std::vector<TokenId> tokens;  // [T] token ids, request after request (root first)
  std::vector<int32_t>
      cu_seqlens;  // [B + 1] cu_seqlens[0] = 0, cu_seqlens[b + 1] - cu_seqlens[b] = s_b
  std::vector<int64_t> positions;  // [T] absolute position c_b + depth(i)
  std::vector<int32_t> parents;    // [T] local parent index within the request, -1 for a root

  // Ancestor masks, one per request, as TreeOutputs::mask_packed: request b's [s_b][mask_words[b]]
  // uint64 words start at word mask_offsets[b]; bit j of row i (word j / 64, bit j % 64) is 1 iff
  // local node j is i or an ancestor of i.
  std::vector<int32_t> mask_words;    // [B] ceil(s_b / 64)
  std::vector<int64_t> mask_offsets;  // [B + 1] in uint64 words
  std::vector<uint64_t> mask_packed;  // [mask_offsets[B]]

  // Retrieve matrices, one per request, as TreeOutputs::retrieve: request b's
  // [num_leaves[b]][retrieve_width[b]] int32 entries start at retrieve_offsets[b]; one row per
  // leaf (ascending local index), root-to-leaf local node indices, -1 padded.
  std::vector<int32_t> num_leaves;        // [B]
  std::vector<int32_t> retrieve_width;    // [B] max depth of tree b + 1
  std::vector<int64_t> retrieve_offsets;  // [B + 1] in int32 entries
  std::vector<int32_t> retrieve;          // [retrieve_offsets[B]]

  std::vector<int32_t> scratch_children;  // [T] scratch, not an output: child counts

  bool MaskBit(int b, int i, int j) const {
    const uint64_t* row =
        mask_packed.data() + mask_offsets[b] + static_cast<int64_t>(i) * mask_words[b];
    return (row[j >> 6] >> (j & 63)) & 1u;
  }
};

// Fills `out` for trees[b] over context_lens[b] cached tokens, b = 0..B-1 (B = 0 gives
// cu_seqlens = [0] and empty arrays). Errors: the two spans differ in length, a context length
// is negative, a tree is empty, has more than kMaxTreeNodes nodes, tokens and parents differ in
// length, parents[0] != -1 or a parent is not an earlier node, or T exceeds INT32_MAX.
absl::Status ComputeBatchLayout(absl::Span<const Tree> trees,
                                absl::Span<const int64_t> context_lens, BatchLayout* out);
// Bytes of the ragged layout of these trees: the per-token arrays, the ancestor masks (s_b rows of
// ceil(s_b / 64) words) and the retrieve matrices (leaves x (depth + 1) int32 entries), from one
// scan of each tree's parents and depths. ComputeBatchLayout refuses past kMaxLayoutBytes
// (RESOURCE_EXHAUSTED). The trees must be valid (ComputeBatchLayout checks them first).
int64_t BatchLayoutBytes(absl::Span<const Tree> trees);

// ---- SGLang
// -------------------------------------------------------------------------------------- SGLang's
// conventions, followed here:
//  - draft_token_num (D) counts the root: slot 0 of each request is the verified (bonus) token,
//    slots 1.. are draft tokens, so a tree of s nodes fills slots 0..s-1. Every request has the
//    same D; a request with s_b < D is padded (slots s_b..D-1, our extension: SGLang's own trees
//    always fill D).
//  - retrive_index[b][i] = b * D + i: the slot's row in the flattened [B * D] verify batch.
//  - retrive_next_token[b][i] = the first child of node i (its smallest child index), -1 if none.
//    retrive_next_sibling[b][i] = the next child of node i's parent after i (ascending index), -1
//    if none. Both are local indices. Walking next_token from slot 0, then next_sibling, visits
//    exactly the tree's nodes; padded slots are never linked (both -1).
//  - positions[b * D + i] = c_b + depth(i); a padded slot gets c_b.
//  - draft_tokens[b * D + i] = the node's token (SGLang's `draft_tokens` = cat(verified_id,
//    drafts), the verify batch's input_ids); a padded slot gets options.pad_token.
// All integer outputs are int64, as SGLang's tensors are (torch.long).
//
// tree_mask, by mode (SGLang's TreeMaskMode values in parentheses):
//  - kFullMask (FULL_MASK = 0): bool, request after request; request b's block is D rows of
//    c_b + D entries and starts at tree_mask_offsets[b] = sum_{b' < b} D * (c_b' + D). Entry
//    [i][k] is 1 for every prefix column k < c_b, and column c_b + j is 1 iff node j is i or an
//    ancestor of i.
//  - kQlenOnly (QLEN_ONLY = 1): bool [B][D][D]; entry [b][i][j] = 1 iff j is i or an ancestor of i.
//  - kQlenOnlyBitpacking (QLEN_ONLY_BITPACKING = 2): one unsigned integer per row, [B * D] of
//    uint8 if D <= 8, uint16 if D <= 16, uint32 if D <= 32 (D > 32 is an error, as in SGLang):
//    bit j of row b * D + i is 1 iff j is i or an ancestor of i. tree_mask holds the integers'
//    little-endian bytes (tree_mask_bytes_per_row of them per row): the memory image of SGLang's
//    tensor.
// A padded slot's row has only its own entry set among the D tree columns (and, in kFullMask, all
// prefix columns): it attends to itself and to no node of the tree.
//
// Example (SglangHandTest): requests 0 and 1 of the batch above, over c = 3 and c = 2, D = 5 (the
// larger tree's size), pad_token = -7:
//   draft_tokens         = [50, 51, 52, 53, 54,  70, -7, -7, -7, -7]
//   positions            = [3, 4, 4, 5, 5,  2, 2, 2, 2, 2]
//   retrive_index        = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
//   retrive_next_token   = [[1, 3, -1, -1, -1], [-1, -1, -1, -1, -1]]
//   retrive_next_sibling = [[-1, 2, -1, 4, -1], [-1, -1, -1, -1, -1]]
//   tree_mask (QLEN_ONLY_BITPACKING, uint8 rows) = [0b1, 0b11, 0b101, 0b1011, 0b10011,
//                                                   0b1, 0b10, 0b100, 0b1000, 0b10000]
enum class SglangTreeMaskMode { kFullMask = 0, kQlenOnly = 1, kQlenOnlyBitpacking = 2 };

// The most bytes one layout's arrays may take (its mask and its per-slot arrays together): an
// SGLang FULL_MASK of B requests x D slots x (c + D) columns, or the ragged layout's ancestor
// masks, grows with the square of the trees and with the contexts, so a request names its size
// before anything is built. 1 GiB; past it the layout is refused (RESOURCE_EXHAUSTED) with the
// figure. SglangLayoutBytes / BatchLayoutBytes compute the size from the shapes alone.
inline constexpr int64_t kMaxLayoutBytes = int64_t{1} << 30;

// SGLang's names for the modes (ParseEnum reads them, with the field name the caller's flag has).
inline constexpr EnumEntry<SglangTreeMaskMode> kSglangTreeMaskModeNames[] = {
    {SglangTreeMaskMode::kFullMask, "FULL_MASK"},
    {SglangTreeMaskMode::kQlenOnly, "QLEN_ONLY"},
    {SglangTreeMaskMode::kQlenOnlyBitpacking, "QLEN_ONLY_BITPACKING"}};

// SGLang's name for a mode: "FULL_MASK", "QLEN_ONLY" or "QLEN_ONLY_BITPACKING".
const char* SglangTreeMaskModeName(SglangTreeMaskMode mode);

struct SglangLayoutOptions {
  SglangTreeMaskMode mode = SglangTreeMaskMode::kQlenOnly;  // SGLang's Python default is kFullMask
  int draft_token_num = 0;  // D; 0 = the largest tree's size. Must be >= every s_b.
  int64_t pad_token = 0;    // token id of padded slots
};

struct SglangLayout {
  int batch_size = 0;       // B
  int draft_token_num = 0;  // D (root included)
  SglangTreeMaskMode mode = SglangTreeMaskMode::kQlenOnly;
  int tree_mask_bytes_per_row = 0;  // kQlenOnlyBitpacking: 1, 2 or 4; other modes: 0

  std::vector<int64_t> draft_tokens;          // [B * D]
  std::vector<int64_t> positions;             // [B * D]
  std::vector<int64_t> retrive_index;         // [B][D]
  std::vector<int64_t> retrive_next_token;    // [B][D]
  std::vector<int64_t> retrive_next_sibling;  // [B][D]
  std::vector<uint8_t> tree_mask;             // bytes, see the mode list above
  std::vector<int64_t> tree_mask_offsets;     // [B + 1] byte offset of request b's rows

  std::vector<int32_t> scratch_children;  // [D] scratch, not an output
  std::vector<uint32_t> scratch_rows;     // [D] scratch, not an output (bit-packed rows)

  // Row b * D + i of the bit-packed mask as an integer (kQlenOnlyBitpacking only).
  uint32_t PackedRow(int b, int i) const {
    const uint8_t* p =
        tree_mask.data() + (static_cast<size_t>(b) * draft_token_num + i) * tree_mask_bytes_per_row;
    uint32_t v = 0;
    for (int k = 0; k < tree_mask_bytes_per_row; ++k) v |= uint32_t{p[k]} << (8 * k);
    return v;
  }
};

// Bytes per bit-packed row for D slots, as SGLang picks them: 1 (D <= 8), 2 (D <= 16), 4 (D <= 32);
// 0 when D > 32 (not representable).
int SglangBitpackingBytes(int draft_token_num);

// The D an SGLang layout of `trees` gets: `draft_token_num` when > 0, else the largest tree's size.
int SglangDraftTokenNum(absl::Span<const Tree> trees, int draft_token_num);
// Bytes of the tree mask of `batch` requests of D slots over `context_lens` in `mode` (FULL_MASK:
// D x (c_b + D) per request; QLEN_ONLY: B x D x D; bit-packed: 4 per row at most), saturating at
// INT64_MAX.
int64_t SglangMaskBytes(int batch, int draft_token_num, absl::Span<const int64_t> context_lens,
                        SglangTreeMaskMode mode);
// Bytes of the whole SGLang layout: the five int64 per-slot arrays and the mask.
int64_t SglangLayoutBytes(int batch, int draft_token_num, absl::Span<const int64_t> context_lens,
                          SglangTreeMaskMode mode);

// Fills `out` for trees[b] over context_lens[b] cached tokens. Errors: those of ComputeBatchLayout,
// draft_token_num negative or smaller than a tree, and kQlenOnlyBitpacking with D > 32;
// RESOURCE_EXHAUSTED when SglangLayoutBytes exceeds kMaxLayoutBytes ("layout: FULL_MASK for 8
// requests x draft_token_num 8192 over contexts up to 8192 takes 1.1e+09 bytes, over the 1 GiB
// limit: ...").
absl::Status ComputeSglangLayout(absl::Span<const Tree> trees,
                                 absl::Span<const int64_t> context_lens,
                                 const SglangLayoutOptions& options, SglangLayout* out);

// One request: the same as a batch of one.
absl::Status ComputeSglangLayout(const Tree& tree, int64_t context_len,
                                 const SglangLayoutOptions& options, SglangLayout* out);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_ENGINE_LAYOUTS_H_
