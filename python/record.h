// Result records of the specplan Python module: small read-only classes (specplan.Estimate,
// specplan.SglangLayout, ...) whose fields are typed attributes, with to_dict() giving the dict
// form (nested records as dicts, arrays as they are). A record holds its fields in one dict, so
// a binding builds it as it would build a dict and Python reads an attribute with one lookup.
// The attribute types are declared in python/specplan/_specplan.pyi.
#ifndef SPECPLAN_PYTHON_RECORD_H_
#define SPECPLAN_PYTHON_RECORD_H_

#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace specplan::python {

// One record class per Tag (an empty struct naming the result).
template <class Tag>
struct Record {
  py::dict fields;  // field name -> value; a field absent from it reads as None
};

// `d` (a dict of the record's fields) as a record of class Tag.
template <class Tag>
py::object MakeRecord(py::dict d) {
  return py::cast(Record<Tag>{std::move(d)});
}

// AddColumns(&d, points, "a", &Point::a, "b", &Point::b, ...) sets d["a"] to an array of every
// point's field a, d["b"] to one of field b, and so on.
template <class Point>
void AddColumns(py::dict* /*d*/, const std::vector<Point>& /*points*/) {}
template <class Point, class T, class... Rest>
void AddColumns(py::dict* d, const std::vector<Point>& points, const char* name, T Point::*field,
                Rest... rest) {
  std::vector<T> column;
  column.reserve(points.size());
  for (const Point& p : points) column.push_back(p.*field);
  (*d)[name] = Own(std::move(column));
  AddColumns(d, points, rest...);
}

// `points` (a plan's curve) as a record of class Tag with one array per named field, in the order
// given: ColumnsRecord<Tag>(points, "n", &Point::n, "cycle_s", &Point::cycle_s, ...).
template <class Tag, class Point, class... Fields>
py::object ColumnsRecord(const std::vector<Point>& points, Fields... fields) {
  py::dict d;
  AddColumns(&d, points, fields...);
  return MakeRecord<Tag>(d);
}

// The record's dict form: each value's to_dict() where it has one (records, lists of them),
// else the value.
py::dict RecordToDict(const py::dict& fields);

// A JSON value (an operation's ToJson) as Python objects: objects as dicts (key order kept), arrays
// as lists, null as None.
py::object JsonToPy(const nlohmann::json& j);

struct RecordField {
  const char* name;
  const char* doc;
};

// Registers class `name` (module attribute of `m`) with one read-only attribute per field,
// to_dict(), __repr__ ("specplan.Name(a=1, arr=array(int64, shape=(3,)))"), __eq__ (field by
// field; arrays compared with numpy.array_equal) and _fields (the names, in order).
template <class Tag>
void BindRecord(py::module_& m, const char* name, const char* doc,
                const std::vector<RecordField>& fields) {
  using R = Record<Tag>;
  py::class_<R> cls(m, name, doc);
  auto names = std::make_shared<std::vector<std::string>>();
  for (const RecordField& f : fields) {
    const std::string key = f.name;
    names->push_back(key);
    cls.def_property_readonly(
        f.name,
        [key](const R& r) -> py::object {
          PyObject* v = PyDict_GetItemString(r.fields.ptr(), key.c_str());
          return v == nullptr ? py::object(py::none()) : py::reinterpret_borrow<py::object>(v);
        },
        f.doc);
  }
  cls.def(
      "to_dict", [](const R& r) { return RecordToDict(r.fields); },
      "The dict form (nested results as dicts, arrays as they are).");
  const std::string cls_name = name;
  cls.def("__repr__", [cls_name, names](const R& r) {
    std::string out = "specplan." + cls_name + "(";
    bool first = true;
    for (const std::string& k : *names) {
      PyObject* v = PyDict_GetItemString(r.fields.ptr(), k.c_str());
      if (v == nullptr) continue;
      py::handle h(v);
      std::string text;
      if (py::hasattr(h, "dtype") && py::hasattr(h, "shape")) {
        text = "array(" + py::str(h.attr("dtype")).cast<std::string>() +
               ", shape=" + py::str(h.attr("shape")).cast<std::string>() + ")";
      } else {
        text = py::repr(h).cast<std::string>();
      }
      out += (first ? "" : ", ") + k + "=" + text;
      first = false;
    }
    return out + ")";
  });
  cls.def("__eq__", [](const R& a, py::object other) -> py::object {
    if (!py::isinstance<R>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    const R& b = other.cast<const R&>();
    if (a.fields.size() != b.fields.size()) return py::bool_(false);
    py::object array_equal = py::module_::import("numpy").attr("array_equal");
    for (auto [k, v] : a.fields) {
      if (!b.fields.contains(k)) return py::bool_(false);
      py::object w = b.fields[k];
      const bool arrays = py::hasattr(v, "dtype") && py::hasattr(v, "shape");
      const bool same = arrays ? py::cast<bool>(array_equal(v, w))
                               : PyObject_RichCompareBool(v.ptr(), w.ptr(), Py_EQ) == 1;
      if (!same) return py::bool_(false);
    }
    return py::bool_(true);
  });
  cls.attr("__hash__") = py::none();
  py::tuple field_names(names->size());
  for (size_t i = 0; i < names->size(); ++i) field_names[i] = py::str((*names)[i]);
  cls.attr("_fields") = field_names;
}

}  // namespace specplan::python

#endif  // SPECPLAN_PYTHON_RECORD_H_
