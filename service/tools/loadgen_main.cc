// specplan-loadgen: load generator of specplan-server (loopback only).
//
//   specplan-loadgen [--server HOST:PORT | --start-server [--profiles-dir DIR] [--server-threads
//   N]]
//                    [--rpc ping,plan] [--clients N] [--requests N] [--seconds S] [--qps Q]
//                    [--at-fraction F] [--repeat R] [--warmup N] [--deadline-ms D]
//                    [--marginals FILE] [--n-max N] [--context C] [--gpu G --model M | --profile P]
//                    [--outputs default|engine] [--allow-remote] [--json]
//   specplan-loadgen --soak [--mix-invalid F] [--server-pid PID] [--seed S] (plus the flags above)
//
// Each phase (one --rpc, repeated --repeat times) runs --clients concurrent channels until
// --requests calls or --seconds have passed, whichever is first; --qps 0 = as fast as possible.
// --at-fraction F adds, after each flat-out phase, a paced phase of the same RPC at F times the
// rate just measured (e.g. 0.5: p99 at half the max rate). PlanTree sends γ×K marginals from
// --marginals (default examples/marginals.json, γ = 16, K = 8), controller mode, N_max = --n-max,
// the inline roofline of --gpu/--model at --context tokens (or the server profile --profile).
// Prints a table (or --json) with QPS, p50/p90/p99/max latency (µs, client side), errors, the
// server's median handler time (PlanTree plan_us) and this process's CPU per call.
//
// --soak (implied by --mix-invalid) instead runs one long phase (--seconds, default 600; CI uses
// 60) of mixed requests: valid PlanTree / MergeTrees / EstimateLatency / Ping calls and, with
// probability --mix-invalid (default 0.2), invalid ones (NaN probs, unsorted rows, unknown
// profile, limits exceeded, non-topological parents, mismatched roots), from --clients (default 4)
// clients at --qps (default: half the flat-out rate of a 2 s warm-up soak). It checks each
// status (OK for valid requests, INVALID_ARGUMENT / NOT_FOUND / RESOURCE_EXHAUSTED for invalid
// ones) and reports requests, unexpected statuses by method and code, p50/p99 of valid requests
// and the server's VmRSS at start and end (this process with --start-server, else --server-pid;
// not reported without either). --requests (default 50M in soak mode) bounds the calls.
//
// Fleet mode (several replicas):
//   specplan-loadgen --targets A:P,B:Q,C:R | dns:///NAME:PORT [--seconds 60] [--clients 4]
//                    [--qps Q | --at-fraction 0.5 [--probe-seconds 5]] [--event AT_S=COMMAND]...
//                    [--expect-profiles DIR,DIR2] [--scaling-baseline HOST:PORT] [--profile G/M]
// sends PlanTree (4 shapes) and PlanBatch (B = 4) calls over one round-robin channel per client
// (retries of UNAVAILABLE on another replica, service/channel.h), runs each --event command at its
// time, and prints per segment (between events) calls, failures, mismatches, p50/p99 and calls
// per replica; every answer is compared with in-process planning over --expect-profiles.
//
// Exit status: 0; 1 on a bad flag / unreachable server / non-loopback target; 2 when a soak saw
// an unexpected status; 3 when a fleet run saw a failed call or a mismatched answer.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "costmodel/profile/calib_dir.h"
#include "planner/marginals/marginals.h"
#include "service/server.h"
#include "service/tools/fleet_load.h"
#include "service/tools/loadgen.h"

