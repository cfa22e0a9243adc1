// Choosing the schedules of whatif/schedule.h: the replay per batch size (and per context length),
// the constrained choice, the range rule and SGLang's tree settings. Rendering them is
// schedule_render.cc's.
#include "whatif/schedule.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/policies/best_first.h"
#include "util/enum_names.h"
#include "util/status_macros.h"

namespace specplan::whatif {
namespace {

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

}  // namespace

constexpr EnumEntry<ScheduleFormat> kScheduleFormatNames[] = {
    {ScheduleFormat::kVllm, "vllm"},
    {ScheduleFormat::kTrtllm, "trtllm"},
    {ScheduleFormat::kSglang, "sglang"},
};

const char* ScheduleFormatName(ScheduleFormat f) { return EnumName(kScheduleFormatNames, f); }

absl::StatusOr<ScheduleFormat> ParseScheduleFormat(std::string_view name) {
  for (const EnumEntry<ScheduleFormat>& entry : kScheduleFormatNames) {
    if (name == entry.name) return entry.value;
  }
  return Invalid(absl::StrCat("\"", std::string(name), "\": unknown format (",
                              EnumKnownNames(kScheduleFormatNames), ")"));
}

bool ScheduleUsesChains(ScheduleFormat f) { return f != ScheduleFormat::kSglang; }

int ScheduleMaxBatch() { return MaxConcurrency(); }

absl::StatusOr<SglangTree> SglangTreeFor(const Trace& trace, int n) {
  if (n < 0) return Invalid(absl::StrCat("n = ", n, ": must be >= 0 draft nodes"));
  SglangTree t;
  if (n == 0) return t;
  planner::BestFirstPlanner planner;
  planner::BestFirstPlan plan;
  std::vector<int> children, expanded;  // per node; per depth
  bool any = false;
  for (const TraceStep& s : trace.steps) {
    if (!s.marginals) continue;
    any = true;
    absl::Status st = planner.PlanFixed(*s.marginals, n, &plan);
    if (!st.ok()) return Invalid(absl::StrCat("sglang tree: ", std::string(st.message())));
    const planner::Tree& tree = plan.tree;
    children.assign(static_cast<size_t>(tree.size()), 0);
    int depth = 0;
    for (int i = 1; i < tree.size(); ++i) {
      ++children[static_cast<size_t>(tree.parents[i])];
      depth = std::max(depth, tree.depths[i]);
    }
    expanded.assign(static_cast<size_t>(depth) + 1, 0);
    int topk = 1;
    for (int i = 0; i < tree.size(); ++i) {
      const int c = children[static_cast<size_t>(i)];
      if (c == 0) continue;
      topk = std::max(topk, c);
      topk = std::max(topk, ++expanded[static_cast<size_t>(tree.depths[i])]);
    }
    t.num_steps = std::max(t.num_steps, depth);
    t.eagle_topk = std::max(t.eagle_topk, topk);
  }
  if (!any) return Invalid("trace: no step with marginals");
  // SGLang sets num_draft_tokens = num_steps + 1 when topk is 1 (a chain).
  t.num_draft_tokens = t.eagle_topk == 1 ? t.num_steps + 1 : n + 1;
  return t;
}

namespace {

// The choice (see the top of schedule.h) over s->report's plain-decoding rows and its
// best-chain (chains) or best-fixed (trees) settings; `trace` gives SGLang's trees (nullptr for
// chains), `trees` those already computed per budget (BuildSchedule's, for SGLang's drafting).
absl::Status ChooseSettings(const Trace* trace, ScheduleFormat format,
                            const ScheduleOptions& options, Schedule* s,
                            std::map<int, SglangTree> trees = {}) {
  const ConcurrencyReport& r = s->report;
  const StaticSettings& settings = s->chains ? r.best_chain_settings : r.best_fixed_settings;
  if (options.min_chain > 0 &&
      (settings.sizes.empty() || settings.sizes.back() < options.min_chain)) {
    return Invalid(absl::StrCat("min_chain = ", options.min_chain,
                                ": longer than the longest chain the trace's marginals allow (",
                                settings.sizes.empty() ? 0 : settings.sizes.back(), ")"));
  }
  // Candidates: plain decoding (unless floored) and each setting, ascending; -1 = plain.
  std::vector<int> candidates;  // index into settings.sizes, or -1
  if (options.min_chain == 0) candidates.push_back(-1);
  for (size_t k = 0; k < settings.sizes.size(); ++k) {
    if (settings.sizes[k] >= options.min_chain) candidates.push_back(static_cast<int>(k));
  }
  const size_t nb = r.batch_sizes.size();
  auto row_throughput = [&](size_t bi, Strategy strategy) {
    const ConcurrencyRow* row = FindConcurrencyRow(r, r.batch_sizes[bi], strategy);
    return row == nullptr ? 0.0 : row->throughput;
  };
  auto throughput = [&](size_t bi, int c) {
    return c < 0 ? row_throughput(bi, Strategy::kAr) : settings.at(bi, static_cast<size_t>(c));
  };
  auto value = [&](int c) { return c < 0 ? 0 : settings.sizes[static_cast<size_t>(c)]; };
  // Per B the candidate with the highest throughput (the first, i.e. the smaller, on ties), and
  // the same among the candidates the constraint allows: no larger than the previous point's
  // (monotone), or than K(1) (TensorRT-LLM).
  s->monotone = options.monotone;
  s->slo_tpot_s = options.slo_tpot_s;
  std::vector<int> chosen(nb), best(nb);
  for (size_t bi = 0; bi < nb; ++bi) {
    int limit = std::numeric_limits<int>::max();
    if (bi > 0 && options.monotone) limit = value(chosen[bi - 1]);
    if (bi > 0 && format == ScheduleFormat::kTrtllm) limit = std::min(limit, value(chosen[0]));
    double best_t = -1, chosen_t = -1;
    for (int c : candidates) {
      const double t = throughput(bi, c);
      if (t > best_t) best[bi] = c, best_t = t;
      if (value(c) <= limit && t > chosen_t) chosen[bi] = c, chosen_t = t;
    }
    if (chosen[bi] != best[bi]) s->constrained_batches.push_back(r.batch_sizes[bi]);
  }
  // The best single static setting: the highest throughput summed over the grid.
  int static_c = -2;
  double static_sum = -1;
  for (int c : candidates) {
    double sum = 0;
    for (size_t bi = 0; bi < nb; ++bi) sum += throughput(bi, c);
    if (sum > static_sum) static_c = c, static_sum = sum;
  }
  auto tree_of = [&](int n) -> absl::StatusOr<SglangTree> {
    if (s->chains || trace == nullptr) return SglangTree{};
    auto it = trees.find(n);
    if (it != trees.end()) return it->second;
    SPECPLAN_ASSIGN_OR_RETURN(SglangTree t, SglangTreeFor(*trace, n));
    trees.emplace(n, t);
    return t;
  };
  s->static_setting = value(static_c);
  SPECPLAN_ASSIGN_OR_RETURN(s->static_sglang, tree_of(s->static_setting));
  for (size_t bi = 0; bi < nb; ++bi) {
    SchedulePoint p;
    p.batch = r.batch_sizes[bi];
    p.setting = value(chosen[bi]);
    SPECPLAN_ASSIGN_OR_RETURN(p.sglang, tree_of(p.setting));
    p.throughput = throughput(bi, chosen[bi]);
    p.best_setting = value(best[bi]);
    p.best_throughput = throughput(bi, best[bi]);
    p.ar_throughput = row_throughput(bi, Strategy::kAr);
    p.batch_throughput = row_throughput(bi, Strategy::kBatch);
    p.static_throughput = throughput(bi, static_c);
    p.tpot_s = p.throughput > 0 ? p.batch / p.throughput : std::numeric_limits<double>::infinity();
    p.plain_tpot_s =
        p.ar_throughput > 0 ? p.batch / p.ar_throughput : std::numeric_limits<double>::infinity();
    if (options.slo_tpot_s > 0) {
      p.slo_met = p.tpot_s <= options.slo_tpot_s;
      if (p.slo_met) s->slo_max_batch = p.batch;
      if (p.plain_tpot_s <= options.slo_tpot_s) s->slo_plain_max_batch = p.batch;
    }
    s->schedule_throughput_sum += p.throughput;
    s->batch_throughput_sum += p.batch_throughput;
    s->static_throughput_sum += p.static_throughput;
    s->max_setting = std::max(s->max_setting, p.setting);
    const int hi = bi + 1 < nb ? r.batch_sizes[bi + 1] - 1 : ScheduleMaxBatch();
    if (!s->ranges.empty() && s->ranges.back().setting == p.setting) {
      s->ranges.back().hi = hi;
    } else {
      s->ranges.push_back(ScheduleRange{p.batch, hi, p.setting, p.sglang});
    }
    s->points.push_back(p);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Schedule> BuildSchedule(const Trace& trace, const costmodel::LatencyModel& latency,
                                       ScheduleFormat format, const ScheduleOptions& options) {
  Schedule s;
  s.format = format;
  s.chains = ScheduleUsesChains(format);
  s.min_chain = options.min_chain;
  if (options.replay.recorded) {
    return Invalid(
        "recorded: a schedule is chosen per batch size of a grid, not from recorded "
        "passes");
  }
  std::vector<int> grid = options.replay.batch_sizes;
  std::sort(grid.begin(), grid.end());
  if (grid.empty() || grid.front() != 1) {
    return Invalid(
        absl::StrCat("batch_sizes: the grid starts at ", grid.empty() ? 0 : grid.front(),
                     "; it must start at 1, so that every batch size has a setting (range rule)"));
  }
  if (options.min_chain < 0) {
    return Invalid(absl::StrCat("min_chain = ", options.min_chain, ": must be >= 0"));
  }
  if (options.min_chain > 0 && !s.chains) {
    return Invalid(absl::StrCat("min_chain = ", options.min_chain,
                                ": applies to chain formats (vllm, trtllm), not sglang"));
  }
  ConcurrencyOptions replay = options.replay;
  replay.best_chain = s.chains;
  replay.best_fixed = !s.chains;
  std::map<int, SglangTree> trees;  // each budget's SGLang settings, reused by the choice
  if (format == ScheduleFormat::kSglang && options.sglang_drafter) {
    // Each budget drafts SGLang's own shape for it: num_steps levels of eagle_topk beams.
    replay.best_fixed_drafters.clear();
    for (int n : BestFixedBudgets(replay.n_max)) {
      SPECPLAN_ASSIGN_OR_RETURN(const SglangTree t, SglangTreeFor(trace, n));
      trees.emplace(n, t);
      auto d = options.sglang_drafter(t);
      if (!d.ok()) {
        return absl::Status(d.status().code(),
                            absl::StrCat("sglang drafting of n = ", n, " (steps ", t.num_steps,
                                         ", topk ", t.eagle_topk, "): ", d.status().message()));
      }
      s.sglang_draft_s.push_back(d->DraftSeconds());
      replay.best_fixed_drafters.push_back(*std::move(d));
    }
    s.sglang_drafting = true;
  }
  SPECPLAN_ASSIGN_OR_RETURN(s.report, RunConcurrency(trace, latency, replay));
  SPECPLAN_RETURN_IF_ERROR(ChooseSettings(&trace, format, options, &s, std::move(trees)));
  return s;
}

absl::StatusOr<Schedule> BuildChainSchedule(const ChainReplayReport& replay, ScheduleFormat format,
                                            const ScheduleOptions& options,
                                            const std::string& acceptance,
                                            const std::string& step_note) {
  Schedule s;
  s.format = format;
  s.chains = true;
  s.min_chain = options.min_chain;
  s.acceptance = acceptance;
  s.step_note = step_note;
  if (options.min_chain < 0) {
    return Invalid(absl::StrCat("min_chain = ", options.min_chain, ": must be >= 0"));
  }
  ConcurrencyReport& r = s.report;
  for (const ChainReplayRow& row : replay.rows) {
    if (r.batch_sizes.empty() || r.batch_sizes.back() != row.batch) {
      r.batch_sizes.push_back(row.batch);
      ConcurrencyRow ar;
      ar.batch = row.batch;
      ar.strategy = Strategy::kAr;
      ar.throughput = row.ar_throughput;
      ar.speedup = 1;
      r.rows.push_back(ar);
    }
    if (row.k > 0 && (r.batch_sizes.size() == 1)) r.best_chain_settings.sizes.push_back(row.k);
  }
  if (r.batch_sizes.empty() || r.batch_sizes.front() != 1) {
    return Invalid(absl::StrCat(
        "batch_sizes: the grid starts at ", r.batch_sizes.empty() ? 0 : r.batch_sizes.front(),
        "; it must start at 1, so that every batch size has a setting (range rule)"));
  }
  for (int b : r.batch_sizes) {
    for (int k : r.best_chain_settings.sizes) {
      const auto it =
          std::find_if(replay.rows.begin(), replay.rows.end(),
                       [&](const ChainReplayRow& x) { return x.batch == b && x.k == k; });
      if (it == replay.rows.end()) {
        return Invalid(absl::StrCat("replay: no row for B = ", b, ", K = ", k));
      }
      r.best_chain_settings.throughput.push_back(it->throughput);
    }
  }
  r.latency_model = "step";
  SPECPLAN_RETURN_IF_ERROR(ChooseSettings(nullptr, format, options, &s));
  return s;
}

int ScheduleSettingAt(const Schedule& s, int batch) {
  for (const ScheduleRange& r : s.ranges) {
    if (batch >= r.lo && batch <= r.hi) return r.setting;
  }
  return 0;
}

absl::StatusOr<ContextSchedule> BuildContextSchedule(const Trace& trace,
                                                     const costmodel::LatencyModel& latency,
                                                     ScheduleFormat format,
                                                     const ScheduleOptions& options,
                                                     const std::vector<int64_t>& contexts) {
  if (!ScheduleUsesChains(format)) {
    return Invalid(absl::StrCat("context grid: applies to chain formats (vllm), not ",
                                ScheduleFormatName(format)));
  }
  if (contexts.empty() || contexts.front() != 0) {
    return Invalid(absl::StrCat(
        "contexts: the grid starts at ", contexts.empty() ? int64_t{-1} : contexts.front(),
        "; it must start at 0, so that every context length has a setting"));
  }
  for (size_t i = 1; i < contexts.size(); ++i) {
    if (contexts[i] <= contexts[i - 1] || contexts[i] > kMaxContextOffset) {
      return Invalid(absl::StrCat("contexts[", i, "] = ", contexts[i],
                                  ": must be larger than the previous point (", contexts[i - 1],
                                  ") and at most ", kMaxContextOffset, " tokens"));
    }
  }
  ContextSchedule cs;
  cs.contexts = contexts;
  for (int64_t c : contexts) {
    ScheduleOptions o = options;
    o.replay.context_offset = c;
    auto row = BuildSchedule(trace, latency, format, o);
    if (!row.ok()) {
      return Invalid(absl::StrCat("at context ", c, ": ", std::string(row.status().message())));
    }
    cs.max_setting = std::max(cs.max_setting, row->max_setting);
    cs.rows.push_back(*std::move(row));
  }
  // Context rows: row j covers contexts[j] .. contexts[j+1] - 1; a row whose batch ranges equal
  // the previous row's extends it.
  struct Band {
    int64_t lo, hi;
    const std::vector<ScheduleRange>* ranges;
  };
  auto same = [](const std::vector<ScheduleRange>& a, const std::vector<ScheduleRange>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].lo != b[i].lo || a[i].hi != b[i].hi || a[i].setting != b[i].setting) return false;
    }
    return true;
  };
  std::vector<Band> bands;
  for (size_t j = 0; j < contexts.size(); ++j) {
    const int64_t hi = j + 1 < contexts.size() ? contexts[j + 1] - 1 : kMaxContextOffset;
    if (!bands.empty() && same(*bands.back().ranges, cs.rows[j].ranges)) {
      bands.back().hi = hi;
    } else {
      bands.push_back(Band{contexts[j], hi, &cs.rows[j].ranges});
    }
  }
  for (const Band& b : bands) {
    for (const ScheduleRange& r : *b.ranges) {
      cs.cells.push_back(ContextScheduleCell{r.lo, r.hi, b.lo, b.hi, r.setting});
    }
  }
  std::stable_sort(cs.cells.begin(), cs.cells.end(),
                   [](const ContextScheduleCell& a, const ContextScheduleCell& b) {
                     return a.bs_lo != b.bs_lo ? a.bs_lo < b.bs_lo : a.ctx_lo < b.ctx_lo;
                   });
  return cs;
}

int ContextScheduleSettingAt(const ContextSchedule& s, int batch, int64_t context) {
  for (const ContextScheduleCell& c : s.cells) {
    if (batch >= c.bs_lo && batch <= c.bs_hi && context >= c.ctx_lo && context <= c.ctx_hi) {
      return c.k;
    }
  }
  return 0;
}
}  // namespace specplan::whatif
