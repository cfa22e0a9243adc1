// The rendering half of whatif/schedule.h: a Schedule (and a ContextSchedule) written in each
// engine's own configuration format (vLLM JSON, TensorRT-LLM YAML, SGLang JSON) with the metadata
// block every output carries, and the human summary. Choosing the schedule is schedule.cc's.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "whatif/schedule.h"

namespace specplan::whatif {
namespace {

using nlohmann::ordered_json;

// Tokens per second to one decimal, as the outputs print them.
double Round1(double x) { return std::round(x * 10) / 10; }

// How a schedule's ranges follow from its grid points (the text and the JSON metadata).
constexpr char kRangeRule[] =
    "the setting chosen at grid point B applies from B up to the next grid point - 1; the last "
    "grid point's to every larger batch";

// What every format says when speculation pays at no batch size of the grid (max_setting == 0),
// followed by that engine's way to run without it.
std::string NoSpeculationNote(const std::string& advice) {
  return "Speculation does not pay at any batch size of the grid on this trace: " + advice;
}

// The metadata's "note" when speculation pays at no batch size of the grid.
void NoteIfNoSpeculation(const Schedule& s, const std::string& advice, ordered_json* m) {
  if (s.max_setting == 0) (*m)["note"] = NoSpeculationNote(advice);
}

std::string SglangArgs(const SglangTree& t) {
  if (t.num_draft_tokens == 0) return "";
  return absl::StrFormat(
      "--speculative-num-steps %d --speculative-eagle-topk %d --speculative-num-draft-tokens %d",
      t.num_steps, t.eagle_topk, t.num_draft_tokens);
}

// "K = 3", "n = 16 (steps 3, topk 4, draft tokens 17)", "off".
std::string DescribeSetting(const Schedule& s, int setting, const SglangTree& t) {
  if (setting == 0) return "off";
  if (s.chains) return absl::StrCat("K = ", setting);
  return absl::StrFormat("n = %d (steps %d, topk %d, draft tokens %d)", setting, t.num_steps,
                         t.eagle_topk, t.num_draft_tokens);
}

const char* UnitName(const Schedule& s) { return s.chains ? "K" : "n"; }

std::string ChoiceRule(const Schedule& s) {
  return absl::StrCat(
      "at each grid point the setting with the highest replayed throughput",
      s.monotone ? ", among those no larger than the previous point's (monotone)" : "",
      s.format == ScheduleFormat::kTrtllm ? ", and no larger than K(1) (TensorRT-LLM)" : "");
}

// The lines every format's metadata carries, as plain text (the YAML comments), and their
// values, as JSON (the JSON formats' "specplan" block).
std::vector<std::string> MetadataLines(const Schedule& s, const ScheduleSource& src) {
  const ConcurrencyReport& r = s.report;
  std::vector<std::string> out;
  out.push_back(absl::StrFormat(
      "specplan schedule --format %s: %s", ScheduleFormatName(s.format),
      s.chains ? "per batch size, the draft length K of a top-1 chain (0 = no speculation)"
               : "per batch size, a draft tree of n nodes (best-first over the drafter's "
                 "marginals) as SGLang's three tree settings (n = 0: no speculation)"));
  out.push_back(absl::StrFormat(
      "cost: %s on %s (%s), %s%s, %s latency model", src.model, src.gpu, src.dtype,
      src.profile.empty() ? "the bare roofline (no profile)" : "profile " + src.profile,
      src.engine.empty()
          ? ""
          : absl::StrCat(" (engine ", src.engine, src.engine_version.empty() ? "" : " ",
                         src.engine_version, ")"),
      r.latency_model));
  const std::string min_len =
      s.min_chain > 0 ? absl::StrFormat("; K >= %d (--min-draft-len)", s.min_chain) : "";
  if (!s.acceptance.empty()) {
    out.push_back(absl::StrCat("acceptance: ", s.acceptance));
    out.push_back(absl::StrFormat(
        "replay: batch sizes %s; chains of K over the engine's whole step (verify + draft + "
        "sample + host; whatif/chain_replay.h): %s%s",
        absl::StrJoin(r.batch_sizes, ","), s.step_note, min_len));
  } else {
    out.push_back(
        absl::StrFormat("trace: %s (%s -> %s, %d steps with marginals, replayed by every "
                        "request with B requests in flight)",
                        src.trace_path, r.draft, r.target, r.ring_steps));
    out.push_back(absl::StrFormat(
        "replay: batch sizes %s; n_max %d; drafter %s (t_net %.3f ms, batch growth %g); aux %.3f "
        "ms; batch planner %s%s%s",
        absl::StrJoin(r.batch_sizes, ","), r.n_max, costmodel::DrafterClassName(r.drafter.cls),
        r.drafter.t_net_s * 1e3, r.drafter.batch_growth, r.t_aux_s * 1e3,
        r.batch_scan ? "scan" : "controller", r.calibrate ? ", surrogate calibrated online" : "",
        min_len));
    if (s.sglang_drafting) {
      // The drafter above prices the batch planner's row; each tree setting pays its own.
      std::vector<std::string> per;
      const std::vector<int>& budgets = r.best_fixed_settings.sizes;
      for (size_t i = 0; i < budgets.size() && i < s.sglang_draft_s.size(); ++i) {
        per.push_back(absl::StrFormat("n = %d: %.3f", budgets[i], s.sglang_draft_s[i] * 1e3));
      }
      out.push_back(absl::StrCat(
          "sglang drafting: each setting pays SGLang's own at every step (num_steps levels of topk "
          "beams; the drafter above prices the batch planner), one request's, ms: ",
          absl::StrJoin(per, ", ")));
    }
  }
  out.push_back("choice: " + ChoiceRule(s));
  out.push_back(absl::StrCat("range rule: ", kRangeRule));
  return out;
}

// What the choice's constraint cost, one line per grid point it changed.
std::vector<std::string> ConstraintLines(const Schedule& s) {
  std::vector<std::string> out;
  for (const SchedulePoint& p : s.points) {
    if (p.setting == p.best_setting) continue;
    out.push_back(absl::StrFormat(
        "constrained at B = %d: %s %d on its own (%.1f tokens/s), %d here (%.1f): %s", p.batch,
        UnitName(s), p.best_setting, p.best_throughput, p.setting, p.throughput,
        s.monotone ? "a larger batch never gets more than a smaller one (monotone)"
                   : "TensorRT-LLM's smallest key must carry the largest draft length "
                     "(max_draft_len)"));
  }
  return out;
}

std::string ThroughputTable(const Schedule& s, const std::string& prefix) {
  std::string out = absl::StrFormat(
      "%s%5s %5s %12s %14s %18s %10s\n", prefix, "B", UnitName(s), "schedule", "batch planner",
      absl::StrFormat("static %s = %d", UnitName(s), s.static_setting), "plain");
  for (const SchedulePoint& p : s.points) {
    out += absl::StrFormat("%s%5d %5d %12.1f %14s %18.1f %10.1f\n", prefix, p.batch, p.setting,
                           p.throughput,
                           s.acceptance.empty() ? absl::StrFormat("%.1f", p.batch_throughput) : "-",
                           p.static_throughput, p.ar_throughput);
  }
  out +=
      absl::StrFormat("%s%11s %12.1f %14s %18.1f\n", prefix, "sum", s.schedule_throughput_sum,
                      s.acceptance.empty() ? absl::StrFormat("%.1f", s.batch_throughput_sum) : "-",
                      s.static_throughput_sum);
  return out;
}

// JSON as people read it: a value that fits in the line goes on one line ({"a": 1, "b": [1, 2]}),
// anything longer is broken up, two spaces per level.
std::string InlineJson(const ordered_json& j) {
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + InlineJson(j[i]);
    return out + "]";
  }
  if (j.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      out += (first ? "" : ", ") + ordered_json(k).dump() + ": " + InlineJson(v);
      first = false;
    }
    return out + "}";
  }
  return j.dump();
}

