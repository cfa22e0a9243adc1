// FrontierHeap: the max-priority queue behind the best-first planners' frontiers.
//
// Entries are 128-bit priorities (FrontierKey): `hi` holds the bits of a non-negative double score,
// whose IEEE-754 patterns order as the numbers do, and `lo` holds the complement of a tie-breaker,
// so that of two equal scores the smaller tie-breaker pops first. One unsigned 128-bit comparison
// orders two entries, without branches on the score, which lets the compiler pick the largest child
// with conditional moves instead of mispredicted jumps.
//
// A 4-ary implicit heap: a parent's four children are adjacent (64 bytes), so a pop walks log4(n)
// levels instead of a binary heap's log2(n). A pop (or a replace-top) moves the hole down to a leaf
// along the larger children and then lifts the old last entry (or the new one) from there; it is
// small, so it rarely climbs: one comparison per child per level, where the textbook sift-down
// also compares the moving entry.
// Entries must be unique (the planners' tie-breakers make them so), so the pop order is the same as
// any other correct priority queue's. Storage is a caller-reused vector: no allocation once the
// capacity has been reached.
#ifndef SPECPLAN_PLANNER_MARGINALS_FRONTIER_HEAP_H_
#define SPECPLAN_PLANNER_MARGINALS_FRONTIER_HEAP_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "planner/tree/token.h"

namespace specplan::planner {

// A candidate a frontier hands its planner: child `rank` of tree node `parent`, at `depth`, with
// path score rho and token.
struct FrontierCandidate {
  int32_t parent = 0;
  int depth = 0;
  int rank = 0;
  double rho = 0;
  TokenId token = 0;
};

struct FrontierKey {
  uint64_t hi = 0;  // bits of the score (a non-negative, non-NaN double)
  uint64_t lo = 0;  // ~tie: a smaller tie-breaker pops first

  static FrontierKey Make(double score, uint64_t tie) {
    FrontierKey k;
    std::memcpy(&k.hi, &score, sizeof(double));
    k.lo = ~tie;
    return k;
  }
  double score() const {
    double d;
    std::memcpy(&d, &hi, sizeof(double));
    return d;
  }
  uint64_t tie() const { return ~lo; }
};

// The planners' tie-breaker, one layout for all of them: depth (bits 56..63), request (40..55),
// parent node (8..39), rank (0..7); a smaller value pops first, so equal scores pop by smaller
// depth, then request, parent and rank. Callers keep depth < 256, request < 65536, rank < 256.
inline uint64_t FrontierTie(int depth, uint32_t request, int32_t parent, int rank) {
  return static_cast<uint64_t>(depth) << 56 | static_cast<uint64_t>(request) << 40 |
         static_cast<uint64_t>(static_cast<uint32_t>(parent)) << 8 | static_cast<uint64_t>(rank);
}
inline int TieDepth(uint64_t tie) { return static_cast<int>(tie >> 56); }
inline uint32_t TieRequest(uint64_t tie) { return static_cast<uint32_t>(tie >> 40 & 0xffff); }
inline int32_t TieParent(uint64_t tie) { return static_cast<int32_t>(tie >> 8 & 0xffffffff); }
inline int TieRank(uint64_t tie) { return static_cast<int>(tie & 0xff); }

// True when a has LOWER priority than b.
inline bool FrontierKeyLess(const FrontierKey& a, const FrontierKey& b) {
  const unsigned __int128 x = static_cast<unsigned __int128>(a.hi) << 64 | a.lo;
  const unsigned __int128 y = static_cast<unsigned __int128>(b.hi) << 64 | b.lo;
  return x < y;
}

class FrontierHeap {
 public:
  void clear() { v_.clear(); }
  void reserve(size_t n) { v_.reserve(n); }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const FrontierKey& top() const { return v_.front(); }

  void push(const FrontierKey& e) {
    v_.push_back(e);
    SiftUp(v_.size() - 1, e);
  }

  // Removes and returns the highest-priority entry. Requires !empty().
  FrontierKey pop() {
    const FrontierKey out = v_.front();
    const FrontierKey last = v_.back();
    v_.pop_back();
    if (!v_.empty()) Fill(last);
    return out;
  }

  // Replaces the highest-priority entry by e (a pop and a push in one sift). Requires !empty().
  // Top-down with an early stop: the planners replace a top by its successor in the same stream,
  // which often stays near the top, where a bottom-up sift would walk to a leaf and back.
  void ReplaceTop(const FrontierKey& e) {
    FrontierKey* v = v_.data();
    size_t i = 0;
    for (size_t best; (best = BestChild(i)) != 0 && FrontierKeyLess(e, v[best]); i = best) {
      v[i] = v[best];
    }
    v[i] = e;
  }

 private:
  // The child of i with the highest priority, or 0 when i is a leaf.
  size_t BestChild(size_t i) const {
    const size_t n = v_.size();
    const FrontierKey* v = v_.data();
    const size_t first = 4 * i + 1;
    if (first + 4 <= n) {
      // Branch-free tournament over four children.
      const size_t a = FrontierKeyLess(v[first], v[first + 1]) ? first + 1 : first;
      const size_t b = FrontierKeyLess(v[first + 2], v[first + 3]) ? first + 3 : first + 2;
      return FrontierKeyLess(v[a], v[b]) ? b : a;
    }
    if (first >= n) return 0;
    size_t best = first;
    for (size_t c = first + 1; c < n; ++c) best = FrontierKeyLess(v[best], v[c]) ? c : best;
    return best;
  }

  // Moves the hole at the root down to a leaf along the larger children, then places e there and
  // lifts it.
  void Fill(const FrontierKey& e) {
    FrontierKey* v = v_.data();
    size_t i = 0;
    for (size_t best; (best = BestChild(i)) != 0; i = best) v[i] = v[best];
    SiftUp(i, e);
  }

