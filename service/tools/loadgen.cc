// specplan-loadgen's two drivers: the throughput run (RunLoad: closed-loop clients at a fraction of
// the measured maximum rate, QPS and latency quantiles per RPC) and the soak (RunSoak: a mix of
// valid and invalid requests, every status checked against the expected one, RSS growth watched).
// They stay in one file (over 500 lines) because they share the loopback-only target check, the
// latency histogram and the report formats (their client threads: client_threads.h); each section
// is marked below.

#include "service/tools/loadgen.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/tools/client_threads.h"
#include "service/tools/pacer.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "util/check.h"
#include "util/enum_names.h"
#include "util/percentile.h"
#include "util/status_macros.h"

namespace specplan::service {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
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
struct ClientResult : ClientOutcome {
  std::vector<double> latency_us;
  std::vector<double> server_us;
  int64_t errors = 0;
  std::string first_error;
};

class Client : public ClientBase<LoadConfig> {
 public:
  Client(const LoadConfig& config, int index)
      : ClientBase(config, index, NewClientStub(config.target, {}, config.channel_args)) {}

  // One call; *server_us = the reply's plan_us (PlanTree). A warm-up call waits, within its
  // deadline, for the channel to connect instead of failing at once when the first connection
  // attempt does (a server still starting, or a loaded machine).
  grpc::Status Call(double* server_us, bool warmup = false) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, config_.deadline_s);
    ctx.set_wait_for_ready(warmup);
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
      grpc::Status st = Call(&server_us, /*warmup=*/true);
      if (!st.ok()) {  // the server is unreachable or refuses the request: no point measuring
        out->warmup_status = absl::UnavailableError(
            absl::StrCat("--server ", config_.target, ": warm-up ", LoadRpcName(config_.rpc),
                         " failed: ", GrpcCodeName(st.error_code()), ": ", st.error_message()));
        break;
      }
    }
    Pacer pacer = phase->ArriveAndWait(config_, index_);
    if (!out->warmup_status.ok()) return;
    const int64_t reserve = std::min<int64_t>(config_.requests / config_.clients + 16,
                                              CallsToReserve(config_, int64_t{1} << 20));
    out->latency_us.reserve(reserve);
    if (config_.rpc == LoadRpc::kPlanTree) out->server_us.reserve(reserve);
    Clock::time_point t0;
    while (pacer.Next(&t0)) {
      if (phase->issued.fetch_add(1, std::memory_order_relaxed) >= config_.requests) break;
      const grpc::Status st = Call(&server_us);
      const Clock::time_point t1 = Clock::now();
      out->latency_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      out->last_end = t1;
      if (st.ok()) {
        if (config_.rpc == LoadRpc::kPlanTree) out->server_us.push_back(server_us);
      } else if (out->errors++ == 0) {
        out->first_error = absl::StrCat(GrpcCodeName(st.error_code()), ": ", st.error_message());
      }
    }
  }

 private:
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

