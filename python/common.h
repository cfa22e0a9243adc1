// Shared pieces of the specplan Python module (specplan._specplan): absl::Status -> Python
// exceptions, NumPy array conversion (zero-copy in and out where the layout allows), and the
// Python-side argument readers every binding file uses (marginals, trees, cost, drafter).
//
// Ownership: arrays returned to Python either view a C++ result object's vectors (the object is
// the array's base, so it lives as long as any view) or own a moved-in std::vector through a
// capsule. Arrays passed in are read in place when they are C-contiguous and of the C++ element
// type (int32 tokens, float32 probs, int64 context lengths); anything else is converted once,
// and refused with the argument named when it cannot be converted without loss.
#ifndef SPECPLAN_PYTHON_COMMON_H_
#define SPECPLAN_PYTHON_COMMON_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/profile/profile.h"
#include "costmodel/step/step_model.h"
#include "ops/cost_request.h"
#include "planner/marginals/marginals.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::python {

namespace py = pybind11;

// ---- Errors (errors.cc) ----------------------------------------------------------------------
// specplan.Error and its subclasses, created in the module; see RegisterErrors.
void RegisterErrors(py::module_& m);
// Raises the Python exception for `status` (which must not be OK). Needs the GIL.
[[noreturn]] void ThrowStatus(const absl::Status& status);
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowStatus(status);
}
template <class T>
T ValueOrThrow(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return *std::move(v);
}
// specplan.InvalidArgumentError (a ValueError) with `message`.
[[noreturn]] void ThrowInvalid(const std::string& message);
// specplan.ArgumentTypeError (a TypeError) with `message`.
[[noreturn]] void ThrowType(const std::string& message);
// specplan.ArgumentTypeError "<arg>: got <obj's type name>, expected <expected>".
[[noreturn]] void ThrowWrongType(const std::string& arg, py::handle obj,
                                 const std::string& expected);

// ---- Arrays in (arrays.cc) -------------------------------------------------------------------
// A C-contiguous array of T read from `obj` (a NumPy array, a list, a scalar sequence). No copy
// when obj already is a C-contiguous T array. Integers of another width are converted when every
// value fits T; a floating, bool or object array for an integer T is refused, as is a non-numeric
// one for a floating T. Errors name `arg` ("tokens: dtype float64: expected integers (int32)").
py::array_t<int32_t> IntArray32(py::handle obj, const std::string& arg);
py::array_t<int64_t> IntArray64(py::handle obj, const std::string& arg);
py::array_t<float> FloatArray32(py::handle obj, const std::string& arg);
py::array_t<double> FloatArray64(py::handle obj, const std::string& arg);
// Refuses an array whose number of dimensions is not `ndim`: "probs: shape (3,): expected 2
// dimensions [gamma, k]".
void CheckNdim(const py::array& a, int ndim, const std::string& arg, const char* shape_doc);
// "(3, 4)".
std::string ShapeString(const py::array& a);

