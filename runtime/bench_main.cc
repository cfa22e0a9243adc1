// specplan-bench: runs decoding strategies side by side on the same prompts and reports
// DynaTree (docs/references.md) §4.2's metric set (tokens/s, speedup vs AR, acceptance, tokens per
// iteration, committed path length, iterations, TTFT, TPOT, peak memory).
//
//   specplan-bench --target random:tiny --draft random:tiny-draft
//     --strategies ar,linear,fixed,dynatree,bestfirst,merged --max-new-tokens 64 --json out.json
//
// --batch B decodes B sequences together (runtime/batch_decoder.h): one target pass verifies every
// sequence's tree, and prompts join as others finish.
//
// --record-trace FILE also records the first listed strategy's (greedy) run as a what-if trace
// (whatif/trace.h, runtime/trace_recorder.h).
//
// This file is long (over 500 lines) because it is the whole front end of one binary: the flag
// definitions in main() and RunBench(), which loads the models and runs every strategy in one
// loop that prints the table, fills the JSON report and records the trace from the same results.
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/remote_planner.h"
#include "costmodel/cost_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "ops/cost_request.h"
#include "runtime/batch_decoder.h"
#include "runtime/draft_heads.h"
#include "runtime/model_loader.h"
#include "runtime/peak_memory.h"
#include "runtime/text_prompts.h"
#include "runtime/tool_main.h"
#include "runtime/trace_recorder.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/json_util.h"
#include "util/lines.h"
#include "util/percentile.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