namespace {

// The bounds the throughput run and the soak share (fields clients, requests, seconds, qps and
// deadline_s of either config); errors name the flag.
template <class Config>
absl::Status ValidateRunBounds(const Config& c, int warmup_per_client) {
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
  if (warmup_per_client < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup = ", warmup_per_client, ": must be >= 0"));
  }
  if (!(c.deadline_s > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--deadline-ms = ", c.deadline_s * 1e3, ": must be > 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateLoadConfig(const LoadConfig& c) {
  return ValidateRunBounds(c, c.warmup_per_client);
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

absl::StatusOr<LoadReport> RunLoad(const LoadConfig& config) {
  if (absl::Status st = ValidateLoadConfig(config); !st.ok()) return st;
  Phase phase;
  double cpu0 = 0;
  std::vector<ClientResult> results = RunClientThreads<Client, ClientResult>(config, &phase, [&] {
    cpu0 = CpuSeconds();
    return true;
  });
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

// Every field under its own name.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LoadReport, rpc, clients, target_qps, requests, errors,
                                   first_error, seconds, qps, mean_us, p50_us, p90_us, p99_us,
                                   max_us, server_p50_us, cpu_us_per_request)

nlohmann::json LoadReportToJson(const LoadReport& r) { return r; }

// ---------------------------------------------------------------------------------------------
// Soak mode

constexpr EnumEntry<SoakMethod> kSoakMethodNames[] = {
    {SoakMethod::kPing, "Ping"},
    {SoakMethod::kPlanTree, "PlanTree"},
    {SoakMethod::kMergeTrees, "MergeTrees"},
    {SoakMethod::kEstimateLatency, "EstimateLatency"}};

const char* SoakMethodName(SoakMethod method) { return EnumName(kSoakMethodNames, method); }

std::vector<SoakCase> MakeSoakCases(const v1::PlanTreeRequest& plan) {
  SPECPLAN_CHECK(plan.marginals().gamma() >= 1 && plan.marginals().k() >= 2);
  using absl::StatusCode;
  std::vector<SoakCase> cases;
  auto add = [&](std::string name, SoakMethod method, StatusCode expected) -> SoakCase& {
    SoakCase& c = cases.emplace_back();
    c.name = std::move(name);
    c.method = method;
    c.expected = expected;
    return c;
  };
  v1::ProfileRef unknown;
  unknown.set_gpu("no-such-gpu");
  unknown.set_model("no-such-model");

  // Valid requests.
  add("ping", SoakMethod::kPing, StatusCode::kOk);
  add("plan", SoakMethod::kPlanTree, StatusCode::kOk).plan = plan;
  v1::MergeTreesRequest merge;
  const int32_t root = plan.marginals().root_token();
  for (int32_t t : {root, 10, 11, 12, 13}) merge.mutable_a()->add_tokens(t);
  for (int32_t p : {-1, 0, 0, 1, 3}) merge.mutable_a()->add_parents(p);
  for (int32_t t : {root, 10, 14, 15}) merge.mutable_b()->add_tokens(t);
  for (int32_t p : {-1, 0, 1, 0}) merge.mutable_b()->add_parents(p);
  merge.set_dedup(true);
  merge.set_position_offset(plan.cost().context_tokens());
  add("merge", SoakMethod::kMergeTrees, StatusCode::kOk).merge = merge;
  v1::EstimateLatencyRequest estimate;
  *estimate.mutable_cost() = plan.cost();
  for (int64_t s : {1, 16, 64}) estimate.add_s(s);
  for (int64_t c : {int64_t{0}, plan.cost().context_tokens()}) estimate.add_c(c);
  add("estimate", SoakMethod::kEstimateLatency, StatusCode::kOk).estimate = estimate;

  // Invalid requests.
  SoakCase* c = &add("plan_nan_probs", SoakMethod::kPlanTree, StatusCode::kInvalidArgument);
  c->plan = plan;
  c->plan.mutable_marginals()->set_probs(1, std::numeric_limits<float>::quiet_NaN());
  c = &add("plan_unsorted_row", SoakMethod::kPlanTree, StatusCode::kInvalidArgument);
  c->plan = plan;
  {
    auto* probs = c->plan.mutable_marginals()->mutable_probs();
    // Row 0 ascending (row sum unchanged or smaller, so only the order is wrong).
    const float a = probs->Get(0), b = probs->Get(1);
    if (a > b) {
      probs->Set(0, b);
      probs->Set(1, a);
    } else if (b > 0) {
      probs->Set(0, 0.5f * b);
    } else {
      probs->Set(1, 1e-3f);
    }
  }
  c = &add("plan_unknown_profile", SoakMethod::kPlanTree, StatusCode::kNotFound);
  c->plan = plan;
  *c->plan.mutable_cost()->mutable_profile() = unknown;
  c = &add("plan_gamma_over_limit", SoakMethod::kPlanTree, StatusCode::kResourceExhausted);
  c->plan = plan;
  c->plan.mutable_marginals()->set_gamma(1 << 20);
  c = &add("plan_n_max_over_limit", SoakMethod::kPlanTree, StatusCode::kResourceExhausted);
  c->plan = plan;
  c->plan.set_n_max(1 << 30);
  c = &add("merge_non_topological", SoakMethod::kMergeTrees, StatusCode::kInvalidArgument);
  c->merge = merge;
  c->merge.mutable_a()->set_parents(2, 4);  // parents[2] = 4 > 2
  c = &add("merge_mismatched_roots", SoakMethod::kMergeTrees, StatusCode::kInvalidArgument);
  c->merge = merge;
  c->merge.mutable_b()->set_tokens(0, root + 1);
  c = &add("merge_n_max_over_limit", SoakMethod::kMergeTrees, StatusCode::kResourceExhausted);
  c->merge = merge;
  c->merge.set_budget(true);
  c->merge.set_n_max(1 << 30);
  c = &add("estimate_unknown_profile", SoakMethod::kEstimateLatency, StatusCode::kNotFound);
  c->estimate = estimate;
  *c->estimate.mutable_cost()->mutable_profile() = unknown;
  c = &add("estimate_grid_over_limit", SoakMethod::kEstimateLatency,
           StatusCode::kResourceExhausted);
  c->estimate = estimate;
  c->estimate.clear_s();
  c->estimate.clear_c();
  for (int i = 0; i < 300; ++i) {
    c->estimate.add_s(i + 1);
    c->estimate.add_c(i);
  }
  return cases;
}

void LatencyHistogram::Add(double us) {
  static const double kLogStep = std::log(1.01);
  int b = us <= 1 ? 0 : static_cast<int>(std::ceil(std::log(us) / kLogStep));
  b = std::clamp(b, 0, kBuckets - 1);
  ++counts[b];
  ++total;
  max_us = std::max(max_us, us);
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (int b = 0; b < kBuckets; ++b) counts[b] += o.counts[b];
  total += o.total;
  max_us = std::max(max_us, o.max_us);
}

double LatencyHistogram::Quantile(double q) const {
  if (total == 0) return 0;
  const int64_t rank =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * static_cast<double>(total))));
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen >= rank) return std::min(max_us, std::pow(1.01, b));
  }
  return max_us;
}

