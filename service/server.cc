#include "service/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "util/status_macros.h"

namespace specplan::service {

void RunningServer::Shutdown(double grace_s) {
  if (server == nullptr) return;
  if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(false);
  // grpc::Server::Shutdown(deadline) also waits for idle client connections to close, which a
  // client that is not polling never does; so wait for the calls in flight ourselves (bounded by
  // the grace period), then shut down with a short deadline for calls that raced in.
  const auto start = std::chrono::steady_clock::now();
  const auto grace = std::chrono::microseconds(static_cast<int64_t>(grace_s * 1e6));
  while (service->in_flight() > 0 && std::chrono::steady_clock::now() - start < grace) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto left = grace - std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - start);
  const auto tail = std::min<std::chrono::microseconds>(
      std::chrono::milliseconds(100), std::max<std::chrono::microseconds>(left, {}));
  server->Shutdown(std::chrono::system_clock::now() + tail);
  server->Wait();
  server.reset();
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
  SPECPLAN_RETURN_IF_ERROR(
      EngineFromProto(config.service.default_engine, "--engine", &service.default_engine));
  auto running = std::make_unique<RunningServer>();
  running->store =
      std::make_unique<ProfileStore>(config.profiles_dir, config.ema_alpha, config.env);
  running->load_errors = running->store->LoadAll();
  running->service = std::make_unique<PlannerService>(running->store.get(), std::move(service));

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
  if (auto* health = running->server->GetHealthCheckService()) {
    health->SetServingStatus("specplan.v1.Planner", true);
  }
  return running;
}

}  // namespace specplan::service