bool IsFlatObject(const ordered_json& j) {
  if (!j.is_object()) return false;
  for (const auto& [k, v] : j.items()) {
    if (v.is_structured()) return false;
  }
  return true;
}

// `row`: an element of an array; an object of scalars there stays on one line (a table row).
std::string PrettyJson(const ordered_json& j, int indent, size_t key_width, bool row = false) {
  constexpr size_t kWidth = 100;
  std::string flat = InlineJson(j);
  if (!j.is_structured() || j.empty() || (row && IsFlatObject(j)) ||
      flat.size() + static_cast<size_t>(indent) + key_width <= kWidth) {
    return flat;
  }
  const std::string pad(static_cast<size_t>(indent) + 2, ' ');
  std::string out = j.is_array() ? "[\n" : "{\n";
  size_t i = 0;
  for (const auto& [k, v] : j.items()) {
    std::string key = j.is_object() ? ordered_json(k).dump() + ": " : "";
    out += pad + key + PrettyJson(v, indent + 2, key.size(), j.is_array()) +
           (++i < j.size() ? ",\n" : "\n");
  }
  return out + std::string(static_cast<size_t>(indent), ' ') + (j.is_array() ? "]" : "}");
}

ordered_json MetadataJson(const Schedule& s, const ScheduleSource& src) {
  const ConcurrencyReport& r = s.report;
  ordered_json m;
  m["generated_by"] = absl::StrCat("specplan schedule --format ", ScheduleFormatName(s.format));
  m["unit"] = s.chains ? "k: draft length of a top-1 chain (0 = no speculation)"
                       : "draft_nodes: best-first tree of n draft nodes over the drafter's "
                         "marginals, as SGLang's speculative_num_steps / speculative_eagle_topk / "
                         "speculative_num_draft_tokens (0 = no speculation)";
  m["profile"] = src.profile.empty() ? ordered_json(nullptr) : ordered_json(src.profile);
  m["engine"] = src.engine.empty() ? ordered_json(nullptr) : ordered_json(src.engine);
  m["engine_version"] =
      src.engine_version.empty() ? ordered_json(nullptr) : ordered_json(src.engine_version);
  m["model"] = src.model;
  m["gpu"] = src.gpu;
  m["dtype"] = src.dtype;
  m["latency_model"] = r.latency_model;
  if (!s.acceptance.empty()) {
    m["acceptance"] = s.acceptance;
    m["replay"] = {{"batch_sizes", r.batch_sizes},
                   {"chains", "K over the engine's whole step (whatif/chain_replay.h)"},
                   {"step", s.step_note},
                   {"min_draft_len", s.min_chain}};
  } else {
    m["trace"] = {{"path", src.trace_path},
                  {"target", r.target},
                  {"draft", r.draft},
                  {"ring_steps", r.ring_steps}};
    m["replay"] = {{"batch_sizes", r.batch_sizes},
                   {"n_max", r.n_max},
                   {"drafter",
                    {{"class", costmodel::DrafterClassName(r.drafter.cls)},
                     {"t_net_s", r.drafter.t_net_s},
                     {"batch_growth", r.drafter.batch_growth}}},
                   {"t_aux_s", r.t_aux_s},
                   {"batch_mode", r.batch_scan ? "scan" : "controller"},
                   {"calibrate", r.calibrate}};
    if (s.chains) m["replay"]["min_draft_len"] = s.min_chain;
  }
  m["choice"] = ChoiceRule(s);
  if (s.slo_tpot_s > 0) {
    m["slo"] = {{"tpot_s", s.slo_tpot_s},
                {"rule", "TPOT = B / throughput with B requests in flight"},
                {"max_batch", s.slo_max_batch},
                {"plain_max_batch", s.slo_plain_max_batch}};
  }
  m["range_rule"] = kRangeRule;
  const char* key = s.chains ? "k" : "draft_nodes";
  ordered_json per = ordered_json::array();
  for (const SchedulePoint& p : s.points) {
    ordered_json e = {{"batch", p.batch}, {key, p.setting}, {"throughput", Round1(p.throughput)}};
    if (p.best_setting != p.setting) {
      e[absl::StrCat("unconstrained_", key)] = p.best_setting;
      e["unconstrained_throughput"] = Round1(p.best_throughput);
    }
    if (s.acceptance.empty()) e["batch_planner_throughput"] = Round1(p.batch_throughput);
    e["best_static_throughput"] = Round1(p.static_throughput);
    e["plain_throughput"] = Round1(p.ar_throughput);
    if (s.slo_tpot_s > 0) {
      e["tpot_ms"] = Round1(1e4 * p.tpot_s) / 10;  // 0.01 ms
      e["slo_met"] = p.slo_met;
    }
    per.push_back(std::move(e));
  }
  m["expected_tokens_per_s"] = std::move(per);
  m["best_static"] = {{key, s.static_setting}, {"throughput_sum", Round1(s.static_throughput_sum)}};
  m["sums"] = {{"schedule", Round1(s.schedule_throughput_sum)},
               {"batch_planner", Round1(s.batch_throughput_sum)},
               {"best_static", Round1(s.static_throughput_sum)}};
  if (!s.acceptance.empty()) m["sums"].erase("batch_planner");  // no batch planner row
  return m;
}

