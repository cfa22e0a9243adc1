// The toy language the train tests learn: runs of counting (t, t + 1, ...) mod `vocab` from random
// starts, 4 to 12 tokens long, with 5 % noise, so the next token is predictable from the last one
// most of the time.
#ifndef SPECPLAN_TESTS_TRAIN_COUNTING_CORPUS_H_
#define SPECPLAN_TESTS_TRAIN_COUNTING_CORPUS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "planner/tree/token.h"

namespace specplan::train {

inline std::vector<planner::TokenId> CountingCorpus(int64_t n, uint64_t seed, int vocab) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> token(0, vocab - 1), run(4, 12);
  std::bernoulli_distribution noise(0.05);
  std::vector<planner::TokenId> out;
  while (static_cast<int64_t>(out.size()) < n) {
    int t = token(rng);
    for (int k = run(rng); k > 0 && static_cast<int64_t>(out.size()) < n; --k) {
      out.push_back(noise(rng) ? token(rng) : t);
      t = (t + 1) % vocab;
    }
  }
  return out;
}

}  // namespace specplan::train

#endif  // SPECPLAN_TESTS_TRAIN_COUNTING_CORPUS_H_
