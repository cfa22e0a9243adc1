// Builds and starts a gRPC server hosting PlannerService, standard health checking
// (grpc.health.v1.Health for "" and "specplan.v1.Planner"), server reflection, optionally a
// Prometheus endpoint (metrics.h) and a profile reload poller. Used by specplan-server and by the
// tests, which start real servers on loopback.
//
// What a load balancer sees (health service, both names):
//   start-up   the port listens first with health NOT_SERVING and every RPC but Ping / GetStats
//              refused UNAVAILABLE while the profiles are read; then SERVING
//   reload     SERVING throughout: a reload swaps profiles one by one (profile_store.h)
//   drain      Shutdown(): NOT_SERVING, new calls refused UNAVAILABLE (clients retry them on
//              another replica), calls in flight finish, then the server stops
#ifndef SPECPLAN_SERVICE_SERVER_H_
#define SPECPLAN_SERVICE_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "service/metrics.h"
#include "service/planner_service.h"
#include "service/profile_store.h"

namespace specplan::service {

struct ServerConfig {
  std::string listen = "127.0.0.1:50051";  // HOST:PORT; port 0 picks a free port
  int threads = 0;                         // max gRPC worker threads; 0 = gRPC's default (grows)
  int max_message_bytes = 4 << 20;         // receive and send limit per message
  std::string tls_cert_pem;                // both set: TLS; both empty: plaintext
  std::string tls_key_pem;
  std::string profiles_dir;   // ProfileStore directory
  double ema_alpha = 0.1;     // EMA weight of one latency observation, (0, 1]
  Env* env = Env::Default();  // PutProfile saves through it; crash tests inject a faulty one
  ServiceOptions service;
  double reload_interval_s = 0;  // poll profiles_dir for changed files every this many seconds;
                                 // 0 = no polling (ReloadProfiles / SIGHUP only)
  int metrics_port = -1;         // Prometheus endpoint on the --listen host; 0 = a free port,
                                 // -1 = none
  // Test seam: called once the port listens (health NOT_SERVING) and before the profiles are
  // read, with the bound port. Never set by the serving binaries.
  std::function<void(int port)> on_loading;
};

struct RunningServer;

// A running server and everything it owns. Destroying it shuts the server down.
struct RunningServer {
  std::unique_ptr<ProfileStore> store;
  std::unique_ptr<PlannerService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;                                // the bound port (the chosen one when listen had :0)
  std::vector<std::string> load_errors;        // profile files that were skipped
  std::unique_ptr<MetricsHttpServer> metrics;  // null without a metrics port
  int metrics_port = 0;                        // its bound port (0 when none)

  // Re-reads changed profile files (ProfileStore::Reload) and logs, on stderr, one line per
  // profile loaded or removed and per file refused ("specplan-server: profile reload: refused
  // <path>: <why>; the old version keeps serving"). SIGHUP and the poller call it.
  ProfileStore::ReloadResult ReloadProfiles();

  // Marks health NOT_SERVING, waits up to `grace_s` seconds for the calls in flight (open
  // PlanSession streams included) to finish, then stops the server; calls still running then are
  // cancelled. Idempotent.
  void Shutdown(double grace_s = 5.0);
  ~RunningServer();

  // The reload poller (reload_interval_s > 0).
  std::thread poller;
  std::mutex poller_mu;
  std::condition_variable poller_cv;
  bool poller_stop = false;  // guarded by poller_mu
};

// Process-wide settings for a serving binary (specplan-server, specplan-loadgen), called once at
// the top of main(): turns off absl::Mutex deadlock detection, which Debian's Abseil (built
// without NDEBUG) leaves on. gRPC takes several absl::Mutex locks per call and the detector's
// lock-graph bookkeeping cost ~5% of a loopback call's CPU. Tests keep the detector.
void ConfigureServingProcess();

// Loads the profiles, builds and starts the server. Errors name the flag (e.g. "--listen").
absl::StatusOr<std::unique_ptr<RunningServer>> StartServer(const ServerConfig& config);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_SERVER_H_
