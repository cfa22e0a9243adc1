// Paced sending for the load generators (loadgen.cc, fleet_load.cc): client `index` of `clients`
// sends every clients / qps seconds, staggered against the others, from `start` until `stop`
// (qps <= 0: as fast as it can). Header-only: both tools include it.
#ifndef SPECPLAN_SERVICE_TOOLS_PACER_H_
#define SPECPLAN_SERVICE_TOOLS_PACER_H_

#include <chrono>
#include <thread>

namespace specplan::service {

// When each call of one client starts: as fast as possible (qps <= 0), or paced so that `clients`
// clients together make `qps` calls per second, staggered by client index. A paced call that
// starts late is timed from its scheduled start (the wait behind the previous reply counts).
class Pacer {
 public:
  using Clock = std::chrono::steady_clock;

  Pacer(double qps, int clients, int index, Clock::time_point start, Clock::time_point stop)
      : paced_(qps > 0),
        interval_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(paced_ ? clients / qps : 0))),
        next_(start + interval_ * index / clients),
        stop_(stop) {}

  // Waits for the next call's slot and sets *t0 to the time its latency counts from; false once
  // the phase is over.
  bool Next(Clock::time_point* t0) {
    const Clock::time_point now = Clock::now();
    if (now >= stop_) return false;
    *t0 = now;
    if (!paced_) return true;
    if (next_ >= stop_) return false;
    if (now < next_) {
      std::this_thread::sleep_until(next_);
      *t0 = Clock::now();
    } else {
      *t0 = next_;
    }
    next_ += interval_;
    return true;
  }

 private:
  bool paced_;
  Clock::duration interval_;
  Clock::time_point next_;
  Clock::time_point stop_;
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_TOOLS_PACER_H_
