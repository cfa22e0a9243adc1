#include "planner/tree/tree_ops.h"

#include <utility>
#include <vector>

namespace specplan::planner {

void DropZeroProbabilityNodes(Tree* tree) {
  std::vector<int32_t> remap(tree->size(), -1);
  Tree out;
  out.ResetRoot(tree->tokens[0]);
  remap[0] = 0;
  for (int i = 1; i < tree->size(); ++i) {
    const int32_t p = remap[tree->parents[i]];
    if (p < 0 || !(tree->path_probs[i] > 0)) continue;
    remap[i] = out.AddNode(p, tree->tokens[i], tree->path_probs[i]);
  }
  *tree = std::move(out);
}

}  // namespace specplan::planner
