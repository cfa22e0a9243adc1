#include "planner/tree/merge.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::planner {
namespace {

constexpr uint64_t kEmptyKey = ~uint64_t{0};

uint64_t TrieKey(int32_t merged_parent, int32_t token) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(merged_parent)) << 32) |
         static_cast<uint32_t>(token);
}

// Open-addressing (linear probing) map (merged parent, token) -> merged child, living in the
// workspace so that it does not allocate once grown.
class ChildTable {
 public:
  ChildTable(int max_entries, MergeWorkspace* ws) : keys_(ws->hash_keys), values_(ws->hash_values) {
    size_t capacity = 16;
    bits_ = 4;
    while (capacity < 2 * static_cast<size_t>(max_entries)) {
      capacity <<= 1;
      ++bits_;
    }
    keys_.assign(capacity, kEmptyKey);
    values_.resize(capacity);
  }

  // Returns the node stored under `key`, or stores `node` and returns it.
  int32_t FindOrInsert(uint64_t key, int32_t node) {
    const size_t mask = keys_.size() - 1;
    size_t slot = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
    while (true) {
      if (keys_[slot] == key) return values_[slot];
      if (keys_[slot] == kEmptyKey) {
        keys_[slot] = key;
        values_[slot] = node;
        return node;
      }
      slot = (slot + 1) & mask;
    }
  }

 private:
  std::vector<uint64_t>& keys_;
  std::vector<int32_t>& values_;
  int bits_;
};

void AddSourceBit(MergeSource* s, MergeSource bit) {
  *s = static_cast<MergeSource>(static_cast<uint8_t>(*s) | static_cast<uint8_t>(bit));
}

// Appends the non-root nodes of `src` to `full` (plain union) or inserts them into the token-path
// trie (dedup). Fills phi (src index -> full index).
void InsertTree(const Tree& src, MergeSource bit, bool dedup, bool with_probs, ChildTable* table,
                MergedTree* full, std::vector<int32_t>* phi) {
  Tree& t = full->tree;
  phi->resize(src.size());
  (*phi)[0] = 0;
  for (int i = 1; i < src.size(); ++i) {
    const int32_t parent = (*phi)[src.parents[i]];
    const int32_t token = src.tokens[i];
    const int32_t fresh = t.size();
    const int32_t node = dedup ? table->FindOrInsert(TrieKey(parent, token), fresh) : fresh;
    (*phi)[i] = node;
    if (node == fresh) {
      t.tokens.push_back(token);
      t.parents.push_back(parent);
      t.depths.push_back(t.depths[parent] + 1);
      if (with_probs) t.path_probs.push_back(src.path_probs[i]);
      full->source.push_back(bit);
    } else {
      AddSourceBit(&full->source[node], bit);
      if (with_probs) t.path_probs[node] = std::max(t.path_probs[node], src.path_probs[i]);
    }
  }
}

// Marks (new_index[i] = 0) the n_max best-first nodes of `full` plus the root; others get -1.
void SelectBestFirst(const Tree& full, int n_max, MergeWorkspace* ws) {
  const int n = full.size();
  std::vector<int32_t>& keep = ws->new_index;
  keep.assign(n, -1);
  // CSR children lists, each in increasing index order.
  std::vector<int32_t>& begin = ws->child_begin;
  begin.assign(n + 1, 0);
  for (int i = 1; i < n; ++i) ++begin[full.parents[i] + 1];
  for (int i = 0; i < n; ++i) begin[i + 1] += begin[i];
  std::vector<int32_t>& cursor = ws->heap;  // borrowed as fill cursors before the search
  cursor.assign(begin.begin(), begin.end() - 1);
  ws->children.resize(n > 0 ? n - 1 : 0);
  for (int i = 1; i < n; ++i) ws->children[cursor[full.parents[i]]++] = i;

  const std::vector<double>& score = full.path_probs;
  // Max-heap on (score, -index): best score first, ties to the lower index.
  auto lower_priority = [&score](int32_t x, int32_t y) {
    return score[x] < score[y] || (score[x] == score[y] && x > y);
  };
  std::vector<int32_t>& heap = ws->heap;
  heap.clear();
  auto push_children = [&](int32_t u) {
    for (int32_t k = begin[u]; k < begin[u + 1]; ++k) {
      heap.push_back(ws->children[k]);
      std::push_heap(heap.begin(), heap.end(), lower_priority);
    }
  };
  keep[0] = 0;
  push_children(0);
  for (int taken = 0; taken < n_max && !heap.empty(); ++taken) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const int32_t u = heap.back();
    heap.pop_back();
    keep[u] = 0;
    push_children(u);
  }
}

}  // namespace

