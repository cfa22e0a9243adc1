#include "planner/tree/engine_layouts.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::planner {
namespace {

// The structural checks the row writers rely on, as Status (trees come from engines and the wire).
absl::Status CheckLayoutInputs(absl::Span<const Tree> trees,
                               absl::Span<const int64_t> context_lens) {
  if (trees.size() != context_lens.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("context_lens.size() = %d: must equal trees.size() = %d",
                        context_lens.size(), trees.size()));
  }
  int64_t total = 0;
  for (size_t b = 0; b < trees.size(); ++b) {
    const Tree& t = trees[b];
    if (context_lens[b] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("context_lens[%d] = %d: must be >= 0", b, context_lens[b]));
    }
    const int s = t.size();
    if (s < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("trees[%d].tokens is empty: a tree holds at least the root", b));
    }
    if (s > kMaxTreeNodes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("trees[%d].size() = %d: must be <= %d", b, s, kMaxTreeNodes));
    }
    if (t.parents.size() != t.tokens.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("trees[%d].parents.size() = %d: must equal tokens.size() = %d", b,
                          t.parents.size(), t.tokens.size()));
    }
    if (t.parents[0] != -1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("trees[%d].parents[0] = %d: must be -1 (root)", b, t.parents[0]));
    }
    for (int i = 1; i < s; ++i) {
      if (t.parents[i] < 0 || t.parents[i] >= i) {
        return absl::InvalidArgumentError(
            absl::StrFormat("trees[%d].parents[%d] = %d: must be in [0, %d) (topological order)", b,
                            i, t.parents[i], i));
      }
    }
    total += s;
  }
  if (total > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("total tokens = %d: must fit int32 cu_seqlens", total));
  }
  return absl::OkStatus();
}

// a + b and a * b saturating at INT64_MAX (all operands >= 0).
int64_t SatAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}
int64_t SatMul(int64_t a, int64_t b) {
  return b != 0 && a > std::numeric_limits<int64_t>::max() / b ? std::numeric_limits<int64_t>::max()
                                                               : a * b;
}

absl::Status LayoutTooLarge(const std::string& what, int64_t bytes) {
  return absl::ResourceExhaustedError(
      absl::StrFormat("layout: %s takes %.3g bytes, over the limit of %d bytes (kMaxLayoutBytes)",
                      what, static_cast<double>(bytes), kMaxLayoutBytes));
}

}  // namespace

int64_t BatchLayoutBytes(absl::Span<const Tree> trees) {
  int64_t bytes = 0;
  for (const Tree& t : trees) {
    const int64_t s = t.size();
    // tokens, parents (int32), positions (int64), scratch (int32): 20 bytes per token; the mask's
    // s rows of ceil(s / 64) words; retrieve: one row of depth + 1 int32 entries per leaf.
    bytes = SatAdd(bytes, SatMul(s, 20));
    bytes = SatAdd(bytes, SatMul(SatMul(s, (s + 63) / 64), 8));
    bytes = SatAdd(bytes, SatMul(RetrieveEntries(t), 4));
  }
  return bytes;
}

int SglangDraftTokenNum(absl::Span<const Tree> trees, int draft_token_num) {
  if (draft_token_num > 0) return draft_token_num;
  int largest = 0;
  for (const Tree& t : trees) largest = std::max(largest, t.size());
  return largest;
}

int64_t SglangMaskBytes(int batch, int draft_token_num, absl::Span<const int64_t> context_lens,
                        SglangTreeMaskMode mode) {
  const int64_t slots = SatMul(batch, draft_token_num);
  switch (mode) {
    case SglangTreeMaskMode::kFullMask: {
      int64_t bytes = 0;
      for (int64_t c : context_lens) {
        bytes = SatAdd(bytes,
                       SatMul(draft_token_num, SatAdd(std::max<int64_t>(c, 0), draft_token_num)));
      }
      return bytes;
    }
    case SglangTreeMaskMode::kQlenOnly:
      return SatMul(slots, draft_token_num);
    case SglangTreeMaskMode::kQlenOnlyBitpacking:
      return SatMul(slots, 4);
  }
  return 0;
}

int64_t SglangLayoutBytes(int batch, int draft_token_num, absl::Span<const int64_t> context_lens,
                          SglangTreeMaskMode mode) {
  // draft_tokens, positions and the three retrive arrays, then the mask.
  return SatAdd(SatMul(SatMul(batch, draft_token_num), 5 * 8),
                SglangMaskBytes(batch, draft_token_num, context_lens, mode));
}