absl::StatusOr<int64_t> ReadVmRssKb(int pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/status") : absl::StrCat("/proc/", pid, "/status");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open (--server-pid)"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "VmRSS:")) {
      std::istringstream fields(line.substr(6));
      int64_t kb = -1;
      if (fields >> kb && kb >= 0) return kb;
      break;
    }
  }
  return absl::DataLossError(absl::StrCat(path, ": no readable VmRSS line"));
}

absl::Status ValidateSoakConfig(const SoakConfig& c) {
  SPECPLAN_RETURN_IF_ERROR(ValidateRunBounds(c, /*warmup_per_client=*/0));
  if (!(c.mix_invalid >= 0 && c.mix_invalid <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mix-invalid = ", c.mix_invalid, ": must be in [0, 1]"));
  }
  int valid = 0, invalid = 0;
  for (const SoakCase& sc : c.cases) (sc.expected == absl::StatusCode::kOk ? valid : invalid)++;
  if (valid == 0) return absl::InvalidArgumentError("soak mix: no valid request case");
  if (invalid == 0 && c.mix_invalid > 0) {
    return absl::InvalidArgumentError(absl::StrCat("--mix-invalid = ", c.mix_invalid,
                                                   ": the soak mix has no invalid request case"));
  }
  return absl::OkStatus();
}

namespace {

inline constexpr int kNumCodes = 17;  // grpc::StatusCode 0..16

struct SoakClientResult : ClientOutcome {
  LatencyHistogram valid_latency;
  std::vector<int64_t> sent, as_expected;                                    // [cases]
  std::array<std::array<int64_t, kNumCodes>, kNumSoakMethods> unexpected{};  // [method][code]
  std::string first_unexpected;
};

class SoakClient : public ClientBase<SoakConfig> {
 public:
  SoakClient(const SoakConfig& config, int index)
      : ClientBase(config, index, NewClientStub(config.target)) {
    for (int i = 0; i < static_cast<int>(config.cases.size()); ++i) {
      (config.cases[i].expected == absl::StatusCode::kOk ? valid_ : invalid_).push_back(i);
    }
  }

  // One call of case c; the first Ping waits for the channel as a warm-up call does (Client).
  grpc::Status Call(const SoakCase& c, bool warmup = false) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, config_.deadline_s);
    ctx.set_wait_for_ready(warmup);
    switch (c.method) {
      case SoakMethod::kPing:
        return stub_->Ping(&ctx, ping_req_, &ping_resp_);
      case SoakMethod::kPlanTree:
        return stub_->PlanTree(&ctx, c.plan, &plan_resp_);
      case SoakMethod::kMergeTrees:
        return stub_->MergeTrees(&ctx, c.merge, &merge_resp_);
      case SoakMethod::kEstimateLatency:
        return stub_->EstimateLatency(&ctx, c.estimate, &estimate_resp_);
    }
    return grpc::Status(grpc::StatusCode::INTERNAL, "unknown method");
  }

  void Run(Phase* phase, SoakClientResult* out) {
    out->sent.assign(config_.cases.size(), 0);
    out->as_expected.assign(config_.cases.size(), 0);
    {
      SoakCase ping;
      const grpc::Status st = Call(ping, /*warmup=*/true);
      if (!st.ok()) {
        out->warmup_status = absl::UnavailableError(absl::StrCat(
            "--server ", config_.target, ": first Ping failed: ", GrpcCodeName(st.error_code()),
            ": ", st.error_message()));
      }
    }
    Pacer pacer = phase->ArriveAndWait(config_, index_);
    if (!out->warmup_status.ok()) return;
    std::mt19937_64 rng(config_.seed + static_cast<uint64_t>(index_));
    std::uniform_real_distribution<double> coin(0, 1);
    Clock::time_point t0;
    while (pacer.Next(&t0)) {
      if (phase->issued.fetch_add(1, std::memory_order_relaxed) >= config_.requests) break;
      const bool invalid = !invalid_.empty() && coin(rng) < config_.mix_invalid;
      const std::vector<int>& pool = invalid ? invalid_ : valid_;
      const int ci = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
      const SoakCase& c = config_.cases[ci];
      const grpc::Status st = Call(c);
      const Clock::time_point t1 = Clock::now();
      out->last_end = t1;
      ++out->sent[ci];
      const int code = static_cast<int>(st.error_code());
      if (code == static_cast<int>(c.expected)) {
        ++out->as_expected[ci];
        if (!invalid) {
          out->valid_latency.Add(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
      } else {
        ++out->unexpected[static_cast<int>(c.method)][std::clamp(code, 0, kNumCodes - 1)];
        if (out->first_unexpected.empty()) {
          out->first_unexpected =
              absl::StrCat(c.name, ": got ", GrpcCodeName(st.error_code()), " (expected ",
                           absl::StatusCodeToString(c.expected), "): ", st.error_message());
        }
      }
    }
  }

 private:
  std::vector<int> valid_, invalid_;  // indices into config_.cases
  v1::PingRequest ping_req_;
  v1::PingResponse ping_resp_;
  v1::PlanTreeResponse plan_resp_;  // responses reused: they keep their fields' capacity
  v1::MergeTreesResponse merge_resp_;
  v1::EstimateLatencyResponse estimate_resp_;
};

}  // namespace

absl::StatusOr<SoakReport> RunSoak(const SoakConfig& config) {
  SPECPLAN_RETURN_IF_ERROR(ValidateSoakConfig(config));
  SoakReport rep;
  absl::Status rss_status;
  Phase phase;
  // An unreadable VmRSS stops the run at once (stop = start).
  std::vector<SoakClientResult> results =
      RunClientThreads<SoakClient, SoakClientResult>(config, &phase, [&] {
        if (config.rss_pid >= 0) {
          absl::StatusOr<int64_t> rss = ReadVmRssKb(config.rss_pid);
          if (rss.ok()) {
            rep.rss_start_kb = *rss;
          } else {
            rss_status = rss.status();
          }
        }
        return rss_status.ok();
      });
  SPECPLAN_RETURN_IF_ERROR(rss_status);
  for (const SoakClientResult& r : results) SPECPLAN_RETURN_IF_ERROR(r.warmup_status);
  if (config.rss_pid >= 0) {
    SPECPLAN_ASSIGN_OR_RETURN(rep.rss_end_kb, ReadVmRssKb(config.rss_pid));
  }

  rep.clients = config.clients;
  rep.target_qps = config.qps;
  rep.mix_invalid = config.mix_invalid;
  LatencyHistogram lat;
  Clock::time_point end = phase.start;
  for (size_t i = 0; i < config.cases.size(); ++i) {
    SoakCaseReport& cr = rep.cases.emplace_back();
    cr.name = config.cases[i].name;
    cr.method = SoakMethodName(config.cases[i].method);
    cr.expected = absl::StatusCodeToString(config.cases[i].expected);
    for (const SoakClientResult& r : results) {
      cr.sent += r.sent[i];
      cr.as_expected += r.as_expected[i];
    }
    rep.requests += cr.sent;
    (config.cases[i].expected == absl::StatusCode::kOk ? rep.valid : rep.invalid) += cr.sent;
    rep.unexpected += cr.sent - cr.as_expected;
  }
  for (const SoakClientResult& r : results) {
    lat.Merge(r.valid_latency);
    end = std::max(end, r.last_end);
    if (rep.first_unexpected.empty()) rep.first_unexpected = r.first_unexpected;
    for (int m = 0; m < kNumSoakMethods; ++m) {
      for (int code = 0; code < kNumCodes; ++code) {
        if (r.unexpected[m][code] == 0) continue;
        rep.unexpected_by_method_code[absl::StrCat(
            SoakMethodName(static_cast<SoakMethod>(m)), " ",
            GrpcCodeName(static_cast<grpc::StatusCode>(code)))] += r.unexpected[m][code];
      }
    }
  }
  rep.seconds = std::chrono::duration<double>(end - phase.start).count();
  if (config.qps > 0) rep.seconds = std::max(rep.seconds, rep.requests / config.qps);
  rep.qps = rep.seconds > 0 ? rep.requests / rep.seconds : 0;
  rep.p50_us = lat.Quantile(0.50);
  rep.p99_us = lat.Quantile(0.99);
  rep.max_us = lat.max_us;
  return rep;
}

std::string FormatSoakReport(const SoakReport& r) {
  auto rss = [](int64_t kb) {
    return kb < 0 ? std::string("n/a") : absl::StrFormat("%.1f MiB", kb / 1024.0);
  };
  std::string out = absl::StrFormat(
      "soak: %d clients, target %s/s, %.0f%% invalid, %.1f s\n"
      "requests %d (valid %d, invalid %d), %.0f/s\n"
      "unexpected statuses %d\n"
      "valid latency p50 %.1f us, p99 %.1f us, max %.1f us\n"
      "VmRSS start %s -> end %s%s\n",
      r.clients, r.target_qps > 0 ? absl::StrFormat("%.0f", r.target_qps) : std::string("max"),
      100 * r.mix_invalid, r.seconds, r.requests, r.valid, r.invalid, r.qps, r.unexpected, r.p50_us,
      r.p99_us, r.max_us, rss(r.rss_start_kb), rss(r.rss_end_kb),
      r.rss_start_kb >= 0 && r.rss_end_kb >= 0
          ? absl::StrFormat(" (%+d kB)", r.rss_end_kb - r.rss_start_kb)
          : std::string(" (no --start-server / --server-pid)"));
  out += absl::StrFormat("%-26s %-16s %-18s %10s %12s\n", "case", "method", "expected", "sent",
                         "as_expected");
  for (const SoakCaseReport& c : r.cases) {
    out += absl::StrFormat("%-26s %-16s %-18s %10d %12d\n", c.name, c.method, c.expected, c.sent,
                           c.as_expected);
  }
  for (const auto& [key, count] : r.unexpected_by_method_code) {
    out += absl::StrFormat("unexpected %s: %d\n", key, count);
  }
  if (!r.first_unexpected.empty()) out += "first unexpected: " + r.first_unexpected + "\n";
  return out;
}

// Every field under its own name (the soak mix always has cases, so "cases" is never empty).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SoakCaseReport, name, method, expected, sent, as_expected)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SoakReport, clients, target_qps, mix_invalid, seconds, requests,
                                   valid, invalid, unexpected, unexpected_by_method_code,
                                   first_unexpected, qps, p50_us, p99_us, max_us, rss_start_kb,
                                   rss_end_kb, cases)

nlohmann::json SoakReportToJson(const SoakReport& r) { return r; }

}  // namespace specplan::service
