// MarginalsFrontier: one request's best-first frontier over a marginals lattice, kept as streams.
//
// Every node at depth d - 1 has the same k candidate children, row d - 1 of the marginals (depths
// count from the root, d = 0). So for a fixed (d, r) the candidates "child r of a depth-(d - 1)
// node" come in the parents' pop order with non-increasing score rho(p) * q_d[r]: they form a
// sorted stream over the list of depth-(d - 1) nodes in pop order (a linked list through the tree's
// node indices). The frontier keeps the heads of the non-empty streams, at most gamma * k, in a
// `Heads` structure (below). A pop moves that stream to the popped node's successor in the list
// and replaces its head, where the lazy frontier (best_first.h) pops and then pushes the popped
// node's next sibling and first child into a heap of up to 2n entries.
//
// Two `Heads`, measured on the micro-benchmarks (docs/planner.md, Performance):
//   HeapHeads        a 4-ary heap (FrontierHeap): a replace-top sifts down with an early stop,
//   short
//                    on average but ending at a data-dependent level. Best when one frontier runs
//                    alone (BestFirstPlanner), where each pop waits on the previous one: the short
//                    average chain wins (N = 1024: about 18 against 20 us with the tournament).
//   TournamentHeads  a tournament tree (FrontierTournament) with a slot per (d, r): a pop replays
//                    the slot's log2(gamma * k) levels with conditional moves, no jump on the keys.
//                    Best when PlanBatch pops two requests' frontiers in alternation, where the
//                    core overlaps the chains and the heap's mispredictions cost throughput
//                    (B = 64, N = 4096: about 195 against 260 us).
//
// The pop order equals the lazy frontier's node for node. Both pop the largest key among the
// children of popped nodes: the head of stream (d, r) may be child r of p before child r - 1 of p
// was popped, but child r - 1 has the larger key and is at or behind the head of stream
// (d, r - 1), so it pops first. Hence stream (d, r) never passes stream (d, r - 1), and the
// streams of a depth that have caught up with their parent list are always ranks 0..w-1: a new
// node at depth d - 1 wakes exactly those.
//
// Keys: score = scale * rho (scale = w_i / kappa_i in PlanBatch, 1 for one request), then the
// tie-breaker depth (bits 56..63), request (40..55), parent (8..39), rank (0..7); a smaller
// tie-breaker pops first.
#ifndef SPECPLAN_PLANNER_MARGINALS_MARGINALS_FRONTIER_H_
#define SPECPLAN_PLANNER_MARGINALS_MARGINALS_FRONTIER_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "planner/marginals/frontier_heap.h"
#include "planner/marginals/marginals.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

static_assert(kMaxMarginalsGamma < 256 && kMaxMarginalsK < 256 && kMaxTreeNodes < (1LL << 32));

// The heads as a 4-ary heap of their keys; the top is always the stream just popped.
class HeapHeads {
 public:
  void Reset(size_t slots) {
    heap_.clear();
    heap_.reserve(slots);  // every stream's head at most
  }
  bool empty() const { return heap_.empty(); }
  FrontierKey top() const { return heap_.top(); }
  void Advance(size_t /*slot*/, const FrontierKey& key) { heap_.ReplaceTop(key); }
  void Retire(size_t /*slot*/) { heap_.pop(); }
  template <class KeyOf>
  void Wake(size_t /*first*/, size_t count, KeyOf key_of) {
    for (size_t r = 0; r < count; ++r) heap_.push(key_of(r));
  }

 private:
  FrontierHeap heap_;
};

// The heads in a tournament tree, stream (d, r) in slot (d - 1) * k + r (empty while it waits).
class TournamentHeads {
 public:
  void Reset(size_t slots) { t_.Reset(slots); }
  bool empty() const { return t_.empty(); }
  FrontierKey top() const { return t_.top(); }
  void Advance(size_t slot, const FrontierKey& key) { t_.Set(slot, key); }
  void Retire(size_t slot) { t_.Set(slot, FrontierKey{}); }
  template <class KeyOf>
  void Wake(size_t first, size_t count, KeyOf key_of) {
    t_.SetRange(first, count, key_of);
  }

 private:
  FrontierTournament t_;
};

template <class Heads>
class MarginalsFrontierT {
 public:
  // Starts the frontier of a tree that holds only its root (node 0 of `tree`). `m` and `tree` must
  // outlive the use; `tree` is read (path_probs) as the caller grows it. Keeps capacity. With
  // max_depth < m->gamma the lattice is cut at that depth (a depth-capped tree: its pop order is
  // the whole lattice's with the deeper nodes left out).
  void Reset(const Marginals* m, const Tree* tree, double scale, uint32_t request,
             int max_depth = kMaxMarginalsGamma) {
    probs_ = m->probs.data();
    tokens_ = m->tokens.data();
    k_ = m->k;
    gamma_ = std::max(0, std::min(m->gamma, max_depth));
    tree_ = tree;
    scale_ = scale;
    request_ = request;
    const int gamma = gamma_;
    last_.assign(static_cast<size_t>(gamma), -1);
    waiting_.assign(static_cast<size_t>(gamma), m->k);
    heads_.Reset(static_cast<size_t>(std::max(gamma, 1)) * std::max(m->k, 1));
    if (gamma > 0) ExpandAt(0, 0);
  }

