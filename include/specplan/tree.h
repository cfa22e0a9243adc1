// specplan's public trees: a planned draft tree, its choices and merges, and the tensors engines
// verify it with (SGLang, vLLM and TensorRT-LLM layouts; docs/integration.md).
#ifndef SPECPLAN_INCLUDE_SPECPLAN_TREE_H_
#define SPECPLAN_INCLUDE_SPECPLAN_TREE_H_

#include "planner/tree/engine_layouts.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_choices.h"

#endif  // SPECPLAN_INCLUDE_SPECPLAN_TREE_H_
