// Prometheus metrics of specplan-server (`--metrics-port`), written by hand: Debian bookworm ships
// no Prometheus client library for C++ (no prometheus-cpp package), and what a scrape needs is
// small: counters, gauges and fixed-bucket histograms in the text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), served by a minimal HTTP/1.1
// responder on its own port (gRPC's HTTP/2 port cannot answer a plain HTTP GET).
//
// Exposed (one sample per label set; `method` is the RPC name, `code` the gRPC status name):
//   specplan_requests_total{method,code}                 counter  calls handled
//   specplan_request_errors_total{method,code}           counter  calls that did not return OK
//   specplan_request_duration_seconds{method}            histogram handler time (_bucket{le},
//                                                                  _sum, _count)
//   specplan_nodes_planned_total{method}                 counter  draft nodes returned (PlanTree n,
//                                                                  PlanBatch n_total)
//   specplan_in_flight_requests                          gauge    calls being handled now
//   specplan_in_flight_sessions                          gauge    open PlanSession streams
//   specplan_ready                                       gauge    1 once profiles are loaded and
//                                                                  until a drain starts, else 0
//   specplan_profiles_loaded                             gauge    profiles served
//   specplan_profile_age_seconds{profile}                gauge    now - the file's mtime
//   specplan_profile_loaded_age_seconds{profile}         gauge    now - when this replica read it
//   specplan_profile_reloads_total                       counter  Reload passes (SIGHUP, polling)
//   specplan_profile_reload_errors_total                 counter  files a reload refused
//
// Thread-safety: Record / AddNodes / the session counter are lock-free (relaxed atomics); Render
// may run concurrently with them (a scrape sees each counter at some recent value; a histogram's
// _count is the sum of the bucket counts it printed, so the series stay consistent).
#ifndef SPECPLAN_SERVICE_METRICS_H_
#define SPECPLAN_SERVICE_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "service/request_stats.h"

namespace specplan::service {

class ProfileStore;

class ServiceMetrics {
 public:
  // Upper bounds of the latency buckets, seconds (+Inf implied).
  static constexpr std::array<double, 16> kBucketsSeconds = {
      25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3,   2.5e-3, 5e-3,
      10e-3, 25e-3, 50e-3,  100e-3, 250e-3, 500e-3, 1.0,    5.0};
  static constexpr int kCodes = 17;  // gRPC status codes 0..16

  void Record(Method method, int code, double seconds);
  void AddNodes(Method method, int64_t nodes);
  void SessionOpened() { sessions_.fetch_add(1, std::memory_order_relaxed); }
  void SessionClosed() { sessions_.fetch_sub(1, std::memory_order_relaxed); }
  int64_t sessions() const { return sessions_.load(std::memory_order_relaxed); }
  int64_t requests(Method method, int code) const;

  // The whole exposition: these counters plus the gauges passed in and the store's profiles
  // (`store` may be null).
  std::string Render(const ProfileStore* store, int in_flight, bool ready) const;

 private:
  struct PerMethod {
    std::array<std::atomic<int64_t>, kCodes> codes{};
    std::array<std::atomic<int64_t>, kBucketsSeconds.size() + 1> buckets{};  // last = +Inf only
    std::atomic<int64_t> sum_ns{0};
    std::atomic<int64_t> nodes{0};
  };
  std::array<PerMethod, static_cast<int>(Method::kCount)> methods_;
  std::atomic<int64_t> sessions_{0};
};

// Escapes a label value for the text format (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

// A minimal HTTP/1.1 server for scrapes: one thread, one connection at a time, `Connection:
// close`. GET /metrics answers 200 with `render()` as text/plain; version=0.0.4; other paths 404,
// other methods 405; a request head over 8 KiB or not complete within 2 s is dropped.
class MetricsHttpServer {
 public:
  // Binds HOST:PORT (port 0 = a free port) and starts serving. Errors name --metrics-port.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& host, int port, std::function<std::string()> render);
  ~MetricsHttpServer();  // stops the thread and closes the socket
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Loop();
  void Serve(int fd);

  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};  // a pipe: writing to it stops Loop
  int port_ = 0;
  std::function<std::string()> render_;
  std::thread thread_;
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_METRICS_H_