ordered_json VllmJson(const Schedule& s, const ScheduleSource& src) {
  ordered_json table = ordered_json::array();
  for (const ScheduleRange& r : s.ranges) table.push_back({r.lo, r.hi, r.setting});
  ordered_json j;
  // vLLM requires num_speculative_tokens > 0 (vllm/config/speculative.py, Field(gt=0)).
  j["speculative_config"] = {{"num_speculative_tokens", std::max(1, s.max_setting)},
                             {"num_speculative_tokens_per_batch_size", std::move(table)}};
  ordered_json m = MetadataJson(s, src);
  m["usage"] =
      "Add your drafter's \"method\" and \"model\" to speculative_config and pass it whole: vllm "
      "serve ... --speculative-config \"$(jq -c .speculative_config FILE)\", or "
      "LLM(speculative_config=...).";
  m["format_source"] =
      "vLLM PR #32374 (Dynamic SD); vllm/config/speculative.py types "
      "num_speculative_tokens_per_batch_size as list[tuple[int, int, int]]: inclusive "
      "(range_start, "
      "range_end, K) entries, non-overlapping, the first starting at 1; "
      "vllm/v1/spec_decode/dynamic/utils.py build_dynamic_sd_schedule_lookup fills a gap with the "
      "previous K and the batches past the last range with the last K, and clamps K to "
      "num_speculative_tokens. (The PR's description shows a {\"lo-hi\": K} map; the merged "
      "config takes the list.)";
  NoteIfNoSpeculation(s, "every range is K = 0; leave speculative_config out.", &m);
  j["specplan"] = std::move(m);
  return j;
}

