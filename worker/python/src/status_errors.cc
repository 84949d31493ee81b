#include "worker/python/src/status_errors.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "worker/python/src/bindings.h"

namespace py = pybind11;

namespace taups::python {
namespace {

// The exception classes. Created once at import and referenced by the
// module for the life of the process, so plain handles are safe here and
// nothing runs at interpreter shutdown.
struct ErrorClasses {
  py::handle status;
  py::handle invalid_argument;
  py::handle not_found;
  py::handle already_exists;
  py::handle deadline_exceeded;
  py::handle unavailable;
  py::handle unauthenticated;
  py::handle permission_denied;
};
ErrorClasses classes;

// Makes the class taups.<name>, derived from `bases` (a class or a tuple of
// classes), and adds it to the module.
py::handle MakeClass(py::module_& m, const char* name, py::handle bases,
                     const char* doc) {
  const std::string qualified = absl::StrCat("taups.", name);
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc,
                                            bases.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.add_object(name, cls);
  return cls;
}

// The bases of a subclass: StatusError and a built-in exception.
py::tuple AlsoA(PyObject* builtin) {
  return py::make_tuple(classes.status, py::handle(builtin));
}

py::handle ClassFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return classes.invalid_argument;
    case absl::StatusCode::kNotFound:
      return classes.not_found;
    case absl::StatusCode::kAlreadyExists:
      return classes.already_exists;
    case absl::StatusCode::kDeadlineExceeded:
      return classes.deadline_exceeded;
    case absl::StatusCode::kUnavailable:
      return classes.unavailable;
    case absl::StatusCode::kUnauthenticated:
      return classes.unauthenticated;
    case absl::StatusCode::kPermissionDenied:
      return classes.permission_denied;
    default:
      return classes.status;
  }
}

// Sets the Python error indicator for `status` (not OK).
void Raise(const absl::Status& status) {
  py::handle cls = ClassFor(status.code());
  const std::string code_name = absl::StatusCodeToString(status.code());
  const std::string message(status.message());
  // What to check, for the errors a misconfigured credential causes.
  const char* hint =
      status.code() == absl::StatusCode::kUnauthenticated
          ? " (the shard knows no principal for this client's credential: "
            "check auth_token / auth_token_file, or the client certificate, "
            "against the shard's --auth_file)"
          : "";
  py::object error = py::reinterpret_borrow<py::object>(cls)(
      absl::StrCat(code_name, ": ", message, hint));
  error.attr("code") = static_cast<int>(status.code());
  error.attr("code_name") = code_name;
  error.attr("message") = message;
  PyErr_SetObject(cls.ptr(), error.ptr());
}

}  // namespace

void BindStatusErrors(py::module_& m) {
  classes.status = MakeClass(
      m, "StatusError", PyExc_RuntimeError,
      "A tauPS call failed. Attributes: code (int, the gRPC/absl status "
      "code), code_name (e.g. 'NOT_FOUND') and message.");
  classes.invalid_argument = MakeClass(
      m, "InvalidArgumentError", AlsoA(PyExc_ValueError),
      "INVALID_ARGUMENT or OUT_OF_RANGE: the request was malformed.");
  classes.not_found = MakeClass(
      m, "NotFoundError", AlsoA(PyExc_LookupError),
      "NOT_FOUND: e.g. the table does not exist.");
  classes.already_exists = MakeClass(
      m, "AlreadyExistsError", classes.status,
      "ALREADY_EXISTS: e.g. a table of that name with another configuration.");
  classes.deadline_exceeded = MakeClass(
      m, "DeadlineExceededError", AlsoA(PyExc_TimeoutError),
      "DEADLINE_EXCEEDED: the call ran past call_timeout_s.");
  classes.unavailable = MakeClass(
      m, "UnavailableError", AlsoA(PyExc_ConnectionError),
      "UNAVAILABLE: a shard could not be reached.");
  classes.unauthenticated = MakeClass(
      m, "UnauthenticatedError", AlsoA(PyExc_PermissionError),
      "UNAUTHENTICATED: the shard knows no principal for this client's "
      "credential (a missing or unknown bearer token or certificate).");
  classes.permission_denied = MakeClass(
      m, "PermissionDeniedError", AlsoA(PyExc_PermissionError),
      "PERMISSION_DENIED: the principal's role may not make this call, or "
      "the request names a worker id the principal does not own.");

  py::register_exception_translator([](std::exception_ptr pending) {
    try {
      if (pending) std::rethrow_exception(pending);
    } catch (const StatusException& e) {
      Raise(e.status());
    }
  });
}

}  // namespace taups::python
