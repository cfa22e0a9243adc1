#include "cli/whatif_concurrency.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/command_util.h"
#include "cli/cost_flags.h"
#include "plot/chart.h"

namespace specplan::cli {
namespace {

constexpr char kCmd[] = "specplan whatif: ";

// Two panels over log2(B): throughput (log scale) and speedup over plain decoding, one curve per
// strategy, a dashed line where speculation stops paying.
std::vector<plot::Chart> MakeConcurrencyCharts(const whatif::ConcurrencyReport& r) {
  plot::Chart tput, speed;
  tput.title = absl::StrFormat("What-if under concurrency: %s on %s (%s latency), %d steps",
                               r.draft, r.target, r.latency_model, r.ring_steps);
  tput.x.label = "log2(B): B = 2^x requests in flight";
  tput.y.label = "throughput, tokens/s (all requests)";
  tput.y.log = true;
  speed.title = "Speedup over plain decoding at the same B";
  speed.x = tput.x;
  speed.y.label = "speedup over ar";
  for (whatif::Strategy s : whatif::ReportStrategies(r)) {
    plot::Series t, sp;
    t.label = sp.label = whatif::StrategyName(s);
    for (const whatif::ConcurrencyRow& row : r.rows) {
      if (row.strategy != s) continue;
      const double x = std::log2(static_cast<double>(row.batch));
      t.x.push_back(x);
      t.y.push_back(row.throughput);
      sp.x.push_back(x);
      sp.y.push_back(row.speedup);
    }
    tput.series.push_back(std::move(t));
    speed.series.push_back(std::move(sp));
  }
  if (r.stop_paying_batch > 0) {
    const plot::VerticalLine stop{std::log2(static_cast<double>(r.stop_paying_batch)),
                                  absl::StrFormat("stops paying B=%d", r.stop_paying_batch),
                                  0xB22222u};
    tput.vlines = speed.vlines = {stop};
  }
  return {tput, speed};
}

// Two panels against throughput (tokens/s): TPOT p50 and TTFT p90 (ms), one curve per setting
// (plain decoding and each K), a point per load; an SLO given is a grey horizontal line.
std::vector<plot::Chart> MakeOnlineCharts(const ops::WhatIfOnlineResult& result) {
  const whatif::OnlineReport& r = result.report;
  plot::Chart tpot, ttft;
  tpot.title =
      absl::StrFormat("Online what-if: %s on %s (%s's scheduler), %d requests per load",
                      result.source.model, result.source.gpu, result.scheduler_engine, r.requests);
  tpot.x.label = "throughput, output tokens/s";
  tpot.y.label = "TPOT p50, ms";
  ttft.title = "Time to first token";
  ttft.x = tpot.x;
  ttft.y.label = "TTFT p90, ms";
  std::vector<int> ks;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const whatif::OnlineRow& row : r.rows) {
    if (std::find(ks.begin(), ks.end(), row.k) == ks.end()) ks.push_back(row.k);
    if (std::isfinite(row.throughput)) {
      lo = std::min(lo, row.throughput);
      hi = std::max(hi, row.throughput);
    }
  }
  for (int k : ks) {
    plot::Series a, b;
    a.label = b.label = k == 0 ? std::string("plain decoding") : absl::StrFormat("K = %d", k);
    for (const whatif::OnlineRow& row : r.rows) {
      if (row.k != k) continue;
      a.x.push_back(row.throughput);
      a.y.push_back(1e3 * row.tpot.p50);
      b.x.push_back(row.throughput);
      b.y.push_back(1e3 * row.ttft.p90);
    }
    tpot.series.push_back(std::move(a));
    ttft.series.push_back(std::move(b));
  }
  for (const auto& [limit, chart, name] :
       {std::tuple<double, plot::Chart*, const char*>{r.slo.tpot_s, &tpot, "TPOT"},
        {r.slo.ttft_s, &ttft, "TTFT"}}) {
    if (limit <= 0 || !(hi > 0)) continue;
    plot::Series line;
    line.label = absl::StrFormat("%s SLO %g ms", name, 1e3 * limit);
    line.x = {lo, hi};
    line.y = {1e3 * limit, 1e3 * limit};
    line.style = plot::SeriesStyle::kLine;
    line.rgb = 0x808080u;
    chart->series.push_back(std::move(line));
  }
  return {tpot, ttft};
}

}  // namespace

CLI::Option* AddCalibrateFlag(CLI::App* cmd, ReplayFlags* flags, const std::string& help) {
  return cmd->add_flag("--calibrate", flags->calibrate, help);
}

CLI::Option* AddBatchScanFlag(CLI::App* cmd, ReplayFlags* flags, const std::string& help) {
  return cmd->add_flag("--batch-scan", flags->batch_scan, help);
}