absl::Status ComputeBatchLayout(absl::Span<const Tree> trees,
                                absl::Span<const int64_t> context_lens, BatchLayout* out) {
  if (absl::Status st = CheckLayoutInputs(trees, context_lens); !st.ok()) return st;
  const int batch = static_cast<int>(trees.size());
  if (const int64_t bytes = BatchLayoutBytes(trees); bytes > kMaxLayoutBytes) {
    return LayoutTooLarge(absl::StrFormat("the ragged layout of %d trees", batch), bytes);
  }
  out->batch_size = batch;
  out->cu_seqlens.resize(batch + 1);
  out->mask_words.resize(batch);
  out->mask_offsets.resize(batch + 1);
  out->cu_seqlens[0] = 0;
  out->mask_offsets[0] = 0;
  for (int b = 0; b < batch; ++b) {
    const int s = trees[b].size();
    out->cu_seqlens[b + 1] = out->cu_seqlens[b] + s;
    out->mask_words[b] = (s + 63) / 64;
    out->mask_offsets[b + 1] = out->mask_offsets[b] + static_cast<int64_t>(s) * out->mask_words[b];
  }
  const int total = out->cu_seqlens[batch];
  out->total_tokens = total;
  out->tokens.resize(total);
  out->parents.resize(total);
  out->positions.resize(total);
  out->scratch_children.resize(total);
  out->mask_packed.resize(out->mask_offsets[batch]);
  out->num_leaves.resize(batch);
  out->retrieve_width.resize(batch);
  out->retrieve_offsets.resize(batch + 1);
  out->retrieve_offsets[0] = 0;

  // Pass 1: tokens, parents, depths (in positions), child counts, masks; retrieve sizes.
  for (int b = 0; b < batch; ++b) {
    const Tree& t = trees[b];
    const absl::Span<const int32_t> parents(t.parents);
    const int off = out->cu_seqlens[b];
    std::copy(t.tokens.begin(), t.tokens.end(), out->tokens.begin() + off);
    std::copy(t.parents.begin(), t.parents.end(), out->parents.begin() + off);
    const int max_depth =
        ScanTree(parents, out->positions.data() + off, out->scratch_children.data() + off);
    WritePackedAncestorMask<uint64_t>(parents, out->mask_words[b],
                                      out->mask_packed.data() + out->mask_offsets[b]);
    out->num_leaves[b] =
        CountLeaves(absl::MakeConstSpan(out->scratch_children.data() + off, t.size()));
    out->retrieve_width[b] = max_depth + 1;
    out->retrieve_offsets[b + 1] =
        out->retrieve_offsets[b] + static_cast<int64_t>(out->num_leaves[b]) * (max_depth + 1);
  }

  // Pass 2: retrieve rows (need the depths), then depths -> absolute positions.
  out->retrieve.resize(out->retrieve_offsets[batch]);
  for (int b = 0; b < batch; ++b) {
    const int off = out->cu_seqlens[b];
    WriteRetrieve(trees[b].parents, out->positions.data() + off, out->scratch_children.data() + off,
                  out->retrieve_width[b], out->retrieve.data() + out->retrieve_offsets[b]);
    const int64_t c = context_lens[b];
    for (int i = off; i < out->cu_seqlens[b + 1]; ++i) out->positions[i] += c;
  }
  return absl::OkStatus();
}

const char* SglangTreeMaskModeName(SglangTreeMaskMode mode) {
  return EnumName(kSglangTreeMaskModeNames, mode);
}

int SglangBitpackingBytes(int draft_token_num) {
  if (draft_token_num <= 8) return 1;
  if (draft_token_num <= 16) return 2;
  if (draft_token_num <= 32) return 4;
  return 0;
}

