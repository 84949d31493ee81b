// Early-return helpers for absl::Status / absl::StatusOr (Abseil 20220623 has
// none of its own).
#ifndef TAUPS_COMMON_STATUS_MACROS_H_
#define TAUPS_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TAUPS_CONCAT_INNER_(a, b) a##b
#define TAUPS_CONCAT_(a, b) TAUPS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status taups_status_ = (expr);       \
    if (!taups_status_.ok()) return taups_status_; \
  } while (false)

// ASSIGN_OR_RETURN(auto x, MakeX()); returns the error if MakeX() failed.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(TAUPS_CONCAT_(taups_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()

#endif  // TAUPS_COMMON_STATUS_MACROS_H_