void ReplayFlags::Fill(ops::WhatIfConcurrencyRequest* req) const {
  req->trace = trace;
  req->t_draft_ms = t_draft_ms;
  if (draft_batch_growth_option->count() > 0) req->draft_batch_growth = draft_batch_growth;
  req->calibrate = calibrate;
  req->batch_scan = batch_scan;
}

absl::Status WhatIfErrorInFlags(const absl::Status& status) {
  if (absl::StartsWith(status.message(), "trace ")) {
    return absl::Status(status.code(), absl::StrCat("--", status.message()));
  }
  return CostErrorInFlags(status);
}

void PrintWhatIfText(const ops::WhatIfSource& source, const std::string& table,
                     const std::string& plot) {
  std::cout << absl::StrFormat(
                   "%s on %s (%s)%s%s\n", source.model, source.gpu, source.dtype,
                   source.profile.empty() ? "" : ", profile ",
                   DescribeProfile(source.profile, source.engine, source.engine_version))
            << "trace file: " << source.trace_path << "\n"
            << table;
  if (!plot.empty()) std::cout << "plot: " << plot << "\n";
}

int RunWhatIfConcurrency(const ops::WhatIfConcurrencyRequest& given, bool json,
                         const std::string& plot, const OutputFlags& output) {
  ops::WhatIfConcurrencyRequest req = given;
  if (isatty(STDERR_FILENO) && req.batch_sizes.size() > 1 && !req.recorded) {
    req.progress = [](int done, int total) {
      std::cerr << "\rspecplan whatif: " << done << "/" << total << " batch sizes" << std::flush;
      if (done == total) std::cerr << "\n";
    };
  }
  auto result = ops::WhatIfConcurrency(req);
  if (Failed(kCmd, WhatIfErrorInFlags(result.status()))) return 1;
  if (!plot.empty() && !WritePlot(kCmd, plot, MakeConcurrencyCharts(result->report), output)) {
    return 1;
  }
  if (json) {
    std::cout << ops::ToJson(*result).dump(2) << "\n";
  } else {
    PrintWhatIfText(result->source, whatif::FormatConcurrencyTable(result->report), plot);
  }
  return 0;
}

// The replay's and the operation's field names as the flags that set them.
static std::string OnlineErrorInFlags(const absl::Status& status) {
  std::string msg(WhatIfErrorInFlags(status).message());
  for (const auto& [field, flag] : {std::pair<std::string, std::string>{"rates[", "--rates ["},
                                    {"in_flight = ", "--max-concurrency "},
                                    {"chain_lengths: ", "--chains: "},
                                    {"kv_cache_tokens = ", "--kv-cache-tokens "},
                                    {"max_running = ", "--max-num-seqs "},
                                    {"token_budget = ", "--max-num-batched-tokens "},
                                    {"prompt_tokens = ", "--prompt-tokens "},
                                    {"prompt_tokens: ", "--prompt-tokens: "},
                                    {"output_tokens: ", "--output-tokens: "},
                                    {"output_tokens = ", "--output-tokens "},
                                    {"num_prompts = ", "--num-prompts "},
                                    {"gpu_memory_utilization = ", "--gpu-memory-utilization "},
                                    {"mem_fraction_static = ", "--mem-fraction-static "},
                                    {"memory_fraction = ", "--gpu-memory-utilization "},
                                    {"acceptance: ", "--acceptance: "},
                                    {"drafter: none", "--drafter names a cost class"}}) {
    if (msg.rfind(field, 0) == 0) return flag + msg.substr(field.size());
  }
  return msg;
}

int RunChainReplay(const ops::WhatIfChainsRequest& req, bool json) {
  auto result = ops::WhatIfChains(req);
  if (!result.ok()) {
    // The replay names its fields; say them as the flags that set them (the engine's limits, with
    // --prefill, as --online names them).
    std::string msg = OnlineErrorInFlags(result.status());
    for (const auto& [field, flag] :
         {std::pair<std::string, std::string>{"batch_sizes: ", "--concurrency: "},
          {"context = ", "--context "}}) {
      if (msg.rfind(field, 0) == 0) msg = flag + msg.substr(field.size());
    }
    std::cerr << kCmd << msg << "\n";
    return 1;
  }
  if (json) {
    std::cout << ops::ToJson(*result).dump(2) << "\n";
  } else {
    PrintWhatIfText(result->source, ops::ChainsTable(*result), "");
  }
  return 0;
}

}  // namespace specplan::cli

namespace specplan::cli {
namespace {

// Comma-separated numbers; errors quote the item ("\"x\" is not a number").
absl::StatusOr<std::vector<double>> ParseRates(const std::string& text) {
  std::vector<double> out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(item), &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", std::string(item), "\" is not a number (requests/s)"));
    }
    out.push_back(v);
  }
  return out;
}