absl::Status ComputeSglangLayout(absl::Span<const Tree> trees,
                                 absl::Span<const int64_t> context_lens,
                                 const SglangLayoutOptions& options, SglangLayout* out) {
  if (absl::Status st = CheckLayoutInputs(trees, context_lens); !st.ok()) return st;
  const int batch = static_cast<int>(trees.size());
  int largest = 0;
  int largest_b = -1;
  for (int b = 0; b < batch; ++b) {
    if (trees[b].size() > largest) {
      largest = trees[b].size();
      largest_b = b;
    }
  }
  if (options.draft_token_num < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("draft_token_num = %d: must be >= 0 (0 = the largest tree's size)",
                        options.draft_token_num));
  }
  if (options.draft_token_num > 0 && options.draft_token_num < largest) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "draft_token_num = %d: must be >= the size of trees[%d] = %d (root included)",
        options.draft_token_num, largest_b, largest));
  }
  const int d = options.draft_token_num > 0 ? options.draft_token_num : largest;  // as above
  const SglangTreeMaskMode mode = options.mode;
  if (const int64_t bytes = SglangLayoutBytes(batch, d, context_lens, mode);
      bytes > kMaxLayoutBytes) {
    int64_t c_max = 0;
    for (int64_t c : context_lens) c_max = std::max(c_max, c);
    return LayoutTooLarge(
        absl::StrFormat("%s for %d requests x draft_token_num %d (contexts up to %d)",
                        SglangTreeMaskModeName(mode), batch, d, c_max),
        bytes);
  }
  int row_bytes = 0;
  if (mode == SglangTreeMaskMode::kQlenOnlyBitpacking) {
    row_bytes = SglangBitpackingBytes(d);
    if (row_bytes == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "draft_token_num = %d: QLEN_ONLY_BITPACKING holds at most 32 tokens per row", d));
    }
  }
  out->batch_size = batch;
  out->draft_token_num = d;
  out->mode = mode;
  out->tree_mask_bytes_per_row = row_bytes;

  const size_t slots = static_cast<size_t>(batch) * d;
  out->draft_tokens.resize(slots);
  out->positions.resize(slots);
  out->retrive_index.resize(slots);
  out->retrive_next_token.resize(slots);
  out->retrive_next_sibling.resize(slots);
  out->scratch_children.resize(d);
  out->tree_mask_offsets.resize(batch + 1);
  out->tree_mask_offsets[0] = 0;
  for (int b = 0; b < batch; ++b) {
    int64_t block = 0;
    switch (mode) {
      case SglangTreeMaskMode::kFullMask:
        block = static_cast<int64_t>(d) * (context_lens[b] + d);
        break;
      case SglangTreeMaskMode::kQlenOnly:
        block = static_cast<int64_t>(d) * d;
        break;
      case SglangTreeMaskMode::kQlenOnlyBitpacking:
        block = static_cast<int64_t>(d) * row_bytes;
        break;
    }
    out->tree_mask_offsets[b + 1] = out->tree_mask_offsets[b] + block;
  }
  out->tree_mask.resize(out->tree_mask_offsets[batch]);
  if (mode == SglangTreeMaskMode::kQlenOnlyBitpacking) {
    out->scratch_rows.resize(d);
  }

  for (int b = 0; b < batch; ++b) {
    const Tree& t = trees[b];
    const absl::Span<const int32_t> parents(t.parents);
    const int s = t.size();
    const int64_t c = context_lens[b];
    const size_t base = static_cast<size_t>(b) * d;

    // Tokens, positions (depth + c; padded slots at c), retrive_index.
    for (int i = 0; i < s; ++i) out->draft_tokens[base + i] = t.tokens[i];
    for (int i = s; i < d; ++i) out->draft_tokens[base + i] = options.pad_token;
    int64_t* pos = out->positions.data() + base;
    ScanTree(parents, pos, out->scratch_children.data());
    for (int i = 0; i < s; ++i) pos[i] += c;
    for (int i = s; i < d; ++i) pos[i] = c;
    for (int i = 0; i < d; ++i) out->retrive_index[base + i] = static_cast<int64_t>(base) + i;

    // First child / next sibling lists: prepending children from the last to the first leaves
    // every list in ascending index order.
    int64_t* next_token = out->retrive_next_token.data() + base;
    int64_t* next_sibling = out->retrive_next_sibling.data() + base;
    std::fill(next_token, next_token + d, -1);
    std::fill(next_sibling, next_sibling + d, -1);
    for (int i = s - 1; i >= 1; --i) {
      const int p = parents[i];
      next_sibling[i] = next_token[p];
      next_token[p] = i;
    }

    // tree_mask.
    uint8_t* block = out->tree_mask.data() + out->tree_mask_offsets[b];
    if (mode == SglangTreeMaskMode::kQlenOnlyBitpacking) {
      uint32_t* rows = out->scratch_rows.data();
      WritePackedAncestorMask<uint32_t>(parents, 1, rows);
      for (int i = s; i < d; ++i) rows[i] = uint32_t{1} << i;
      for (int i = 0; i < d; ++i) {
        for (int k = 0; k < row_bytes; ++k) block[i * row_bytes + k] = (rows[i] >> (8 * k)) & 0xffu;
      }
    } else {
      const size_t prefix = mode == SglangTreeMaskMode::kFullMask ? static_cast<size_t>(c) : 0;
      const size_t stride = prefix + d;
      for (int i = 0; i < d; ++i) {
        uint8_t* row = block + i * stride;
        std::memset(row, 1, prefix);
        if (i >= s) {
          std::memset(row + prefix, 0, d);
          row[prefix + i] = 1;
        } else {
          std::memset(row + prefix + s, 0, d - s);
        }
      }
      WriteDenseAncestorMask(parents, stride, block + prefix);
    }
  }
  return absl::OkStatus();
}

absl::Status ComputeSglangLayout(const Tree& tree, int64_t context_len,
                                 const SglangLayoutOptions& options, SglangLayout* out) {
  return ComputeSglangLayout(absl::MakeConstSpan(&tree, 1), absl::MakeConstSpan(&context_len, 1),
                             options, out);
}

}  // namespace specplan::planner
