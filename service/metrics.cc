#include "service/metrics.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/profile_store.h"

namespace specplan::service {

namespace {

const char* CodeName(int code) {
  static const char* const kNames[ServiceMetrics::kCodes] = {"OK",
                                                             "CANCELLED",
                                                             "UNKNOWN",
                                                             "INVALID_ARGUMENT",
                                                             "DEADLINE_EXCEEDED",
                                                             "NOT_FOUND",
                                                             "ALREADY_EXISTS",
                                                             "PERMISSION_DENIED",
                                                             "RESOURCE_EXHAUSTED",
                                                             "FAILED_PRECONDITION",
                                                             "ABORTED",
                                                             "OUT_OF_RANGE",
                                                             "UNIMPLEMENTED",
                                                             "INTERNAL",
                                                             "UNAVAILABLE",
                                                             "DATA_LOSS",
                                                             "UNAUTHENTICATED"};
  return code >= 0 && code < ServiceMetrics::kCodes ? kNames[code] : "UNKNOWN";
}

// Prometheus floats: Go's strconv formatting is what scrapers parse; %.17g round-trips.
std::string Num(double v) { return absl::StrFormat("%.17g", v); }

void Header(std::string* out, const char* name, const char* type, const char* help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '"') {
      out += "\\\"";
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

void ServiceMetrics::Record(Method method, int code, double seconds) {
  PerMethod& m = methods_[static_cast<int>(method)];
  m.codes[code >= 0 && code < kCodes ? code : 2].fetch_add(1, std::memory_order_relaxed);
  const size_t b = static_cast<size_t>(
      std::lower_bound(kBucketsSeconds.begin(), kBucketsSeconds.end(), seconds) -
      kBucketsSeconds.begin());  // first bound >= seconds (le is inclusive); size() = +Inf
  m.buckets[b].fetch_add(1, std::memory_order_relaxed);
  m.sum_ns.fetch_add(static_cast<int64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void ServiceMetrics::AddNodes(Method method, int64_t nodes) {
  methods_[static_cast<int>(method)].nodes.fetch_add(nodes, std::memory_order_relaxed);
}

int64_t ServiceMetrics::requests(Method method, int code) const {
  return methods_[static_cast<int>(method)].codes[code].load(std::memory_order_relaxed);
}

std::string ServiceMetrics::Render(const ProfileStore* store, int in_flight, bool ready) const {
  std::string out;
  out.reserve(16 << 10);
  constexpr int kMethods = static_cast<int>(Method::kCount);

  // The calls by method and status code from `first_code` on (0: all, 1: the failed ones).
  auto by_method_and_code = [&](const char* metric, int first_code) {
    for (int i = 0; i < kMethods; ++i) {
      for (int c = first_code; c < kCodes; ++c) {
        const int64_t n = methods_[i].codes[c].load(std::memory_order_relaxed);
        if (n == 0) continue;
        absl::StrAppend(&out, metric, "{method=\"", MethodName(Method(i)), "\",code=\"",
                        CodeName(c), "\"} ", n, "\n");
      }
    }
  };
  Header(&out, "specplan_requests_total", "counter", "RPCs handled, by method and status code.");
  by_method_and_code("specplan_requests_total", 0);
  Header(&out, "specplan_request_errors_total", "counter",
         "RPCs that did not return OK, by method and status code.");
  by_method_and_code("specplan_request_errors_total", 1);
  Header(&out, "specplan_request_duration_seconds", "histogram",
         "Server handler time per RPC, seconds.");
  for (int i = 0; i < kMethods; ++i) {
    const PerMethod& m = methods_[i];
    std::array<int64_t, kBucketsSeconds.size() + 1> counts;
    int64_t total = 0;
    for (size_t b = 0; b < counts.size(); ++b) {
      counts[b] = m.buckets[b].load(std::memory_order_relaxed);
      total += counts[b];
    }
    if (total == 0) continue;
    const char* name = MethodName(Method(i));
    int64_t cumulative = 0;
    for (size_t b = 0; b < kBucketsSeconds.size(); ++b) {
      cumulative += counts[b];
      absl::StrAppend(&out, "specplan_request_duration_seconds_bucket{method=\"", name, "\",le=\"",
                      Num(kBucketsSeconds[b]), "\"} ", cumulative, "\n");
    }
    absl::StrAppend(&out, "specplan_request_duration_seconds_bucket{method=\"", name,
                    "\",le=\"+Inf\"} ", total, "\n");
    absl::StrAppend(&out, "specplan_request_duration_seconds_sum{method=\"", name, "\"} ",
                    Num(m.sum_ns.load(std::memory_order_relaxed) * 1e-9), "\n");
    absl::StrAppend(&out, "specplan_request_duration_seconds_count{method=\"", name, "\"} ", total,
                    "\n");
  }
  Header(&out, "specplan_nodes_planned_total", "counter",
         "Draft nodes returned by planning RPCs (PlanTree n, PlanBatch n_total).");
  for (Method m : {Method::kPlanTree, Method::kPlanBatch}) {
    absl::StrAppend(&out, "specplan_nodes_planned_total{method=\"", MethodName(m), "\"} ",
                    methods_[static_cast<int>(m)].nodes.load(std::memory_order_relaxed), "\n");
  }
  Header(&out, "specplan_in_flight_requests", "gauge",
         "Calls being handled now (open PlanSession streams included).");
  absl::StrAppend(&out, "specplan_in_flight_requests ", in_flight, "\n");
  Header(&out, "specplan_in_flight_sessions", "gauge", "Open PlanSession streams.");
  absl::StrAppend(&out, "specplan_in_flight_sessions ", sessions(), "\n");
  Header(&out, "specplan_ready", "gauge",
         "1 when profiles are loaded and no drain has started (health SERVING), else 0.");
  absl::StrAppend(&out, "specplan_ready ", ready ? 1 : 0, "\n");
  if (store != nullptr) {
    const auto entries = store->List();
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    Header(&out, "specplan_profiles_loaded", "gauge", "Profiles this replica serves.");
    absl::StrAppend(&out, "specplan_profiles_loaded ", entries.size(), "\n");
    Header(&out, "specplan_profile_age_seconds", "gauge",
           "Seconds since the served profile's file was last modified.");
    for (const auto& e : entries) {
      absl::StrAppend(&out, "specplan_profile_age_seconds{profile=\"", EscapeLabelValue(e->id),
                      "\"} ", std::max<int64_t>(0, now - e->file_mtime_unix_s), "\n");
    }
    Header(&out, "specplan_profile_loaded_age_seconds", "gauge",
           "Seconds since this replica read the served profile.");
    for (const auto& e : entries) {
      absl::StrAppend(&out, "specplan_profile_loaded_age_seconds{profile=\"",
                      EscapeLabelValue(e->id), "\"} ", std::max<int64_t>(0, now - e->loaded_unix_s),
                      "\n");
    }
    Header(&out, "specplan_profile_reloads_total", "counter",
           "Profile directory reload passes (SIGHUP and --reload-interval-s polling).");
    absl::StrAppend(&out, "specplan_profile_reloads_total ", store->reloads(), "\n");
    Header(&out, "specplan_profile_reload_errors_total", "counter",
           "Profile files a reload refused (the old version kept serving).");
    absl::StrAppend(&out, "specplan_profile_reload_errors_total ", store->reload_errors(), "\n");
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// MetricsHttpServer

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, int port, std::function<std::string()> render) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-port = ", port, ": must be in [0, 65535] (0 = a free port)"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h == "localhost") h = "127.0.0.1";
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(h.empty() ? nullptr : h.c_str(), service.c_str(), &hints, &res);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-port ", port, " on host '", host, "': ", gai_strerror(rc)));
  }
  auto server = std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer());
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) break;
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-port ", port, " on host '", host, "': ", error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  server->port_ =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->listen_fd_ = fd;
  if (pipe2(server->wake_fd_, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("--metrics-port: pipe: ", std::strerror(errno)));
  }
  server->render_ = std::move(render);
  server->thread_ = std::thread([s = server.get()] { s->Loop(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    const char byte = 0;
    (void)!write(wake_fd_[1], &byte, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void MetricsHttpServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    close(fd);
  }
}

void MetricsHttpServer::Serve(int fd) {
  // Read the request head (up to the blank line), bounded in size and time.
  std::string head;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (head.find("\r\n\r\n") == std::string::npos && head.find("\n\n") == std::string::npos) {
    if (head.size() > 8192) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return;
    char buf[2048];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  const size_t eol = head.find_first_of("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  const std::string method = line.substr(0, sp1);
  std::string target =
      sp1 == std::string::npos
          ? ""
          : line.substr(sp1 + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  std::string status, body, type = "text/plain; charset=utf-8";
  if (method != "GET" && method != "HEAD") {
    status = "405 Method Not Allowed";
    body = "only GET /metrics\n";
  } else if (target != "/metrics") {
    status = "404 Not Found";
    body = "not found; metrics are at /metrics\n";
  } else {
    status = "200 OK";
    body = render_();
    type = "text/plain; version=0.0.4; charset=utf-8";
  }
  std::string response =
      absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                   "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n");
  if (method != "HEAD") response += body;
  size_t sent = 0;
  while (sent < response.size()) {
    const ssize_t n = send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace specplan::service
