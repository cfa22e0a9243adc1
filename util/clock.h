// A monotonic clock in seconds, for timing phases (the runtime's draft, verify and update times),
// and the wall-clock time as profiles and reports stamp it.
#ifndef SPECPLAN_UTIL_CLOCK_H_
#define SPECPLAN_UTIL_CLOCK_H_

#include <chrono>
#include <ctime>
#include <string>

namespace specplan {

// Seconds on std::chrono::steady_clock since its (arbitrary) epoch: only differences mean anything.
inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The current UTC time as ISO 8601 to the second, "2026-11-25T12:00:00Z".
inline std::string UtcTimestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_CLOCK_H_