std::string RenderVllm(const Schedule& s, const ScheduleSource& src) {
  return PrettyJson(VllmJson(s, src), 0, 0) + "\n";
}

std::string RenderTrtllm(const Schedule& s, const ScheduleSource& src) {
  std::string out;
  auto comment = [&out](const std::string& line) { out += "# " + line + "\n"; };
  for (const std::string& line : MetadataLines(s, src)) comment(line);
  comment(
      "format: TensorRT-LLM draft_len_schedule (PR #8194, one-model path PR #10860): a batch of "
      "size B uses the draft length of the first key >= B; a batch above the largest key does "
      "not speculate; the smallest key must map to max_draft_len (llmapi/llm_args.py); key 1 is "
      "always written, which older releases require");
  comment("expected throughput, tokens/s (replayed on the trace):");
  std::string table = ThroughputTable(s, "#   ");
  out += table;
  comment(absl::StrFormat("best single static draft length: %s, summed over the grid %.1f tokens/s",
                          s.static_setting == 0
                              ? std::string("off (no speculative_config)")
                              : absl::StrFormat("K = %d (max_draft_len %d, no draft_len_schedule)",
                                                s.static_setting, s.static_setting),
                          s.static_throughput_sum));
  for (const std::string& line : ConstraintLines(s)) comment(line);
  // PR #16888: what the zero tiers become under the floor.
  std::vector<std::string> zero_tiers;
  const StaticSettings& chain = s.report.best_chain_settings;
  for (size_t i = 0; i < s.points.size(); ++i) {
    if (s.points[i].setting != 0 || chain.sizes.empty() || chain.sizes[0] != 1) continue;
    zero_tiers.push_back(absl::StrFormat("B = %d: %.1f against plain %.1f", s.points[i].batch,
                                         chain.at(i, 0), s.points[i].ar_throughput));
  }
  comment(
      "TensorRT-LLM PR #16888 (\"Keep drafting alive when dynamic draft length hits its floor\"; "
      "open, not merged, when read, and read from its description only, not its code): for "
      "one-engine drafters (EAGLE-3 one-model, MTP, DFlash) it floors every draft length a "
      "draft_len_schedule resolves to at min_runtime_draft_len = 1 (the tiers of 0 and the "
      "batches above the largest key too), so that the drafter's KV cache and state keep being "
      "written; two-engine drafters keep 0.");
  if (s.min_chain > 0) {
    comment(absl::StrFormat(
        "This schedule was chosen among K >= %d (--min-draft-len %d), so it prices what such a "
        "floored engine runs; a batch above the largest key resolves to the floor there.",
        s.min_chain, s.min_chain));
  } else if (!zero_tiers.empty()) {
    comment(absl::StrFormat(
        "Under that floor this schedule's K = 0 tiers run K = 1 on a one-engine drafter, "
        "replayed at (tokens/s) %s. To choose among K >= 1 instead, run with --min-draft-len 1.",
        absl::StrJoin(zero_tiers, "; ")));
  } else {
    comment("This schedule has no K = 0 tier in the grid, so the floor does not change it.");
  }
  comment(
      "usage: add your drafter (decoding_type, e.g. Eagle3, and speculative_model) under "
      "speculative_config and pass this file as trtllm-serve --extra_llm_api_options FILE, or "
      "LLM(**yaml.safe_load(open(FILE))). draft_len_schedule and max_concurrency are mutually "
      "exclusive.");
  if (s.max_setting == 0) comment(NoSpeculationNote("leave speculative_config out."));
  // Keys: the upper end of each range; key 1 always; a last range of K = 0 is implicit.
  std::vector<std::pair<int, int>> keys;
  for (size_t i = 0; i < s.ranges.size(); ++i) {
    const ScheduleRange& r = s.ranges[i];
    const bool last = i + 1 == s.ranges.size();
    if (i == 0 && r.hi > 1) keys.emplace_back(1, r.setting);
    if (last && r.setting == 0 && !keys.empty()) continue;
    keys.emplace_back(r.hi, r.setting);
  }
  out += "speculative_config:\n";
  out += absl::StrFormat("  max_draft_len: %d\n", s.ranges.empty() ? 0 : s.ranges[0].setting);
  out += "  draft_len_schedule:\n";
  for (const auto& [key, k] : keys) out += absl::StrFormat("    %d: %d\n", key, k);
  return out;
}

