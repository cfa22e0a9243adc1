// Builds and starts a gRPC server hosting PlannerService, standard health checking
// (grpc.health.v1.Health, "" and "specplan.v1.Planner" reported SERVING) and server reflection.
// Used by specplan-server and by the tests, which start real servers on loopback.
#ifndef SPECPLAN_SERVICE_SERVER_H_
#define SPECPLAN_SERVICE_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
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
};

// A running server and everything it owns. Destroying it shuts the server down.
struct RunningServer {
  std::unique_ptr<ProfileStore> store;
  std::unique_ptr<PlannerService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;                          // the bound port (the chosen one when listen had :0)
  std::vector<std::string> load_errors;  // profile files that were skipped

  // Marks health NOT_SERVING, waits up to `grace_s` seconds for the calls in flight (open
  // PlanSession streams included) to finish, then stops the server; calls still running then are
  // cancelled. Idempotent.
  void Shutdown(double grace_s = 5.0);
  ~RunningServer();
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
