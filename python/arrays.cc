// NumPy conversion and the readers of marginals and trees (see common.h).
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "common.h"

namespace specplan::python {
namespace {

py::object NumpyAsarray() {
  static py::handle asarray = py::object(py::module_::import("numpy").attr("asarray")).release();
  return py::reinterpret_borrow<py::object>(asarray);
}

std::string DtypeName(const py::array& a) { return py::str(a.dtype()).cast<std::string>(); }

template <class T>
const char* TypeName() {
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  if constexpr (std::is_same_v<T, float>) return "float32";
  return "float64";
}

template <class T>
py::array_t<T> Convert(py::handle obj, const std::string& arg) {
  using Exact = py::array_t<T, py::array::c_style>;
  if (py::isinstance<Exact>(obj)) return py::reinterpret_borrow<Exact>(obj);  // no copy
  py::array a;
  if (py::isinstance<py::array>(obj)) {
    a = py::reinterpret_borrow<py::array>(obj);
  } else {
    if (obj.is_none() || py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj) ||
        py::isinstance<py::dict>(obj)) {
      ThrowWrongType(arg, obj,
                     absl::StrCat("an array or a sequence of numbers (", TypeName<T>(), ")"));
    }
    try {
      a = NumpyAsarray()(obj);
    } catch (py::error_already_set& e) {
      ThrowType(absl::StrCat(arg, ": not convertible to an array of ", TypeName<T>(), " (",
                             e.what(), ")"));
    }
  }
  const char kind = a.dtype().kind();
  if (a.size() > 0) {
    if constexpr (std::is_integral_v<T>) {
      if (kind != 'i' && kind != 'u') {
        ThrowType(absl::StrCat(arg, ": dtype ", DtypeName(a), ": expected integers (",
                               TypeName<T>(), ")"));
      }
      if (a.itemsize() > static_cast<py::ssize_t>(sizeof(T)) ||
          (kind == 'u' && a.itemsize() == static_cast<py::ssize_t>(sizeof(T)))) {
        // Every value must fit T.
        const py::object lo = a.attr("min")(), hi = a.attr("max")();
        const py::object tmin = py::int_(std::numeric_limits<T>::min()),
                         tmax = py::int_(std::numeric_limits<T>::max());
        if (lo < tmin || hi > tmax) {
          ThrowInvalid(absl::StrCat(arg, ": values in [", py::str(lo).cast<std::string>(), ", ",
                                    py::str(hi).cast<std::string>(), "] do not fit ",
                                    TypeName<T>()));
        }
      }
    } else {
      if (kind != 'f' && kind != 'i' && kind != 'u') {
        ThrowType(absl::StrCat(arg, ": dtype ", DtypeName(a), ": expected real numbers (",
                               TypeName<T>(), ")"));
      }
    }
  }
  return py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
}

}  // namespace

int64_t ReadInt(py::handle obj, const std::string& arg) {
  if (PyBool_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) {
    ThrowWrongType(arg, obj, "an integer");
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(
      py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr())).ptr(), &overflow);
  if (overflow != 0) ThrowInvalid(absl::StrCat(arg, ": does not fit int64"));
  return v;
}

double ReadFloat(py::handle obj, const std::string& arg) {
  if (PyBool_Check(obj.ptr()) ||
      !(PyFloat_Check(obj.ptr()) || PyIndex_Check(obj.ptr()) || py::hasattr(obj, "__float__"))) {
    ThrowWrongType(arg, obj, "a number");
  }
  return py::float_(py::reinterpret_borrow<py::object>(obj)).cast<double>();
}

namespace {

// obj[key] for a dict, obj.key otherwise; `required` raises naming arg.key when absent.
py::object Field(py::handle obj, const char* key, const std::string& arg, bool required) {
  if (py::isinstance<py::dict>(obj)) {
    py::dict d = py::reinterpret_borrow<py::dict>(obj);
    if (d.contains(key)) return d[key];
  } else if (py::hasattr(obj, key)) {
    return obj.attr(key);
  }
  if (required) ThrowInvalid(absl::StrCat(arg, ".", key, ": missing"));
  return py::none();
}

}  // namespace

py::array_t<int32_t> IntArray32(py::handle obj, const std::string& arg) {
  return Convert<int32_t>(obj, arg);
}
py::array_t<int64_t> IntArray64(py::handle obj, const std::string& arg) {
  return Convert<int64_t>(obj, arg);
}
py::array_t<float> FloatArray32(py::handle obj, const std::string& arg) {
  return Convert<float>(obj, arg);
}
py::array_t<double> FloatArray64(py::handle obj, const std::string& arg) {
  return Convert<double>(obj, arg);
}

std::string ShapeString(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    absl::StrAppend(&s, i ? ", " : "", a.shape(i));
  }
  return s + (a.ndim() == 1 ? ",)" : ")");
}

void CheckNdim(const py::array& a, int ndim, const std::string& arg, const char* shape_doc) {
  if (a.ndim() != ndim) {
    ThrowInvalid(absl::StrCat(arg, ": shape ", ShapeString(a), ": expected ", ndim,
                              ndim == 1 ? " dimension " : " dimensions ", shape_doc));
  }
}

