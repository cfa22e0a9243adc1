// FrontierTournament (frontier_heap.h) against a plain reference: after every Set / SetRange the
// top is the largest key over the slots (FrontierKeyLess), or empty when every slot is.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "planner/marginals/frontier_heap.h"

namespace specplan::planner {
namespace {

bool SameKey(const FrontierKey& a, const FrontierKey& b) { return a.hi == b.hi && a.lo == b.lo; }

// The reference: a linear scan over the slots, the zero key meaning empty.
FrontierKey ReferenceMax(const std::vector<FrontierKey>& slots) {
  FrontierKey best;
  for (const FrontierKey& k : slots) {
    if (FrontierKeyLess(best, k)) best = k;
  }
  return best;
}

TEST(FrontierTournamentTest, TopIsTheMaximumAfterEverySetAndSetRange) {
  std::mt19937 rng(7);
  for (const size_t slots : {1u, 2u, 3u, 7u, 8u, 64u, 100u, 128u}) {
    FrontierTournament t;
    t.Reset(slots);
    std::vector<FrontierKey> ref(slots);
    EXPECT_TRUE(t.empty());
    // Scores from a small set so that equal scores are common; ties are broken by lo (unique:
    // the slot and the step are in it).
    std::uniform_int_distribution<int> score(0, 5);
    std::uniform_int_distribution<size_t> slot(0, slots - 1);
    for (int step = 0; step < 2000; ++step) {
      const auto key = [&](size_t s) {
        return FrontierKey::Make(0.25 * score(rng), FrontierTie(1, 0, step, static_cast<int>(s)));
      };
      const int op = step % 4;
      if (op == 0) {  // empty a slot
        const size_t s = slot(rng);
        t.Set(s, FrontierKey{});
        ref[s] = FrontierKey{};
      } else if (op == 3) {  // a range, as a wake of adjacent streams
        const size_t first = slot(rng);
        const size_t count = std::uniform_int_distribution<size_t>(0, slots - first)(rng);
        std::vector<FrontierKey> keys;
        for (size_t i = 0; i < count; ++i) keys.push_back(key(first + i));
        t.SetRange(first, count, [&](size_t i) { return keys[i]; });
        for (size_t i = 0; i < count; ++i) ref[first + i] = keys[i];
      } else {
        const size_t s = slot(rng);
        const FrontierKey k = key(s);
        t.Set(s, k);
        ref[s] = k;
      }
      const FrontierKey want = ReferenceMax(ref);
      ASSERT_TRUE(SameKey(t.top(), want)) << "slots " << slots << " step " << step;
      ASSERT_EQ(t.empty(), SameKey(want, FrontierKey{})) << "slots " << slots << " step " << step;
    }
    // Reset empties every slot, whatever was set.
    t.Reset(slots);
    EXPECT_TRUE(t.empty());
  }
}

TEST(FrontierTournamentTest, MaxKeyInPlaceOrdersByHiThenLo) {
  const auto max_of = [](FrontierKey a, FrontierKey b) {
    MaxKeyInPlace(a.hi, a.lo, b.hi, b.lo);
    return a;
  };
  const FrontierKey small{1, ~uint64_t{0}}, big{2, 0}, big_lo{2, 5};
  EXPECT_TRUE(SameKey(max_of(small, big), big));
  EXPECT_TRUE(SameKey(max_of(big, small), big));
  EXPECT_TRUE(SameKey(max_of(big, big_lo), big_lo));
  EXPECT_TRUE(SameKey(max_of(big_lo, big), big_lo));
  EXPECT_TRUE(SameKey(max_of(big_lo, big_lo), big_lo));
}

}  // namespace
}  // namespace specplan::planner
