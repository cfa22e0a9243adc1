// The online replay (whatif/online.h): requests arrive, an engine with scheduler limits batches
// their prefill chunks and decode steps, each step priced through OnlineStepPricer.
#include "whatif/online.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/hardware/memory_fit.h"
#include "util/check.h"
#include "util/percentile.h"
#include "util/status_macros.h"

namespace specplan::whatif {

namespace {

using costmodel::BatchShape;

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// splitmix64: the acceptance draws of a rates request, a pure function of its arguments.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
double Uniform01(uint64_t seed, uint64_t request, uint64_t position, uint64_t draft) {
  const uint64_t h = Mix(Mix(Mix(Mix(seed) ^ request) ^ position) ^ draft);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

enum class State { kPending, kWaiting, kRunning, kDone };

// One request's progress in a replay.
struct Live {
  State state = State::kPending;
  int64_t target = 0;     // tokens to prefill: the prompt, or after a preemption prompt + generated
  int64_t prefilled = 0;  // tokens of `target` in the cache
  int64_t generated = 0;  // output tokens emitted
  double arrival = 0, first = kNaN, last_emit = kNaN, finish = kNaN;
  bool decoding() const { return prefilled >= target; }
};

// What one step schedules for a request.
struct Scheduled {
  int index;       // request
  int64_t tokens;  // prefill chunk or verified tokens
  bool prefill;
};

class Replay {
 public:
  Replay(const std::vector<OnlineRequest>& requests, const OnlineWorkload& workload,
         const OnlineStepPricer& pricer, const EngineLimits& limits, int k)
      : reqs_(requests), work_(workload), pricer_(pricer), lim_(limits), k_(k) {}

  // Runs with the requests' arrival times (in_flight = 0) or a closed loop; fills `row`.
  void Run(const std::vector<double>& arrivals, int in_flight, const OnlineSlo& slo,
           OnlineRow* row) {
    const int n = static_cast<int>(reqs_.size());
    live_.assign(static_cast<size_t>(n), Live{});
    in_flight_ = in_flight;
    next_closed_ = 0;
    if (in_flight > 0) {
      for (int i = 0; i < std::min(in_flight, n); ++i) Arrive(i, 0.0);
      next_closed_ = std::min(in_flight, n);
    } else {
      for (int i = 0; i < n; ++i) live_[static_cast<size_t>(i)].arrival = arrivals[i];
    }
    next_arrival_ = in_flight > 0 ? n : 0;  // Poisson: the next request not yet arrived
    double now = 0;
    int done = 0;
    while (done < n) {
      AdmitArrivals(now);
      if (running_.empty() && waiting_.empty()) {
        // Idle until the next arrival.
        now = std::max(now, live_[static_cast<size_t>(next_arrival_)].arrival);
        continue;
      }
      Schedule();
      if (sched_.empty()) {
        // Nothing fits (running requests' prefill chunks blocked by the cache): free the most
        // recently admitted one's; a lone request always fits (CheckLimits).
        if (running_.size() > 1) {
          PreemptLast();
          continue;
        }
        SPECPLAN_CHECK(false, "the online replay scheduled nothing with one request running");
      }
      const double t = pricer_.StepSeconds(decode_, prefill_, k_);
      now += t;
      ++steps_;
      running_sum_ += static_cast<double>(running_.size());
      done += Advance(now);
    }
    Fill(slo, row);
  }

 private:
  // A closed-loop request (or a Poisson one at its time) joins the queue.
  void Arrive(int i, double t) {
    Live& r = live_[static_cast<size_t>(i)];
    r.arrival = t;
    r.state = State::kWaiting;
    r.target = reqs_[static_cast<size_t>(i)].prompt_tokens;
    waiting_.push_back(i);
  }

  void AdmitArrivals(double now) {
    if (in_flight_ > 0) return;
    const int n = static_cast<int>(reqs_.size());
    while (next_arrival_ < n && live_[static_cast<size_t>(next_arrival_)].arrival <= now) {
      Arrive(next_arrival_, live_[static_cast<size_t>(next_arrival_)].arrival);
      ++next_arrival_;
    }
  }

  // The cache a decoding request holds: its prompt and every token generated (a re-prefilled
  // request's target already holds the tokens generated before its preemption).
  int64_t DecodeContext(int i) const {
    const Live& r = live_[static_cast<size_t>(i)];
    return reqs_[static_cast<size_t>(i)].prompt_tokens + r.generated;
  }
  int64_t Holds(int i) const {
    const Live& r = live_[static_cast<size_t>(i)];
    return r.decoding() ? DecodeContext(i) : r.prefilled;
  }

  // Frees the most recently admitted running request's cache and puts it back at the head of the
  // queue, to re-prefill prompt + generated tokens.
  void PreemptLast() {
    const int v = running_.back();
    running_.pop_back();
    Live& r = live_[static_cast<size_t>(v)];
    kv_used_ -= Holds(v);
    r.state = State::kWaiting;
    r.target = DecodeContext(v);
    r.prefilled = 0;
    waiting_.push_front(v);
    ++preemptions_;
  }

  // Fills sched_, decode_ and prefill_ for this step.
  void Schedule() {
    sched_.clear();
    decode_.Clear();
    prefill_.Clear();
    kv_used_ = 0;
    for (int i : running_) kv_used_ += Holds(i);
    const int64_t cap = lim_.kv_cache_tokens;
    if (lim_.scheduler == SchedulerKind::kSeparate) {
      bool prefilling = false;
      for (int i : running_) prefilling = prefilling || !live_[static_cast<size_t>(i)].decoding();
      const bool admissible = !waiting_.empty() &&
                              static_cast<int>(running_.size()) < lim_.max_running &&
                              kv_used_ + FirstChunk(waiting_.front(), lim_.token_budget) <= cap;
      if (prefilling || admissible) {
        int64_t budget = lim_.token_budget;
        for (int i : running_) {
          const Live& r = live_[static_cast<size_t>(i)];
          if (r.decoding() || budget <= 0) continue;
          const int64_t chunk = ChunkOf(r.target - r.prefilled, budget);
          if (chunk <= 0 || kv_used_ + chunk > cap) continue;
          AddPrefill(i, chunk, &budget);
        }
        AdmitWaiting(&budget);
        if (!sched_.empty()) return;
      }
      for (size_t j = 0; j < running_.size(); ++j) {
        const int i = running_[j];
        if (!live_[static_cast<size_t>(i)].decoding()) continue;
        const int64_t s = VerifyTokens(i);
        while (kv_used_ + s > cap && !running_.empty()) {
          const bool self = running_.back() == i;
          PreemptLast();
          if (self) break;
        }
        if (j >= running_.size() || running_[j] != i) break;  // it preempted itself
        AddDecode(i, s);
      }
      return;
    }
    // kMixed: running requests first, in admission order, then the queue.
    int64_t budget = lim_.token_budget;
    for (size_t j = 0; j < running_.size() && budget > 0; ++j) {
      const int i = running_[j];
      const Live& r = live_[static_cast<size_t>(i)];
      if (r.decoding()) {
        const int64_t s = std::min<int64_t>(VerifyTokens(i), budget);
        while (kv_used_ + s > cap && !running_.empty()) {
          const bool self = running_.back() == i;
          PreemptLast();
          if (self) break;
        }
        if (j >= running_.size() || running_[j] != i) break;
        AddDecode(i, s);
        budget -= s;
      } else {
        const int64_t chunk = ChunkOf(r.target - r.prefilled, budget);
        if (chunk <= 0) continue;
        while (kv_used_ + chunk > cap && !running_.empty()) {
          const bool self = running_.back() == i;
          PreemptLast();
          if (self) break;
        }
        if (j >= running_.size() || running_[j] != i) break;
        AddPrefill(i, chunk, &budget);
      }
    }
    AdmitWaiting(&budget);
  }

  // The chunk of `left` prompt tokens a step with `budget` tokens left takes: all of them when
  // they fit, else with chunked prefill the budget, else none.
  int64_t ChunkOf(int64_t left, int64_t budget) const {
    if (left <= budget) return left;
    return lim_.chunked_prefill ? budget : 0;
  }
  int64_t FirstChunk(int i, int64_t budget) const {
    const int64_t c = ChunkOf(live_[static_cast<size_t>(i)].target, budget);
    return c > 0 ? c : std::numeric_limits<int64_t>::max() / 4;
  }

  void AdmitWaiting(int64_t* budget) {
    while (!waiting_.empty() && *budget > 0 &&
           static_cast<int>(running_.size()) < lim_.max_running) {
      const int i = waiting_.front();
      const int64_t chunk = ChunkOf(live_[static_cast<size_t>(i)].target, *budget);
      if (chunk <= 0 || kv_used_ + chunk > lim_.kv_cache_tokens) break;
      waiting_.pop_front();
      live_[static_cast<size_t>(i)].state = State::kRunning;
      running_.push_back(i);
      AddPrefill(i, chunk, budget);
    }
  }

  void AddPrefill(int i, int64_t chunk, int64_t* budget) {
    prefill_.Add(chunk, live_[static_cast<size_t>(i)].prefilled);
    sched_.push_back({i, chunk, true});
    kv_used_ += chunk;
    *budget -= chunk;
  }
  void AddDecode(int i, int64_t s) {
    decode_.Add(s, DecodeContext(i));
    sched_.push_back({i, s, false});
    kv_used_ += s;
  }

  // Tokens a decoding request verifies at its output position: the setting's K drafts + 1, or
  // fewer where its trace's drafter proposes fewer (AcceptanceTraceRequest::DraftAt).
  int64_t VerifyTokens(int i) const {
    const OnlineRequest& q = reqs_[static_cast<size_t>(i)];
    if (q.source < 0) return k_ + 1;
    const int64_t g = live_[static_cast<size_t>(i)].generated;
    return work_.traces[static_cast<size_t>(q.source)].DraftAt(static_cast<size_t>(g), k_) + 1;
  }

  // Tokens a decoding request at output position g emits verifying s tokens (bonus included).
  int64_t Emitted(int i, int64_t s) const {
    const OnlineRequest& q = reqs_[static_cast<size_t>(i)];
    const int64_t g = live_[static_cast<size_t>(i)].generated;
    int64_t e = 1;
    if (s > 1) {
      if (q.source >= 0) {
        const std::vector<int32_t>& acc = work_.traces[static_cast<size_t>(q.source)].acc_len;
        e = g < static_cast<int64_t>(acc.size()) ? std::min<int64_t>(acc[g], s) : 1;
      } else {
        double prev = 1;
        for (int64_t d = 0; d + 1 < s; ++d) {
          const double rate = work_.rates[static_cast<size_t>(d)];
          const double cond = prev > 0 ? rate / prev : 0;
          if (Uniform01(work_.seed, static_cast<uint64_t>(i), static_cast<uint64_t>(g),
                        static_cast<uint64_t>(d)) >= cond) {
            break;
          }
          ++e;
          prev = rate;
        }
      }
    }
    return std::max<int64_t>(1, std::min(e, q.output_tokens - g));
  }

  // Applies the step that ended at `now`; returns the requests that finished.
  int Advance(double now) {
    int finished = 0;
    for (const Scheduled& x : sched_) {
      Live& r = live_[static_cast<size_t>(x.index)];
      int64_t emitted = 0;
      if (x.prefill) {
        r.prefilled += x.tokens;
        if (r.decoding()) emitted = 1;  // the step that completes a prefill samples a token
      } else {
        emitted = Emitted(x.index, x.tokens);
        accepted_tokens_ += static_cast<double>(emitted);
        ++decode_request_steps_;
      }
      if (emitted == 0) continue;
      if (std::isnan(r.first)) {
        r.first = now;
      } else {
        itl_.push_back(now - r.last_emit);
      }
      r.last_emit = now;
      r.generated += emitted;
      if (r.generated >= reqs_[static_cast<size_t>(x.index)].output_tokens) {
        r.finish = now;
        r.state = State::kDone;
        ++finished;
      }
    }
    if (finished > 0) {
      running_.erase(std::remove_if(running_.begin(), running_.end(),
                                    [&](int i) {
                                      return live_[static_cast<size_t>(i)].state == State::kDone;
                                    }),
                     running_.end());
      if (in_flight_ > 0) {
        for (int f = 0; f < finished && next_closed_ < static_cast<int>(reqs_.size()); ++f) {
          Arrive(next_closed_++, now);
        }
      }
    }
    return finished;
  }

  static LatencyStats Stats(std::vector<double>* v) {
    LatencyStats s;
    s.count = static_cast<int64_t>(v->size());
    if (v->empty()) {
      s.mean = s.p50 = s.p90 = s.p99 = kNaN;
      return s;
    }
    std::sort(v->begin(), v->end());
    double sum = 0;
    for (double x : *v) sum += x;
    s.mean = sum / static_cast<double>(v->size());
    s.p50 = Percentile(*v, 0.50);
    s.p90 = Percentile(*v, 0.90);
    s.p99 = Percentile(*v, 0.99);
    return s;
  }

  void Fill(const OnlineSlo& slo, OnlineRow* row) {
    std::vector<double> ttft, tpot, e2e;
    double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0, tokens = 0;
    double good_tokens = 0;
    for (size_t i = 0; i < live_.size(); ++i) {
      const Live& r = live_[i];
      if (r.state != State::kDone) continue;
      ++row->requests;
      first_arrival = std::min(first_arrival, r.arrival);
      last_finish = std::max(last_finish, r.finish);
      tokens += static_cast<double>(reqs_[i].output_tokens);
      const double t_first = r.first - r.arrival;
      ttft.push_back(t_first);
      e2e.push_back(r.finish - r.arrival);
      double t_tok = 0;
      if (reqs_[i].output_tokens > 1) {
        t_tok = (r.finish - r.first) / static_cast<double>(reqs_[i].output_tokens - 1);
        tpot.push_back(t_tok);
      }
      if ((slo.ttft_s <= 0 || t_first <= slo.ttft_s) && (slo.tpot_s <= 0 || t_tok <= slo.tpot_s)) {
        ++row->slo_met;
        good_tokens += static_cast<double>(reqs_[i].output_tokens);
      }
    }
    row->k = k_;
    row->duration_s = row->requests > 0 ? last_finish - first_arrival : 0;
    row->output_tokens = tokens;
    row->throughput = row->duration_s > 0 ? tokens / row->duration_s : kNaN;
    row->goodput = row->duration_s > 0 ? good_tokens / row->duration_s : kNaN;
    row->request_throughput =
        row->duration_s > 0 ? static_cast<double>(row->requests) / row->duration_s : kNaN;
    row->tokens_per_step = decode_request_steps_ > 0
                               ? accepted_tokens_ / static_cast<double>(decode_request_steps_)
                               : kNaN;
    row->steps = steps_;
    row->mean_running = steps_ > 0 ? running_sum_ / static_cast<double>(steps_) : 0;
    row->preemptions = preemptions_;
    row->ttft = Stats(&ttft);
    row->tpot = Stats(&tpot);
    row->itl = Stats(&itl_);
    row->e2e = Stats(&e2e);
  }

  const std::vector<OnlineRequest>& reqs_;
  const OnlineWorkload& work_;
  const OnlineStepPricer& pricer_;
  const EngineLimits& lim_;
  const int k_;
  std::vector<Live> live_;
  std::deque<int> waiting_;
  std::vector<int> running_;  // admission order
  std::vector<Scheduled> sched_;
  BatchShape decode_, prefill_;
  int64_t kv_used_ = 0;
  int in_flight_ = 0;
  int next_closed_ = 0;
  int next_arrival_ = 0;
  int64_t steps_ = 0, preemptions_ = 0, decode_request_steps_ = 0;
  double running_sum_ = 0, accepted_tokens_ = 0;
  std::vector<double> itl_;
};

absl::Status CheckLimits(const EngineLimits& l, const std::vector<OnlineRequest>& reqs, int k_max) {
  if (l.max_running < 1) {
    return Invalid(absl::StrCat("max_running = ", l.max_running,
                                ": must be >= 1 (max-num-seqs / max-running-requests)"));
  }
  if (l.token_budget < 1) {
    return Invalid(absl::StrCat("token_budget = ", l.token_budget,
                                ": must be >= 1 (max-num-batched-tokens / chunked-prefill-size)"));
  }
  if (l.kv_cache_tokens < 1) {
    return Invalid(absl::StrCat("kv_cache_tokens = ", l.kv_cache_tokens, ": must be >= 1"));
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    const OnlineRequest& q = reqs[i];
    const int64_t need = q.prompt_tokens + q.output_tokens + k_max;
    if (need > l.kv_cache_tokens) {
      return Invalid(absl::StrFormat(
          "kv_cache_tokens = %d: request %d needs %d tokens (prompt %d + output %d + %d verified "
          "draft tokens); the KV cache cannot hold it",
          l.kv_cache_tokens, i, need, q.prompt_tokens, q.output_tokens, k_max));
    }
    if (!l.chunked_prefill && q.prompt_tokens + q.output_tokens - 1 > l.token_budget) {
      return Invalid(absl::StrFormat(
          "token_budget = %d: without chunked prefill request %d's prompt (%d tokens, %d after a "
          "preemption at its last token) must fit in one step",
          l.token_budget, i, q.prompt_tokens, q.prompt_tokens + q.output_tokens - 1));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRequests(const std::vector<OnlineRequest>& reqs, const OnlineWorkload& w) {
  if (reqs.empty()) return Invalid("requests: empty (need at least one request)");
  if (static_cast<int64_t>(reqs.size()) > kMaxOnlineRequests) {
    return Invalid(absl::StrCat("requests: ", reqs.size(), " exceeds ", kMaxOnlineRequests));
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    const OnlineRequest& q = reqs[i];
    if (q.prompt_tokens < 1) {
      return Invalid(absl::StrCat("requests[", i, "].prompt_tokens = ", q.prompt_tokens,
                                  ": must be >= 1 (every request prefills its prompt)"));
    }
    if (q.output_tokens < 1) {
      return Invalid(
          absl::StrCat("requests[", i, "].output_tokens = ", q.output_tokens, ": must be >= 1"));
    }
    if (q.source >= static_cast<int>(w.traces.size()) || q.source < -1) {
      return Invalid(absl::StrCat("requests[", i, "].source = ", q.source, ": must be in [-1, ",
                                  w.traces.size(), ")"));
    }
    if (q.source >= 0 &&
        static_cast<int64_t>(w.traces[static_cast<size_t>(q.source)].acc_len.size()) <
            q.output_tokens) {
      return Invalid(absl::StrCat(
          "requests[", i, "].output_tokens = ", q.output_tokens, ": its trace has acceptance for ",
          w.traces[static_cast<size_t>(q.source)].acc_len.size(), " output positions"));
    }
  }
  return absl::OkStatus();
}

// Arrival times at `rate` for n requests: the first at 0, then exponential gaps (Poisson), or
// gaps of 1 / rate (constant).
std::vector<double> Arrivals(int64_t n, double rate, bool constant, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<double> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (constant) {
      t[static_cast<size_t>(i)] = static_cast<double>(i) / rate;
    } else {
      t[static_cast<size_t>(i)] = i == 0 ? 0 : t[static_cast<size_t>(i - 1)] + gap(rng);
    }
  }
  return t;
}

nlohmann::json StatsJson(const LatencyStats& s) {
  auto num = [](double x) { return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x); };
  return {{"mean_ms", num(1e3 * s.mean)},
          {"p50_ms", num(1e3 * s.p50)},
          {"p90_ms", num(1e3 * s.p90)},
          {"p99_ms", num(1e3 * s.p99)},
          {"count", s.count}};
}

}  // namespace

const char* SchedulerKindName(SchedulerKind k) {
  return k == SchedulerKind::kMixed ? "mixed" : "separate";
}

EngineLimits DefaultEngineLimits(const std::string& engine, double gpu_mem_bytes,
                                 bool speculative) {
  EngineLimits l;
  if (engine == "sglang") {
    l.scheduler = SchedulerKind::kSeparate;
    l.chunked_prefill = true;
    if (gpu_mem_bytes <= 0) {
      l.token_budget = 4096;
    } else if (gpu_mem_bytes < 35 * kGiB) {
      l.token_budget = 2048;
    } else if (gpu_mem_bytes < 160 * kGiB) {
      l.token_budget = 8192;
    } else {
      l.token_budget = 16384;
    }
    l.max_running = speculative ? 48 : 4096;
    return l;
  }
  l.scheduler = SchedulerKind::kMixed;
  l.chunked_prefill = true;
  const bool large = gpu_mem_bytes >= 70 * kGiB;
  l.max_running = large ? 1024 : 256;
  l.token_budget = large ? 8192 : 2048;
  return l;
}

double DefaultMemoryFraction(const std::string& engine) { return engine == "sglang" ? 0.88 : 0.9; }

absl::StatusOr<int64_t> KvCacheTokens(const costmodel::ModelSpec& model,
                                      const costmodel::GpuSpec& gpu, double fraction,
                                      const char* fraction_field) {
  if (!(fraction > 0 && fraction <= 1)) {
    return Invalid(absl::StrCat(fraction_field, " = ", fraction, ": must be in (0, 1]"));
  }
  if (!(gpu.mem_bytes > 0)) {
    return Invalid(absl::StrCat("gpu = '", gpu.name,
                                "': its memory is not known; give the KV cache's size in tokens "
                                "(kv_cache_tokens)"));
  }
  const costmodel::MemoryNeed one = costmodel::PassMemory(model, 1, 1, 0);
  const double room = fraction * gpu.mem_bytes - one.weight_bytes;
  if (!(room > one.kv_bytes)) {
    return Invalid(absl::StrFormat(
        "%s = %g: the weights (%.3g bytes) leave no room in %g x %.3g "
        "bytes of %s",
        fraction_field, fraction, one.weight_bytes, fraction, gpu.mem_bytes, gpu.name));
  }
  return static_cast<int64_t>(room / one.kv_bytes);
}

int WorkloadMaxK(const OnlineWorkload& w, const std::vector<OnlineRequest>& reqs) {
  bool traces = false, rates = false;
  int longest = 1;  // the largest acc_len over the requests' traces
  for (const OnlineRequest& q : reqs) {
    if (q.source < 0) {
      rates = true;
    } else if (q.source < static_cast<int>(w.traces.size())) {
      traces = true;
      for (int32_t a : w.traces[static_cast<size_t>(q.source)].acc_len) {
        longest = std::max<int>(longest, a);
      }
    }
  }
  const int from_rates = static_cast<int>(w.rates.size());
  if (traces && rates) return std::min(std::max(longest - 1, w.trace_k_max), from_rates);
  if (traces) return std::max(longest - 1, w.trace_k_max);
  return rates ? from_rates : 0;
}

double StepModelPricer::StepSeconds(const BatchShape& decode, const BatchShape& prefill,
                                    int k) const {
  costmodel::StepBreakdown r;
  const costmodel::HostTime& h = step_->host();
  // A decode batch none of whose requests drafted (an n-gram matcher that found nothing) runs
  // as plain decoding.
  if (!decode.empty())
    r = k > 0 && decode.max_s() > 1 ? step_->Step(decode) : step_->ArStep(decode);
  if (prefill.empty()) return r.step_s();
  all_.Clear();
  all_.Reserve(static_cast<size_t>(decode.size() + prefill.size()));
  for (const costmodel::SequenceShape& q : decode.sequences()) all_.Add(q.s, q.c);
  for (const costmodel::SequenceShape& q : prefill.sequences()) all_.Add(q.s, q.c);
  // The per-token host term counts the tokens the pass verifies (the decoding requests', and the
  // one token each prefill chunk samples): a prefill chunk computes no logits for the rest, and
  // the term was fitted on decode passes of 4 to 256 tokens (costmodel/step/host_time.cc).
  r.verify_s =
      step_->VerifyPassSeconds(all_) +
      h.verify_per_token_s * (decode.totals().tokens + static_cast<double>(prefill.size()));
  const double prefills = static_cast<double>(prefill.size());
  if (decode.empty()) {
    r.sample_s = h.sample_call_s;
    r.host_s = h.step_s + h.per_sequence_s * prefills;
  } else {
    r.host_s += h.per_sequence_s * prefills;
  }
  // The drafter builds its cache of the prompts in one forward over the step's prefill chunks
  // (vLLM's EAGLE proposer runs over every token the step scheduled), not one forward per chunk.
  if (k > 0 && step_->has_drafter()) r.draft_s += step_->DraftForwardSeconds(prefill);
  return r.step_s();
}

absl::StatusOr<OnlineReport> RunOnline(const std::vector<OnlineRequest>& requests,
                                       const OnlineWorkload& workload,
                                       const OnlineStepPricer& pricer, const OnlineOptions& o) {
  SPECPLAN_RETURN_IF_ERROR(CheckRequests(requests, workload));
  const ArrivalOptions& a = o.arrivals;
  for (size_t i = 0; i < a.rates.size(); ++i) {
    if (!(a.rates[i] > 0) || !std::isfinite(a.rates[i])) {
      return Invalid(absl::StrCat("rates[", i, "] = ", a.rates[i], ": must be > 0 requests/s"));
    }
  }
  if (a.rates.empty() && a.in_flight < 1) {
    return Invalid(
        absl::StrCat("in_flight = ", a.in_flight, ": must be >= 1 (or give arrival rates)"));
  }
  for (size_t i = 0; i < workload.rates.size(); ++i) {
    const double r = workload.rates[i];
    if (!(r >= 0 && r <= 1) || (i > 0 && r > workload.rates[i - 1])) {
      return Invalid(absl::StrCat("acceptance rates[", i, "] = ", r,
                                  ": must be in [0, 1] and not above the previous position's"));
    }
  }
  if (o.chain_lengths.empty()) return Invalid("chain_lengths: empty (0 = plain decoding)");
  const int k_max = WorkloadMaxK(workload, requests);
  int k_used = 0;
  for (int k : o.chain_lengths) {
    if (k < 0 || k > k_max) {
      return Invalid(absl::StrCat("chain_lengths: K = ", k, " must be in [0, ", k_max,
                                  "] (the acceptance given says nothing of longer chains)"));
    }
    k_used = std::max(k_used, k);
  }
  SPECPLAN_RETURN_IF_ERROR(CheckLimits(o.limits, requests, k_used));

  for (const auto& [value, field] :
       {std::pair<double, const char*>{o.slo.ttft_s, "slo.ttft_s"}, {o.slo.tpot_s, "slo.tpot_s"}}) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return Invalid(absl::StrCat(field, " = ", value, ": must be >= 0 (0 = no limit)"));
    }
  }
  OnlineReport report;
  report.limits = o.limits;
  report.slo = o.slo;
  report.requests = static_cast<int64_t>(requests.size());
  std::vector<double> rates = a.rates;
  std::sort(rates.begin(), rates.end());
  const int loads = rates.empty() ? 1 : static_cast<int>(rates.size());
  const int total = loads * static_cast<int>(o.chain_lengths.size());
  int done = 0;
  for (int l = 0; l < loads; ++l) {
    std::vector<double> arrivals;
    if (!rates.empty()) {
      arrivals = Arrivals(static_cast<int64_t>(requests.size()), rates[l], a.constant, a.seed);
    }
    for (int k : o.chain_lengths) {
      OnlineRow row;
      Replay replay(requests, workload, pricer, o.limits, k);
      replay.Run(arrivals, rates.empty() ? a.in_flight : 0, o.slo, &row);
      row.rate = rates.empty() ? 0 : rates[l];
      row.in_flight = rates.empty() ? a.in_flight : 0;
      row.max_running = o.limits.max_running;
      report.rows.push_back(row);
      if (o.progress) o.progress(++done, total);
    }
  }
  RankSettings(&report);
  return report;
}

void RankSettings(OnlineReport* r) {
  r->best_k.clear();
  for (size_t i = 0; i < r->rows.size();) {
    const OnlineRow& first = r->rows[i];
    int best = first.k;
    double best_goodput = first.goodput;
    size_t j = i + 1;
    for (; j < r->rows.size() && r->rows[j].rate == first.rate &&
           r->rows[j].in_flight == first.in_flight;
         ++j) {
      const OnlineRow& x = r->rows[j];
      if (x.goodput > best_goodput || (x.goodput == best_goodput && x.k < best) ||
          std::isnan(best_goodput)) {
        best = x.k;
        best_goodput = x.goodput;
      }
    }
    r->best_k.push_back(best);
    i = j;
  }
}

absl::StatusOr<double> CopiesSeconds(const planner::AcceptanceTraceRequest& request, int copies,
                                     int k, const OnlineStepPricer& pricer,
                                     const EngineLimits& limits) {
  OnlineWorkload w;
  w.traces = {request};
  w.trace_k_max = k;  // the caller checked k against the whole trace's draft length
  OnlineRequest q;
  q.prompt_tokens = request.prompt_tokens;
  q.output_tokens = static_cast<int64_t>(request.acc_len.size());
  q.source = 0;
  const std::vector<OnlineRequest> reqs(static_cast<size_t>(std::max(copies, 1)), q);
  OnlineOptions o;
  o.chain_lengths = {k};
  o.limits = limits;
  o.arrivals.in_flight = std::max(copies, 1);
  SPECPLAN_ASSIGN_OR_RETURN(const OnlineReport r, RunOnline(reqs, w, pricer, o));
  return r.rows[0].duration_s;
}

nlohmann::json OnlineReportToJson(const OnlineReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  auto num = [](double x) { return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x); };
  for (const OnlineRow& x : r.rows) {
    rows.push_back({{"rate", x.rate},
                    {"in_flight", x.in_flight},
                    {"k", x.k},
                    {"max_running", x.max_running},
                    {"requests", x.requests},
                    {"duration_s", x.duration_s},
                    {"output_tokens", x.output_tokens},
                    {"throughput", num(x.throughput)},
                    {"request_throughput", num(x.request_throughput)},
                    {"tokens_per_step", num(x.tokens_per_step)},
                    {"mean_running", x.mean_running},
                    {"steps", x.steps},
                    {"preemptions", x.preemptions},
                    {"ttft", StatsJson(x.ttft)},
                    {"tpot", StatsJson(x.tpot)},
                    {"itl", StatsJson(x.itl)},
                    {"e2e", StatsJson(x.e2e)},
                    {"slo_met", x.slo_met},
                    {"goodput", num(x.goodput)}});
  }
  return {{"limits",
           {{"scheduler", SchedulerKindName(r.limits.scheduler)},
            {"max_running", r.limits.max_running},
            {"token_budget", r.limits.token_budget},
            {"chunked_prefill", r.limits.chunked_prefill},
            {"kv_cache_tokens", r.limits.kv_cache_tokens}}},
          {"slo", {{"ttft_s", r.slo.ttft_s}, {"tpot_s", r.slo.tpot_s}}},
          {"requests", r.requests},
          {"rows", rows},
          {"best_k", r.best_k}};
}