  // Pre-sizes for trees of up to n_max draft nodes, so that the expansions of a first call do not
  // grow the node list (the heap is sized in Reset).
  void Reserve(int n_max) {
    if (next_.size() <= static_cast<size_t>(n_max)) next_.resize(static_cast<size_t>(n_max) + 1);
  }

  bool empty() const { return heads_.empty(); }
  FrontierKey top() const { return heads_.top(); }

  // Removes the best candidate and returns it. Requires !empty(). The caller adds it to the tree
  // and, to let its children in, calls Expand with the new node.
  FrontierCandidate Pop() {
    const uint64_t tie = heads_.top().tie();
    FrontierCandidate c;
    c.depth = TieDepth(tie);
    c.parent = TieParent(tie);
    c.rank = TieRank(tie);
    const size_t row = static_cast<size_t>(c.depth - 1) * k_;
    const float q = probs_[row + c.rank];
    c.rho = tree_->path_probs[c.parent] * q;
    c.token = tokens_[row + c.rank];
    // Move stream (depth, rank) to the parent's successor at its depth.
    const int32_t next = next_[c.parent];
    const size_t slot = row + c.rank;  // stream (depth, rank)
    if (next >= 0) {
      heads_.Advance(slot, Key(next, c.depth, c.rank, q));
    } else {
      heads_.Retire(slot);                 // the stream waits for its next parent
      waiting_[c.depth - 1] = c.rank + 1;  // ranks 0..rank have all caught up (see the header)
    }
    return c;
  }

  // Adds the popped candidate's tree node as a parent: the streams one level deeper that had
  // caught up with their parent list resume at it.
  void Expand(int32_t node, const FrontierCandidate& c) { ExpandAt(node, c.depth); }
  void Added(int32_t /*node*/, const FrontierCandidate& /*c*/) {}  // nothing to record

 private:
  // Inlined into the pop that calls it (Expand, Reset): as a call of its own it cost PlanBatch
  // about 4 % (BM_PlanBatchFixed/64/4096 96.5 -> 92.3 us on the VM of
  // docs/planner-performance.md).
  [[gnu::always_inline]] void ExpandAt(int32_t node, int depth) {
    if (depth >= gamma_) return;
    // next_ only grows (Reset keeps it: an entry is written here before it is read), and by
    // doubling, where growing it by one node at a time cost a call per expansion.
    if (next_.size() <= static_cast<size_t>(node)) {
      next_.resize(std::max(static_cast<size_t>(node) + 1, 2 * next_.size()));
    }
    next_[node] = -1;
    if (last_[depth] >= 0) next_[last_[depth]] = node;
    last_[depth] = node;
    int& w = waiting_[depth];
    const size_t row = static_cast<size_t>(depth) * k_;  // streams (depth + 1, r) are slots row + r
    heads_.Wake(row, static_cast<size_t>(w), [&](size_t r) {
      return Key(node, depth + 1, static_cast<int>(r), probs_[row + r]);
    });
    w = 0;
  }

  FrontierKey Key(int32_t parent, int depth, int rank, float q) const {
    const double rho = tree_->path_probs[parent] * q;
    return FrontierKey::Make(scale_ * rho, FrontierTie(depth, request_, parent, rank));
  }

  const float* probs_ = nullptr;     // the marginals' [gamma][k] rows
  const TokenId* tokens_ = nullptr;  // [gamma][k]
  int k_ = 0;
  int gamma_ = 0;
  const Tree* tree_ = nullptr;
  double scale_ = 1.0;
  uint32_t request_ = 0;
  std::vector<int32_t> next_;  // [>= tree size] next expanded node at the same depth, -1 = none
                               // yet; entries of nodes not expanded in this run are stale
  std::vector<int32_t> last_;  // [gamma] last expanded node at depth d, -1 = none
  std::vector<int> waiting_;   // [gamma] streams of depth d + 1 caught up: ranks 0..w-1
  Heads heads_;                // the heads of the non-empty streams
};

// BestFirstPlanner's frontier (one request alone).
using MarginalsFrontier = MarginalsFrontierT<HeapHeads>;
// PlanBatch's (requests popped two at a time; see above).
using BatchMarginalsFrontier = MarginalsFrontierT<TournamentHeads>;

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_MARGINALS_MARGINALS_FRONTIER_H_