absl::Status MergeTrees(const Tree& a, const Tree& b, const MergeOptions& options,
                        MergeWorkspace* ws, MergedTree* out) {
  SPECPLAN_CHECK(ws != nullptr && out != nullptr);
  if (absl::Status s = ValidateTree(a); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("a.", s.message()));
  }
  if (absl::Status s = ValidateTree(b); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("b.", s.message()));
  }
  if (a.tokens[0] != b.tokens[0]) {
    return absl::InvalidArgumentError(absl::StrCat("a.tokens[0] = ", a.tokens[0],
                                                   " and b.tokens[0] = ", b.tokens[0],
                                                   ": the two trees must share the root token"));
  }
  const bool budget = options.n_max >= 0;
  if (budget) {
    if (a.path_probs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a.path_probs: required by the budget-aware union (n_max = ", options.n_max, ")"));
    }
    if (b.path_probs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "b.path_probs: required by the budget-aware union (n_max = ", options.n_max, ")"));
    }
  }
  const bool with_probs = !a.path_probs.empty() && !b.path_probs.empty();

  // 1. The full union (plain or trie) in the workspace.
  MergedTree& full = ws->full;
  full.Clear();
  const int max_nodes = a.size() + b.size() - 1;
  full.tree.Reserve(max_nodes);
  full.source.reserve(max_nodes);
  full.tree.tokens.push_back(a.tokens[0]);
  full.tree.parents.push_back(-1);
  full.tree.depths.push_back(0);
  if (with_probs) full.tree.path_probs.push_back(std::max(a.path_probs[0], b.path_probs[0]));
  full.source.push_back(MergeSource::kBoth);
  ChildTable table(options.dedup ? max_nodes : 0, ws);
  InsertTree(a, MergeSource::kA, options.dedup, with_probs, &table, &full, &full.phi_a);
  InsertTree(b, MergeSource::kB, options.dedup, with_probs, &table, &full, &full.phi_b);

  // 2. The budget cut (or keep everything), then compaction into *out in the same order.
  const int n = full.tree.size();
  if (budget && n - 1 > options.n_max) {
    SelectBestFirst(full.tree, options.n_max, ws);
  } else {
    ws->new_index.assign(n, 0);
  }
  std::vector<int32_t>& new_index = ws->new_index;
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (new_index[i] >= 0) new_index[i] = kept++;
  }
  if (kept > kMaxTreeNodes) {
    return absl::InvalidArgumentError(absl::StrCat("merged tree: ", kept,
                                                   " nodes exceeds the limit of ", kMaxTreeNodes,
                                                   " (set n_max or use dedup)"));
  }
  out->Clear();
  out->tree.Reserve(kept);
  out->source.reserve(kept);
  for (int i = 0; i < n; ++i) {
    if (new_index[i] < 0) continue;
    out->tree.tokens.push_back(full.tree.tokens[i]);
    out->tree.parents.push_back(i == 0 ? -1 : new_index[full.tree.parents[i]]);
    out->tree.depths.push_back(full.tree.depths[i]);
    if (with_probs) out->tree.path_probs.push_back(full.tree.path_probs[i]);
    out->source.push_back(full.source[i]);
  }
  out->phi_a.resize(a.size());
  for (int i = 0; i < a.size(); ++i) out->phi_a[i] = new_index[full.phi_a[i]];
  out->phi_b.resize(b.size());
  for (int i = 0; i < b.size(); ++i) out->phi_b[i] = new_index[full.phi_b[i]];
  return absl::OkStatus();
}

absl::StatusOr<MergedTree> MergeTrees(const Tree& a, const Tree& b, const MergeOptions& options) {
  MergeWorkspace ws;
  MergedTree out;
  SPECPLAN_RETURN_IF_ERROR(MergeTrees(a, b, options, &ws, &out));
  return out;
}

}  // namespace specplan::planner