// Fills `e` with one tree setting: draft_nodes, the three SGLang settings (or "speculate": false)
// and the server args.
void SglangEntry(const SglangTree& t, int n, ordered_json* e) {
  (*e)["draft_nodes"] = n;
  if (n == 0) {
    (*e)["speculate"] = false;
  } else {
    (*e)["speculative_num_steps"] = t.num_steps;
    (*e)["speculative_eagle_topk"] = t.eagle_topk;
    (*e)["speculative_num_draft_tokens"] = t.num_draft_tokens;
  }
  (*e)["args"] = SglangArgs(t);
}

// The candidate steps of one range whose chosen chain is K (0 = off), as a slot that starts at
// candidates[len / 2] reads them: [K - 1, K, K + 1] within [lo, k_max], without `avoid` unless
// K == avoid, and [K] alone when the middle entry would not be K. lo is 0 where SGLang takes 0
// (no drafting), else 1.
std::vector<int> AdaptiveCandidates(int k, int lo, int k_max, int avoid) {
  if (k < lo) return {lo};
  std::vector<int> c;
  for (int step : {k - 1, k, k + 1}) {
    if (step < lo || step > std::max(k, k_max)) continue;
    if (step != k && step == avoid) continue;
    c.push_back(step);
  }
  if (c[c.size() / 2] != k) c = {k};
  return c;
}

