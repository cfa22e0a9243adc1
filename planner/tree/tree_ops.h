// Operations that rewrite a planner::Tree (tree.h) into another valid tree.
#ifndef SPECPLAN_PLANNER_TREE_TREE_OPS_H_
#define SPECPLAN_PLANNER_TREE_TREE_OPS_H_

#include "planner/tree/tree.h"

namespace specplan::planner {

// Removes the nodes with path_probs == 0 and hence their subtrees, keeping the survivors' order
// (the result is prefix-closed, topological, with depths recomputed). The root always stays.
void DropZeroProbabilityNodes(Tree* tree);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_TREE_TREE_OPS_H_