// Prompt lines are {"ids": [int, ...]} or, with a tokenizer, {"text": "..."} (encoded in one
// specplan-tokenizer call).
absl::StatusOr<std::vector<std::vector<planner::TokenId>>> ReadPrompts(
    const std::string& path, int64_t vocab, const TokenizerProcess* tokenizer) {
  std::vector<std::vector<planner::TokenId>> prompts;
  std::vector<std::string> texts, text_where;
  std::vector<size_t> text_index;
  absl::Status read = ForEachNonBlankLine(path, [&](std::string_view line, size_t lineno) {
    const std::string where = absl::StrCat(path, ":", lineno, ": ");
    absl::StatusOr<nlohmann::json> parsed = json_util::ParseJson(line, path, lineno);
    if (!parsed.ok()) return parsed.status();
    nlohmann::json j = *std::move(parsed);
    if (!j.is_object()) {
      return absl::InvalidArgumentError(
          where + "expected a JSON object {\"ids\": [int, ...]} or {\"text\": \"...\"}");
    }
    if (!j.contains("ids") && j.contains("text")) {
      if (!j["text"].is_string() || j["text"].get<std::string>().empty()) {
        return absl::InvalidArgumentError(where + "text: not a string, or empty");
      }
      if (tokenizer == nullptr) {
        return absl::InvalidArgumentError(
            where +
            "a {\"text\": ...} prompt needs --tokenizer MODEL (e.g. models/tokenizer.model)");
      }
      text_index.push_back(prompts.size());
      texts.push_back(j["text"].get<std::string>());
      text_where.push_back(where);
      prompts.emplace_back();
      return absl::OkStatus();
    }
    if (!j.contains("ids") || !j["ids"].is_array() || j["ids"].empty()) {
      return absl::InvalidArgumentError(where + "ids: missing, not an array, or empty");
    }
    std::vector<planner::TokenId> ids;
    for (size_t i = 0; i < j["ids"].size(); ++i) {
      const auto& v = j["ids"][i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab) {
        return absl::InvalidArgumentError(absl::StrCat(where, "ids[", i,
                                                       "] = ", json_util::Quote(v),
                                                       ": must be an integer in [0, ", vocab, ")"));
      }
      ids.push_back(static_cast<planner::TokenId>(v.get<int64_t>()));  // < vocab: fits
    }
    prompts.push_back(std::move(ids));
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  if (prompts.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no prompts"));
  if (!texts.empty()) {
    absl::StatusOr<std::vector<std::vector<planner::TokenId>>> ids = tokenizer->Encode(texts);
    if (!ids.ok())
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", ids.status().message()));
    for (size_t t = 0; t < texts.size(); ++t) {
      for (planner::TokenId id : (*ids)[t]) {
        if (id < 0 || id >= vocab) {
          return absl::InvalidArgumentError(absl::StrCat(
              text_where[t], "the tokenizer gave id ", id, ", outside the target's vocabulary [0, ",
              vocab, ") (a tokenizer for another model?)"));
        }
      }
      if ((*ids)[t].empty())
        return absl::InvalidArgumentError(text_where[t] + "text encodes to no ids");
      prompts[text_index[t]] = std::move((*ids)[t]);
    }
  }
  return prompts;
}

// A bar on a terminal; a plain line per finished prompt otherwise (logs, CI).
void Progress(const std::string& name, int done, int total) {
  static const bool tty = isatty(fileno(stderr)) != 0;
  if (!tty) {
    if (done > 0) std::fprintf(stderr, "%s: %d/%d prompts\n", name.c_str(), done, total);
    return;
  }
  const int width = 30;
  const int filled = total == 0 ? width : done * width / total;
  std::fprintf(stderr, "\r%-10s [%s%s] %d/%d", name.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

struct Args {
  std::string target = "random:tiny";
  std::string draft = "random:tiny-draft";
  std::string heads;          // draft heads directory (strategies heads, causal)
  std::string tokenizer;      // SentencePiece model: {"text": ...} prompts, --print-text
  std::string tokenizer_bin;  // the specplan-tokenizer executable ("" = beside this one)
  bool print_text = false;
  std::string merged_b = "lookup";        // merged's second tree: lookup | heads
  std::string trace_marginals = "chain";  // --record-trace marginals: chain | heads
  std::string strategies = "ar,linear,fixed,dynatree,bestfirst,merged";
  std::string prompts = std::string(SPECPLAN_RUNTIME_PROMPTS_DIR) + "/tiny.jsonl";
  int max_new_tokens = 64;
  int max_prompts = 0;
  int batch = 1;  // sequences in flight (bounded continuous batching)
  std::string device = "cpu";
  std::string dtype = "fp32";
  std::string json_out;
  uint64_t seed = 0;
  int threads = 0;
  std::string kv_update = "gather";
  std::string gate = "on";  // the speculation gate of bestfirst / dynatree / batch
  float temperature = 0.0f;
  // The controller's cost, resolved as the specplan CLI resolves its cost flags
  // (costmodel::ResolveCost): --profile, else --gpu's bundled profile for the target.
  std::string profile;        // costmodel profile JSON
  std::string gpu;            // registry name or GPU spec JSON
  std::string engine;         // whose kernels: sglang, vllm, trtllm, specplan; "" = the first held
  std::string latency_model;  // a model of the profile other than its default
  int64_t tp = 0;             // tensor parallelism; 0 = the profile's
  std::string record_trace;   // what-if trace of the first strategy's run
  int trace_nodes = 64;       // recorded tree nodes per step
  std::string planner;        // HOST:PORT of a specplan-server; "" = plan in-process
  double planner_connect_s = 10;  // seconds to wait for --planner before giving up
  std::string command_line;       // for the trace header
};

// The verification-latency model the controllers price with, through costmodel::ResolveCost:
// --profile, or with --gpu the bundled profile of the target (DIR's config.json, or random:NAME)
// for --dtype, --tp and --engine, else the bare roofline; --latency-model picks another of the
// profile's models. Null when neither --profile nor --gpu is given (T_verify is then measured on
// the target). `described` gets the report's "cost".
absl::StatusOr<std::unique_ptr<costmodel::LatencyModel>> ResolveLatency(const Args& args,
                                                                        nlohmann::json* described) {
  if (args.profile.empty() && args.gpu.empty()) {
    if (!args.engine.empty() || !args.latency_model.empty() || args.tp != 0) {
      return absl::InvalidArgumentError(
          "--engine, --latency-model and --tp choose a profile: give --gpu or --profile");
    }
    *described = "measured";
    return nullptr;
  }
  costmodel::CostSpec spec;
  spec.profile_path = args.profile;
  spec.gpu = args.gpu;
  if (!args.gpu.empty()) {
    spec.model = absl::StartsWith(args.target, "random:") ? args.target.substr(7) : args.target;
  }
  spec.engine = args.engine;
  spec.latency_model = args.latency_model;
  spec.tp = args.tp;
  SPECPLAN_ASSIGN_OR_RETURN(spec.dtype, costmodel::ParseDType(args.dtype));
  if (!args.gpu.empty()) {
    // --gpu prices the target as the cost model's registry knows it: a built-in runtime config
    // (random:tiny) is not there. Say which flags meet and what works instead.
    absl::StatusOr<costmodel::ModelSpec> model = costmodel::ResolveModel(spec.model);
    if (!model.ok()) {
      return absl::Status(
          model.status().code(),
          absl::StrCat("--target ", args.target, " with --gpu ", args.gpu, ": ",
                       model.status().message(),
                       ". --gpu prices the target with its bundled profile, which needs a registry "
                       "model or a config directory as --target; else pass --profile FILE (e.g. "
                       "from calibrate --gpu cpu --model ",
                       spec.model, " --out FILE), or drop --gpu to measure T_verify"));
    }
  }
  // Errors in this program's flags: "--engine sglang: no profile ..." (its --target is the model).
  std::vector<costmodel::CostFieldName> names = ops::CostRequestFlagNames();
  for (costmodel::CostFieldName& n : names) {
    if (absl::string_view(n.field) == "model") n.name = "--target";
  }
  auto resolved = costmodel::ResolveCost(spec);
  if (!resolved.ok()) return costmodel::CostErrorInNames(resolved.status(), names);
  costmodel::ResolvedLatencyModel r = *std::move(resolved);
  *described = {{"latency_model", r.model->Kind()},
                {"profile", r.profile_id.empty() ? nlohmann::json() : nlohmann::json(r.profile_id)},
                {"engine", r.engine.empty() ? nlohmann::json() : nlohmann::json(r.engine)}};
  return std::move(r.model);
}

// The flag of a cost field (CostSpec's, "profile_path" -> "--profile"), as the specplan CLI names
// it and as ResolveLatency's errors name it (ops::CostRequestFlagNames).
std::string CostFlag(absl::string_view field) {
  for (const costmodel::CostFieldName& n : ops::CostRequestFlagNames()) {
    if (field == n.field) return n.name;
  }
  SPECPLAN_CHECK(false, "a cost field without a flag");
  return "";
}

std::string ShellQuote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_=.,:/+@%") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char ch : arg) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

absl::Status RunBench(const Args& args) {
  if (!args.record_trace.empty() && args.temperature > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--record-trace needs greedy decoding, got --temperature = ", args.temperature,
                     " (a trace records the target's greedy continuation; use --temperature 0)"));
  }
  if (args.threads > 0) torch::set_num_threads(args.threads);
  RuntimeOptions ro;
  SPECPLAN_ASSIGN_OR_RETURN(ro.dtype, ParseDtype(args.dtype));
  SPECPLAN_ASSIGN_OR_RETURN(ro.device, ParseDevice(args.device));
  SPECPLAN_ASSIGN_OR_RETURN(auto target, LoadModel(args.target, args.seed, ro));
  std::unique_ptr<Transformer> draft;
  if (args.draft == "target") {
    draft = target->Truncated(target->config().num_layers);
  } else if (absl::StartsWith(args.draft, "truncate:")) {
    int64_t layers = 0;
    if (!absl::SimpleAtoi(args.draft.substr(9), &layers) || layers < 1 ||
        layers > target->config().num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("--draft = \"", args.draft,
                       "\": truncate:N needs 1 <= N <= ", target->config().num_layers));
    }
    draft = target->Truncated(layers);
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(draft, LoadModel(args.draft, args.seed + 1, ro));
  }
  std::unique_ptr<DraftHeads> heads;
  if (!args.heads.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(heads, DraftHeads::Load(args.heads, *target));
  }
  std::unique_ptr<TokenizerProcess> tokenizer;
  if (!args.tokenizer.empty()) {
    tokenizer = std::make_unique<TokenizerProcess>(
        args.tokenizer_bin.empty() ? DefaultTokenizerBinary() : args.tokenizer_bin, args.tokenizer);
  } else if (args.print_text) {
    return absl::InvalidArgumentError("--print-text needs --tokenizer MODEL");
  }
  SPECPLAN_ASSIGN_OR_RETURN(
      auto prompts, ReadPrompts(args.prompts, target->config().vocab_size, tokenizer.get()));
  if (args.max_prompts > 0 && static_cast<int>(prompts.size()) > args.max_prompts) {
    prompts.resize(args.max_prompts);
  }
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, p.size());
  std::vector<Strategy> strategies;
  for (absl::string_view name : absl::StrSplit(args.strategies, ',', absl::SkipEmpty())) {
    SPECPLAN_ASSIGN_OR_RETURN(Strategy s, ParseStrategy(std::string(name)));
    if ((StrategyNeedsHeads(s) || (s == Strategy::kMerged && args.merged_b == "heads")) &&
        heads == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--strategies: ", name, " needs draft heads (--heads DIR, e.g. models/heads)"));
    }
    strategies.push_back(s);
  }
  KvUpdate kv = KvUpdate::kGather;
  if (args.kv_update == "rebuild") {
    kv = KvUpdate::kRebuild;
  } else if (args.kv_update != "gather") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-update = \"", args.kv_update, "\": expected gather or rebuild"));
  }

  std::fprintf(stderr,
               "target %s (%lld layers, h=%lld, V=%lld), draft %s (%lld layers), %s %s, "
               "%zu prompts, %d new tokens, batch %d, %d threads\n",
               target->config().name.c_str(), (long long)target->config().num_layers,
               (long long)target->config().hidden_size, (long long)target->config().vocab_size,
               draft->config().name.c_str(), (long long)draft->config().num_layers,
               args.device.c_str(), args.dtype.c_str(), prompts.size(), args.max_new_tokens,
               args.batch, torch::get_num_threads());

  nlohmann::json report = {{"target", args.target},
                           {"draft", args.draft},
                           {"heads", args.heads},
                           {"merged_b", args.merged_b},
                           {"device", args.device},
                           {"dtype", args.dtype},
                           {"max_new_tokens", args.max_new_tokens},
                           {"batch", args.batch},
                           {"prompts", prompts.size()},
                           {"temperature", args.temperature},
                           {"kv_update", args.kv_update},
                           {"gate", args.gate},
                           {"strategies", nlohmann::json::object()}};
  SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<costmodel::LatencyModel> latency,
                            ResolveLatency(args, &report["cost"]));
  // --planner: every best-first plan, merge and batch plan goes to the server (same plans, same
  // tokens).
  std::unique_ptr<planner::PlanBackend> plan_backend;
  if (!args.planner.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(plan_backend,
                              client::ConnectRemotePlanner(args.planner, args.planner_connect_s));
  }
  report["planner"] = plan_backend ? plan_backend->Name() : "in-process";
  double ar_tps = 0;
  std::vector<std::vector<planner::TokenId>> ar_outputs;
  std::printf("%-10s %9s %8s %7s %8s %6s %7s %6s %8s %8s %8s %9s %6s\n", "strategy", "tok/s",
              "speedup", "accept", "tok/iter", "tree", "no_spec", "passes", "TTFT_ms", "TPOT_p50",
              "TPOT_p99", ro.device.is_cuda() ? "dev_MB" : "peak_MB", "exact");
  std::vector<std::string> policy_rows;                      // printed after the main table
  std::vector<std::vector<planner::TokenId>> first_outputs;  // --print-text
  if (args.trace_marginals == "heads" && heads == nullptr) {
    return absl::InvalidArgumentError("--trace-marginals heads: needs --heads DIR");
  }
  if (!args.record_trace.empty() && strategies.empty()) {
    return absl::InvalidArgumentError("--record-trace: --strategies is empty");
  }
  for (const Strategy& s : strategies) {
    // Peak memory is this strategy's: decoder creation, warm-up and the measured run.
    const bool peak_reset = ResetPeakMemory(ro.device);
    StrategyOptions o = StrategyOptions::Defaults(s);
    o.kv_update = kv;
    o.gate.enabled = args.gate == "on";
    o.sampling.greedy = args.temperature <= 0;
    o.sampling.temperature = args.temperature > 0 ? args.temperature : 1.0f;
    o.sampling.seed = args.seed;
    o.heads = heads.get();
    o.merged_b = args.merged_b == "heads" ? MergedB::kHeads : MergedB::kLookup;
    o.latency = latency.get();            // null: measured on the target at Create
    o.plan_backend = plan_backend.get();  // null: in-process
    const int64_t max_context = longest + args.max_new_tokens + 1;
    SPECPLAN_ASSIGN_OR_RETURN(
        auto dec, BatchDecoder::Create(target.get(), draft.get(), o, args.batch, max_context));
    // Warm-up (allocator, kernels) outside the measurement.
    SPECPLAN_RETURN_IF_ERROR(dec->Run({prompts[0]}, std::min(8, args.max_new_tokens)).status());
    SPECPLAN_ASSIGN_OR_RETURN(
        dec, BatchDecoder::Create(target.get(), draft.get(), o, args.batch, max_context));
    // The recorder re-drafts each step with its own drafters after the run: the run and its
    // timings are unchanged.
    std::unique_ptr<TraceRecorder> recorder;
    if (!args.record_trace.empty() && &s == &strategies.front()) {
      TraceRecorderOptions ro;
      ro.gamma = o.bestfirst_gamma;
      ro.top_k = o.draft_top_k;
      ro.max_nodes = args.trace_nodes;
      if (args.trace_marginals == "heads") ro.heads = heads.get();
      SPECPLAN_ASSIGN_OR_RETURN(recorder,
                                TraceRecorder::Create(draft.get(), o.sampling, max_context, ro));
    }
    const int total = static_cast<int>(prompts.size());
    Progress(StrategyName(s), 0, total);
    SPECPLAN_ASSIGN_OR_RETURN(std::vector<GenerationResult> results,
                              dec->Run(prompts, args.max_new_tokens, [&](int done, int all) {
                                Progress(StrategyName(s), done, all);
                              }));
    std::vector<std::vector<planner::TokenId>> outputs;
    std::vector<double> tpots;  // per request: time per output token after the first
    double ttft = 0, tpot_sum = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult& r = results[i];
      if (recorder) {
        SPECPLAN_RETURN_IF_ERROR(recorder->Record(static_cast<int64_t>(i), prompts[i], r));
      }
      ttft += r.ttft_s;
      if (args.max_new_tokens > 1) {
        tpots.push_back((r.total_s - r.ttft_s) / (args.max_new_tokens - 1));
        tpot_sum += tpots.back();
      }
      outputs.push_back(r.tokens);
    }
    std::sort(tpots.begin(), tpots.end());
    const double tpot_p50 = Percentile(tpots, 0.5), tpot_p99 = Percentile(tpots, 0.99);
    const BatchCounters& bc = dec->counters();
    const DecodeCounters& c = bc.decode;
    const double tps = static_cast<double>(c.new_tokens) / c.total_s;
    if (s == Strategy::kAr) {
      ar_tps = tps;
      ar_outputs = outputs;
    }
    if (&s == &strategies.front()) first_outputs = outputs;
    const double n = static_cast<double>(prompts.size());
    const PeakMemory peak = ReadPeakMemory(ro.device);
    // On CUDA the column (dev_MB) is the device's peak; the host's is in the JSON report.
    const double peak_mb =
        static_cast<double>(peak.device_bytes >= 0 ? peak.device_bytes : peak.host_rss_bytes) / 1e6;
    std::string exact = "-";
    if (!ar_outputs.empty() && o.sampling.greedy) exact = outputs == ar_outputs ? "yes" : "NO";
    const std::string speedup = ar_tps > 0 ? absl::StrFormat("%.2fx", tps / ar_tps) : "-";
    std::printf("%-10s %9.1f %8s %7.3f %8.2f %6.2f %7.3f %6lld %8.2f %8.2f %8.2f %9.1f %6s\n",
                StrategyName(s), tps, speedup.c_str(), c.acceptance.AcceptedFraction(),
                c.tokens_per_iteration(), bc.mean_tree_size(), bc.undrafted_fraction(),
                (long long)bc.passes, 1e3 * ttft / n, 1e3 * tpot_p50, 1e3 * tpot_p99, peak_mb,
                exact.c_str());
    std::fflush(stdout);
    nlohmann::json js = {
        {"outputs", outputs},
        {"tokens_per_s", tps},
        {"speedup_vs_ar", ar_tps > 0 ? nlohmann::json(tps / ar_tps) : nlohmann::json()},
        {"acceptance_rate", c.acceptance.AcceptedFraction()},
        {"tokens_per_iteration", c.tokens_per_iteration()},
        {"mean_committed_path_length", c.acceptance.MeanAcceptedLength()},
        {"iterations", c.iterations()},
        {"drafted", c.drafted()},
        {"accepted", c.accepted()},
        {"target_forwards", c.target_forwards},
        {"verified_tokens", c.verified_tokens},
        {"ttft_s", ttft / n},
        {"tpot_s", tpot_sum / n},
        {"tpot_p50_s", tpot_p50},
        {"tpot_p99_s", tpot_p99},
        {"mean_tree_size", bc.mean_tree_size()},
        {"undrafted_fraction", bc.undrafted_fraction()},
        {"passes", bc.passes},
        {"mean_batch", bc.mean_batch()},
        {"total_s", c.total_s},
        {"draft_s", c.draft_s},
        {"verify_s", c.verify_s},
        {"update_s", c.update_s},
        {"peak_rss_bytes", peak.host_rss_bytes},
        {"peak_rss_per_strategy", peak_reset},
        {"peak_device_bytes",
         peak.device_bytes >= 0 ? nlohmann::json(peak.device_bytes) : nlohmann::json()},
        {"kv_cache_bytes", dec->cache_bytes()},
        {"target_parameter_bytes", target->ParameterBytes()},
        {"greedy_equals_ar", ar_outputs.empty() || !o.sampling.greedy
                                 ? nlohmann::json()
                                 : nlohmann::json(outputs == ar_outputs)}};
    if (const std::optional<DrafterCounters> dc = dec->drafter_counters()) {
      js["draft_forwards"] = dc->forwards;
      js["draft_fed_tokens"] = dc->fed_tokens;
      js["draft_reused_rows"] = dc->reused_rows;
    }
    if (const std::optional<planner::PolicyStats> ps = dec->policy_stats()) {
      const std::string policy = dec->strategy().PolicyName();
      js["policy"] = {{"name", policy},
                      {"steps", ps->steps},
                      {"forwards", ps->forwards},
                      {"expansions", ps->expansions},
                      {"drafted_nodes", ps->drafted_nodes},
                      {"tree_nodes", ps->tree_nodes},
                      {"observed_steps", ps->observed_steps},
                      {"accepted", ps->accepted},
                      {"mean_accepted", ps->mean_accepted()}};
      policy_rows.push_back(absl::StrFormat(
          "%-10s %-30s %6lld %8lld %10lld %8lld %8lld %8.2f", StrategyName(s), policy,
          (long long)ps->steps, (long long)ps->forwards, (long long)ps->expansions,
          (long long)ps->drafted_nodes, (long long)ps->tree_nodes, ps->mean_accepted()));
    }
    report["strategies"][StrategyName(s)] = js;
    if (recorder) {
      whatif::TraceHeader h;
      h.target = args.target;
      h.draft = args.draft;
      h.vocab = target->config().vocab_size;
      h.source = args.command_line;
      h.created_utc = UtcTimestamp();
      const whatif::Trace trace = recorder->MakeTrace(std::move(h));
      SPECPLAN_RETURN_IF_ERROR(whatif::SaveTrace(trace, args.record_trace));
      std::fprintf(stderr, "trace: %zu steps of %s (%lld iterations) written to %s\n",
                   trace.steps.size(), StrategyName(s), (long long)c.iterations(),
                   args.record_trace.c_str());
    }
  }
  if (!policy_rows.empty()) {
    // The planner policies' own counters (planner::PolicyStats) over the measured run.
    std::printf("\n%-10s %-30s %6s %8s %10s %8s %8s %8s\n", "strategy", "policy", "steps",
                "forwards", "expansions", "drafted", "nodes", "L_mean");
    for (const std::string& row : policy_rows) std::printf("%s\n", row.c_str());
  }
  if (args.print_text && !first_outputs.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(std::vector<std::string> prompt_text, tokenizer->Decode(prompts));
    SPECPLAN_ASSIGN_OR_RETURN(std::vector<std::string> output_text,
                              tokenizer->Decode(first_outputs));
    nlohmann::json texts = nlohmann::json::array();
    std::printf("\n%s outputs:\n", StrategyName(strategies.front()));
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::printf("[%zu] %s ||| %s\n", i, prompt_text[i].c_str(), output_text[i].c_str());
      texts.push_back({{"prompt", prompt_text[i]}, {"output", output_text[i]}});
    }
    report["texts"] = texts;
  }
  if (!args.json_out.empty()) {
    std::ofstream out(args.json_out);
    out << report.dump(2) << "\n";
    if (!out) return absl::InternalError(absl::StrCat(args.json_out, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace specplan::runtime

int main(int argc, char** argv) {
  specplan::runtime::Args args;
  CLI::App app{"specplan-bench: speculative decoding strategies side by side (LibTorch)"};
  app.add_option("--target", args.target, "DIR (config.json + safetensors) or random:NAME")
      ->capture_default_str();
  app.add_option("--draft", args.draft,
                 "DIR, random:NAME, 'target' (the target itself) or truncate:N (its first N "
                 "layers, shared weights)")
      ->capture_default_str();
  app.add_option("--heads", args.heads,
                 "DIR of draft heads trained on the target (models/heads): needed by the heads "
                 "and causal strategies");
  app.add_option("--strategies", args.strategies,
                 "comma list of ar, linear, fixed, dynatree, bestfirst, lookup, merged, batch, "
                 "heads, causal (batch: one global batch planner sizes every sequence's tree; "
                 "heads: best-first over parallel draft heads; causal: path-conditioned "
                 "best-first over the causal-correction head)")
      ->capture_default_str();
  app.add_option("--prompts", args.prompts,
                 "JSONL file, one {\"ids\": [int, ...]} or (with --tokenizer) {\"text\": \"...\"} "
                 "per line")
      ->capture_default_str();
  specplan::runtime::AddChoiceOption(
      app, "--merged-b", &args.merged_b, {"lookup", "heads"},
      "merged's second tree: lookup (prompt lookup n-grams) or heads (best-first over "
      "the parallel draft heads, --heads)");
  specplan::runtime::AddChoiceOption(
      app, "--trace-marginals", &args.trace_marginals, {"chain", "heads"},
      "--record-trace's marginals: chain (the draft model's greedy chain lattice) or "
      "heads (the parallel draft heads, --heads)");
  app.add_option("--tokenizer", args.tokenizer,
                 "SentencePiece model of the target (models/tokenizer.model): encodes text prompts "
                 "and decodes outputs, through the specplan-tokenizer binary");
  app.add_option("--tokenizer-bin", args.tokenizer_bin,
                 "specplan-tokenizer executable (default: the build's, beside this binary, else "
                 "PATH)");
  app.add_flag("--print-text", args.print_text,
               "Print each prompt and the first strategy's continuation as text (--tokenizer)");
  specplan::runtime::AddRangeOption(app, "--max-new-tokens", &args.max_new_tokens, 1, 1 << 20,
                                    "tokens generated per prompt");
  app.add_option("--max-prompts", args.max_prompts, "use only the first N prompts (0 = all)");
  specplan::runtime::AddRangeOption(
      app, "--batch", &args.batch, 1, 4096,
      "sequences decoded together, one verification pass per step; a waiting prompt "
      "joins as soon as one finishes");
  specplan::runtime::AddDeviceFlag(app, &args.device);
  specplan::runtime::AddDtypeFlag(app, &args.dtype);
  app.add_option("--json", args.json_out, "write the report (outputs and metrics) here");
  app.add_option("--seed", args.seed, "random-weight and sampling seed")->capture_default_str();
  specplan::runtime::AddThreadsFlag(app, &args.threads);
  specplan::runtime::AddChoiceOption(
      app, "--gate", &args.gate, {"on", "off"},
      "on: bestfirst and dynatree decide before drafting whether to draft (and "
      "bestfirst how deep; planner/acceptance/speculation_gate.h); off: they always draft");
  app.add_option("--kv-update", args.kv_update,
                 "gather (compact accepted K/V) | rebuild (re-forward the accepted path)")
      ->capture_default_str();
  app.add_option("--temperature", args.temperature, "0 = greedy; > 0 = sampling")
      ->capture_default_str();
  // The cost flags, named as the specplan CLI names them (CostFlag).
  const struct {
    const char* field;
    std::string* value;
    const char* help;
  } cost_flags[] = {
      {"profile_path", &args.profile,
       "calibrated latency profile (calib/...json) the controllers price T_verify with; "
       "default: --gpu's bundled profile, else T_verify measured on the target"},
      {"gpu", &args.gpu,
       "price T_verify with the bundled profile of the target on this GPU (registry name or JSON "
       "spec; --dtype, --tp, --engine choose the file; none: the bare roofline), as the specplan "
       "CLI does"},
      {"engine", &args.engine,
       "with --gpu/--profile: whose kernels the profile describes (sglang, vllm, trtllm, "
       "specplan; default: the first with a bundled profile)"},
      {"latency_model", &args.latency_model,
       "with --gpu/--profile: a model of the profile other than its default (roofline, linear, "
       "per_term, overlap, kernel_sum, table)"}};
  for (const auto& f : cost_flags) {
    app.add_option(specplan::runtime::CostFlag(f.field), *f.value, f.help);
  }
  app.add_option(specplan::runtime::CostFlag("tp"), args.tp,
                 "with --gpu/--profile: tensor parallelism of the profile (default: the "
                 "profile's, else 1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--record-trace", args.record_trace,
                 "also record the first listed strategy's run as a what-if trace (JSONL, "
                 "whatif/trace.h) to FILE, each step with its verification pass under --batch; "
                 "greedy only (--temperature 0)");
  specplan::runtime::AddRangeOption(app, "--trace-nodes", &args.trace_nodes, 1, 1024,
                                    "recorded draft-tree nodes per trace step (root included)");
  app.add_option(
      "--planner", args.planner,
      "HOST:PORT of a specplan-server that plans every best-first, merged and batch step "
      "(same plans and tokens as in-process; default: plan in-process)");
  specplan::runtime::AddRangeOption(
      app, "--planner-connect-s", &args.planner_connect_s, 0.01, 3600.0,
      "seconds to wait for the --planner server to answer before failing");
  CLI11_PARSE(app, argc, argv);
  args.command_line = "specplan-bench";  // argv[0] without the build directory
  for (int i = 1; i < argc; ++i) {
    args.command_line += ' ';
    args.command_line += specplan::runtime::ShellQuote(argv[i]);
  }
  return specplan::runtime::ExitStatus("specplan-bench", specplan::runtime::RunBench(args));
}