int main(int argc, char** argv) {
  namespace svc = specplan::service;
  specplan::service::ConfigureServingProcess();
  std::string server = "127.0.0.1:50051";
  bool allow_remote = false, start_server = false, json = false;
  std::string profiles_dir = specplan::costmodel::DefaultCalibDir();
  int server_threads = 0;
  std::vector<std::string> rpcs = {"plan"};
  svc::LoadConfig base;
  double at_fraction = 0, deadline_ms = 5000;
  int repeat = 1;
  std::string marginals_path = SPECPLAN_SOURCE_DIR "/examples/marginals.json";
  int n_max = 256;
  int64_t context = 1024;
  std::string gpu = "h100", model = "qwen3-8b", profile, outputs = "default";

  CLI::App app{"specplan-loadgen: QPS and latency percentiles of specplan-server (loopback)"};
  app.add_option("--server", server, "HOST:PORT of a running specplan-server")
      ->capture_default_str();
  app.add_flag("--allow-remote", allow_remote, "Allow a non-loopback --server");
  app.add_flag("--start-server", start_server,
               "Start the server in this process on a free loopback port (ignores --server)");
  app.add_option("--profiles-dir", profiles_dir, "Profiles of the --start-server server")
      ->capture_default_str();
  app.add_option("--server-threads", server_threads,
                 "Max gRPC threads of the --start-server server (0 = gRPC default)")
      ->capture_default_str();
  app.add_option("--rpc", rpcs, "RPCs to measure in turn: ping, plan (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"ping", "plan"}))
      ->capture_default_str();
  app.add_option("--clients", base.clients, "Concurrent clients (one channel each)")
      ->capture_default_str();
  app.add_option("--requests", base.requests, "Measured calls per phase (upper bound)")
      ->capture_default_str();
  app.add_option("--seconds", base.seconds, "Seconds per phase (upper bound)")
      ->capture_default_str();
  app.add_option("--qps", base.qps, "Target calls/s over all clients (0 = as fast as possible)")
      ->capture_default_str();
  app.add_option("--at-fraction", at_fraction,
                 "After each flat-out phase, a paced phase at this fraction of its QPS (0 = none)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "Run the whole sequence this many times")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--warmup", base.warmup_per_client, "Unmeasured calls per client per phase")
      ->capture_default_str();
  app.add_option("--deadline-ms", deadline_ms, "Per-call deadline")->capture_default_str();
  app.add_option("--marginals", marginals_path, "Marginals JSON of the PlanTree requests")
      ->capture_default_str();
  app.add_option("--n-max", n_max, "PlanTree N_max")->capture_default_str();
  app.add_option("--context", context, "PlanTree context tokens c")->capture_default_str();
  app.add_option("--gpu", gpu, "Inline roofline GPU")->capture_default_str();
  app.add_option("--model", model, "Inline roofline target model")->capture_default_str();
  app.add_option("--profile", profile, "GPU/MODEL of a server profile instead of the roofline");
  app.add_option("--outputs", outputs,
                 "PlanTree outputs: default (with the S(n) curve) or engine (positions, retrieve, "
                 "packed mask)")
      ->check(CLI::IsMember({"default", "engine"}))
      ->capture_default_str();
  app.add_flag("--json", json, "Print JSON instead of the table");
  bool soak = false;
  double mix_invalid = 0.2;
  int server_pid = 0;
  uint64_t seed = 1;
  app.add_flag("--soak", soak, "Soak mode: mixed valid and invalid requests, statuses checked");
  auto* mix_opt = app.add_option("--mix-invalid", mix_invalid,
                                 "Soak: fraction of invalid requests (implies --soak)")
                      ->check(CLI::Range(0.0, 1.0))
                      ->capture_default_str();
  app.add_option("--server-pid", server_pid,
                 "Soak: pid of the --server process whose VmRSS to report (0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "Soak: seed of the request choice")->capture_default_str();
  std::string targets, scaling_baseline;
  std::vector<std::string> expect_profiles, event_specs;
  double probe_seconds = 5;
  app.add_option("--targets", targets,
                 "Fleet mode: several replicas, A:P,B:Q,... (IP addresses) or dns:///NAME:PORT; "
                 "each client balances round robin over all of them with retries (service/"
                 "channel.h); PlanTree and PlanBatch calls, every answer checked against "
                 "in-process planning; per-replica counts, p99 per segment between --event's");
  app.add_option("--event", event_specs,
                 "Fleet mode: AT_S=COMMAND runs `sh -c COMMAND` AT_S seconds into the measured "
                 "phase (kill or restart a replica, replace a profile); repeatable; segments of "
                 "the report start at each event");
  app.add_option("--expect-profiles", expect_profiles,
                 "Fleet mode: profile directories whose in-process answers are accepted, one "
                 "version each, in order (default: --profiles-dir); comma-separated")
      ->delimiter(',');
  app.add_option("--probe-seconds", probe_seconds,
                 "Fleet mode with --at-fraction: seconds of the flat-out probe that measures "
                 "the maximum rate")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  app.add_option("--scaling-baseline", scaling_baseline,
                 "Fleet mode: first measure flat out against this one replica (HOST:PORT) for "
                 "--probe-seconds, then against --targets, and print the throughput ratio");
  CLI11_PARSE(app, argc, argv);
  soak = soak || mix_opt->count() > 0;
  if (!targets.empty()) {
    auto rc =
        svc::FleetMain(targets, allow_remote, profiles_dir, expect_profiles, event_specs, base,
                       at_fraction, probe_seconds, scaling_baseline, json, marginals_path, n_max,
                       context, gpu, model, profile, outputs == "engine");
    return rc;
  }
  base.deadline_s = deadline_ms * 1e-3;

  auto marginals = specplan::planner::LoadMarginalsFile(marginals_path);
  if (!marginals.ok()) {
    std::cerr << "specplan-loadgen: --marginals " << marginals.status().message() << "\n";
    return 1;
  }
  base.plan_request =
      svc::MakePlanRequest(*marginals, n_max, context, gpu, model, profile, outputs == "engine");

  std::unique_ptr<svc::RunningServer> running;
  if (start_server) {
    svc::ServerConfig sc;
    sc.listen = "127.0.0.1:0";
    sc.profiles_dir = profiles_dir;
    sc.threads = server_threads;
    sc.service.log_requests = false;
    auto started = svc::StartServer(sc);
    if (!started.ok()) {
      std::cerr << "specplan-loadgen: --start-server: " << started.status().message() << "\n";
      return 1;
    }
    running = *std::move(started);
    server = "127.0.0.1:" + std::to_string(running->port);
  } else if (!allow_remote) {
    if (absl::Status st = svc::CheckLoopbackTarget(server); !st.ok()) {
      std::cerr << "specplan-loadgen: " << st.message() << "\n";
      return 1;
    }
  }
  base.target = server;
  if (absl::Status st = svc::ValidateLoadConfig(base); !st.ok()) {
    std::cerr << "specplan-loadgen: " << st.message() << "\n";
    return 1;
  }

  if (soak) {
    svc::SoakConfig sc;
    sc.target = server;
    sc.clients = app.count("--clients") > 0 ? base.clients : 4;
    sc.requests = app.count("--requests") > 0 ? base.requests : 50000000;
    sc.seconds = app.count("--seconds") > 0 ? base.seconds : 600;
    sc.qps = base.qps;
    sc.mix_invalid = mix_invalid;
    sc.deadline_s = base.deadline_s;
    sc.seed = seed;
    sc.rss_pid = start_server ? 0 : (server_pid > 0 ? server_pid : -1);
    sc.cases = svc::MakeSoakCases(base.plan_request);
    if (absl::Status st = svc::ValidateSoakConfig(sc); !st.ok()) {
      std::cerr << "specplan-loadgen: " << st.message() << "\n";
      return 1;
    }
    double warmup_qps = 0;
    if (sc.qps == 0) {  // half the flat-out rate of a short warm-up with the same mix
      svc::SoakConfig warm = sc;
      warm.seconds = 2;
      warm.rss_pid = -1;
      auto rep = svc::RunSoak(warm);
      if (!rep.ok()) {
        std::cerr << "specplan-loadgen: warm-up: " << rep.status().message() << "\n";
        return 1;
      }
      warmup_qps = rep->qps;
      sc.qps = std::max(1.0, 0.5 * rep->qps);
    }
    auto rep = svc::RunSoak(sc);
    if (!rep.ok()) {
      std::cerr << "specplan-loadgen: " << rep.status().message() << "\n";
      return 1;
    }
    if (json) {
      nlohmann::json j = svc::SoakReportToJson(*rep);
      j["server"] = server;
      j["started_server"] = start_server;
      j["warmup_qps"] = warmup_qps;
      std::cout << j.dump(2) << std::endl;
    } else {
      std::cout << "server " << server << (start_server ? " (in-process)" : "") << "\n";
      if (warmup_qps > 0) {
        std::cout << absl::StrFormat("warm-up (2 s, flat out): %.0f/s -> target %.0f/s\n",
                                     warmup_qps, sc.qps);
      }
      std::cout << svc::FormatSoakReport(*rep);
    }
    if (running) running->Shutdown(1.0);
    if (rep->unexpected > 0) {
      std::cerr << "specplan-loadgen: " << rep->unexpected
                << " unexpected statuses; first: " << rep->first_unexpected << "\n";
      return 2;
    }
    return 0;
  }

  std::vector<svc::LoadReport> reports;
  std::vector<double> ratios;  // PlanTree / Ping flat-out QPS, per repeat
  for (int r = 0; r < repeat; ++r) {
    double ping_qps = 0, plan_qps = 0;
    for (const std::string& name : rpcs) {
      svc::LoadConfig config = base;
      config.rpc = name == "ping" ? svc::LoadRpc::kPing : svc::LoadRpc::kPlanTree;
      auto rep = svc::RunLoad(config);
      if (!rep.ok()) {
        std::cerr << "specplan-loadgen: " << rep.status().message() << "\n";
        return 1;
      }
      reports.push_back(*rep);
      if (config.qps == 0) (name == "ping" ? ping_qps : plan_qps) = rep->qps;
      if (at_fraction > 0 && config.qps == 0 && rep->qps > 0) {
        config.qps = at_fraction * rep->qps;
        auto paced = svc::RunLoad(config);
        if (!paced.ok()) {
          std::cerr << "specplan-loadgen: " << paced.status().message() << "\n";
          return 1;
        }
        reports.push_back(*paced);
      }
    }
    if (ping_qps > 0 && plan_qps > 0) ratios.push_back(plan_qps / ping_qps);
  }

  if (json) {
    nlohmann::json j;
    j["server"] = server;
    j["started_server"] = start_server;
    for (const auto& rep : reports) j["runs"].push_back(svc::LoadReportToJson(rep));
    j["plan_over_ping_qps"] = ratios;
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << "server " << server << (start_server ? " (in-process)" : "") << "\n"
              << svc::FormatLoadTable(reports);
    for (size_t i = 0; i < ratios.size(); ++i) {
      std::cout << absl::StrFormat("PlanTree / Ping throughput, repeat %d: %.2f\n", i + 1,
                                   ratios[i]);
    }
  }
  int64_t errors = 0;
  for (const auto& rep : reports) errors += rep.errors;
  if (errors > 0) {
    for (const auto& rep : reports) {
      if (!rep.first_error.empty()) std::cerr << rep.rpc << ": " << rep.first_error << "\n";
    }
  }
  if (running) running->Shutdown(1.0);
  return 0;
}
