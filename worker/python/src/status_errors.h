// absl::Status errors as Python exceptions.
//
// Every non-OK status reaches Python as taups.StatusError (a RuntimeError)
// or one of its subclasses, with attributes `code` (the absl code as an int;
// absl codes equal gRPC codes), `code_name` ("NOT_FOUND") and `message`.
// Codes with a natural Python counterpart get a subclass that also derives
// from it, so ordinary `except` clauses work:
//   INVALID_ARGUMENT, OUT_OF_RANGE -> InvalidArgumentError (ValueError)
//   NOT_FOUND                      -> NotFoundError (LookupError)
//   ALREADY_EXISTS                 -> AlreadyExistsError
//   DEADLINE_EXCEEDED              -> DeadlineExceededError (TimeoutError)
//   UNAVAILABLE                    -> UnavailableError (ConnectionError)
//   UNAUTHENTICATED                -> UnauthenticatedError (PermissionError)
//   PERMISSION_DENIED              -> PermissionDeniedError (PermissionError)
//
// C++ code throws StatusException (via ThrowIfError / ValueOrThrow) with the
// GIL held; the translator registered by BindStatusErrors turns it into the
// Python exception.
#ifndef TAUPS_WORKER_PYTHON_SRC_STATUS_ERRORS_H_
#define TAUPS_WORKER_PYTHON_SRC_STATUS_ERRORS_H_

#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace taups::python {

class StatusException : public std::exception {
 public:
  explicit StatusException(absl::Status status)
      : status_(std::move(status)), what_(status_.ToString()) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  absl::Status status_;
  std::string what_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusException(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  ThrowIfError(value.status());
  return *std::move(value);
}

}  // namespace taups::python

#endif  // TAUPS_WORKER_PYTHON_SRC_STATUS_ERRORS_H_
