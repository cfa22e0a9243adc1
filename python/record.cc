// RecordToDict (record.h).
#include "record.h"

namespace specplan::python {

namespace {
py::object Plain(py::handle v) {
  if (py::hasattr(v, "to_dict") && !py::isinstance<py::type>(v)) return v.attr("to_dict")();
  if (py::isinstance<py::list>(v)) {
    py::list out;
    for (py::handle x : v) out.append(Plain(x));
    return out;
  }
  return py::reinterpret_borrow<py::object>(v);
}
}  // namespace

py::object JsonToPy(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d[py::str(it.key())] = JsonToPy(it.value());
      return d;
    }
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const nlohmann::json& x : j) l.append(JsonToPy(x));
      return l;
    }
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    default:
      return py::none();
  }
}

py::dict RecordToDict(const py::dict& fields) {
  py::dict out;
  for (auto [k, v] : fields) out[k] = Plain(v);
  return out;
}

}  // namespace specplan::python
