// A monotonic clock in seconds, for timing phases (the runtime's draft, verify and update times).
#ifndef SPECPLAN_UTIL_CLOCK_H_
#define SPECPLAN_UTIL_CLOCK_H_

#include <chrono>

namespace specplan {

// Seconds on std::chrono::steady_clock since its (arbitrary) epoch: only differences mean anything.
inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_CLOCK_H_
