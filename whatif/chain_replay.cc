#include "whatif/chain_replay.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/enum_names.h"

namespace specplan::whatif {
namespace {

using costmodel::StepBreakdown;
using costmodel::StepModel;
using planner::AcceptanceTraceRequest;
using planner::EngineAcceptance;

constexpr EnumEntry<ChainBatching> kBatchingNames[] = {{ChainBatching::kCopies, "copies"},
                                                       {ChainBatching::kMixed, "mixed"}};
constexpr int kMaxBatch = 4096;
constexpr int kDefaultMaxK = 8;

void Add(const StepBreakdown& x, StepBreakdown* sum) {
  sum->verify_s += x.verify_s;
  sum->draft_s += x.draft_s;
  sum->sample_s += x.sample_s;
  sum->host_s += x.host_s;
  sum->draft_forwards += x.draft_forwards;
}

// A step of B sequences verifying k + 1 tokens over c (plain decoding for k = 0).
StepBreakdown StepAt(const StepModel& m, int b, int k, int64_t c) {
  return k == 0 ? m.ArStep(b, c) : m.Step(b, k + 1, c);
}

// One request as B copies: (speculative seconds, plain seconds, speculative steps, tokens).
struct CopiesResult {
  StepBreakdown sd;
  double ar_s = 0;
  double steps = 0;
  double tokens = 0;
};
CopiesResult ReplayCopies(const AcceptanceTraceRequest& r, const StepModel& m, int b, int k) {
  CopiesResult out;
  const size_t n = r.acc_len.size();
  // Summed term by term as the speculative steps are, so that K = 0 gives exactly 1.
  StepBreakdown ar;
  for (size_t i = 1; i < n; ++i) Add(m.ArStep(b, r.prompt_tokens + static_cast<int64_t>(i)), &ar);
  out.ar_s = ar.step_s();
  for (size_t i = 1; i < n;) {
    // The copies draft alike: a step the drafter has nothing to propose for verifies one token.
    const int drafted = r.DraftAt(i, k);
    const int emitted = r.EmittedAt(i, k);
    Add(StepAt(m, b, drafted, r.prompt_tokens + static_cast<int64_t>(i)), &out.sd);
    out.steps += 1;
    i += static_cast<size_t>(std::max(emitted, 1));
  }
  out.tokens = static_cast<double>(n > 0 ? n - 1 : 0);
  return out;
}

// B requests in flight, ring order; (time, tokens, steps) until R requests have finished.
struct MixedResult {
  StepBreakdown time;
  double tokens = 0;
  double steps = 0;
};
MixedResult ReplayMixed(const std::vector<AcceptanceTraceRequest>& reqs, const StepModel& m, int b,
                        int k) {
  const size_t r_count = reqs.size();
  struct Slot {
    size_t req;
    size_t pos;
  };
  std::vector<Slot> slots;
  size_t next = 0;
  auto start = [&]() {
    Slot s{next % r_count, 1};
    ++next;
    return s;
  };
  for (int j = 0; j < b; ++j) slots.push_back(start());
  MixedResult out;
  size_t finished = 0;
  costmodel::BatchShape shape;
  shape.Reserve(static_cast<size_t>(b));
  while (finished < r_count) {
    shape.Clear();
    int drafted = 0;  // the most draft tokens a slot proposes this step
    for (Slot& s : slots) {
      // A request with no output to replay ends at once.
      while (s.pos >= reqs[s.req].acc_len.size()) {
        ++finished;
        s = start();
      }
      const int d = reqs[s.req].DraftAt(s.pos, k);
      drafted = std::max(drafted, d);
      shape.Add(d + 1, reqs[s.req].prompt_tokens + static_cast<int64_t>(s.pos));
    }
    if (finished >= r_count) break;
    Add(drafted == 0 ? m.ArStep(shape) : m.Step(shape), &out.time);
    out.steps += 1;
    for (Slot& s : slots) {
      const AcceptanceTraceRequest& r = reqs[s.req];
      const size_t left = r.acc_len.size() - s.pos;
      const size_t emitted =
          std::min<size_t>(left, static_cast<size_t>(std::max(1, r.EmittedAt(s.pos, k))));
      out.tokens += static_cast<double>(emitted);
      s.pos += emitted;
      if (s.pos >= r.acc_len.size()) {
        ++finished;
        s = start();
      }
    }
  }
  return out;
}

// Tokens per step under independence between steps: 1 + sum_{i<k} per_position[i] (for a trace
// too: its per-position rates, not its walk, which EngineAcceptance::TokensPerStep gives).
double IndependentTokensPerStep(const EngineAcceptance& a, int k) {
  double t = 1.0;
  for (int i = 0; i < k; ++i) t += a.per_position[static_cast<size_t>(i)];
  return t;
}

}  // namespace

const char* ChainBatchingName(ChainBatching b) { return EnumName(kBatchingNames, b); }
absl::StatusOr<ChainBatching> ParseChainBatching(const std::string& name) {
  return ParseEnum(kBatchingNames, "batching", name);
}

absl::StatusOr<ChainReplayReport> ReplayChains(const EngineAcceptance& a, const StepModel& m,
                                               const ChainReplayOptions& o) {
  if (o.batch_sizes.empty()) return absl::InvalidArgumentError("batch_sizes: empty");
  for (size_t i = 0; i < o.batch_sizes.size(); ++i) {
    const int b = o.batch_sizes[i];
    if (b < 1 || b > kMaxBatch || (i > 0 && b <= o.batch_sizes[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch_sizes: ", b, " must be in [1, ", kMaxBatch, "] and ascending"));
    }
  }
  std::vector<int> ks = o.chain_lengths;
  if (ks.empty()) {
    for (int k = 0; k <= std::min(a.k_max, kDefaultMaxK); ++k) ks.push_back(k);
  }
  for (int k : ks) {
    if (k < 0 || k > a.k_max) {
      return absl::InvalidArgumentError(
          absl::StrCat("chain_lengths: K = ", k, " must be in [0, ", a.k_max, "] (", a.source,
                       " gives acceptance up to position ", a.k_max, ")"));
    }
  }
  if (!m.has_drafter() && std::any_of(ks.begin(), ks.end(), [](int k) { return k > 0; })) {
    return absl::InvalidArgumentError("drafter: none; a chain needs a drafter to price");
  }
  if (o.context < 0) {
    return absl::InvalidArgumentError(absl::StrCat("context = ", o.context, ": must be >= 0"));
  }
  const bool trace = a.has_trace() && !o.independent;
  if (!trace && o.batching == ChainBatching::kMixed && !o.independent) {
    return absl::InvalidArgumentError(
        absl::StrCat("batching = mixed: ", a.source, " holds rates, not a per-step trace"));
  }
  std::vector<AcceptanceTraceRequest> reqs = a.requests;
  if (o.drop_at_output > 0) {
    reqs.erase(std::remove_if(reqs.begin(), reqs.end(),
                              [&](const AcceptanceTraceRequest& r) {
                                return static_cast<int64_t>(r.acc_len.size()) >= o.drop_at_output;
                              }),
               reqs.end());
  }
  if (o.max_requests > 0 && reqs.size() > static_cast<size_t>(o.max_requests)) {
    reqs.resize(static_cast<size_t>(o.max_requests));
  }
  ChainReplayReport rep;
  rep.mode = trace ? absl::StrCat("trace, ", ChainBatchingName(o.batching)) : "rates";
  rep.requests = trace ? static_cast<int>(reqs.size()) : 0;
  rep.context = trace ? 0 : o.context;
  for (int b : o.batch_sizes) {
    int best_k = 0;
    double best = -1;
    for (int k : ks) {
      ChainReplayRow row;
      row.batch = b;
      row.k = k;
      const double bd = static_cast<double>(b);
      if (!trace) {
        row.tokens_per_step = IndependentTokensPerStep(a, k);
        row.time = StepAt(m, b, k, o.context);
        row.steps = 1;
        const double ar = m.ArStep(b, o.context).step_s();
        row.throughput = bd * row.tokens_per_step / row.time.step_s();
        row.ar_throughput = bd / ar;
        row.speedup = row.throughput / row.ar_throughput;
      } else if (o.batching == ChainBatching::kCopies) {
        // SpecDecode-Bench's mean (scripts/vis_speedup.py compute_throughput): each request's
        // throughput, its tokens over its time, averaged over requests per setting; the speedup
        // is the ratio of the two means.
        double sd_rates = 0, ar_rates = 0, sd_s = 0, ar_s = 0, tokens = 0, decode_tokens = 0;
        int counted = 0;
        for (const AcceptanceTraceRequest& r : reqs) {
          if (r.acc_len.size() < 2) continue;
          const CopiesResult c = ReplayCopies(r, m, b, k);
          Add(c.sd, &row.time);
          row.steps += c.steps;
          double sd_r = c.sd.step_s(), ar_r = c.ar_s, tokens_r = c.tokens;
          if (o.prefill != nullptr) {
            // The whole request: its prefill, then its decode steps, as the engine runs them.
            auto sd_whole = CopiesSeconds(r, b, k, *o.prefill, o.prefill_limits);
            if (!sd_whole.ok()) return sd_whole.status();
            auto ar_whole = CopiesSeconds(r, b, 0, *o.prefill, o.prefill_plain_limits);
            if (!ar_whole.ok()) return ar_whole.status();
            sd_r = *sd_whole;
            ar_r = *ar_whole;
            tokens_r = static_cast<double>(r.acc_len.size());
          }
          sd_rates += tokens_r / sd_r;
          ar_rates += tokens_r / ar_r;
          sd_s += sd_r;
          ar_s += ar_r;
          tokens += tokens_r;
          decode_tokens += c.tokens;
          ++counted;
        }
        if (counted == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(a.source, ": no request has an output to replay"));
        }
        row.speedup = sd_rates / ar_rates;
        row.tokens_per_step = decode_tokens / row.steps;
        row.throughput = bd * tokens / sd_s;
        row.ar_throughput = bd * tokens / ar_s;
      } else {
        const MixedResult sd = ReplayMixed(reqs, m, b, k);
        const MixedResult ar = k == 0 ? sd : ReplayMixed(reqs, m, b, 0);
        row.time = sd.time;
        row.steps = sd.steps;
        row.tokens_per_step = sd.tokens / (sd.steps * bd);
        row.throughput = sd.tokens / sd.time.step_s();
        row.ar_throughput = ar.tokens / ar.time.step_s();
        row.speedup = row.throughput / row.ar_throughput;
      }
      if (row.throughput > best) {
        best = row.throughput;
        best_k = k;
      }
      rep.rows.push_back(row);
    }
    rep.best_k.push_back(best_k);
  }
  return rep;
}

nlohmann::json ChainReplayToJson(const ChainReplayReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ChainReplayRow& x : r.rows) {
    nlohmann::json t = costmodel::StepBreakdownToJson(x.time);
    rows.push_back({{"batch", x.batch},
                    {"k", x.k},
                    {"tokens_per_step", x.tokens_per_step},
                    {"speedup", x.speedup},
                    {"throughput", x.throughput},
                    {"ar_throughput", x.ar_throughput},
                    {"steps", x.steps},
                    {"time_s", t}});
  }
  return {{"mode", r.mode},
          {"requests", r.requests},
          {"context", r.context},
          {"rows", rows},
          {"best_k", r.best_k}};
}

std::string FormatChainReplay(const ChainReplayReport& r) {
  std::string out =
      absl::StrFormat("chains replayed (%s%s)\n%6s %3s %10s %8s %12s %12s   %s\n", r.mode,
                      r.mode == "rates" ? absl::StrFormat(", c = %d", r.context)
                                        : absl::StrFormat(", %d requests", r.requests),
                      "B", "K", "tokens/st", "speedup", "tokens/s", "AR tokens/s",
                      "step shares: verify / draft / sample / host");
  for (const ChainReplayRow& x : r.rows) {
    const double t = x.time.step_s();
    absl::StrAppendFormat(
        &out, "%6d %3d %10.3f %7.3fx %12.1f %12.1f   %.1f / %.1f / %.1f / %.1f %%\n", x.batch, x.k,
        x.tokens_per_step, x.speedup, x.throughput, x.ar_throughput, 100 * x.time.verify_s / t,
        100 * x.time.draft_s / t, 100 * x.time.sample_s / t, 100 * x.time.host_s / t);
  }
  return out;
}

}  // namespace specplan::whatif
