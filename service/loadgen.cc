#include "service/loadgen.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "specplan/v1/planner.grpc.pb.h"

namespace specplan::service {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

bool IsLoopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

// What one client thread measured.
struct ClientResult {
  std::vector<double> latency_us;
  std::vector<double> server_us;
  int64_t errors = 0;
  std::string first_error;
  Clock::time_point last_end{};
  absl::Status warmup_status;
};

// Shared state of one run: the measured phase starts when every client has warmed up.
struct Phase {
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  Clock::time_point start{};
  Clock::time_point stop{};
  std::atomic<int64_t> issued{0};
};

class Client {
 public:
  Client(const LoadConfig& config, int index) : config_(config), index_(index) {
    grpc::ChannelArguments args;
    // A private subchannel pool: every client gets its own connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(64 << 20);
    for (const auto& [name, value] : config.channel_args) args.SetInt(name, value);
    channel_ = grpc::CreateCustomChannel(config.target, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Planner::NewStub(channel_);
  }

  // One call; *server_us = the reply's plan_us (PlanTree).
  grpc::Status Call(double* server_us) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::microseconds(static_cast<int64_t>(config_.deadline_s * 1e6)));
    if (config_.rpc == LoadRpc::kPing) {
      *server_us = 0;
      return stub_->Ping(&ctx, ping_req_, &ping_resp_);
    }
    grpc::Status st = stub_->PlanTree(&ctx, config_.plan_request, &plan_resp_);
    *server_us = plan_resp_.plan_us();
    return st;
  }

  void Run(Phase* phase, ClientResult* out) {
    double server_us = 0;
    for (int i = 0; i < config_.warmup_per_client; ++i) {
      grpc::Status st = Call(&server_us);
      if (!st.ok()) {  // the server is unreachable or refuses the request: no point measuring
        out->warmup_status = absl::UnavailableError(
            absl::StrCat("--server ", config_.target, ": warm-up ", LoadRpcName(config_.rpc),
                         " failed: ", CodeName(st.error_code()), ": ", st.error_message()));
        break;
      }
    }
    {
      std::unique_lock lock(phase->mu);
      ++phase->ready;
      phase->cv.notify_all();
      phase->cv.wait(lock, [&] { return phase->go; });
    }
    if (!out->warmup_status.ok()) return;
    const Clock::time_point start = phase->start, stop = phase->stop;
    // Paced: this client sends every `interval`, staggered against the others.
    const bool paced = config_.qps > 0;
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(paced ? config_.clients / config_.qps : 0));
    Clock::time_point next = start + interval * index_ / config_.clients;
    const int64_t reserve = std::min<int64_t>(
        config_.requests / config_.clients + 16,
        paced ? static_cast<int64_t>(config_.seconds * config_.qps / config_.clients) + 16
              : int64_t{1} << 20);
    out->latency_us.reserve(reserve);
    if (config_.rpc == LoadRpc::kPlanTree) out->server_us.reserve(reserve);
    while (true) {
      Clock::time_point now = Clock::now();
      if (now >= stop) break;
      Clock::time_point t0 = now;
      if (paced) {
        if (next >= stop) break;
        if (now < next) {
          std::this_thread::sleep_until(next);
          t0 = Clock::now();
        } else {
          t0 = next;  // late: the wait behind the previous reply counts
        }
        next += interval;
      }
      if (phase->issued.fetch_add(1, std::memory_order_relaxed) >= config_.requests) break;
      const grpc::Status st = Call(&server_us);
      const Clock::time_point t1 = Clock::now();
      out->latency_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      out->last_end = t1;
      if (st.ok()) {
        if (config_.rpc == LoadRpc::kPlanTree) out->server_us.push_back(server_us);
      } else if (out->errors++ == 0) {
        out->first_error = absl::StrCat(CodeName(st.error_code()), ": ", st.error_message());
      }
    }
  }

 private:
  const LoadConfig& config_;
  const int index_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Planner::Stub> stub_;
  v1::PingRequest ping_req_;
  v1::PingResponse ping_resp_;
  v1::PlanTreeResponse plan_resp_;  // reused: keeps its repeated fields' capacity
};

}  // namespace

