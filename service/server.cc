#include "service/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "util/status_macros.h"

namespace specplan::service {

ProfileStore::ReloadResult RunningServer::ReloadProfiles() {
  ProfileStore::ReloadResult r = store->Reload();
  for (const std::string& id : r.loaded) {
    auto e = store->Find(id);
    std::fprintf(stderr, "specplan-server: profile reload: loaded %s from %s\n", id.c_str(),
                 e != nullptr ? e->path.c_str() : "?");
  }
  for (const std::string& id : r.removed) {
    std::fprintf(stderr, "specplan-server: profile reload: removed %s (its file is gone)\n",
                 id.c_str());
  }
  for (const std::string& e : r.errors) {
    std::fprintf(stderr, "specplan-server: profile reload: refused %s\n", e.c_str());
  }
  return r;
}

void RunningServer::Shutdown(double grace_s) {
  if (poller.joinable()) {
    {
      std::lock_guard lock(poller_mu);
      poller_stop = true;
    }
    poller_cv.notify_all();
    poller.join();
  }
  if (server == nullptr) return;
  // New calls are refused UNAVAILABLE from here on (retried by clients on another replica).
  service->set_state(ServingState::kDraining);
  if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(false);
  // grpc::Server::Shutdown(deadline) also waits for idle client connections to close, which a
  // client that is not polling never does, and cancels what is still running at the deadline; so
  // first wait ourselves (bounded by the grace period) until no call is in flight and the clients
  // have gone quiet: a client that watches health (service/channel.h) stops sending within a
  // round trip of NOT_SERVING, and what it sent meanwhile was refused UNAVAILABLE and retried
  // elsewhere. Clients that keep sending regardless get at most 2 s of refusals. Then shut down
  // with a deadline of up to 1 s for calls that raced in (refused ones finish at once).
  using std::chrono::steady_clock;
  const auto start = steady_clock::now();
  const auto grace = std::chrono::microseconds(static_cast<int64_t>(grace_s * 1e6));
  const auto quiet_cap = std::min<steady_clock::duration>(grace, std::chrono::seconds(2));
  for (;;) {
    const auto now = steady_clock::now();
    if (now - start >= grace) break;
    const bool quiet = now - service->last_call_start() >= std::chrono::milliseconds(100);
    if (service->in_flight() == 0 && (quiet || now - start >= quiet_cap)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto left =
      grace - std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - start);
  const auto tail = std::min<std::chrono::microseconds>(
      std::chrono::seconds(1), std::max<std::chrono::microseconds>(left, {}));
  server->Shutdown(std::chrono::system_clock::now() + tail);
  server->Wait();
  server.reset();
  metrics.reset();
}

RunningServer::~RunningServer() { Shutdown(0.0); }

void ConfigureServingProcess() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

absl::StatusOr<std::unique_ptr<RunningServer>> StartServer(const ServerConfig& config) {
  SPECPLAN_RETURN_IF_ERROR(ValidateLimits(config.service.limits));
  if (!(config.ema_alpha > 0 && config.ema_alpha <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ema-alpha = ", config.ema_alpha, ": must be in (0, 1]"));
  }
  if (config.max_message_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-message-bytes = ", config.max_message_bytes, ": must be >= 1024"));
  }
  if (config.threads < 0 || config.threads == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--threads = ", config.threads, ": must be 0 (gRPC default) or >= 2 (poller + worker)"));
  }
  if (config.tls_cert_pem.empty() != config.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key: give both or neither");
  }
  ServiceOptions service = config.service;
  service.max_reply_bytes = config.max_message_bytes;
  SPECPLAN_RETURN_IF_ERROR(
      EngineFromProto(config.service.default_engine, "--engine", &service.default_engine));
  if (!(config.reload_interval_s >= 0 && config.reload_interval_s <= 86400)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reload-interval-s = ", config.reload_interval_s, ": must be in [0, 86400] (0 = off)"));
  }
  if (config.metrics_port < -1 || config.metrics_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-port = ", config.metrics_port,
                                                   ": must be in [0, 65535] (0 = a free port)"));
  }
  auto running = std::make_unique<RunningServer>();
  running->store =
      std::make_unique<ProfileStore>(config.profiles_dir, config.ema_alpha, config.env);
  running->service = std::make_unique<PlannerService>(running->store.get(), std::move(service));
  running->service->set_state(ServingState::kLoading);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (!config.tls_cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({config.tls_key_pem, config.tls_cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  builder.AddListeningPort(config.listen, creds, &running->port);
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  builder.SetMaxSendMessageSize(config.max_message_bytes);
  if (config.threads > 0) {
    grpc::ResourceQuota quota("specplan-server");
    quota.SetMaxThreads(config.threads);
    builder.SetResourceQuota(quota);
  }
  builder.RegisterService(running->service.get());
  running->server = builder.BuildAndStart();
  if (running->server == nullptr || running->port == 0) {
    running->server.reset();
    return absl::UnavailableError(
        absl::StrCat("--listen ", config.listen, ": could not bind (address in use or invalid)"));
  }
  auto* health = running->server->GetHealthCheckService();
  if (health != nullptr) {
    health->SetServingStatus("", false);
    health->SetServingStatus("specplan.v1.Planner", false);
  }
  if (config.metrics_port >= 0) {
    const std::string host = config.listen.substr(0, config.listen.rfind(':'));
    PlannerService* svc = running->service.get();
    auto metrics =
        MetricsHttpServer::Start(host, config.metrics_port, [svc] { return svc->MetricsText(); });
    if (!metrics.ok()) return metrics.status();
    running->metrics = *std::move(metrics);
    running->metrics_port = running->metrics->port();
  }
  if (config.on_loading) config.on_loading(running->port);
  running->load_errors = running->store->LoadAll();
  running->service->set_state(ServingState::kServing);
  if (health != nullptr) {
    health->SetServingStatus("", true);
    health->SetServingStatus("specplan.v1.Planner", true);
  }
  if (config.reload_interval_s > 0) {
    RunningServer* r = running.get();
    const auto interval = std::chrono::microseconds(
        static_cast<int64_t>(std::max(config.reload_interval_s, 1e-3) * 1e6));
    running->poller = std::thread([r, interval] {
      std::unique_lock lock(r->poller_mu);
      while (!r->poller_cv.wait_for(lock, interval, [r] { return r->poller_stop; })) {
        lock.unlock();
        r->ReloadProfiles();
        lock.lock();
      }
    });
  }
  return running;
}

}  // namespace specplan::service
