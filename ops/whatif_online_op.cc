#include "ops/whatif_online_op.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "costmodel/cost_spec.h"
#include "ops/validate.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

constexpr int64_t kMaxLength = int64_t{1} << 24;
constexpr int64_t kDefaultRatesPrompts = 1000;

absl::Status CheckRange(const char* field, const LengthRange& r, const std::string& source) {
  if (r.lo == 0 && r.hi == 0) {
    return Invalid(absl::StrCat(field, ": not given; ", source,
                                " holds acceptance rates, not requests: give the lengths (N or "
                                "LO:HI tokens)"));
  }
  if (r.lo < 1 || r.hi < r.lo || r.hi > kMaxLength) {
    return Invalid(absl::StrCat(field, " = ", r.lo, ":", r.hi,
                                ": must be 1 <= lo <= hi <= ", kMaxLength, " tokens"));
  }
  return absl::OkStatus();
}

// The stream: num_prompts requests (arrival times are the replay's) and their workload.
absl::Status BuildRequests(const WhatIfOnlineRequest& req, std::vector<whatif::OnlineRequest>* out,
                           whatif::OnlineWorkload* work, std::string* from) {
  const planner::EngineAcceptance& a = req.acceptance;
  work->seed = req.seed;
  work->rates = a.per_position;
  const bool trace = a.has_trace();
  const bool walk = trace && !req.independent;
  *from = walk ? "trace" : "rates";
  if (walk) {
    work->traces = a.requests;
    work->trace_k_max = a.k_max;  // the draft length the trace was recorded with
  }
  if (trace) {
    for (const planner::AcceptanceTraceRequest& t : a.requests) {
      if (t.prompt_tokens < 1) {
        return Invalid(absl::StrCat(
            "acceptance: request '", t.id, "' of ", a.source,
            " has prompt_tokens = ", t.prompt_tokens,
            ": the online replay prefills every prompt; give a trace with prompt_token_ids or "
            "prompt_tokens"));
      }
      if (t.acc_len.empty()) {
        return Invalid(absl::StrCat("acceptance: request '", t.id, "' of ", a.source,
                                    " has no output (acc_len is empty)"));
      }
    }
  } else {
    SPECPLAN_RETURN_IF_ERROR(CheckRange("prompt_tokens", req.prompt_tokens, a.source));
    SPECPLAN_RETURN_IF_ERROR(CheckRange("output_tokens", req.output_tokens, a.source));
  }
  const int64_t n = req.num_prompts > 0
                        ? req.num_prompts
                        : (trace ? static_cast<int64_t>(a.requests.size()) : kDefaultRatesPrompts);
  std::mt19937_64 rng(req.seed ^ 0x5DEECE66Dull);
  out->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    whatif::OnlineRequest& q = (*out)[static_cast<size_t>(i)];
    if (trace) {
      const size_t j = static_cast<size_t>(i) % a.requests.size();
      q.prompt_tokens = a.requests[j].prompt_tokens;
      q.output_tokens = static_cast<int64_t>(a.requests[j].acc_len.size());
      q.source = walk ? static_cast<int>(j) : -1;
    } else {
      q.prompt_tokens =
          std::uniform_int_distribution<int64_t>(req.prompt_tokens.lo, req.prompt_tokens.hi)(rng);
      q.output_tokens =
          std::uniform_int_distribution<int64_t>(req.output_tokens.lo, req.output_tokens.hi)(rng);
      q.source = -1;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LengthRange> ParseLengthRange(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  LengthRange r;
  const auto bad = [&](const char* why) { return Invalid(absl::StrCat("\"", text, "\" ", why)); };
  if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &r.lo) ||
      !absl::SimpleAtoi(parts.back(), &r.hi)) {
    return bad("must be N or LO:HI (tokens)");
  }
  if (r.lo < 1 || r.hi < r.lo || r.hi > kMaxLength) {
    return bad(absl::StrCat("must satisfy 1 <= LO <= HI <= ", kMaxLength).c_str());
  }
  return r;
}

absl::Status Validate(const WhatIfOnlineRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(req.cost.Parse(0).status());
  return ValidateLoad(req);
}

absl::Status ValidateLoad(const WhatIfOnlineRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(CheckInRange("num_prompts", req.num_prompts, 0,
                                        whatif::kMaxOnlineRequests, "0 = the trace's requests"));
  return Validate(req.limits);
}

absl::StatusOr<WhatIfOnlineResult> WhatIfOnline(const WhatIfOnlineRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  SPECPLAN_ASSIGN_OR_RETURN(const CostRequest::Parsed parsed, req.cost.Parse(0));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::ResolvedLatencyModel resolved,
                            req.cost.ResolveSpec(parsed.dtype));
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::StepModel step,
                            WithGraphLimits(req.cost, req.limits).Step(resolved, 0));
  step.TabulateDraft();
  OnlineCost cost{resolved.model.get(), &step, resolved.model_spec, resolved.gpu_spec,
                  resolved.engine};
  SPECPLAN_ASSIGN_OR_RETURN(WhatIfOnlineResult out, WhatIfOnline(req, cost));
  NameCost(req.cost, resolved, parsed.dtype, &out.source);
  out.drafter = req.cost.drafter;
  return out;
}

