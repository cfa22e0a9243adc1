// The replay under concurrency (whatif/concurrency.h). Over 500 lines because RunConcurrency is
// one replay loop that prices every strategy's rows on the same batch steps, so that they compare
// exactly; splitting it would duplicate the ring and the batch assembly.
#include "whatif/concurrency.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "costmodel/batch_shape.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/batch/batch_plan.h"
#include "planner/policies/best_first.h"
#include "util/check.h"
#include "util/status_macros.h"
#include "whatif/replay.h"
#include "whatif/report_util.h"

namespace specplan::whatif {

namespace {

using costmodel::BatchCycleCost;
using costmodel::BatchShape;
using planner::BudgetMode;

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

constexpr Strategy kAllConcurrency[] = {Strategy::kAr, Strategy::kFixed, Strategy::kController,
                                        Strategy::kBatch};
constexpr int kStrategies = 4;  // the rows every replay has; best-fixed is the fifth

// One replayed ring step and the per-request plans that do not depend on the batch.
struct RingStep {
  const TraceStep* step = nullptr;
  int fixed_n = 0;       // fixed: draft nodes
  int fixed_l = 0;       // fixed: realised accepted length
  int controller_n = 0;  // controller: n*
  int controller_l = 0;  // controller: realised accepted length
  // best-fixed: draft nodes and realised accepted length at each of BestFixedBudgets(n_max)
  std::vector<int> static_n, static_l;
  // best-chain: the same at each of ChainLengths(gamma, n_max)
  std::vector<int> chain_n, chain_l;
};

// Sums of one (B, strategy) row.
struct RowSums {
  double tokens = 0, seconds = 0, accepted = 0, nodes = 0;
  int64_t plain_steps = 0;
};

// The top-1 chain of min(k, gamma) draft nodes: node d + 1 is row d's first candidate.
void TopOneChain(const planner::Marginals& m, int k, planner::Tree* tree) {
  tree->ResetRoot(m.root_token);
  double rho = 1;
  for (int d = 0; d < std::min(k, m.gamma); ++d) {
    rho *= m.prob(d, 0);
    tree->AddNode(d, m.token(d, 0), rho);
  }
}

// One static row group (best-fixed's budgets or best-chain's lengths) in one replay: per setting,
// the sums and the current batch step's shape.
struct StaticGroup {
  std::vector<RowSums> sums;
  std::vector<BatchShape> shapes;