// SGLang's batch-size-aware adaptive configuration (PR #24055, merged): a flat JSON object whose
// integer keys are batch-size lower bounds (a batch takes the largest key <= its size after
// padding to a captured CUDA-graph batch size: adaptive_step_router.py batch_size_key_for_batch);
// every other key is a global override or ignored, so the "specplan" metadata key is ignored.
// SGLang's main branch, as read (adaptive_spec_params.py _load_adaptive_config and
// AdaptiveStepSlot, commit 015c872), reads each entry's "candidate_steps" (non-negative; 0 turns
// drafting off) and refuses an entry without it; a slot starts at the server's
// --speculative-num-steps when that is among its candidates, else at candidates[len / 2], and
// moves among them with the EMA of accepted drafts. The release PR #24055 merged read "steps"
// (load_bs_config), started at steps[len / 2] and could not turn drafting off. Each entry carries
// both keys, so that one file serves both: candidate_steps = AdaptiveCandidates(K, 0, k_max,
// server steps), steps = AdaptiveCandidates(K, 1, k_max, none). Both start each range at its own
// K (1 for an old release's K = 0 range). topk is 1 (chains), which SGLang's adaptive mode
// requires (adaptive_unsupported_reason).
std::string RenderSglangAdaptive(const Schedule& s, const ScheduleSource& src) {
  int k_max = 0;
  for (int k : s.report.best_chain_settings.sizes) k_max = std::max(k_max, k);
  const int first_k = s.ranges.empty() ? 0 : s.ranges.front().setting;
  const int server_steps = std::max(1, first_k);
  ordered_json j = ordered_json::object();
  std::vector<std::string> off;
  for (const ScheduleRange& r : s.ranges) {
    if (r.setting == 0) off.push_back(absl::StrCat(r.lo, "-", r.hi));
    j[absl::StrCat(r.lo)] = {
        {"candidate_steps", AdaptiveCandidates(r.setting, 0, k_max, server_steps)},
        {"steps", AdaptiveCandidates(r.setting, 1, k_max, -1)}};
  }
  ordered_json m = MetadataJson(s, src);
  m["usage"] = absl::StrFormat(
      "python -m sglang.launch_server ... --speculative-algorithm EAGLE3 "
      "--speculative-eagle-topk 1 --speculative-num-steps %d --speculative-num-draft-tokens %d "
      "--speculative-adaptive --speculative-adaptive-config THIS_FILE: one server for every load; "
      "each batch-size range keeps its own acceptance tracker and candidate steps",
      server_steps, server_steps + 1);
  m["format_source"] =
      "SGLang PR #24055 (batch-size-aware adaptive speculative_num_steps, merged). SGLang main "
      "(python/sglang/srt/speculative/adaptive_spec_params.py at commit 015c872: "
      "_load_adaptive_config reads each integer key's candidate_steps, non-negative, 0 = no "
      "drafting; AdaptiveStepSlot starts at --speculative-num-steps when it is a candidate, else "
      "at candidates[len // 2]; adaptive_step_router.py pads the batch size to a captured "
      "CUDA-graph "
      "size, then takes the largest key <= it). Releases with PR #24055's loader read steps "
      "(load_bs_config; initial = steps[len // 2], no 0), which each entry also carries.";
  if (!off.empty()) {
    m["note"] = absl::StrCat(
        "speculation does not pay on this replay for batch sizes ", absl::StrJoin(off, ", "),
        ": candidate_steps [0] turns drafting off there; a release that reads steps cannot, so "
        "those ranges hold its smallest step, 1");
  }
  j["specplan"] = std::move(m);
  return PrettyJson(j, 0, 0) + "\n";
}