absl::StatusOr<WhatIfOnlineResult> WhatIfOnline(const WhatIfOnlineRequest& req,
                                                const OnlineCost& resolved) {
  SPECPLAN_RETURN_IF_ERROR(ValidateLoad(req));
  if (resolved.verify == nullptr || resolved.step == nullptr) {
    return Invalid("cost: no latency model or step model to price the steps with");
  }
  const costmodel::StepModel& step = *resolved.step;
  std::vector<whatif::OnlineRequest> requests;
  whatif::OnlineWorkload work;
  WhatIfOnlineResult out;
  SPECPLAN_RETURN_IF_ERROR(BuildRequests(req, &requests, &work, &out.requests_from));
  const std::vector<int>& ks = req.online.chain_lengths;
  if (req.max_replayed_tokens > 0) {
    double tokens = 0;  // double: no overflow on hostile lengths
    for (const whatif::OnlineRequest& r : requests) tokens += static_cast<double>(r.output_tokens);
    const double replays =
        static_cast<double>(ks.size()) *
        static_cast<double>(std::max<size_t>(1, req.online.arrivals.rates.size()));
    if (tokens * replays > static_cast<double>(req.max_replayed_tokens)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%d requests of %.0f output tokens in all, replayed for %d settings x %d loads = %.0f "
          "tokens: exceeds the server limit %d (--max-online-tokens); send fewer requests "
          "(num_prompts), settings or rates",
          requests.size(), tokens, ks.size(), std::max<size_t>(1, req.online.arrivals.rates.size()),
          tokens * replays, req.max_replayed_tokens));
    }
  }
  if (!step.has_drafter() && std::any_of(ks.begin(), ks.end(), [](int k) { return k > 0; })) {
    return Invalid("drafter: none; a chain needs a drafter to price");
  }
  out.scheduler_engine = SchedulerEngine(resolved.engine);
  const whatif::StepModelPricer pricer(&step);

  // SGLang's default running-request limit differs with and without speculation: replay plain
  // decoding and the chains under each one's own default.
  std::vector<int> plain, spec;
  for (int k : ks) (k == 0 ? plain : spec).push_back(k);
  const bool split = out.scheduler_engine == "sglang" && !req.limits.max_running &&
                     !plain.empty() && !spec.empty();
  std::vector<std::vector<int>> groups =
      split ? std::vector<std::vector<int>>{plain, spec} : std::vector<std::vector<int>>{ks};
  int done_before = 0;
  const int total = static_cast<int>(ks.size()) *
                    std::max<int>(1, static_cast<int>(req.online.arrivals.rates.size()));
  for (const std::vector<int>& group : groups) {
    whatif::OnlineOptions o = req.online;
    o.chain_lengths = group;
    const bool speculative = std::any_of(group.begin(), group.end(), [](int k) { return k > 0; });
    SPECPLAN_ASSIGN_OR_RETURN(
        o.limits, ResolveEngineLimits(req.limits, out.scheduler_engine, resolved.model_spec,
                                      resolved.gpu_spec, speculative, &out.kv_from));
    if (req.online.progress) {
      o.progress = [&, done_before](int done, int) {
        req.online.progress(done_before + done, total);
      };
    }
    SPECPLAN_ASSIGN_OR_RETURN(whatif::OnlineReport part,
                              whatif::RunOnline(requests, work, pricer, o));
    done_before += static_cast<int>(part.rows.size());
    if (out.report.rows.empty()) {
      out.report = std::move(part);
    } else {
      for (const whatif::OnlineRow& row : part.rows) out.report.rows.push_back(row);
    }
  }
  if (split) {
    // By load, then K, as one replay orders them.
    std::stable_sort(out.report.rows.begin(), out.report.rows.end(),
                     [](const whatif::OnlineRow& a, const whatif::OnlineRow& b) {
                       return a.rate != b.rate ? a.rate < b.rate : a.k < b.k;
                     });
  }
  whatif::RankSettings(&out.report);
  out.source.trace_path = req.acceptance.source;
  out.source.model = resolved.model_spec.name;
  out.source.gpu = resolved.gpu_spec.name;
  out.source.engine = resolved.engine;
  out.drafter = step.options().drafter;
  out.draft_priced_by = step.draft_priced_by();
  return out;
}

nlohmann::json ToJson(const WhatIfOnlineResult& r) {
  nlohmann::json j = whatif::OnlineReportToJson(r.report);
  j["drafter"] = r.drafter;
  j["draft_priced_by"] = r.draft_priced_by;
  j["scheduler_engine"] = r.scheduler_engine;
  j["requests_from"] = r.requests_from;
  j["kv_cache_from"] = r.kv_from;
  AddSourceJson(r.source, &j);
  return j;
}

std::string OnlineTable(const WhatIfOnlineResult& r) {
  return absl::StrCat("drafter ", r.drafter, " (draft priced by ", r.draft_priced_by, "); ",
                      r.scheduler_engine, "'s scheduler; requests and acceptance from ",
                      r.requests_from, "; KV cache: ", r.kv_from, "\n",
                      whatif::FormatOnlineTable(r.report));
}

}  // namespace specplan::ops
