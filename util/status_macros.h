// Early-return helpers for absl::Status / absl::StatusOr.
#ifndef SPECPLAN_UTIL_STATUS_MACROS_H_
#define SPECPLAN_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SPECPLAN_CONCAT_INNER_(a, b) a##b
#define SPECPLAN_CONCAT_(a, b) SPECPLAN_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define SPECPLAN_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::absl::Status specplan_status_ = (expr);            \
    if (!specplan_status_.ok()) return specplan_status_; \
  } while (0)

// SPECPLAN_ASSIGN_OR_RETURN(auto x, StatusOrExpr()); declares/assigns x or returns the error.
#define SPECPLAN_ASSIGN_OR_RETURN(lhs, rexpr) \
  SPECPLAN_ASSIGN_OR_RETURN_IMPL_(SPECPLAN_CONCAT_(specplan_statusor_, __LINE__), lhs, rexpr)
#define SPECPLAN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                    \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = std::move(tmp).value()

#endif  // SPECPLAN_UTIL_STATUS_MACROS_H_
