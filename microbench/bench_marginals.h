// The synthetic drafter marginals the planner micro-benchmarks plan over (gamma = 16, K = 8, one
// row per depth: K probabilities drawn as u^3, scaled to a mass in [0.6, 0.95], sorted), shared by
// microbench/batch_plan_bench.cc and the Python module's benchmark helper (python/bind_bench.cc) so
// that both time the identical workload.
#ifndef SPECPLAN_MICROBENCH_BENCH_MARGINALS_H_
#define SPECPLAN_MICROBENCH_BENCH_MARGINALS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "planner/marginals/marginals.h"

namespace specplan::microbench {

inline planner::Marginals BenchMarginals(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  planner::Marginals m;
  m.root_token = 1;
  m.gamma = 16;
  m.k = 8;
  for (int d = 0; d < m.gamma; ++d) {
    std::vector<double> row(m.k);
    double sum = 0;
    for (auto& x : row) sum += (x = std::pow(u(rng), 3.0));
    const double mass = 0.6 + 0.35 * u(rng);
    for (auto& x : row) x = x / sum * mass;
    std::sort(row.begin(), row.end(), std::greater<double>());
    for (int r = 0; r < m.k; ++r) {
      m.tokens.push_back(1000 * d + r);
      m.probs.push_back(static_cast<float>(row[r]));
    }
  }
  return m;
}

}  // namespace specplan::microbench

#endif  // SPECPLAN_MICROBENCH_BENCH_MARGINALS_H_
