// specplan._specplan: the extension module behind `import specplan` (python/specplan/__init__.py
// re-exports it). planner + costmodel only: no Torch, gRPC or CUDA (DESIGN.md).
#include "common.h"

PYBIND11_MODULE(_specplan, m) {
  namespace sp = specplan::python;
  m.doc() =
      "specplan: hardware-aware speculative decoding planner (C++ library bindings). See "
      "docs/python.md.";
  m.attr("__version__") = SPECPLAN_VERSION;
  sp::RegisterErrors(m);
  sp::BindCost(m);
  sp::BindPlanner(m);
  sp::BindBatch(m);
  sp::BindLayouts(m);
  sp::BindAcceptance(m);
  sp::BindMerge(m);
  sp::BindBench(m);
}
