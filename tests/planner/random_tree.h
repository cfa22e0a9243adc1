// Test-only trees (random ones, and hand-worked ones written as an edge list) and a brute-force
// ancestor check, shared by the tree tests and whatif's.
#ifndef SPECPLAN_TESTS_PLANNER_RANDOM_TREE_H_
#define SPECPLAN_TESTS_PLANNER_RANDOM_TREE_H_

#include <cstdint>
#include <initializer_list>
#include <random>

#include "planner/tree/tree.h"

namespace specplan::planner::testing {

// A tree of s nodes whose node i (i >= 1) hangs under a uniformly drawn earlier node; tokens
// 100 + i, root token 7.
inline Tree RandomTree(std::mt19937& rng, int s) {
  Tree t;
  t.ResetRoot(7);
  for (int i = 1; i < s; ++i) {
    std::uniform_int_distribution<int> pick(0, i - 1);
    t.AddNode(pick(rng), 100 + i, 0.5);
  }
  return t;
}

// One node of a hand-worked tree: its parent's index, its token, its path probability.
struct TreeEdge {
  int parent;
  int32_t token;
  double path_prob;
};

// The tree rooted at `root_token` whose nodes 1, 2, ... are `nodes`, in order.
inline Tree TreeOf(int32_t root_token, std::initializer_list<TreeEdge> nodes) {
  Tree t;
  t.ResetRoot(root_token);
  for (const TreeEdge& e : nodes) t.AddNode(e.parent, e.token, e.path_prob);
  return t;
}

// True iff node j is node i or one of its ancestors (walks the parent chain).
inline bool IsAncestorOrSelf(const Tree& t, int j, int i) {
  for (int v = i; v >= 0; v = t.parents[v]) {
    if (v == j) return true;
  }
  return false;
}

}  // namespace specplan::planner::testing

#endif  // SPECPLAN_TESTS_PLANNER_RANDOM_TREE_H_
