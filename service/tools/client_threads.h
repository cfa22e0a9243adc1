// What the load generators' client threads share (loadgen.cc's throughput and soak runs,
// fleet_load.cc's fleet run): one channel per client, the per-call deadline, the measured phase
// that starts once every client has warmed up, and the run of one thread per client. Header-only,
// like pacer.h.
#ifndef SPECPLAN_SERVICE_TOOLS_CLIENT_THREADS_H_
#define SPECPLAN_SERVICE_TOOLS_CLIENT_THREADS_H_

#include <grpcpp/grpcpp.h>
#include <sys/prctl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "service/tools/pacer.h"
#include "specplan/v1/planner.grpc.pb.h"

namespace specplan::service {

// A stub on a channel of its own to `target`: `args` (a service config, say) plus a private
// subchannel pool, so that every client gets its own connection, replies up to 64 MiB, then the
// integer arguments `extra`.
inline std::unique_ptr<v1::Planner::Stub> NewClientStub(
    const std::string& target, grpc::ChannelArguments args = {},
    const std::vector<std::pair<std::string, int>>& extra = {}) {
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  for (const auto& [name, value] : extra) args.SetInt(name, value);
  return v1::Planner::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
}

// What every load client holds: its run's config, its index among the run's clients (which
// staggers its pacing) and a stub on a channel of its own.
template <class Config>
class ClientBase {
 protected:
  ClientBase(const Config& config, int index, std::unique_ptr<v1::Planner::Stub> stub)
      : config_(config), index_(index), stub_(std::move(stub)) {}

  const Config& config_;
  const int index_;
  std::unique_ptr<v1::Planner::Stub> stub_;
};

// A call's deadline, `seconds` from now.
inline void SetDeadline(grpc::ClientContext* ctx, double seconds) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
}

// "UNAVAILABLE", "INVALID_ARGUMENT", ... (absl's spelling of the same code).
inline std::string GrpcCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// Shared state of one run: the measured phase starts when every client has warmed up.
struct Phase {
  using Clock = std::chrono::steady_clock;

  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  Clock::time_point start{};
  Clock::time_point stop{};
  std::atomic<int64_t> issued{0};  // calls started, for runs bounded by a number of calls

  // Called by client `index` of `config` once warmed up: waits until the phase starts, then
  // paces that client's calls (config.qps over config.clients clients, pacer.h).
  template <class Config>
  Pacer ArriveAndWait(const Config& config, int index) {
    std::unique_lock lock(mu);
    ++ready;
    cv.notify_all();
    cv.wait(lock, [&] { return go; });
    return Pacer(config.qps, config.clients, index, start, stop);
  }
};

// What a throughput or soak client reports besides its measurements: why its warm-up failed
// (OK when it did not; the run fails with the first such status) and when its last measured call
// ended (the run lasts until the latest).
struct ClientOutcome {
  absl::Status warmup_status;
  Phase::Clock::time_point last_end{};
};

// What to reserve for one client's calls: the number a paced client of `config` makes (plus 16),
// `unpaced` when it runs flat out.
template <class Config>
int64_t CallsToReserve(const Config& config, int64_t unpaced) {
  return config.qps > 0 ? static_cast<int64_t>(config.seconds * config.qps / config.clients) + 16
                        : unpaced;
}

// Runs `config.clients` clients, Client(config, i), each on its own thread as
// client.Run(phase, &results[i]), and returns the results once every thread has finished. When all
// have warmed up (Phase::ArriveAndWait), `before_start` runs while they wait and the phase starts:
// it lasts config.seconds, or ends at once when before_start returns false. `while_running` runs
// on this thread during the phase. *phase keeps start and stop.
template <class Client, class Result, class Config>
std::vector<Result> RunClientThreads(const Config& config, Phase* phase,
                                     const std::function<bool()>& before_start = nullptr,
                                     const std::function<void()>& while_running = nullptr) {
  // Sleeps end within ~1 us instead of the default 50 us slack (paced mode).
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < config.clients; ++i) clients.push_back(std::make_unique<Client>(config, i));
  std::vector<Result> results(config.clients);
  std::vector<std::thread> threads;
  for (int i = 0; i < config.clients; ++i) {
    threads.emplace_back([&, i] { clients[i]->Run(phase, &results[i]); });
  }
  {
    std::unique_lock lock(phase->mu);
    phase->cv.wait(lock, [&] { return phase->ready == config.clients; });
    const bool run = before_start ? before_start() : true;
    phase->start = Phase::Clock::now();
    phase->stop = run ? phase->start + std::chrono::duration_cast<Phase::Clock::duration>(
                                           std::chrono::duration<double>(config.seconds))
                      : phase->start;
    phase->go = true;
    phase->cv.notify_all();
  }
  if (while_running) while_running();
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_TOOLS_CLIENT_THREADS_H_
