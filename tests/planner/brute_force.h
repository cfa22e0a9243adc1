// Brute-force oracles for the planner tests on small lattices: an explicit lattice (every node
// with its parent and path score rho) and the best Σ rho over prefix-closed subtrees with exactly
// n nodes, by enumerating every subset. Shared by tests/planner/batch_plan_test.cc and
// tests/planner/batch_plan_path_test.cc.
#ifndef SPECPLAN_TESTS_PLANNER_BRUTE_FORCE_H_
#define SPECPLAN_TESTS_PLANNER_BRUTE_FORCE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "planner/marginals/marginals.h"

namespace specplan::planner::testing {

// An explicit lattice, root excluded: parent (-1 = the root) and rho of every node.
struct Lattice {
  std::vector<int> parent;
  std::vector<double> rho;
};

// The marginals' whole lattice: K children per node, gamma levels, rho the product of the row
// probabilities along the path.
inline Lattice MarginalsLattice(const Marginals& m) {
  Lattice l;
  std::vector<int> level = {-1};
  std::vector<double> level_rho = {1.0};
  for (int d = 0; d < m.gamma; ++d) {
    std::vector<int> next;
    std::vector<double> next_rho;
    for (size_t p = 0; p < level.size(); ++p) {
      for (int r = 0; r < m.k; ++r) {
        l.parent.push_back(level[p]);
        l.rho.push_back(level_rho[p] * m.prob(d, r));
        next.push_back(static_cast<int>(l.parent.size()) - 1);
        next_rho.push_back(l.rho.back());
      }
    }
    level = next;
    level_rho = next_rho;
  }
  return l;
}

// Largest Σ rho over prefix-closed subsets with exactly n nodes, for every n = 0..size (at most
// 31 nodes: every subset is enumerated).
inline std::vector<double> BruteBestByCount(const Lattice& l) {
  const int L = static_cast<int>(l.parent.size());
  std::vector<double> best(L + 1, -1.0);
  for (uint32_t mask = 0; mask < (1u << L); ++mask) {
    bool closed = true;
    double sum = 0;
    for (int j = 0; j < L && closed; ++j) {
      if (!(mask >> j & 1)) continue;
      const int p = l.parent[j];
      if (p >= 0 && !(mask >> p & 1)) closed = false;
      sum += l.rho[j];
    }
    const int count = __builtin_popcount(mask);
    if (closed) best[count] = std::max(best[count], sum);
  }
  return best;
}

}  // namespace specplan::planner::testing

#endif  // SPECPLAN_TESTS_PLANNER_BRUTE_FORCE_H_