  explicit StaticGroup(size_t settings) : sums(settings), shapes(settings) {}
  void ClearShapes() {
    for (BatchShape& shape : shapes) shape.Clear();
  }
  // One request step at context c: setting k drafts n[k] nodes and realises l[k] of them.
  void Add(const std::vector<int>& n, const std::vector<int>& l, int64_t c) {
    for (size_t k = 0; k < sums.size(); ++k) {
      shapes[k].Add(n[k] + 1, c);
      sums[k].tokens += 1 + l[k];
      sums[k].accepted += l[k];
      sums[k].nodes += n[k];
    }
  }
  // Prices the batch step of every setting as one ragged pass.
  void Price(const BatchCycleCost& cost) {
    for (size_t k = 0; k < sums.size(); ++k) sums[k].seconds += cost.Seconds(shapes[k]);
  }
};

// The row of one strategy's sums over a replay of `steps` batch steps and `request_steps`
// request steps.
ConcurrencyRow MakeRow(int label, Strategy strategy, int steps, double request_steps,
                       const RowSums& sums, double ar_throughput) {
  ConcurrencyRow row;
  row.batch = label;
  row.strategy = strategy;
  row.steps = steps;
  row.tokens = sums.tokens;
  row.seconds = sums.seconds;
  row.throughput = sums.tokens / sums.seconds;
  row.accepted = sums.accepted / request_steps;
  row.mean_tree_size = sums.nodes / request_steps;
  row.cycle_s = sums.seconds / steps;
  row.speedup = row.throughput / ar_throughput;
  row.plain_steps = sums.plain_steps;
  return row;
}

costmodel::DrafterCost BatchDrafter(const ConcurrencyOptions& o, int gamma) {
  costmodel::DrafterCost d = o.drafter;
  d.gamma = gamma;
  return d;
}

}  // namespace

std::vector<Strategy> AllConcurrencyStrategies() {
  return std::vector<Strategy>(std::begin(kAllConcurrency), std::end(kAllConcurrency));
}

std::vector<int> BestFixedBudgets(int n_max) {
  std::vector<int> out;
  for (int p = 1; p <= n_max; p *= 2) {
    out.push_back(p);
    if (p >= 2 && p + p / 2 <= n_max) out.push_back(p + p / 2);
  }
  if (out.empty() || out.back() != n_max) out.push_back(n_max);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> ChainLengths(int gamma, int n_max) {
  std::vector<int> out;
  for (int k = 1; k <= std::min(gamma, n_max); ++k) out.push_back(k);
  return out;
}

int MaxConcurrency() { return planner::kMaxBatchRequests; }

absl::StatusOr<std::vector<int>> ParseConcurrencyList(std::string_view text) {
  std::vector<int> out;
  std::set<int> seen;
  for (absl::string_view item : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    item = absl::StripAsciiWhitespace(item);
    const std::string quoted = absl::StrCat("\"", std::string(item), "\"");
    int v = 0;
    if (!absl::SimpleAtoi(item, &v) || v < 1) {
      return Invalid(absl::StrCat(quoted, " must be a positive integer"));
    }
    if (v > MaxConcurrency()) {
      return Invalid(absl::StrCat(quoted, " must be at most ", MaxConcurrency()));
    }
    if (!seen.insert(v).second) return Invalid(absl::StrCat(quoted, " is listed twice"));
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<ConcurrencyReport> RunConcurrency(const Trace& trace,
                                                 const costmodel::LatencyModel& latency,
                                                 const ConcurrencyOptions& o) {
  // Options.
  std::vector<int> sizes = o.recorded ? std::vector<int>{} : o.batch_sizes;
  if (sizes.empty() && !o.recorded) {
    return Invalid("batch_sizes: empty (need at least one batch size)");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1 || sizes[i] > MaxConcurrency()) {
      return Invalid(absl::StrCat("batch_sizes[", i, "] = ", sizes[i], ": must be in [1, ",
                                  MaxConcurrency(), "]"));
    }
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (o.n_max < 1 || o.n_max >= planner::kMaxTreeNodes) {
    return Invalid(absl::StrCat("n_max = ", o.n_max, ": must be in [1, ",
                                planner::kMaxTreeNodes - 1, "] draft nodes per request"));
  }
  SPECPLAN_RETURN_IF_ERROR(CheckSeconds(o.t_aux_s, "t_aux_s"));
  SPECPLAN_RETURN_IF_ERROR(CheckDrafterSeconds(o.drafter));
  if (o.context_offset < 0 || o.context_offset > kMaxContextOffset) {
    return Invalid(absl::StrCat("context_offset = ", o.context_offset, ": must be in [0, ",
                                kMaxContextOffset, "] tokens"));
  }
  if (!(o.drafter.batch_growth >= 0) || !std::isfinite(o.drafter.batch_growth)) {
    return Invalid(absl::StrCat("drafter.batch_growth = ", o.drafter.batch_growth,
                                ": must be a finite number >= 0"));
  }

  // The ring of steps with marginals, and the plans that do not depend on the batch.
  if (o.validate_trace) SPECPLAN_RETURN_IF_ERROR(ValidateTraceSteps(trace));
  std::vector<RingStep> ring;
  for (const TraceStep& s : trace.steps) {
    if (s.marginals) {
      ring.emplace_back();
      ring.back().step = &s;
    }
  }
  if (ring.empty()) return Invalid("trace: no step with marginals");
  planner::BestFirstPlanner single;
  planner::BestFirstPlan plan;
  std::vector<int32_t> matched;
  single.Reserve(o.n_max);
  planner::BestFirstOptions controller;
  controller.mode = BudgetMode::kController;
  controller.n_max = o.n_max;
  controller.validate = false;  // validated with the trace
  planner::AcceptanceEstimator controller_calibration;
  const std::vector<int> budgets = o.best_fixed ? BestFixedBudgets(o.n_max) : std::vector<int>{};
  int max_gamma = 1;
  for (const RingStep& r : ring) max_gamma = std::max(max_gamma, r.step->marginals->gamma);
  const std::vector<int> lengths =
      o.best_chain ? ChainLengths(max_gamma, o.n_max) : std::vector<int>{};
  planner::Tree chain;
  for (RingStep& r : ring) {
    const TraceStep& s = *r.step;
    absl::Status st = single.PlanFixed(*s.marginals, o.n_max, &plan);
    if (!st.ok()) return Invalid(absl::StrCat("fixed: ", std::string(st.message())));
    r.fixed_n = plan.n;
    r.fixed_l = RealizedAcceptedLength(plan.tree, s.continuation, &matched);
    if (o.best_fixed) {
      for (int n : budgets) {
        st = single.PlanFixed(*s.marginals, n, &plan);
        if (!st.ok()) return Invalid(absl::StrCat("best-fixed: ", std::string(st.message())));
        r.static_n.push_back(plan.n);
        r.static_l.push_back(RealizedAcceptedLength(plan.tree, s.continuation, &matched));
      }
    }
    for (int k : lengths) {
      TopOneChain(*s.marginals, k, &chain);
      r.chain_n.push_back(chain.num_draft());
      r.chain_l.push_back(RealizedAcceptedLength(chain, s.continuation, &matched));
    }
    const costmodel::CycleCost cost(&latency, BatchDrafter(o, s.marginals->gamma), o.t_aux_s,
                                    s.c + o.context_offset);
    if (o.calibrate) controller.acceptance_scale = controller_calibration.surrogate_scale();
    st = single.Plan(*s.marginals, controller, &cost, &plan);
    if (!st.ok()) return Invalid(absl::StrCat("controller: ", std::string(st.message())));
    r.controller_n = plan.n;
    r.controller_l = RealizedAcceptedLength(plan.tree, s.continuation, &matched);
    controller_calibration.ObserveSurrogate(plan.expected_accepted, r.controller_l);
  }

  ConcurrencyReport report;
  report.target = trace.header.target;
  report.draft = trace.header.draft;
  report.trace_steps = static_cast<int64_t>(trace.steps.size());
  report.ring_steps = static_cast<int64_t>(ring.size());
  report.latency_model = latency.Kind();
  report.batch_sizes = sizes;
  report.n_max = o.n_max;
  report.drafter = o.drafter;
  report.t_aux_s = o.t_aux_s;
  report.context_offset = o.context_offset;
  report.batch_scan = o.batch_scan;
  report.calibrate = o.calibrate;
  report.best_fixed = o.best_fixed;
  report.best_chain = o.best_chain;
  report.best_fixed_settings.sizes = budgets;
  report.best_chain_settings.sizes = lengths;
  if (o.calibrate) report.controller_scale = controller_calibration.surrogate_scale();

  const int S = static_cast<int>(ring.size());
  planner::BatchPlanner batch_planner;
  planner::BatchPlan batch_plan;
  planner::BatchPlanOptions bo;
  bo.mode = o.batch_scan ? BudgetMode::kScan : BudgetMode::kController;
  bo.validate = false;
  std::vector<planner::BatchRequest> requests;
  std::vector<int> at;  // ring position of each request in this batch step
  BatchShape plain, fixed, ctl;
  // Replays one schedule: `steps` batch steps, step t of size(t) requests, request j at ring
  // position position(t, j). Appends the four rows labelled `label`; returns batch's throughput
  // over ar's.
  auto replay = [&](int label, int steps, const std::function<int(int)>& size,
                    const std::function<int(int, int)>& position) -> absl::StatusOr<bool> {
    RowSums sums[kStrategies];
    StaticGroup statics(budgets.size()), chains(lengths.size());
    double request_steps = 0;
    planner::AcceptanceEstimator batch_calibration;
    for (int t = 0; t < steps; ++t) {
      const int B = size(t);
      request_steps += B;
      bo.n_max = static_cast<int>(
          std::min<int64_t>(static_cast<int64_t>(B) * o.n_max, planner::kMaxBatchNodes));
      requests.assign(static_cast<size_t>(B), planner::BatchRequest{});
      at.resize(static_cast<size_t>(B));
      plain.Clear();
      fixed.Clear();
      ctl.Clear();
      statics.ClearShapes();
      chains.ClearShapes();
      int gamma = 1;
      bool ctl_drafts = false;
      for (int j = 0; j < B; ++j) {
        const int k = position(t, j);
        at[j] = k;
        const RingStep& r = ring[k];
        const TraceStep& s = *r.step;
        const int64_t c = s.c + o.context_offset;
        gamma = std::max(gamma, s.marginals->gamma);
        plain.Add(1, c);
        fixed.Add(r.fixed_n + 1, c);
        ctl.Add(r.controller_n + 1, c);
        ctl_drafts = ctl_drafts || r.controller_n > 0;
        sums[1].tokens += 1 + r.fixed_l;
        sums[1].accepted += r.fixed_l;
        sums[1].nodes += r.fixed_n;
        sums[2].tokens += 1 + r.controller_l;
        sums[2].accepted += r.controller_l;
        sums[2].nodes += r.controller_n;
        statics.Add(r.static_n, r.static_l, c);
        chains.Add(r.chain_n, r.chain_l, c);
        requests[j].marginals = &*s.marginals;
        requests[j].c = c;
        requests[j].n_max = o.n_max;
      }
      const BatchCycleCost cost(&latency, BatchDrafter(o, gamma), o.t_aux_s);
      // Plain decoding on the same step model as the speculative steps (DrafterCost::plain_*).
      const double t_ar =
          latency.VerifyBatchSeconds(plain) + o.drafter.plain_step_s +
          (o.drafter.per_sequence_s + o.drafter.per_token_s) * static_cast<double>(plain.size());
      // ar
      sums[0].tokens += B;
      sums[0].seconds += t_ar;
      ++sums[0].plain_steps;
      // fixed and controller: every request drafted; the batch is priced together.
      sums[1].seconds += cost.Seconds(fixed);
      sums[2].seconds += cost.Seconds(ctl);
      statics.Price(cost);
      chains.Price(cost);
      if (!ctl_drafts) ++sums[2].plain_steps;
      // batch
      if (o.calibrate) bo.acceptance_scale = batch_calibration.surrogate_scale();
      absl::Status st = batch_planner.Plan(requests, bo, &cost, &batch_plan);
      if (!st.ok()) {
        return Invalid(
            absl::StrCat("batch (B = ", B, ", batch step ", t, "): ", std::string(st.message())));
      }
      RowSums& bp = sums[3];
      if (!batch_plan.speculation_pays) {
        bp.tokens += B;
        bp.seconds += t_ar;
        ++bp.plain_steps;
      } else {
        bp.seconds += batch_plan.cycle_s;
        bp.nodes += batch_plan.n_total;
        for (int j = 0; j < B; ++j) {
          const int l =
              RealizedAcceptedLength(batch_plan.trees[j], ring[at[j]].step->continuation, &matched);
          bp.tokens += 1 + l;
          bp.accepted += l;
          batch_calibration.ObserveSurrogate(batch_plan.expected_accepted[j], l);
        }
      }
    }
    if (o.calibrate) report.batch_scales.push_back(batch_calibration.surrogate_scale());
    const double ar_throughput = sums[0].tokens / sums[0].seconds;
    for (int k = 0; k < kStrategies; ++k) {
      report.rows.push_back(
          MakeRow(label, kAllConcurrency[k], steps, request_steps, sums[k], ar_throughput));
    }
    const bool pays = report.rows.back().throughput > ar_throughput;
    // The best static setting of a group: the highest throughput, or plain decoding (0) when
    // none beats it. Appends its row and every setting's throughput to `settings`.
    auto best_static = [&](const StaticGroup& group, const std::vector<int>& values,
                           Strategy strategy, StaticSettings* settings) {
      int best = -1;
      double best_throughput = ar_throughput;
      for (size_t k = 0; k < values.size(); ++k) {
        const double t = group.sums[k].tokens / group.sums[k].seconds;
        settings->throughput.push_back(t);
        if (t > best_throughput) best = static_cast<int>(k), best_throughput = t;
      }
      // Plain decoding's sums count every step plain; a static setting's count none.
      const RowSums& b = best < 0 ? sums[0] : group.sums[static_cast<size_t>(best)];
      report.rows.push_back(MakeRow(label, strategy, steps, request_steps, b, ar_throughput));
      return best < 0 ? 0 : values[static_cast<size_t>(best)];
    };
    if (o.best_fixed) {
      report.best_fixed_budgets.push_back(
          best_static(statics, budgets, Strategy::kBestFixed, &report.best_fixed_settings));
    }
    if (o.best_chain) {
      report.best_chain_lengths.push_back(
          best_static(chains, lengths, Strategy::kBestChain, &report.best_chain_settings));
    }
    return pays;
  };

  if (o.recorded) {
    // The recorded passes, in pass order: each is one batch step with its recorded requests.
    std::map<int64_t, std::vector<int>> by_pass;
    for (int k = 0; k < S; ++k) {
      const TraceStep& s = *ring[k].step;
      if (s.pass < 0) {
        return Invalid(absl::StrCat(
            "recorded: trace step of prompt ", s.prompt, " at c = ", s.c,
            " has no \"pass\" (record a batch run: specplan-bench --batch B --record-trace)"));
      }
      by_pass[s.pass].push_back(k);
    }
    std::vector<const std::vector<int>*> passes;
    for (const auto& [pass, members] : by_pass) passes.push_back(&members);
    report.recorded_passes = static_cast<int64_t>(passes.size());
    report.recorded_mean_batch = static_cast<double>(S) / static_cast<double>(passes.size());
    SPECPLAN_ASSIGN_OR_RETURN(bool pays,
                              replay(
                                  kRecordedBatch, static_cast<int>(passes.size()),
                                  [&](int t) { return static_cast<int>(passes[t]->size()); },
                                  [&](int t, int j) { return (*passes[t])[j]; }));
    report.recorded_pays = pays;
    if (o.progress) o.progress(1, 1);
    return report;
  }
  for (size_t si = 0; si < sizes.size(); ++si) {
    const int B = sizes[si];
    // Request j starts at ring position floor(j S / B) and advances one position per step.
    SPECPLAN_ASSIGN_OR_RETURN(
        bool pays, replay(
                       B, S, [B](int) { return B; },
                       [B, S](int t, int j) {
                         const int offset = static_cast<int>(static_cast<int64_t>(j) * S / B);
                         return (offset + t) % S;
                       }));
    if (report.stop_paying_batch == 0 && !pays) report.stop_paying_batch = B;
    if (o.progress) o.progress(static_cast<int>(si) + 1, static_cast<int>(sizes.size()));
  }
  return report;
}

const ConcurrencyRow* FindConcurrencyRow(const ConcurrencyReport& report, int batch,
                                         Strategy strategy) {
  for (const ConcurrencyRow& row : report.rows) {
    if (row.batch == batch && row.strategy == strategy) return &row;
  }
  return nullptr;
}

std::vector<Strategy> ReportStrategies(const ConcurrencyReport& report) {
  std::vector<Strategy> out = AllConcurrencyStrategies();
  if (report.best_fixed) out.push_back(Strategy::kBestFixed);
  if (report.best_chain) out.push_back(Strategy::kBestChain);
  return out;
}

nlohmann::json ConcurrencyReportToJson(const ConcurrencyReport& r) {
  using nlohmann::json;
  json j;
  j["trace"] = {{"target", r.target},
                {"draft", r.draft},
                {"steps", r.trace_steps},
                {"ring_steps", r.ring_steps}};
  j["latency_model"] = r.latency_model;
  j["options"] = {{"concurrency", r.batch_sizes},
                  {"strategies", StrategyNamesJson(ReportStrategies(r))},
                  {"n_max", r.n_max},
                  {"drafter", DrafterJson(r.drafter)},
                  {"t_aux_s", r.t_aux_s},
                  {"batch_mode", r.batch_scan ? "scan" : "controller"},
                  {"calibrate", r.calibrate}};
  j["options"]["drafter"]["batch_growth"] = r.drafter.batch_growth;
  if (r.calibrate) {
    j["calibration"] = {{"controller_scale", r.controller_scale}, {"batch_scales", r.batch_scales}};
  }
  json rows = json::array();
  for (const ConcurrencyRow& row : r.rows) {
    json jr = NumbersOrNull({{"seconds", row.seconds},
                             {"throughput", row.throughput},
                             {"accepted", row.accepted},
                             {"mean_tree_size", row.mean_tree_size},
                             {"cycle_s", row.cycle_s},
                             {"speedup", row.speedup}});
    jr.update({{"batch", row.batch},
               {"strategy", StrategyName(row.strategy)},
               {"steps", row.steps},
               {"tokens", row.tokens},
               {"plain_steps", row.plain_steps}});
    rows.push_back(std::move(jr));
  }
  j["rows"] = std::move(rows);
  if (r.best_fixed) j["best_fixed_budgets"] = r.best_fixed_budgets;
  if (r.best_chain) j["best_chain_lengths"] = r.best_chain_lengths;
  j["stop_paying_batch"] = r.stop_paying_batch > 0 ? json(r.stop_paying_batch) : json(nullptr);
  j["interleaving"] = r.recorded_passes > 0 ? "recorded" : "ring";
  if (r.recorded_passes > 0) {
    j["recorded"] = {{"passes", r.recorded_passes},
                     {"mean_batch", r.recorded_mean_batch},
                     {"speculation_pays", r.recorded_pays}};
  }
  return j;
}

std::string FormatConcurrencyTable(const ConcurrencyReport& r) {
  const auto f = FormatOrDash;
  const std::string replayed =
      r.recorded_passes > 0
          ? absl::StrFormat("replayed in the %d recorded passes", r.recorded_passes)
          : std::string("replayed by every request");
  std::string out = absl::StrFormat(
      "trace: %s -> %s, %d steps (%d with marginals, %s)\n"
      "cost: %s latency model; drafter %s (t_net %.3f ms, t_head %.3f ms, batch growth %g), "
      "aux %.3f ms; n_max %d draft nodes per request; batch planner: %s\n",
      r.draft, r.target, r.trace_steps, r.ring_steps, replayed, r.latency_model,
      costmodel::DrafterClassName(r.drafter.cls), r.drafter.t_net_s * 1e3, r.drafter.t_head_s * 1e3,
      r.drafter.batch_growth, r.t_aux_s * 1e3, r.n_max,
      r.batch_scan ? "scan (argmax of G(N))" : "controller (first decrease of G(N))");
  if (r.calibrate) {
    const std::string scales = absl::StrJoin(r.batch_scales, " ", [](std::string* out, double s) {
      absl::StrAppendFormat(out, "%.2f", s);
    });
    out += absl::StrFormat(
        "surrogate calibrated online: controller's final scale %.2f; batch's per B: %s\n",
        r.controller_scale, scales);
  }
  out += "\n";
  out += absl::StrFormat("%5s  %-13s %11s %8s %9s %7s %9s %7s\n", "B", "strategy", "tokens/s",
                         "speedup", "accepted", "tree", "cycle_ms", "plain");
  int last_b = -1;
  for (const ConcurrencyRow& row : r.rows) {
    if (last_b >= 0 && row.batch != last_b) out += "\n";
    last_b = row.batch;
    out += absl::StrFormat(
        "%5s  %-13s %11s %8s %9s %7s %9s %7s\n",
        row.batch == kRecordedBatch ? std::string("rec") : absl::StrCat(row.batch),
        StrategyName(row.strategy), f(row.throughput, 1), FormatSpeedup(row.speedup),
        f(row.accepted, 3), f(row.mean_tree_size, 1), f(row.cycle_s * 1e3, 3),
        absl::StrFormat("%d/%d", row.plain_steps, row.steps));
  }
  out += "\n";
  // One line of a best row's setting per batch size.
  auto settings_line = [&r, &out](const char* heading, const std::vector<int>& values) {
    out += heading;
    for (size_t i = 0; i < values.size(); ++i) {
      out += absl::StrFormat(
          " %s:%d", r.recorded_passes > 0 ? std::string("rec") : absl::StrCat(r.batch_sizes[i]),
          values[i]);
    }
    out += "\n";
  };
  if (r.best_fixed) {
    settings_line("best-fixed budget per B (draft nodes per request; 0 = plain decoding):",
                  r.best_fixed_budgets);
  }
  if (r.best_chain) {
    settings_line(
        "best-chain length per B (top-1 chain of K draft tokens per request; 0 = plain decoding):",
        r.best_chain_lengths);
  }
  if (r.recorded_passes > 0) {
    out += absl::StrFormat(
        "recorded batches (%d passes, mean B = %.2f): the batch planner's throughput is %s plain "
        "decoding's\n",
        r.recorded_passes, r.recorded_mean_batch, r.recorded_pays ? "above" : "not above");
  } else if (r.stop_paying_batch > 0) {
    out += absl::StrFormat(
        "speculation stops paying at B = %d (the batch planner's throughput is not above plain "
        "decoding's)\n",
        r.stop_paying_batch);
  } else {
    out += absl::StrFormat(
        "speculation never stops paying in the range (B = %d..%d): the batch planner's throughput "
        "is above plain decoding's at every B\n",
        r.batch_sizes.empty() ? 0 : r.batch_sizes.front(),
        r.batch_sizes.empty() ? 0 : r.batch_sizes.back());
  }
  return out;
}

}  // namespace specplan::whatif