std::string FormatOnlineTable(const OnlineReport& r) {
  const EngineLimits& l = r.limits;
  std::string out = absl::StrFormat(
      "online replay: %d requests per load; scheduler %s, token budget %d, chunked prefill %s, "
      "KV cache %d tokens\n",
      r.requests, SchedulerKindName(l.scheduler), l.token_budget, l.chunked_prefill ? "on" : "off",
      l.kv_cache_tokens);
  const bool slo = r.slo.any();
  if (slo) {
    absl::StrAppendFormat(
        &out, "SLOs: TTFT <= %s, TPOT <= %s; goodput counts the requests that met them\n",
        r.slo.ttft_s > 0 ? absl::StrFormat("%g ms", 1e3 * r.slo.ttft_s) : "-",
        r.slo.tpot_s > 0 ? absl::StrFormat("%g ms", 1e3 * r.slo.tpot_s) : "-");
  }
  absl::StrAppendFormat(&out, "%8s %3s %7s %10s %7s %6s %6s  %-20s %-20s %-20s %s%s\n", "load", "K",
                        "max run", "tokens/s", "tok/st", "run", "preempt", "TTFT p50/p90/p99 ms",
                        "TPOT p50/p90/p99", "ITL p50/p90/p99",
                        slo ? absl::StrFormat("%-24s", "E2E p50/p90/p99 ms") : "E2E p50/p90/p99 ms",
                        slo ? " goodput    met" : "");
  auto trio = [](const LatencyStats& s) {
    if (s.count == 0) return std::string("-");
    return absl::StrFormat("%.1f/%.1f/%.1f", 1e3 * s.p50, 1e3 * s.p90, 1e3 * s.p99);
  };
  for (const OnlineRow& x : r.rows) {
    const std::string load =
        x.in_flight > 0 ? absl::StrFormat("N=%d", x.in_flight) : absl::StrFormat("%g/s", x.rate);
    absl::StrAppendFormat(&out, "%8s %3d %7d %10.1f %7.3f %6.1f %6d  %-20s %-20s %-20s %s", load,
                          x.k, x.max_running, x.throughput, x.tokens_per_step, x.mean_running,
                          x.preemptions, trio(x.ttft), trio(x.tpot), trio(x.itl),
                          slo ? absl::StrFormat("%-24s", trio(x.e2e)) : trio(x.e2e));
    if (slo) {
      absl::StrAppendFormat(
          &out, " %7.1f %5.1f%%", x.goodput,
          x.requests > 0 ? 100.0 * static_cast<double>(x.slo_met) / static_cast<double>(x.requests)
                         : 0.0);
    }
    out += "\n";
  }
  // The best setting per load: rows come by load, then K, with the same K list for every load.
  const size_t per_load = r.best_k.empty() ? 0 : r.rows.size() / r.best_k.size();
  for (size_t l = 0; l < r.best_k.size(); ++l) {
    const OnlineRow& x = r.rows[l * per_load];
    const std::string load =
        x.in_flight > 0 ? absl::StrFormat("N=%d", x.in_flight) : absl::StrFormat("%g/s", x.rate);
    bool any_met = !slo;
    for (size_t j = 0; j < per_load; ++j) any_met = any_met || r.rows[l * per_load + j].slo_met > 0;
    if (!any_met) {
      absl::StrAppendFormat(&out, "%s: no setting has a request that meets the SLOs\n", load);
    } else {
      absl::StrAppendFormat(&out, "%s: best K = %d (highest %s)\n", load, r.best_k[l],
                            slo ? "goodput under the SLOs" : "throughput");
    }
  }
  return out;
}

}  // namespace specplan::whatif