// Comma-separated chain lengths K >= 0 (0 = plain decoding).
absl::StatusOr<std::vector<int>> ParseChainList(const std::string& text) {
  std::vector<int> out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(item), &v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", std::string(item), "\" must be an integer >= 0 (0 = plain decoding)"));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

void AddOnlineFlags(CLI::App* cmd, OnlineFlags* f) {
  cmd->add_flag("--online", f->online,
                "Replay a request stream served online (whatif/online.h): requests arrive "
                "(--rates or --max-concurrency), each prefills its prompt and decodes under the "
                "engine's limits; throughput and p50/p90/p99 TTFT, TPOT, ITL, E2E for plain "
                "decoding and each --chains K. Needs --acceptance (a per-step trace, or rates "
                "with --prompt-tokens and --output-tokens)");
  auto add = [&](CLI::Option* o) {
    f->options.push_back(o);
    return o;
  };
  add(cmd->add_option("--rates", f->rates,
                      "With --online: arrival rates, requests/s, comma-separated (each > 0); one "
                      "replay per rate"));
  add(cmd->add_option("--max-concurrency", f->max_concurrency,
                      "With --online: a closed loop with N requests in flight instead of rates "
                      "(vllm bench serve's name)"));
  add(cmd->add_option("--arrivals", f->arrivals,
                      "With --online --rates: poisson (seeded) or constant (evenly spaced)")
          ->capture_default_str());
  add(cmd->add_option("--num-prompts", f->num_prompts,
                      "With --online: requests per replay (0: the trace's requests, cycled in "
                      "order beyond them; 1000 for rates)"));
  add(cmd->add_option("--seed", f->seed,
                      "With --online: seed of the arrivals, lengths and acceptance draws")
          ->capture_default_str());
  add(cmd->add_option("--prompt-tokens", f->prompt_tokens,
                      "With --online and rates: prompt length N, or LO:HI drawn uniformly"));
  add(cmd->add_option("--output-tokens", f->output_tokens,
                      "With --online and rates: output length N, or LO:HI drawn uniformly"));
  f->max_running_option =
      add(cmd->add_option("--max-num-seqs,--max-running-requests", f->max_running,
                          "With --online or --prefill: most requests running at once (default: "
                          "the engine's; vLLM 1024 on a GPU of >= 70 GiB, else 256; SGLang 48 "
                          "when speculating)"));
  f->token_budget_option = add(cmd->add_option(
      "--max-num-batched-tokens,--chunked-prefill-size", f->token_budget,
      "With --online or --prefill: tokens per step (vLLM: prefill chunks and verified tokens "
      "share it; SGLang: prompt tokens per prefill step); default: the engine's (vLLM 8192 on "
      ">= 70 GiB else 2048; SGLang 8192 below 160 GiB)"));
  f->chunked_option =
      add(cmd->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", f->chunked_prefill,
                        "With --online or --prefill: chunk long prompts across steps (default on, "
                        "as in vLLM V1 and SGLang)"));
  f->kv_option = add(cmd->add_option("--kv-cache-tokens", f->kv_cache_tokens,
                                     "With --online or --prefill: tokens the KV cache holds "
                                     "(default: from the GPU's memory, the memory fraction and "
                                     "the weights)"));
  f->fraction_option =
      add(cmd->add_option("--gpu-memory-utilization,--mem-fraction-static", f->memory_fraction,
                          "With --online or --prefill: fraction of the GPU's memory for weights "
                          "and KV cache (default vLLM 0.9, SGLang 0.88)"));
  add(cmd->add_option("--slo-ttft-ms", f->slo_ttft_ms,
                      "With --online: a request meets its SLO only with TTFT at most this (ms); "
                      "goodput counts the output tokens of requests that met every SLO, and the "
                      "best setting per load is the one with the highest goodput (0 = no limit)")
          ->check(MsRange()));
  add(cmd->add_option("--slo-tpot-ms", f->slo_tpot_ms,
                      "With --online: the TPOT limit (ms per output token after the first; see "
                      "--slo-ttft-ms)")
          ->check(MsRange()));
}

std::string OnlineOnlyFlagGiven(const OnlineFlags& f) {
  const std::vector<const CLI::Option*> limits = f.LimitOptions();
  for (const CLI::Option* o : f.options) {
    if (std::find(limits.begin(), limits.end(), o) != limits.end()) continue;
    if (o->count() > 0) return "--" + o->get_lnames().front();
  }
  return "";
}

ops::EngineLimitRequest OnlineFlags::Limits() const {
  ops::EngineLimitRequest l;
  if (max_running_option->count() > 0) l.max_running = max_running;
  if (token_budget_option->count() > 0) l.token_budget = token_budget;
  if (chunked_option->count() > 0) l.chunked_prefill = chunked_prefill;
  if (kv_option->count() > 0) l.kv_cache_tokens = kv_cache_tokens;
  if (fraction_option->count() > 0) l.memory_fraction = memory_fraction;
  return l;
}

