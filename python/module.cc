// specplan._specplan: the extension module behind `import specplan` (python/specplan/ re-exports
// it by family: specplan.cost, .planner, .batch, .layouts, .acceptance, .merge, .whatif). planner +
// costmodel only: no Torch, gRPC or CUDA (DESIGN.md). Its types: python/specplan/_specplan.pyi.
#include "common.h"
#include "layouts.h"

PYBIND11_MODULE(_specplan, m) {
  namespace sp = specplan::python;
  m.doc() =
      "specplan: hardware-aware speculative decoding planner (C++ library bindings). See "
      "docs/python.md.";
  m.attr("__version__") = SPECPLAN_VERSION;
  sp::RegisterErrors(m);
  sp::BindLayoutRecords(m);  // returned by the planners' results too
  sp::BindCost(m);
  sp::BindPlanner(m);
  sp::BindBatch(m);
  sp::BindLayouts(m);
  sp::BindAcceptance(m);
  sp::BindMerge(m);
  sp::BindWhatIf(m);
}