std::string RenderSglang(const Schedule& s, const ScheduleSource& src) {
  if (s.chains) return RenderSglangAdaptive(s, src);
  ordered_json ranges = ordered_json::array();
  for (const ScheduleRange& r : s.ranges) {
    ordered_json e;
    e["batch_lo"] = r.lo;
    e["batch_hi"] = r.hi;
    SglangEntry(r.sglang, r.setting, &e);
    ranges.push_back(std::move(e));
  }
  ordered_json j;
  ordered_json fixed;
  SglangEntry(s.static_sglang, s.static_setting, &fixed);
  j["sglang"] = {{"ranges", std::move(ranges)}, {"static", std::move(fixed)}};
  ordered_json m = MetadataJson(s, src);
  m["tree_mapping"] =
      "n draft nodes -> speculative_num_steps = the largest depth of the trace's best-first trees "
      "of n nodes, speculative_eagle_topk = the largest of (children of one node, nodes of one "
      "depth that have children) in them, speculative_num_draft_tokens = n + 1 (SGLang counts "
      "the root: organize_draft_results keeps num_draft_tokens - 1 candidates); then SGLang's "
      "candidates contain every step's tree and its top-scored n are that tree";
  m["usage"] =
      "SGLang takes one tree setting per server (python -m sglang.launch_server ... "
      "--speculative-algorithm EAGLE3 <args>); its adaptive mode (topk 1 only) moves num_steps "
      "with acceptance, not with batch size. Use \"static\" for one server, or one server per "
      "range behind a router that routes by load.";
  if (s.sglang_drafting) {
    m["drafting_cost"] =
        "each setting pays SGLang's own drafting at every step, whatever that step's tree: "
        "speculative_num_steps draft forwards of speculative_eagle_topk beams per request (the "
        "step model's drafter at topk beams per forward, at the trace's mean context; "
        "sglang/srt/speculative/eagle_worker.py: forward_batch_generation calls draft() at every "
        "decode step, and _draft_preprocess_decode allocates num_steps x topk draft slots per "
        "request). The batch planner row is priced level by level at topk 1";
    ordered_json per = ordered_json::array();
    const std::vector<int>& budgets = s.report.best_fixed_settings.sizes;
    for (size_t i = 0; i < budgets.size() && i < s.sglang_draft_s.size(); ++i) {
      // One request's drafting (B = 1), ms to 0.001.
      per.push_back({{"draft_nodes", budgets[i]},
                     {"draft_ms_b1", std::round(s.sglang_draft_s[i] * 1e6) / 1e3}});
    }
    m["drafting_per_setting"] = std::move(per);
  } else {
    m["drafting_cost"] =
        "SGLang drafts speculative_num_steps steps of speculative_eagle_topk beams; this schedule "
        "prices drafting with specplan's drafter cost (--drafter, --t-draft-ms, "
        "--draft-batch-growth), not SGLang's beam search, so a wide topk costs SGLang more than "
        "priced here (a drafter the step model prices level by level, e.g. eagle3, gets SGLang's "
        "own drafting)";
  }
  m["format_source"] =
      "SGLang server args --speculative-num-steps, --speculative-eagle-topk, "
      "--speculative-num-draft-tokens (docs.sglang.io, speculative decoding); "
      "sglang/srt/speculative/eagle_utils.py organize_draft_results; server_args: topk 1 forces "
      "num_draft_tokens = num_steps + 1";
  NoteIfNoSpeculation(s, "run without --speculative-algorithm.", &m);
  j["specplan"] = std::move(m);
  return PrettyJson(j, 0, 0) + "\n";
}

}  // namespace