std::string OnlineFlags::LimitFlagGiven() const {
  for (const CLI::Option* o : LimitOptions()) {
    if (o->count() > 0) return "--" + o->get_lnames().front();
  }
  return "";
}

int RunWhatIfOnline(const OnlineFlags& f, const ops::CostRequest& cost,
                    const AcceptanceFlags& acceptance, const std::string& chains, bool independent,
                    bool json, const std::string& plot, const OutputFlags& output) {
  if (!acceptance.given()) {
    std::cerr << kCmd << "--online needs --acceptance FILE (a per-step trace, or an engine's "
              << "acceptance rates with --prompt-tokens and --output-tokens)\n";
    return 1;
  }
  if (f.rates.empty() == (f.max_concurrency == 0)) {
    std::cerr << kCmd << "--online needs one of --rates LIST (requests/s) or --max-concurrency N "
              << "(a closed loop)\n";
    return 1;
  }
  if (f.arrivals != "poisson" && f.arrivals != "constant") {
    std::cerr << kCmd << "--arrivals " << f.arrivals << ": must be poisson or constant\n";
    return 1;
  }
  ops::WhatIfOnlineRequest req;
  req.cost = cost;
  req.independent = independent;
  req.num_prompts = f.num_prompts;
  req.seed = f.seed;
  req.online.arrivals.seed = f.seed;
  req.online.arrivals.constant = f.arrivals == "constant";
  req.online.slo.ttft_s = f.slo_ttft_ms / 1e3;
  req.online.slo.tpot_s = f.slo_tpot_ms / 1e3;
  if (!f.rates.empty()) {
    auto rates = ParseRates(f.rates);
    if (Failed(kCmd, rates.status(), "--rates ")) return 1;
    req.online.arrivals.rates = *rates;
  } else {
    req.online.arrivals.in_flight = f.max_concurrency;
  }
  for (const auto& [text, flag, range] :
       {std::tuple<const std::string&, const char*, ops::LengthRange*>{
            f.prompt_tokens, "--prompt-tokens ", &req.prompt_tokens},
        {f.output_tokens, "--output-tokens ", &req.output_tokens}}) {
    if (text.empty()) continue;
    auto parsed = ops::ParseLengthRange(text);
    if (Failed(kCmd, parsed.status(), flag)) return 1;
    *range = *parsed;
  }
  req.limits = f.Limits();
  auto loaded = acceptance.Load();
  if (Failed(kCmd, loaded.status())) return 1;
  req.acceptance = *std::move(loaded);
  if (req.acceptance.has_trace() && !independent &&
      (!f.prompt_tokens.empty() || !f.output_tokens.empty())) {
    std::cerr << kCmd << (f.prompt_tokens.empty() ? "--output-tokens" : "--prompt-tokens")
              << " does not apply to a per-step trace (its requests give their lengths); "
              << "--independent draws acceptance from its rates but keeps its lengths too\n";
    return 1;
  }
  if (chains.empty()) {
    for (int k = 0; k <= std::min(req.acceptance.k_max, 8); ++k) {
      req.online.chain_lengths.push_back(k);
    }
  } else {
    auto ks = ParseChainList(chains);
    if (Failed(kCmd, ks.status(), "--chains ")) return 1;
    req.online.chain_lengths = *ks;
  }
  // A bar on a terminal; otherwise a line at most every 2 s, so a short sweep prints none.
  const bool tty = isatty(STDERR_FILENO);
  auto last =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  req.online.progress = [tty, last](int done, int total) {
    if (total <= 1) return;
    if (tty) {
      constexpr int kWidth = 30;
      const int filled = done * kWidth / total;
      std::cerr << "\r" << kCmd << "[" << std::string(static_cast<size_t>(filled), '#')
                << std::string(static_cast<size_t>(kWidth - filled), ' ') << "] " << done << "/"
                << total << " replays" << std::flush;
      if (done == total) std::cerr << "\n";
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - *last >= std::chrono::seconds(2)) {
      *last = now;
      std::cerr << kCmd << "replay " << done << "/" << total << " done\n";
    }
  };
  auto result = ops::WhatIfOnline(req);
  if (!result.ok()) {
    std::cerr << kCmd << OnlineErrorInFlags(result.status()) << "\n";
    return 1;
  }
  if (!plot.empty() && !WritePlot(kCmd, plot, MakeOnlineCharts(*result), output)) return 1;
  if (json) {
    std::cout << ops::ToJson(*result).dump(2) << "\n";
  } else {
    PrintWhatIfText(result->source, ops::OnlineTable(*result), plot);
  }
  return 0;
}

}  // namespace specplan::cli
