// FrontierHeap: the max-priority queue behind the best-first planners' frontiers.
//
// A 4-ary implicit heap: a parent's four children are adjacent (64 bytes for 16-byte entries), so
// a pop walks log4(n) levels instead of the binary heap's log2(n), touching about half as many
// cache lines. Entries must have a strict total order under `Less` (the planners' tie-breakers make
// every frontier entry unique), so the pop order is the same as any other correct priority queue's.
// Storage is a caller-reused vector: no allocation once the capacity has been reached.
#ifndef SPECPLAN_PLANNER_FRONTIER_HEAP_H_
#define SPECPLAN_PLANNER_FRONTIER_HEAP_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace specplan::planner {

// Less(a, b) is true when a has LOWER priority than b (std::priority_queue's convention).
template <class Entry, class Less>
class FrontierHeap {
 public:
  void clear() { v_.clear(); }
  void reserve(size_t n) { v_.reserve(n); }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const Entry& top() const { return v_.front(); }

  void push(const Entry& e) {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      const size_t p = (i - 1) / 4;
      if (!less_(v_[p], e)) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = e;
  }

  // Removes and returns the highest-priority entry. Requires !empty().
  Entry pop() {
    const Entry out = v_.front();
    const Entry last = v_.back();
    v_.pop_back();
    const size_t n = v_.size();
    if (n == 0) return out;
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < end; ++c) {
        if (less_(v_[best], v_[c])) best = c;
      }
      if (!less_(last, v_[best])) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = last;
    return out;
  }

 private:
  std::vector<Entry> v_;
  Less less_;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_FRONTIER_HEAP_H_