std::string RenderContextSchedule(const ContextSchedule& cs, const ScheduleSource& source) {
  ordered_json j = VllmJson(cs.rows.front(), source);
  ordered_json table = ordered_json::array();
  for (const ContextScheduleCell& c : cs.cells) {
    table.push_back({c.bs_lo, c.bs_hi, c.ctx_lo, c.ctx_hi, c.k});
  }
  ordered_json with_ctx;
  with_ctx["num_speculative_tokens"] = std::max(1, cs.max_setting);
  with_ctx["num_speculative_tokens_per_batch_size"] = std::move(table);
  ordered_json out;
  out["speculative_config"] = std::move(j["speculative_config"]);
  out["speculative_config_context_axis"] = std::move(with_ctx);
  ordered_json m = std::move(j["specplan"]);
  ordered_json rows = ordered_json::array();
  for (size_t i = 0; i < cs.contexts.size(); ++i) {
    ordered_json per = ordered_json::array();
    for (const SchedulePoint& p : cs.rows[i].points) {
      per.push_back({{"batch", p.batch},
                     {"k", p.setting},
                     {"throughput", Round1(p.throughput)},
                     {"batch_planner_throughput", Round1(p.batch_throughput)},
                     {"plain_throughput", Round1(p.ar_throughput)}});
    }
    rows.push_back({{"context_offset", cs.contexts[i]}, {"expected_tokens_per_s", std::move(per)}});
  }
  m["context_axis"] = {
      {"contexts", cs.contexts},
      {"rule",
       "the trace replayed with every request's recorded context length grown by the grid point's "
       "tokens; point c_j's batch ranges apply to context lengths c_j .. c_(j+1) - 1, the last "
       "point's up to " +
           absl::StrCat(kMaxContextOffset) +
           "; rows with the same batch ranges merge. The replay does not check that B requests of "
           "that "
           "context fit the GPU's memory: a cell past it never runs"},
      {"usage",
       "For a vLLM with PR #48944 (RFC #48627): pass \"$(jq -c "
       ".speculative_config_context_axis FILE)\" (plus your drafter's method and model) as "
       "--speculative-config; merged vLLM takes only the 3-item speculative_config"},
      {"format_source",
       "vLLM RFC #48627 and PR #48944 (both open when read): 5-item entries [bs_lo, bs_hi, "
       "ctx_lo, ctx_hi, K] in num_speculative_tokens_per_batch_size (the PR discusses renaming "
       "it speculative_token_schedule); 3-item entries mean every context length. Which context "
       "length of a batch keys the lookup (the PR's aggregator) was still under discussion."},
      {"rows", std::move(rows)}};
  out["specplan"] = std::move(m);
  return PrettyJson(out, 0, 0) + "\n";
}

std::string RenderSchedule(const Schedule& s, const ScheduleSource& source) {
  switch (s.format) {
    case ScheduleFormat::kVllm:
      return RenderVllm(s, source);
    case ScheduleFormat::kTrtllm:
      return RenderTrtllm(s, source);
    case ScheduleFormat::kSglang:
      return RenderSglang(s, source);
  }
  return "";
}

std::string FormatScheduleSummary(const Schedule& s, const ScheduleSource& source) {
  std::string out;
  for (const std::string& line : MetadataLines(s, source)) out += line + "\n";
  out += "expected throughput, tokens/s (replayed on the trace):\n";
  out += ThroughputTable(s, "");
  std::vector<std::string> ranges;
  for (const ScheduleRange& r : s.ranges) {
    ranges.push_back(absl::StrFormat(
        "%d-%s: %s", r.lo, r.hi == ScheduleMaxBatch() ? std::string("") : absl::StrCat(r.hi),
        DescribeSetting(s, r.setting, r.sglang)));
  }
  out += absl::StrCat("schedule: ", absl::StrJoin(ranges, "; "), "\n");
  if (s.chains) {
    // Every chain length's throughput: how flat the optimum is.
    const StaticSettings& chain = s.report.best_chain_settings;
    out += "throughput per K, tokens/s:\n";
    out += absl::StrFormat("%5s %10s", "B", "K = 0");
    for (int k : chain.sizes) out += absl::StrFormat(" %10s", absl::StrCat("K = ", k));
    out += "\n";
    for (size_t bi = 0; bi < s.points.size(); ++bi) {
      out += absl::StrFormat("%5d %10.1f", s.points[bi].batch, s.points[bi].ar_throughput);
      for (size_t k = 0; k < chain.sizes.size(); ++k) {
        out += absl::StrFormat(" %10.1f", chain.at(bi, k));
      }
      out += "\n";
    }
  }
  out += absl::StrFormat("best single static setting: %s\n",
                         DescribeSetting(s, s.static_setting, s.static_sglang));
  if (s.slo_tpot_s > 0) {
    auto upto = [](int b) {
      return b == 0 ? std::string("at no batch size of the grid") : absl::StrCat("up to B = ", b);
    };
    out += absl::StrFormat(
        "TPOT SLO %g ms (B / throughput with B in flight): the schedule meets it %s, plain "
        "decoding %s\n",
        1e3 * s.slo_tpot_s, upto(s.slo_max_batch), upto(s.slo_plain_max_batch));
  }
  for (const std::string& line : ConstraintLines(s)) out += line + "\n";
  return out;
}
}  // namespace specplan::whatif