  // Places e at hole i, moving lower-priority ancestors down.
  void SiftUp(size_t i, const FrontierKey& e) {
    FrontierKey* v = v_.data();
    while (i > 0) {
      const size_t p = (i - 1) / 4;
      if (!FrontierKeyLess(v[p], e)) break;
      v[i] = v[p];
      i = p;
    }
    v[i] = e;
  }

  std::vector<FrontierKey> v_;
};

// (hi, lo) = the larger of the keys (hi, lo) and (b_hi, b_lo), without a jump: the tournament
// below is one chain of these, and GCC compiles `less ? b : a` on the keys into a jump over a
// vector move, mispredicted about every other time there. On x86-64 the comparison's borrow drives
// two conditional moves (a few cycles a step); elsewhere the plain selection.
inline void MaxKeyInPlace(uint64_t& hi, uint64_t& lo, uint64_t b_hi, uint64_t b_lo) {
#if defined(__GNUC__) && defined(__x86_64__)
  uint64_t t;
  asm("cmp %[blo], %[lo]\n\t"  // lo - b_lo: borrow when lo < b_lo
      "mov %[hi], %[t]\n\t"
      "sbb %[bhi], %[t]\n\t"  // hi - b_hi - borrow: borrow when (hi, lo) < (b_hi, b_lo)
      "cmovc %[blo], %[lo]\n\t"
      "cmovc %[bhi], %[hi]"
      : [hi] "+r"(hi), [lo] "+r"(lo), [t] "=&r"(t)
      : [bhi] "r"(b_hi), [blo] "r"(b_lo)
      : "cc");
#else
  if (FrontierKeyLess({hi, lo}, {b_hi, b_lo})) hi = b_hi, lo = b_lo;
#endif
}

// FrontierTournament: the largest key over a fixed set of slots (a "winner tree"), for frontiers
// whose candidates are the heads of a known set of sorted streams (marginals_frontier.h: one slot
// per (depth, rank)), or of a known set of requests (batch_plan.cc's merge).
//
// Layout: a complete binary tree in one array: node 1 is the root, node j has children 2j and
// 2j + 1, and slot s is the leaf size + s (size = slots rounded up to a power of two). Every inner
// node holds the larger key of its two children, so the root holds the maximum. Changing a slot
// replays its path to the root, one comparison with the sibling per level. Why this is faster than
// the heap for these frontiers: the path and the siblings' addresses depend only on the slot, so
// the loads do not wait for the comparisons, the maximum is taken with conditional moves, and the
// walk always has log2(size) levels; a heap's sift stops at a data-dependent level, a mispredicted
// jump about every other pop (perf, docs/planner.md). An empty slot holds the zero key, which is
// below every real key: a real key's lo = ~tie is never 0 (the tie-breaker's depth is < 255).
class FrontierTournament {
 public:
  // Sets `slots` empty slots (at least one). Keeps capacity.
  void Reset(size_t slots) {
    size_ = 1;
    while (size_ < slots) size_ *= 2;
    // resize + memset: vector::assign fills word by word (a tenth of PlanBatch's time, which
    // resets 64 tournaments of 256 nodes per call).
    hi_.resize(2 * size_);
    lo_.resize(2 * size_);
    std::memset(hi_.data(), 0, 2 * size_ * sizeof(uint64_t));
    std::memset(lo_.data(), 0, 2 * size_ * sizeof(uint64_t));
  }
  bool empty() const { return (hi_[1] | lo_[1]) == 0; }
  FrontierKey top() const { return {hi_[1], lo_[1]}; }

  // Sets slot s to `key` (FrontierKey{} empties it) and replays its path.
  void Set(size_t s, const FrontierKey& key) {
    uint64_t* vh = hi_.data();
    uint64_t* vl = lo_.data();
    size_t j = size_ + s;
    uint64_t hi = key.hi, lo = key.lo;  // the winner so far
    vh[j] = hi;
    vl[j] = lo;
    for (; j > 1; j >>= 1) {
      MaxKeyInPlace(hi, lo, vh[j ^ 1], vl[j ^ 1]);
      vh[j >> 1] = hi;
      vl[j >> 1] = lo;
    }
  }

  // Sets the `count` slots first, first + 1, ... to key_of(0), key_of(1), ... and replays their
  // paths once, level by level: a wake of w adjacent streams costs about 2w + log2(size)
  // comparisons, not w log2(size).
  template <class KeyOf>
  void SetRange(size_t first, size_t count, KeyOf key_of) {
    if (count == 0) return;
    uint64_t* vh = hi_.data();
    uint64_t* vl = lo_.data();
    size_t a = size_ + first;
    size_t b = a + count - 1;
    for (size_t j = a; j <= b; ++j) {
      const FrontierKey k = key_of(j - a);
      vh[j] = k.hi;
      vl[j] = k.lo;
    }
    while (a > 1) {
      a >>= 1;
      b >>= 1;
      for (size_t j = a; j <= b; ++j) {
        uint64_t hi = vh[2 * j], lo = vl[2 * j];
        MaxKeyInPlace(hi, lo, vh[2 * j + 1], vl[2 * j + 1]);
        vh[j] = hi;
        vl[j] = lo;
      }
    }
  }

 private:
  // The keys' halves in two arrays, so that node j's are at j * 8 bytes (one scaled-index load
  // each, no address arithmetic per level). [2 * size_]: node 1 is the root, node size_ + s is
  // slot s; node 0 is unused.
  size_t size_ = 1;  // leaves: a power of two >= the slots
  std::vector<uint64_t> hi_;
  std::vector<uint64_t> lo_;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_MARGINALS_FRONTIER_HEAP_H_
