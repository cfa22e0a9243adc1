// absl::Status -> Python exceptions. Every error of the module is a specplan.Error; each
// absl::StatusCode maps to a subclass that also derives from the builtin a Python caller would
// catch:
//   INVALID_ARGUMENT, OUT_OF_RANGE  -> InvalidArgumentError(Error, ValueError)
//   (argument of the wrong type)    -> ArgumentTypeError(Error, TypeError)
//   NOT_FOUND                       -> NotFoundError(Error, LookupError)
//   FAILED_PRECONDITION             -> FailedPreconditionError(Error, RuntimeError)
//   UNIMPLEMENTED                   -> UnimplementedError(Error, NotImplementedError)
//   RESOURCE_EXHAUSTED              -> ResourceExhaustedError(Error, RuntimeError)
//   PERMISSION_DENIED               -> PermissionDeniedError(Error, PermissionError)
//   anything else                   -> InternalError(Error, RuntimeError)
// The message is the Status message, which names the field and value
// ("probs[2][0] = 1.3: must be in [0, 1]", "m.json: cannot read: Permission denied"); the
// exception's `code` attribute is the code's name. A message is decoded as UTF-8 with bytes that
// are not UTF-8 backslash-escaped, so an input's bytes in a message never turn the error into a
// UnicodeDecodeError.
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common.h"

namespace specplan::python {
namespace {

// Created once at import and never freed (they live as long as the interpreter).
struct ErrorTypes {
  py::handle error, invalid, type, not_found, precondition, unimplemented, exhausted, denied,
      internal;
};
ErrorTypes g_errors;

py::handle MakeType(py::module_& m, const char* name, py::tuple bases, const char* code,
                    const char* doc) {
  py::dict ns;
  ns["__module__"] = "specplan";
  ns["__doc__"] = doc;
  ns["code"] = code;
  py::object cls = py::reinterpret_borrow<py::object>((PyObject*)&PyType_Type)(name, bases, ns);
  m.attr(name) = cls;
  return cls.release();
}

// Raises `cls` with `message` decoded as UTF-8, bytes that are not UTF-8 backslash-escaped
// (PyErr_SetString would raise a UnicodeDecodeError instead).
[[noreturn]] void SetError(py::handle cls, std::string_view message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text == nullptr) throw py::error_already_set();
  PyErr_SetObject(cls.ptr(), text);
  Py_DECREF(text);
  throw py::error_already_set();
}

}  // namespace

void RegisterErrors(py::module_& m) {
  py::module_ builtins = py::module_::import("builtins");
  g_errors.error = MakeType(m, "Error", py::make_tuple(builtins.attr("Exception")), "UNKNOWN",
                            "Base class of every error specplan raises.");
  auto sub = [&](const char* name, const char* builtin, const char* code, const char* doc) {
    return MakeType(m, name, py::make_tuple(g_errors.error, builtins.attr(builtin)), code, doc);
  };
  g_errors.invalid = sub("InvalidArgumentError", "ValueError", "INVALID_ARGUMENT",
                         "A value out of range or malformed; the message names the field and "
                         "value. Also a ValueError.");
  g_errors.type = sub("ArgumentTypeError", "TypeError", "INVALID_ARGUMENT",
                      "An argument of the wrong type or dtype; the message names the argument. "
                      "Also a TypeError.");
  g_errors.not_found = sub("NotFoundError", "LookupError", "NOT_FOUND",
                           "Something named does not exist (a GPU, model, engine, profile, "
                           "file). Also a LookupError.");
  g_errors.precondition = sub("FailedPreconditionError", "RuntimeError", "FAILED_PRECONDITION",
                              "The call does not fit the state it was made in.");
  g_errors.unimplemented = sub("UnimplementedError", "NotImplementedError", "UNIMPLEMENTED",
                               "Not supported by this build or input.");
  g_errors.exhausted = sub("ResourceExhaustedError", "RuntimeError", "RESOURCE_EXHAUSTED",
                           "A documented limit was exceeded.");
  g_errors.denied = sub("PermissionDeniedError", "PermissionError", "PERMISSION_DENIED",
                        "A file the call reads may not be read (the message names the path and "
                        "the OS's reason). Also a PermissionError.");
  g_errors.internal = sub("InternalError", "RuntimeError", "INTERNAL",
                          "Any other failure reported by the C++ library.");
}

void ThrowStatus(const absl::Status& status) {
  // The table at the top of this file; any other code is an InternalError.
  const std::pair<absl::StatusCode, py::handle> classes[] = {
      {absl::StatusCode::kInvalidArgument, g_errors.invalid},
      {absl::StatusCode::kOutOfRange, g_errors.invalid},
      {absl::StatusCode::kNotFound, g_errors.not_found},
      {absl::StatusCode::kFailedPrecondition, g_errors.precondition},
      {absl::StatusCode::kUnimplemented, g_errors.unimplemented},
      {absl::StatusCode::kResourceExhausted, g_errors.exhausted},
      {absl::StatusCode::kPermissionDenied, g_errors.denied}};
  py::handle cls = g_errors.internal;
  for (const auto& [code, type] : classes) {
    if (code == status.code()) cls = type;
  }
  SetError(cls, std::string_view(status.message().data(), status.message().size()));
}

void ThrowInvalid(const std::string& message) { SetError(g_errors.invalid, message); }

void ThrowType(const std::string& message) { SetError(g_errors.type, message); }

void ThrowWrongType(const std::string& arg, py::handle obj, const std::string& expected) {
  ThrowType(absl::StrCat(arg, ": got ",
                         py::str(obj.get_type().attr("__name__")).cast<std::string>(),
                         ", expected ", expected));
}

}  // namespace specplan::python