// ---- Arrays out ------------------------------------------------------------------------------
// An array over `data` (not copied) kept alive by `owner`.
template <class T>
py::array_t<T> View(const T* data, std::vector<py::ssize_t> shape, py::handle owner) {
  return py::array_t<T>(std::move(shape), data, owner);
}
template <class T>
py::array_t<T> View(const std::vector<T>& v, py::handle owner) {
  return View<T>(v.data(), {static_cast<py::ssize_t>(v.size())}, owner);
}
// The getter of a read-only property: a view of the vector an `Owner` reaches through the member
// pointers `path` (e.g. &PyTreePlan::outputs, &planner::TreeOutputs::positions); the view keeps
// self alive.
template <class Owner, class... Members>
auto MemberView(Members... path) {
  return [path...](py::object self) {
    const Owner& owner = self.cast<const Owner&>();
    return View((owner.*....*path), self);  // a fold: owner.*path[0].*path[1]...
  };
}
// The getter of a read-only property: a view of one per-node vector of the planner tree an
// `Owner` (a TreePlan, a MergedTree) holds as its member `tree`.
template <class Owner, class T>
auto TreeColumn(std::vector<T> planner::Tree::*column) {
  return MemberView<Owner>(&Owner::tree, column);
}
// An array that takes over `v` (no copy): the vector moves to the heap and a capsule frees it.
template <class T>
py::array_t<T> Own(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule free_it(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(std::move(shape), heap->data(), free_it);
}
template <class T>
py::array_t<T> Own(std::vector<T>&& v) {
  const auto n = static_cast<py::ssize_t>(v.size());
  return Own<T>(std::move(v), {n});
}

// None for NaN (a figure computed without a cost), else the float.
inline py::object Nullable(double v) {
  return std::isnan(v) ? py::object(py::none()) : py::object(py::float_(v));
}
// A Python or NumPy integer as int64 (bools and floats refused), a real number as double;
// errors name `arg`.
int64_t ReadInt(py::handle obj, const std::string& arg);
double ReadFloat(py::handle obj, const std::string& arg);

// ---- Marginals and trees in (arrays.cc) ------------------------------------------------------
// `obj` as marginals: a specplan.Marginals (returned as is, no copy), a dict or any object with
// root_token, tokens [gamma][k] and probs [gamma][k] (copied into *scratch, not validated).
// Errors name `arg` ("requests[2].marginals.tokens: ...").
const planner::Marginals& ReadMarginals(py::handle obj, const std::string& arg,
                                        planner::Marginals* scratch);
// Fills *m from the three parts (shapes checked, values not validated).
void FillMarginals(py::handle root_token, py::handle tokens, py::handle probs,
                   const std::string& arg, planner::Marginals* m);
// `obj` as a tree: a (tokens, parents) pair, a dict or object with tokens and parents (and
// optionally path_probs), e.g. a specplan.TreePlan. Copied into *tree with depths computed; the
// structure is validated (ValidateTree), errors prefixed with `arg` ("trees[1].parents[3] = 3:
// ...").
void ReadTree(py::handle obj, const std::string& arg, planner::Tree* tree);
// `obj` as a list of trees (a sequence other than a str; each read by ReadTree, errors name
// "trees[i]") into *trees. Anything else: ThrowWrongType("trees", obj, expected).
void ReadTrees(py::handle obj, const std::string& expected, std::vector<planner::Tree>* trees);
// The Python tree (tokens int32, parents int32) of a planner tree, copied into new arrays.
py::tuple TreeTuple(const planner::Tree& tree);

// ---- Where bundled profiles are read (bind_cost.cc) ------------------------------------------
// `given` when not empty, else the first of: $SPECPLAN_CALIB_DIR; the package's own copy of the
// profiles (specplan/calib/, installed with the package; __init__.py names it through
// _set_package_calib_dir when it exists); costmodel::DefaultCalibDir() (the source tree's calib/
// while it exists, else <prefix>/share/specplan/calib). docs/python.md documents the order.
std::string CalibDir(const std::string& given);

// ---- Cost (bind_cost.cc) ---------------------------------------------------------------------
// What specplan.Cost holds: a resolved latency model and where it came from.
struct PyCost {
  std::shared_ptr<const costmodel::LatencyModel> model;
  costmodel::ModelSpec model_spec;
  costmodel::GpuSpec gpu_spec;
  std::string profile_path;
  std::string profile_id;
  std::string provenance;
  std::string engine;
  std::string engine_version;
  // The profile's composed drafter tables (Profile::drafters; empty for the bare roofline).
  std::shared_ptr<const std::map<std::string, costmodel::DrafterProfile>> drafters;
  // The engine's whole step (costmodel/step/step_model.h) over `model`, for Cost(drafter=...) an
  // architecture; null for drafter="" (the verify pass alone; plans price drafting by class).
  std::shared_ptr<const costmodel::StepModel> step;
};
// `obj` as a cost: a specplan.Cost, or None (returns nullptr).
const PyCost* ReadCost(py::handle obj);

// The drafter and overhead keywords shared by plan_tree, plan_batch and Cost.cycle_seconds:
// drafter "ar" | "parallel" | "causal", t_draft_ms (one draft forward), t_aux_ms,
// draft_batch_growth. Errors name the keyword.
struct DrafterArgs {
  std::string drafter = "parallel";
  double t_draft_ms = 0;
  double t_aux_ms = 0;
  double draft_batch_growth = 0;
};
costmodel::DrafterCost MakeDrafter(const DrafterArgs& a, int gamma);

// The cost's step model with T_draft by hand when `draft_s` > 0 (a planning call's t_draft_ms,
// as the CLI's --t-draft-ms), else cost.step itself; null without a step model.
std::shared_ptr<const costmodel::StepModel> StepWithDraft(const PyCost& cost, double draft_s);
// The cost an operation (ops/) prices a planning call with: the Cost's latency model, the drafter
// of `args` (its class, t_draft_ms as T_draft, t_aux_ms, draft_batch_growth; gamma set), and with
// a drafter architecture the Cost's step model (T_draft by hand when t_draft_ms > 0, as the CLI's
// --t-draft-ms; *hold keeps a rebuilt one alive). An explicit "ar" / "causal" class prices
// drafting by class (no step), as the CLI's --drafter ar does. ops::PriceCycle then prices the
// cycle, one rule for every front end.
ops::CostView CostViewOf(const PyCost& cost, const DrafterArgs& args, int gamma,
                         std::shared_ptr<const costmodel::StepModel>* hold);

// A HostTime record (Cost.host) back as a costmodel::HostTime: every term of
// costmodel::HostTimeTerms() and the provenance, by attribute; errors name `arg` and the term.
costmodel::HostTime HostFromRecord(py::handle record, const std::string& arg);

// "controller" | "scan" | "fixed" -> planner::BudgetMode (as an int, to keep this header light);
// errors name `mode`.
int ParseBudgetMode(const std::string& mode);
const char* BudgetModeName(int mode);

// ---- Registration ----------------------------------------------------------------------------
void BindCost(py::module_& m);
void BindPlanner(py::module_& m);
void BindBatch(py::module_& m);
void BindLayouts(py::module_& m);
void BindMerge(py::module_& m);
void BindAcceptance(py::module_& m);
void BindWhatIf(py::module_& m);

}  // namespace specplan::python

#endif  // SPECPLAN_PYTHON_COMMON_H_