void FillMarginals(py::handle root_token, py::handle tokens, py::handle probs,
                   const std::string& arg, planner::Marginals* m) {
  const int64_t root = ReadInt(root_token, arg + ".root_token");
  if (root < 0 || root > std::numeric_limits<int32_t>::max()) {
    ThrowInvalid(absl::StrCat(arg, ".root_token = ", root, ": must be in [0, 2147483647]"));
  }
  const py::array_t<int32_t> t = IntArray32(tokens, arg + ".tokens");
  CheckNdim(t, 2, arg + ".tokens", "[gamma, k]");
  const py::array_t<float> p = FloatArray32(probs, arg + ".probs");
  CheckNdim(p, 2, arg + ".probs", "[gamma, k]");
  if (p.shape(0) != t.shape(0) || p.shape(1) != t.shape(1)) {
    ThrowInvalid(absl::StrCat(arg, ".probs: shape ", ShapeString(p), " differs from ", arg,
                              ".tokens' ", ShapeString(t)));
  }
  if (t.shape(0) > planner::kMaxMarginalsGamma || t.shape(1) > planner::kMaxMarginalsK) {
    ThrowInvalid(absl::StrCat(arg, ".tokens: shape ", ShapeString(t), ": at most [",
                              planner::kMaxMarginalsGamma, ", ", planner::kMaxMarginalsK, "]"));
  }
  m->root_token = static_cast<planner::TokenId>(root);
  m->gamma = static_cast<int>(t.shape(0));
  m->k = static_cast<int>(t.shape(1));
  m->tokens.assign(t.data(), t.data() + t.size());
  m->probs.assign(p.data(), p.data() + p.size());
}

const planner::Marginals& ReadMarginals(py::handle obj, const std::string& arg,
                                        planner::Marginals* scratch) {
  if (py::isinstance<planner::Marginals>(obj)) return obj.cast<const planner::Marginals&>();
  if (!py::isinstance<py::dict>(obj) &&
      !(py::hasattr(obj, "root_token") && py::hasattr(obj, "tokens") &&
        py::hasattr(obj, "probs"))) {
    ThrowWrongType(arg, obj,
                   "specplan.Marginals or a dict with root_token, tokens [gamma][k] and probs "
                   "[gamma][k]");
  }
  FillMarginals(Field(obj, "root_token", arg, true), Field(obj, "tokens", arg, true),
                Field(obj, "probs", arg, true), arg, scratch);
  return *scratch;
}

void ReadTree(py::handle obj, const std::string& arg, planner::Tree* tree) {
  py::object tokens, parents, probs = py::none();
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    if (seq.size() != 2) {
      ThrowInvalid(absl::StrCat(arg, ": a sequence of ", seq.size(),
                                " items, expected a (tokens, parents) pair"));
    }
    tokens = seq[0];
    parents = seq[1];
  } else if (py::isinstance<py::dict>(obj) ||
             (py::hasattr(obj, "tokens") && py::hasattr(obj, "parents"))) {
    tokens = Field(obj, "tokens", arg, true);
    parents = Field(obj, "parents", arg, true);
    probs = Field(obj, "path_probs", arg, false);
  } else {
    ThrowWrongType(arg, obj, "a (tokens, parents) pair or an object with tokens and parents");
  }
  const py::array_t<int32_t> t = IntArray32(tokens, arg + ".tokens");
  CheckNdim(t, 1, arg + ".tokens", "[s]");
  const py::array_t<int32_t> p = IntArray32(parents, arg + ".parents");
  CheckNdim(p, 1, arg + ".parents", "[s]");
  const py::ssize_t s = t.shape(0);
  if (p.shape(0) != s) {
    ThrowInvalid(absl::StrCat(arg, ".parents: ", p.shape(0), " entries, ", arg, ".tokens has ", s,
                              " (one parent per node)"));
  }
  if (s == 0) ThrowInvalid(absl::StrCat(arg, ".tokens: empty (a tree holds at least its root)"));
  if (s > planner::kMaxTreeNodes) {
    ThrowInvalid(absl::StrCat(arg, ": ", s, " nodes: at most ", planner::kMaxTreeNodes));
  }
  tree->tokens.assign(t.data(), t.data() + s);
  tree->parents.assign(p.data(), p.data() + s);
  tree->depths.resize(static_cast<size_t>(s));
  if (tree->parents[0] != -1) {
    ThrowInvalid(absl::StrCat(arg, ".parents[0] = ", tree->parents[0], ": must be -1 (the root)"));
  }
  tree->depths[0] = 0;
  for (py::ssize_t i = 1; i < s; ++i) {
    const int32_t q = tree->parents[static_cast<size_t>(i)];
    if (q < 0 || q >= i) {
      ThrowInvalid(absl::StrCat(arg, ".parents[", i, "] = ", q, ": must be in [0, ", i,
                                ") (topological order)"));
    }
    tree->depths[static_cast<size_t>(i)] = tree->depths[static_cast<size_t>(q)] + 1;
  }
  tree->path_probs.clear();
  if (!probs.is_none()) {
    const py::array_t<double> r = FloatArray64(probs, arg + ".path_probs");
    CheckNdim(r, 1, arg + ".path_probs", "[s]");
    if (r.shape(0) != s) {
      ThrowInvalid(
          absl::StrCat(arg, ".path_probs: ", r.shape(0), " entries, ", arg, ".tokens has ", s));
    }
    tree->path_probs.assign(r.data(), r.data() + s);
  }
  if (absl::Status st = planner::ValidateTree(*tree); !st.ok()) {
    ThrowStatus(absl::Status(st.code(), absl::StrCat(arg, ".", st.message())));
  }
}

void ReadTrees(py::handle obj, const std::string& expected, std::vector<planner::Tree>* trees) {
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj)) {
    ThrowWrongType("trees", obj, expected);
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  trees->resize(seq.size());
  for (size_t i = 0; i < trees->size(); ++i) {
    ReadTree(seq[i], absl::StrCat("trees[", i, "]"), &(*trees)[i]);
  }
}

py::tuple TreeTuple(const planner::Tree& tree) {
  std::vector<int32_t> tokens(tree.tokens.begin(), tree.tokens.end());
  std::vector<int32_t> parents(tree.parents);
  return py::make_tuple(Own(std::move(tokens)), Own(std::move(parents)));
}

}  // namespace specplan::python
