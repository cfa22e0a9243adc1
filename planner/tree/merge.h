// Merged-tree dual drafting (docs/references.md): the union of two drafters' trees that share the
// root token, spliced under one root so the verifier checks every candidate of both drafters in one
// pass. The merged result is an ordinary planner::Tree, so its verifier inputs (ancestor mask,
// depth positions, retrieve matrix) are the generic ones of any tree --
// ComputeTreeOutputs(merged.tree, ...) in planner/tree/tree_outputs.h -- and acceptance
// (planner/acceptance/acceptance.h) runs on it unchanged.
//
// Three modes, one code path:
//  * plain union (dedup = false, n_max < 0): exactly the note's section 4.1. With n_a = |A| - 1
//    and n_b = |B| - 1 non-root nodes, merged = (root, A's nodes 1..n_a, B's nodes 1..n_b):
//      phi_a(i) = i,  phi_b(0) = 0,  phi_b(i) = n_a + i,
//      parent(phi_b(i)) = phi_b(parent_b(i)).
//    A and B share only the root, so the ancestor mask is block-structured
//      [[1, 0, 0], [1, M_A, 0], [1, 0, M_B]]   (no A-B cross attention, everyone sees the root)
//    and depth positions are the source depths.
//  * prefix sharing (dedup = true): nodes whose root-to-node token path equals that of an earlier
//    node are merged into it, i.e. the merged tree is the token-path trie of both trees. Nodes are
//    numbered by first appearance scanning A's nodes 1..n_a then B's nodes 1..n_b, so the order is
//    still "A first, then B, each in its own topological order", and when A has no two siblings
//    with the same token phi_a is the identity. The set of root-to-node token paths equals the
//    union of both trees' sets, with fewer nodes; no two siblings share a token. (Duplicate
//    siblings inside one source tree are merged too.)
//  * budget-aware union (n_max >= 0): of the union above (plain or dedup), keep at most n_max draft
//    nodes chosen best-first by path score: start from the root; repeatedly take the frontier node
//    (a not-yet-taken child of a taken node) with the largest score, ties to the lower merged index
//    (so A before B). The kept set is prefix-closed (a node is taken only after its parent). The
//    score of a node is its source tree's path_probs rho; with dedup a node shared by both trees is
//    taken once and scored with the max of the two rho. When rho is non-increasing along paths
//    (true for products of draft probabilities), the kept set is the n_max highest-scoring nodes
//    with ties to the lower index. Both inputs must have path_probs in this mode. Kept nodes keep
//    their relative order, so A still precedes B.
//
// Merged path_probs: the source rho (max of both for shared nodes) when both inputs have
// path_probs, otherwise empty.
#ifndef SPECPLAN_PLANNER_TREE_MERGE_H_
#define SPECPLAN_PLANNER_TREE_MERGE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

// Which input tree(s) a merged node comes from (bit set). The root is shared: kBoth.
enum class MergeSource : uint8_t { kA = 1, kB = 2, kBoth = 3 };

struct MergeOptions {
  bool dedup = false;  // prefix sharing: merge nodes with equal root-to-node token paths
  int n_max = -1;      // max draft (non-root) nodes kept, best-first by path score; < 0: no budget
};

struct MergedTree {
  Tree tree;                        // [N] the merged tree, N = 1 + kept draft nodes
  std::vector<int32_t> phi_a;       // [|A|] A index -> merged index; -1 if dropped by the budget
  std::vector<int32_t> phi_b;       // [|B|] B index -> merged index; -1 if dropped by the budget
  std::vector<MergeSource> source;  // [N] origin of each merged node (root: kBoth)

  void Clear() {
    tree.Clear();
    phi_a.clear();
    phi_b.clear();
    source.clear();
  }
};

// Scratch space reused across calls so that merging does not allocate once the buffers have grown
// to the largest trees seen. Contents are internal.
struct MergeWorkspace {
  MergedTree full;                  // the union before the budget cut
  std::vector<uint64_t> hash_keys;  // open-addressing table (merged parent, token) -> node (dedup)
  std::vector<int32_t> hash_values;
  std::vector<int32_t> child_begin;  // CSR children of `full`, for best-first selection
  std::vector<int32_t> children;
  std::vector<int32_t> heap;       // best-first frontier
  std::vector<int32_t> new_index;  // full index -> kept index or -1
};

// Merges A and B into *out (its buffers are reused). Errors (InvalidArgument) name the field:
// an invalid input ("a.parents[3] = 5: ..."), different root tokens ("a.tokens[0] = 5 and
// b.tokens[0] = 7: ..."), missing path_probs in budget mode, or a merged tree larger than
// kMaxTreeNodes. On error *out is unspecified.
absl::Status MergeTrees(const Tree& a, const Tree& b, const MergeOptions& options,
                        MergeWorkspace* workspace, MergedTree* out);

// Convenience form that allocates.
absl::StatusOr<MergedTree> MergeTrees(const Tree& a, const Tree& b,
                                      const MergeOptions& options = {});

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_MERGE_H_
