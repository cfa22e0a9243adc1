// Programmer-error checks. A failed SPECPLAN_CHECK is a bug in the caller, never bad user input:
// user input is rejected with absl::Status instead. Aborts with file:line and the condition text.
#ifndef SPECPLAN_UTIL_CHECK_H_
#define SPECPLAN_UTIL_CHECK_H_

#include <cstdio>
#include <cstdlib>

namespace specplan::internal {
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond,
                                     const char* msg) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s%s%s\n", file, line, cond, msg[0] ? ": " : "", msg);
  std::fflush(stderr);
  std::abort();
}
}  // namespace specplan::internal

// SPECPLAN_CHECK(cond) or SPECPLAN_CHECK(cond, "message").
#define SPECPLAN_CHECK(cond, ...)                                                              \
  do {                                                                                         \
    if (!(cond)) ::specplan::internal::CheckFailed(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)

#endif  // SPECPLAN_UTIL_CHECK_H_