const char* LoadRpcName(LoadRpc rpc) { return rpc == LoadRpc::kPing ? "Ping" : "PlanTree"; }

absl::Status CheckLoopbackTarget(const std::string& target) {
  std::string rest = target;
  if (absl::StartsWith(rest, "unix:") || absl::StartsWith(rest, "unix-abstract:")) {
    return absl::OkStatus();
  }
  for (const char* prefix : {"dns:///", "ipv4:", "ipv6:"}) {
    if (absl::StartsWith(rest, prefix)) {
      rest = rest.substr(std::strlen(prefix));
      break;
    }
  }
  std::string host;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--server = '", target, "': unterminated '[' in an IPv6 address"));
    }
    host = rest.substr(1, close - 1);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--server = '", target, "': expected HOST:PORT"));
    }
    host = rest.substr(0, colon);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--server = '", target, "': cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  bool all_loopback = res != nullptr;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) all_loopback &= IsLoopback(a->ai_addr);
  freeaddrinfo(res);
  if (!all_loopback) {
    return absl::FailedPreconditionError(
        absl::StrCat("--server = '", target, "': '", host,
                     "' is not a loopback address; the load generator only loads this machine "
                     "(pass --allow-remote to override)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLoadConfig(const LoadConfig& c) {
  if (c.clients < 1 || c.clients > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--clients = ", c.clients, ": must be in [1, 1024]"));
  }
  if (c.requests < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--requests = ", c.requests, ": must be >= 1"));
  }
  if (!(c.seconds > 0 && c.seconds <= 3600)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seconds = ", c.seconds, ": must be in (0, 3600]"));
  }
  if (!(c.qps >= 0 && std::isfinite(c.qps))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--qps = ", c.qps, ": must be >= 0 (0 = as fast as possible)"));
  }
  if (c.warmup_per_client < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup = ", c.warmup_per_client, ": must be >= 0"));
  }
  if (!(c.deadline_s > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--deadline-ms = ", c.deadline_s * 1e3, ": must be > 0"));
  }
  return absl::OkStatus();
}

v1::PlanTreeRequest MakePlanRequest(const planner::Marginals& m, int n_max, int64_t context,
                                    const std::string& gpu, const std::string& model,
                                    const std::string& profile, bool engine_outputs) {
  v1::PlanTreeRequest req;
  v1::Marginals* w = req.mutable_marginals();
  w->set_root_token(m.root_token);
  w->set_gamma(m.gamma);
  w->set_k(m.k);
  w->mutable_tokens()->Assign(m.tokens.begin(), m.tokens.end());
  w->mutable_probs()->Assign(m.probs.begin(), m.probs.end());
  v1::CostSpec* cost = req.mutable_cost();
  cost->set_context_tokens(context);
  if (!profile.empty()) {
    const size_t slash = profile.find('/');
    cost->mutable_profile()->set_gpu(profile.substr(0, slash));
    if (slash != std::string::npos) cost->mutable_profile()->set_model(profile.substr(slash + 1));
  } else {
    cost->mutable_inline_model()->set_gpu(gpu);
    cost->mutable_inline_model()->set_model(model);
  }
  req.set_mode(v1::BUDGET_MODE_CONTROLLER);
  req.set_n_max(n_max);
  if (engine_outputs) {
    v1::OutputSelection* o = req.mutable_outputs();
    o->set_positions(true);
    o->set_retrieve(true);
    o->set_packed_mask(true);
  }
  return req;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::max(1.0, rank)) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

absl::StatusOr<LoadReport> RunLoad(const LoadConfig& config) {
  if (absl::Status st = ValidateLoadConfig(config); !st.ok()) return st;
  // Sleeps end within ~1 us instead of the default 50 us slack (paced mode).
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < config.clients; ++i) clients.push_back(std::make_unique<Client>(config, i));
  std::vector<ClientResult> results(config.clients);
  Phase phase;
  std::vector<std::thread> threads;
  for (int i = 0; i < config.clients; ++i) {
    threads.emplace_back([&, i] { clients[i]->Run(&phase, &results[i]); });
  }
  double cpu0 = 0;
  {
    std::unique_lock lock(phase.mu);
    phase.cv.wait(lock, [&] { return phase.ready == config.clients; });
    cpu0 = CpuSeconds();
    phase.start = Clock::now();
    phase.stop = phase.start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(config.seconds));
    phase.go = true;
    phase.cv.notify_all();
  }
  for (auto& t : threads) t.join();
  const double cpu1 = CpuSeconds();
  for (const ClientResult& r : results) {
    if (!r.warmup_status.ok()) return r.warmup_status;
  }

  LoadReport rep;
  rep.rpc = LoadRpcName(config.rpc);
  rep.clients = config.clients;
  rep.target_qps = config.qps;
  std::vector<double> lat, server;
  Clock::time_point end = phase.start;
  for (ClientResult& r : results) {
    lat.insert(lat.end(), r.latency_us.begin(), r.latency_us.end());
    server.insert(server.end(), r.server_us.begin(), r.server_us.end());
    rep.errors += r.errors;
    if (rep.first_error.empty()) rep.first_error = r.first_error;
    end = std::max(end, r.last_end);
  }
  rep.requests = static_cast<int64_t>(lat.size());
  rep.seconds = std::chrono::duration<double>(end - phase.start).count();
  // A paced run lasts its schedule, not just until its last reply.
  if (config.qps > 0) rep.seconds = std::max(rep.seconds, rep.requests / config.qps);
  rep.qps = rep.seconds > 0 ? rep.requests / rep.seconds : 0;
  std::sort(lat.begin(), lat.end());
  std::sort(server.begin(), server.end());
  double sum = 0;
  for (double x : lat) sum += x;
  rep.mean_us = lat.empty() ? 0 : sum / lat.size();
  rep.p50_us = Percentile(lat, 0.50);
  rep.p90_us = Percentile(lat, 0.90);
  rep.p99_us = Percentile(lat, 0.99);
  rep.max_us = lat.empty() ? 0 : lat.back();
  rep.server_p50_us = Percentile(server, 0.50);
  rep.cpu_us_per_request = rep.requests > 0 ? (cpu1 - cpu0) * 1e6 / rep.requests : 0;
  return rep;
}

std::string FormatLoadTable(const std::vector<LoadReport>& reports) {
  std::string out =
      absl::StrFormat("%-9s %7s %10s %9s %6s %7s %9s %8s %8s %8s %9s %9s %10s\n", "rpc", "clients",
                      "target_qps", "requests", "errors", "seconds", "qps", "p50_us", "p90_us",
                      "p99_us", "max_us", "server_us", "cpu_us/req");
  for (const LoadReport& r : reports) {
    out += absl::StrFormat(
        "%-9s %7d %10s %9d %6d %7.2f %9.0f %8.1f %8.1f %8.1f %9.1f %9.1f %10.1f\n", r.rpc,
        r.clients, r.target_qps > 0 ? absl::StrFormat("%.0f", r.target_qps) : std::string("max"),
        r.requests, r.errors, r.seconds, r.qps, r.p50_us, r.p90_us, r.p99_us, r.max_us,
        r.server_p50_us, r.cpu_us_per_request);
  }
  return out;
}

nlohmann::json LoadReportToJson(const LoadReport& r) {
  nlohmann::json j;
  j["rpc"] = r.rpc;
  j["clients"] = r.clients;
  j["target_qps"] = r.target_qps;
  j["requests"] = r.requests;
  j["errors"] = r.errors;
  j["first_error"] = r.first_error;
  j["seconds"] = r.seconds;
  j["qps"] = r.qps;
  j["mean_us"] = r.mean_us;
  j["p50_us"] = r.p50_us;
  j["p90_us"] = r.p90_us;
  j["p99_us"] = r.p99_us;
  j["max_us"] = r.max_us;
  j["server_p50_us"] = r.server_p50_us;
  j["cpu_us_per_request"] = r.cpu_us_per_request;
  return j;
}

}  // namespace specplan::service
