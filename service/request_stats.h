// Per-method request counters and latency percentiles (the GetStats RPC). Each method keeps its
// count, error count and a ring of its last kWindow latencies; percentiles are computed over the
// ring on demand. Record() takes one per-method mutex for a few nanoseconds.
#ifndef SPECPLAN_SERVICE_REQUEST_STATS_H_
#define SPECPLAN_SERVICE_REQUEST_STATS_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace specplan::service {

enum class Method : int {
  kPlanTree,
  kPlanSession,
  kMergeTrees,
  kEstimateLatency,
  kListProfiles,
  kGetProfile,
  kPutProfile,
  kReportAcceptance,
  kGetStats,
  kPing,
  kWhatIf,
  kPlanBatch,
  kWhatIfOnline,
  kCount,  // number of methods
};
const char* MethodName(Method m);

struct MethodSummary {
  std::string method;
  int64_t requests = 0;
  int64_t errors = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;  // over the last kWindow calls
};

class RequestStats {
 public:
  static constexpr int kWindow = 4096;

  RequestStats();
  void Record(Method m, double micros, bool ok);
  // Methods called at least once, sorted by name.
  std::vector<MethodSummary> Summaries() const;
  double UptimeSeconds() const;

 private:
  struct PerMethod {
    mutable std::mutex mu;
    int64_t requests = 0;
    int64_t errors = 0;
    std::vector<double> ring;  // [min(requests, kWindow)] microseconds
    int next = 0;
  };
  std::array<PerMethod, static_cast<int>(Method::kCount)> methods_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_REQUEST_STATS_H_
