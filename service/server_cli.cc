#include "service/server_cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "costmodel/profile/calib_dir.h"
#include "planner/batch/batch_plan.h"
#include "service/server.h"
#include "util/file.h"

namespace specplan::service {

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return false;
  *out = *std::move(text);
  return true;
}

// A flag whose value must lie in [lo, hi], its default shown in --help.
template <class T, class Bound>
CLI::Option* AddBounded(CLI::App& app, const std::string& flag, T& value, const std::string& help,
                        Bound lo, Bound hi) {
  return app.add_option(flag, value, help)->check(CLI::Range(lo, hi))->capture_default_str();
}

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

int ServerMain(int argc, char** argv, Env* env) {
  ConfigureServingProcess();
  ServerConfig config;
  config.profiles_dir = costmodel::DefaultCalibDir();
  std::string auth_token_file, tls_cert, tls_key;
  bool quiet = false;
  double grace_s = 5.0;

  CLI::App app{"specplan-server: hardware-aware draft-tree planning over gRPC (specplan.v1)"};
  app.set_config("--config", "", "Read flags from a TOML/INI file (key = value)");
  app.add_option("--listen", config.listen, "HOST:PORT to listen on (port 0 = any free port)")
      ->capture_default_str();
  app.add_option("--profiles-dir,--calib-dir", config.profiles_dir,
                 "Directory of calibrated profiles (<gpu>/<model>-<dtype>[@<engine>].json); "
                 "several replicas may share it (changed files are reloaded: "
                 "--reload-interval-s, SIGHUP)")
      ->capture_default_str();
  config.reload_interval_s = 10;
  AddBounded(app, "--reload-interval-s", config.reload_interval_s,
             "Seconds between checks of the profiles directory for new, changed or removed "
             "files (0 = only on SIGHUP); a file that fails to load is refused and logged, "
             "the old version keeps serving",
             0.0, 86400.0);
  AddBounded(app, "--metrics-port", config.metrics_port,
             "Serve Prometheus metrics (text format 0.0.4) at http://HOST:PORT/metrics, HOST "
             "being --listen's host (0 = a free port, printed on start; -1 = off)",
             -1, 65535);
  std::string replica_id;
  app.add_option("--replica-id", replica_id,
                 "Name of this replica, sent back in each call's x-replica trailer (default: "
                 "<hostname>:<port>)");
  app.add_option("--engine", config.service.default_engine,
                 "Engine whose costs a request that names none gets when held for its gpu x "
                 "model x dtype: sglang, vllm, trtllm or specplan (unset: the first of them held)");
  AddBounded(app, "--threads", config.threads,
             "Max gRPC worker threads (0 = gRPC default, grows with load)", 0, 4096);
  AddBounded(app, "--max-message-bytes", config.max_message_bytes,
             "Max size of one request or response message", 1024, 1 << 30);
  AddBounded(app, "--max-gamma", config.service.limits.max_gamma,
             "Max marginals rows (gamma) per request", 1, 64);
  AddBounded(app, "--max-k", config.service.limits.max_k, "Max candidates per row (K)", 1, 64);
  AddBounded(app, "--max-n", config.service.limits.max_n,
             "Max draft nodes of any tree taken or returned (N_max)", 0, 8191);
  AddBounded(app, "--max-whatif-steps", config.service.limits.max_whatif_steps,
             "Max trace steps one WhatIf request may replay", int64_t{1}, int64_t{1} << 24);
  AddBounded(app, "--max-whatif-budgets", config.service.limits.max_whatif_budgets,
             "Max budgets one WhatIf request may sweep", 1, 1024);
  AddBounded(app, "--max-online-tokens", config.service.limits.max_online_tokens,
             "Max output tokens one WhatIfOnline request may replay (requests x settings x loads)",
             int64_t{1}, int64_t{1} << 34);
  AddBounded(app, "--max-batch-requests", config.service.limits.max_batch_requests,
             "Max requests (B) one PlanBatch call may plan together", 1,
             planner::kMaxBatchRequests);
  AddBounded(app, "--max-sessions", config.service.limits.max_sessions,
             "Max PlanSession streams open at once (each holds a server thread); one more is "
             "refused with RESOURCE_EXHAUSTED",
             1, kMaxSessions);
  AddBounded(app, "--max-batch-nodes", config.service.limits.max_batch_nodes,
             "Max total draft nodes (n_max over the batch) of one PlanBatch call", 0,
             planner::kMaxBatchNodes);
  app.add_option("--auth-token-file", auth_token_file,
                 "File holding the bearer token PutProfile requires (without it writes are "
                 "disabled)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", tls_cert, "PEM certificate chain (enables TLS with --tls-key)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", tls_key, "PEM private key")->check(CLI::ExistingFile);
  AddBounded(app, "--ema-alpha", config.ema_alpha,
             "EMA weight of one measured verify latency (ReportAcceptance)", 1e-6, 1.0);
  AddBounded(app, "--grace-s", grace_s, "Seconds calls in flight get on shutdown", 0.0, 600.0);
  app.add_flag("--quiet", quiet, "No per-request log lines");
  CLI11_PARSE(app, argc, argv);

  config.service.log_requests = !quiet;
  config.env = env;
  if (!auth_token_file.empty()) {
    std::string token;
    if (!ReadFile(auth_token_file, &token) || (token = Trim(token)).empty()) {
      std::cerr << "specplan-server: --auth-token-file " << auth_token_file
                << ": unreadable or empty\n";
      return 1;
    }
    config.service.auth_token = token;
  }
  if (!tls_cert.empty() && !ReadFile(tls_cert, &config.tls_cert_pem)) {
    std::cerr << "specplan-server: --tls-cert " << tls_cert << ": unreadable\n";
    return 1;
  }
  if (!tls_key.empty() && !ReadFile(tls_key, &config.tls_key_pem)) {
    std::cerr << "specplan-server: --tls-key " << tls_key << ": unreadable\n";
    return 1;
  }

  // Block the shutdown signals in every thread (gRPC's threads inherit the mask); the main
  // thread waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (replica_id.empty()) {  // <hostname>:<port>, or <hostname>:pid<PID> when --listen ends in :0
    char hostname[256] = {0};
    gethostname(hostname, sizeof(hostname) - 1);
    const std::string port = config.listen.substr(config.listen.rfind(':') + 1);
    replica_id =
        std::string(hostname) + ":" + (port == "0" ? "pid" + std::to_string(getpid()) : port);
  }
  config.service.replica_id = replica_id;

  auto running = StartServer(config);
  if (!running.ok()) {
    std::cerr << "specplan-server: " << running.status().message() << "\n";
    return 1;
  }
  for (const std::string& e : (*running)->load_errors) {
    std::cerr << "specplan-server: skipped profile " << e << "\n";
  }
  std::string host = config.listen.substr(0, config.listen.rfind(':'));
  std::cout << "specplan-server listening on " << host << ":" << (*running)->port << " ("
            << (*running)->store->List().size() << " profiles from " << config.profiles_dir
            << ", replica " << replica_id;
  if ((*running)->metrics != nullptr) {
    std::cout << ", metrics on http://" << host << ":" << (*running)->metrics_port << "/metrics";
  }
  if (config.reload_interval_s > 0) {
    std::cout << ", reload every " << config.reload_interval_s << " s";
  } else {
    std::cout << ", reload on SIGHUP only";
  }
  std::cout << (config.tls_cert_pem.empty() ? "" : ", TLS")
            << (config.service.auth_token.empty() ? ", writes disabled" : ", writes need token")
            << ")" << std::endl;

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    std::cerr << "specplan-server: SIGHUP, reloading profiles from " << config.profiles_dir << "\n";
    const ProfileStore::ReloadResult r = (*running)->ReloadProfiles();
    std::cerr << "specplan-server: reload done (" << r.loaded.size() << " loaded, "
              << r.removed.size() << " removed, " << r.errors.size() << " refused)\n";
  }
  std::cerr << "specplan-server: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ", shutting down (grace " << grace_s << " s)\n";
  (*running)->Shutdown(grace_s);
  std::cerr << "specplan-server: stopped\n";
  return 0;
}

}  // namespace specplan::service
