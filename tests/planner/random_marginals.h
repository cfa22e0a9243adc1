// Test-only generators of random marginals (planner/marginals/marginals.h), shared by the
// marginal-based planner tests.
#ifndef SPECPLAN_TESTS_PLANNER_RANDOM_MARGINALS_H_
#define SPECPLAN_TESTS_PLANNER_RANDOM_MARGINALS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "planner/marginals/marginals.h"

namespace specplan::planner::testing {

// One random marginal row of length k: k weights from `weight()` (called k times, in order), then
// one draw from `rng` for the row's total mass in [0.3, 1); the weights are scaled to that mass and
// sorted by descending value. A row whose weights sum to 0 stays all zero.
template <typename WeightFn>
std::vector<double> RandomDescendingRow(std::mt19937& rng, int k, WeightFn&& weight) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> row(k);
  double sum = 0;
  for (auto& x : row) {
    x = weight();
    sum += x;
  }
  const double total = 0.3 + 0.7 * u(rng);
  for (auto& x : row) x = sum > 0 ? x / sum * total : 0.0;
  std::sort(row.begin(), row.end(), std::greater<double>());
  return row;
}

// Random [gamma][k] marginals rooted at `root_token`. For each position d = 0..gamma-1, in order:
// the probabilities come from RandomDescendingRow(rng, k, weight), then the row's k tokens from
// `row_tokens(d)` (a std::vector<int32_t> of size k; it may draw from `rng` too).
template <typename WeightFn, typename TokensFn>
Marginals RandomMarginalsWith(std::mt19937& rng, int32_t root_token, int gamma, int k,
                              WeightFn&& weight, TokensFn&& row_tokens) {
  Marginals m;
  m.root_token = root_token;
  m.gamma = gamma;
  m.k = k;
  for (int d = 0; d < gamma; ++d) {
    const std::vector<double> row = RandomDescendingRow(rng, k, weight);
    const std::vector<int32_t> toks = row_tokens(d);
    for (int r = 0; r < k; ++r) {
      m.tokens.push_back(toks[r]);
      m.probs.push_back(static_cast<float>(row[r]));
    }
  }
  return m;
}

}  // namespace specplan::planner::testing

#endif  // SPECPLAN_TESTS_PLANNER_RANDOM_MARGINALS_H_
