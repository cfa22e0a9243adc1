// The what-if engine: replays a recorded trace under each strategy (best-first budgets, the budget
// controller, scan, DynaTree, fixed trees, linear chains), summarises each against the oracle,
// reports the surrogate's quality, and formats the report as JSON and as a table. Over 500 lines
// because every strategy's replay shares the step accounting (MakeStep) and the option validation;
// the formats sit at the end so that a new strategy changes one place per concern.

#include "whatif/sweep.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/policies/best_first.h"
#include "planner/policies/linear_chain.h"
#include "planner/policies/policy.h"
#include "util/check.h"
#include "util/status_macros.h"
#include "whatif/replay.h"
#include "whatif/report_util.h"

namespace specplan::whatif {

namespace {

using planner::BestFirstOptions;
using planner::BestFirstPlan;
using planner::BestFirstPlanner;
using planner::BudgetMode;

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

constexpr Strategy kAll[] = {Strategy::kBestFirst, Strategy::kController, Strategy::kScan,
                             Strategy::kDynaTree,  Strategy::kFixed,      Strategy::kLinear};

// Sums over the steps one row used.
class Accumulator {
 public:
  void Add(const StepResult& r, bool keep) {
    ++used_;
    sum_l_ += r.accepted;
    sum_pred_ += r.predicted_accepted;
    sum_n_ += r.n;
    sum_cycle_ += r.cycle_s;
    sum_tar_ += r.t_ar_s;
    sum_gain_ += (1.0 + r.accepted) * r.t_ar_s;
    sum_pred_gain_ += (1.0 + r.predicted_accepted) * r.t_ar_s;
    pred_.push_back(r.predicted_accepted);
    real_.push_back(r.accepted);
    if (keep) per_step_.push_back(r);
  }

  // Fills the aggregate fields of *row; returns the Spearman correlation of (Â - 1, L).
  double Finish(WhatIfRow* row) {
    row->steps_used = used_;
    row->per_step = std::move(per_step_);
    if (used_ == 0) return kNaN;
    const double n = static_cast<double>(used_);
    row->accepted_per_step = sum_l_ / n;
    row->predicted_accepted_per_step = sum_pred_ / n;
    row->mean_tree_size = sum_n_ / n;
    row->cycle_s = sum_cycle_ / n;
    row->t_ar_s = sum_tar_ / n;
    row->speedup = sum_gain_ / sum_cycle_;
    row->predicted_speedup = sum_pred_gain_ / sum_cycle_;
    row->pearson = PearsonCorrelation(pred_, real_);
    return SpearmanCorrelation(pred_, real_);
  }

 private:
  int64_t used_ = 0;
  double sum_l_ = 0, sum_pred_ = 0, sum_n_ = 0, sum_cycle_ = 0, sum_tar_ = 0;
  double sum_gain_ = 0, sum_pred_gain_ = 0;
  std::vector<double> pred_, real_;
  std::vector<StepResult> per_step_;
};

costmodel::DrafterCost MarginalsDrafter(const WhatIfOptions& o, const planner::Marginals& m) {
  costmodel::DrafterCost d = o.drafter;
  d.gamma = m.gamma;
  return d;
}

// One step's result; the cycle is priced for the tree that ran: n draft nodes of depth `depth`
// (a drafter that drafts level by level pays for those levels only; n = 0 is the plain step).
StepResult MakeStep(int64_t index, int n, int depth, int accepted, double predicted,
                    const costmodel::CycleCost& cost) {
  StepResult r;
  r.step = index;
  r.n = n;
  r.accepted = accepted;
  r.predicted_accepted = predicted;
  r.cycle_s = cost.TreeSeconds(n, depth);
  r.t_ar_s = cost.PlainSeconds();
  r.speedup = (1.0 + accepted) * r.t_ar_s / r.cycle_s;
  return r;
}

// Everything one RunWhatIf call reuses across steps and rows.
struct Workspace {
  BestFirstPlanner planner;
  BestFirstPlan plan;
  std::vector<int32_t> matched;
  std::vector<int32_t> prefix_accepted;
  std::vector<double> prefix_predicted;
  RecordedDrafter drafter;
  planner::NodeDistributions dists;
};

// bestfirst: every budget from one fixed plan at the largest budget (prefixes of the pop order).
absl::Status SweepBestFirst(const Trace& trace, const costmodel::LatencyModel& latency,
                            const WhatIfOptions& o, const std::vector<int>& budgets, Workspace& ws,
                            std::vector<WhatIfRow>* rows) {
  const int bmax = budgets.back();
  std::vector<Accumulator> acc(budgets.size());
  int64_t skipped = 0;
  BestFirstOptions bo;
  bo.mode = BudgetMode::kFixed;
  bo.n_max = bmax;
  bo.validate = false;  // validated with the trace
  ws.planner.Reserve(bmax);
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    const TraceStep& s = trace.steps[i];
    if (!s.marginals) {
      ++skipped;
      continue;
    }
    absl::Status st = ws.planner.Plan(*s.marginals, bo, nullptr, &ws.plan);
    if (!st.ok())
      return Invalid(absl::StrCat("step ", i, ": bestfirst: ", std::string(st.message())));
    const planner::Tree& tree = ws.plan.tree;
    RealizedAcceptedLengthPerPrefix(tree, s.continuation, &ws.matched, &ws.prefix_accepted);
    ws.prefix_predicted.resize(static_cast<size_t>(tree.size()));
    double sum = 0;
    for (int j = 0; j < tree.size(); ++j) {
      if (j > 0) sum += tree.path_probs[j];
      ws.prefix_predicted[j] = sum;
    }
    const costmodel::CycleCost cost(&latency, MarginalsDrafter(o, *s.marginals), o.t_aux_s, s.c);
    for (size_t b = 0; b < budgets.size(); ++b) {
      const int n = std::min(budgets[b], tree.num_draft());
      acc[b].Add(MakeStep(static_cast<int64_t>(i), n, tree.max_depth(n + 1), ws.prefix_accepted[n],
                          ws.prefix_predicted[n], cost),
                 o.per_step);
    }
  }
  for (size_t b = 0; b < budgets.size(); ++b) {
    WhatIfRow row;
    row.strategy = Strategy::kBestFirst;
    row.budget = budgets[b];
    row.params = absl::StrCat("bestfirst(fixed, n=", budgets[b], ")");
    row.steps_skipped = skipped;
    acc[b].Finish(&row);
    rows->push_back(std::move(row));
  }
  return absl::OkStatus();
}

// controller / scan: one row at n_max. Returns the Spearman correlation through *spearman.
absl::Status RunBudgetController(const Trace& trace, const costmodel::LatencyModel& latency,
                                 const WhatIfOptions& o, Strategy strategy, int n_max,
                                 Workspace& ws, std::vector<WhatIfRow>* rows, double* spearman) {
  Accumulator acc;
  int64_t skipped = 0;
  BestFirstOptions bo;
  bo.mode = strategy == Strategy::kScan ? BudgetMode::kScan : BudgetMode::kController;
  bo.n_max = n_max;
  bo.validate = false;
  ws.planner.Reserve(n_max);
  planner::AcceptanceEstimator calibration;
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    const TraceStep& s = trace.steps[i];
    if (!s.marginals) {
      ++skipped;
      continue;
    }
    const costmodel::CycleCost cost(&latency, MarginalsDrafter(o, *s.marginals), o.t_aux_s, s.c);
    if (o.calibrate) bo.acceptance_scale = calibration.surrogate_scale();
    absl::Status st = ws.planner.Plan(*s.marginals, bo, &cost, &ws.plan);
    if (!st.ok()) {
      return Invalid(
          absl::StrCat("step ", i, ": ", StrategyName(strategy), ": ", std::string(st.message())));
    }
    const int accepted = RealizedAcceptedLength(ws.plan.tree, s.continuation, &ws.matched);
    calibration.ObserveSurrogate(ws.plan.expected_accepted, accepted);
    acc.Add(MakeStep(static_cast<int64_t>(i), ws.plan.n, ws.plan.tree.max_depth(ws.plan.n + 1),
                     accepted, ws.plan.expected_accepted - 1.0, cost),
            o.per_step);
  }
  WhatIfRow row;
  row.strategy = strategy;
  row.budget = n_max;
  row.params = absl::StrCat(
      StrategyName(strategy), "(n_max=", n_max,
      o.calibrate ? absl::StrFormat(", calibrated: s=%.3f", calibration.surrogate_scale())
                  : std::string(),
      ")");
  row.steps_skipped = skipped;
  *spearman = acc.Finish(&row);
  rows->push_back(std::move(row));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<planner::TreePolicy>> MakePolicy(Strategy strategy, int budget,
                                                                const WhatIfOptions& o) {
  switch (strategy) {
    case Strategy::kDynaTree: {
      planner::DynaTreeOptions d = o.dynatree;
      d.n_max = budget;
      SPECPLAN_ASSIGN_OR_RETURN(auto p, planner::DynaTreePolicy::Create(d));
      return std::unique_ptr<planner::TreePolicy>(std::move(p));
    }
    case Strategy::kFixed: {
      planner::FixedTreeOptions f = o.fixed_tree;
      f.max_nodes = budget;
      SPECPLAN_ASSIGN_OR_RETURN(auto p, planner::FixedTreePolicy::Create(f));
      return std::unique_ptr<planner::TreePolicy>(std::move(p));
    }
    case Strategy::kLinear: {
      planner::LinearChainOptions l;
      l.k = budget;
      SPECPLAN_ASSIGN_OR_RETURN(auto p, planner::LinearChainPolicy::Create(l));
      return std::unique_ptr<planner::TreePolicy>(std::move(p));
    }
    default:
      break;
  }
  return absl::InternalError("MakePolicy: not a policy strategy");
}

// A policy strategy at one budget, replayed over the steps' recorded nodes in trace order.
absl::Status ReplayPolicy(const Trace& trace, const costmodel::LatencyModel& latency,
                          const WhatIfOptions& o, Strategy strategy, int budget, Workspace& ws,
                          std::vector<WhatIfRow>* rows) {
  auto made = MakePolicy(strategy, budget, o);
  if (!made.ok()) {
    return Invalid(
        absl::StrCat(StrategyName(strategy), " options: ", std::string(made.status().message())));
  }
  planner::TreePolicy& policy = **made;
  const planner::DrafterFn fill = [&ws](const planner::Tree& tree,
                                        planner::NodeDistributions& dists) {
    return ws.drafter.Fill(tree, dists);
  };
  Accumulator acc;
  int64_t skipped = 0;
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    const TraceStep& s = trace.steps[i];
    if (!s.nodes) {
      ++skipped;
      continue;
    }
    ws.drafter.Reset(*s.nodes);
    auto tree = planner::RunPolicy(policy, s.root, fill, &ws.dists);
    if (!tree.ok()) {
      return Invalid(absl::StrCat("step ", i, ": ", policy.Name(), ": ",
                                  std::string(tree.status().message())));
    }
    const planner::Tree& t = **tree;
    const int accepted = RealizedAcceptedLength(t, s.continuation, &ws.matched);
    absl::Status st = policy.ObserveAcceptance(accepted);
    if (!st.ok()) {
      return Invalid(
          absl::StrCat("step ", i, ": ", policy.Name(), ": ", std::string(st.message())));
    }
    double predicted = 0;
    for (int j = 1; j < t.size(); ++j) predicted += t.path_probs[j];
    costmodel::DrafterCost dc;
    dc.cls = costmodel::DrafterClass::kAutoregressive;
    dc.gamma = policy.stats().last_forwards;
    dc.t_net_s = o.policy_forward_s;
    const costmodel::CycleCost cost(&latency, dc, o.t_aux_s, s.c);
    // The policy's own forwards price its drafting (dc is depth-flat).
    acc.Add(
        MakeStep(static_cast<int64_t>(i), t.num_draft(), t.max_depth(), accepted, predicted, cost),
        o.per_step);
  }
  WhatIfRow row;
  row.strategy = strategy;
  row.budget = budget;
  row.params = policy.Name();
  row.steps_skipped = skipped;
  acc.Finish(&row);
  rows->push_back(std::move(row));
  return absl::OkStatus();
}

ControllerSummary Summarize(const WhatIfRow& row, const OracleSummary& oracle) {
  ControllerSummary c;
  if (row.steps_used == 0) return c;
  c.found = true;
  c.speedup = row.speedup;
  c.accepted_per_step = row.accepted_per_step;
  c.mean_tree_size = row.mean_tree_size;
  if (oracle.found) c.ratio_to_oracle = row.speedup / oracle.speedup;
  return c;
}

void ComputeChainSurrogate(const Trace& trace, SurrogateQuality* q) {
  std::vector<double> pred, real;
  for (const TraceStep& s : trace.steps) {
    if (!s.marginals) continue;
    const planner::Marginals& m = *s.marginals;
    double rho = 1, a_hat = 0;
    int accepted = 0;
    bool matching = true;
    for (int d = 0; d < m.gamma; ++d) {
      rho *= m.prob(d, 0);
      a_hat += rho;
      if (matching && d < static_cast<int>(s.continuation.size()) &&
          m.token(d, 0) == s.continuation[d]) {
        ++accepted;
      } else {
        matching = false;
      }
    }
    pred.push_back(a_hat);
    real.push_back(accepted);
  }
  q->steps = static_cast<int64_t>(pred.size());
  if (pred.empty()) return;
  double sp = 0, sr = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    sp += pred[i];
    sr += real[i];
  }
  q->chain_predicted_mean = sp / pred.size();
  q->chain_accepted_mean = sr / real.size();
  q->chain_pearson = PearsonCorrelation(pred, real);
  q->chain_spearman = SpearmanCorrelation(pred, real);
}

}  // namespace

absl::StatusOr<Strategy> ParseStrategy(std::string_view name) {
  if (auto s = planner::FindStrategyIn(kAll, name)) return *s;
  return Invalid(absl::StrCat("'", std::string(name),
                              "': unknown strategy (known: ", planner::StrategyNames(kAll), ")"));
}

std::vector<Strategy> AllStrategies() {
  return std::vector<Strategy>(std::begin(kAll), std::end(kAll));
}

bool SweepsBudgets(Strategy s) { return s != Strategy::kController && s != Strategy::kScan; }

absl::StatusOr<std::vector<int>> ParseBudgetList(std::string_view text) {
  std::vector<int> out;
  std::set<int> seen;
  for (absl::string_view item : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    item = absl::StripAsciiWhitespace(item);
    int v = 0;
    if (!absl::SimpleAtoi(item, &v)) {
      return Invalid(absl::StrCat("'", std::string(item), "': not an integer"));
    }
    if (v < 1 || v >= planner::kMaxTreeNodes) {
      return Invalid(absl::StrCat("'", std::string(item), "': budget must be in [1, ",
                                  planner::kMaxTreeNodes - 1, "] draft nodes"));
    }
    if (!seen.insert(v).second) {
      return Invalid(absl::StrCat("'", std::string(item), "': listed twice"));
    }
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<Strategy>> ParseStrategyList(std::string_view text) {
  std::vector<Strategy> out;
  for (absl::string_view item : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item == "all") {
      for (Strategy s : kAll) {
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
      }
      continue;
    }
    SPECPLAN_ASSIGN_OR_RETURN(Strategy s,
                              ParseStrategy(std::string_view(item.data(), item.size())));
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      return Invalid(absl::StrCat("'", std::string(item), "': listed twice"));
    }
    out.push_back(s);
  }
  return out;
}

absl::StatusOr<WhatIfReport> RunWhatIf(const Trace& trace, const costmodel::LatencyModel& latency,
                                       const WhatIfOptions& o) {
  // Options.
  std::vector<int> budgets = o.budgets;
  if (budgets.empty()) return Invalid("budgets: empty (need at least one budget)");
  for (size_t i = 0; i < budgets.size(); ++i) {
    if (budgets[i] < 1 || budgets[i] >= planner::kMaxTreeNodes) {
      return Invalid(absl::StrCat("budgets[", i, "] = ", budgets[i], ": must be in [1, ",
                                  planner::kMaxTreeNodes - 1, "] draft nodes"));
    }
  }
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  std::vector<Strategy> strategies;
  for (size_t i = 0; i < o.strategies.size(); ++i) {
    const Strategy s = o.strategies[i];
    SPECPLAN_RETURN_IF_ERROR(
        planner::CheckStrategyIn(kAll, absl::StrCat("strategies[", i, "]"), s));
    if (std::find(strategies.begin(), strategies.end(), s) == strategies.end()) {
      strategies.push_back(s);
    }
  }
  if (strategies.empty()) return Invalid("strategies: empty (need at least one strategy)");
  if (o.n_max < 0 || o.n_max >= planner::kMaxTreeNodes) {
    return Invalid(absl::StrCat("n_max = ", o.n_max, ": must be in [0, ",
                                planner::kMaxTreeNodes - 1, "] (0: the largest budget)"));
  }
  const int n_max = o.n_max > 0 ? o.n_max : budgets.back();
  SPECPLAN_RETURN_IF_ERROR(CheckSeconds(o.t_aux_s, "t_aux_s"));
  SPECPLAN_RETURN_IF_ERROR(CheckSeconds(o.policy_forward_s, "policy_forward_s"));
  SPECPLAN_RETURN_IF_ERROR(CheckDrafterSeconds(o.drafter));
  for (Strategy s : strategies) {
    if (s == Strategy::kDynaTree) {
      planner::DynaTreeOptions d = o.dynatree;
      d.n_max = budgets.back();
      absl::Status st = planner::ValidateDynaTreeOptions(d);
      if (!st.ok()) return Invalid(absl::StrCat("dynatree.", std::string(st.message())));
    } else if (s == Strategy::kFixed) {
      planner::FixedTreeOptions f = o.fixed_tree;
      f.max_nodes = budgets.back();
      absl::Status st = planner::ValidateFixedTreeOptions(f);
      if (!st.ok()) return Invalid(absl::StrCat("fixed_tree.", std::string(st.message())));
    }
  }
  // Trace.
  if (trace.steps.empty()) return Invalid("trace: no steps");
  if (o.validate_trace) SPECPLAN_RETURN_IF_ERROR(ValidateTraceSteps(trace));
  WhatIfReport report;
  std::set<int64_t> prompts;
  for (const TraceStep& s : trace.steps) {
    report.steps_with_marginals += s.marginals.has_value();
    report.steps_with_nodes += s.nodes.has_value();
    prompts.insert(s.prompt);
  }
  static_cast<ReplayBasis&>(report) =
      BasisOf(trace, latency, n_max, o.drafter, o.t_aux_s, o.calibrate);
  report.vocab = trace.header.vocab;
  report.steps = static_cast<int64_t>(trace.steps.size());
  report.prompts = static_cast<int64_t>(prompts.size());
  report.budgets = budgets;
  report.strategies = strategies;
  report.policy_forward_s = o.policy_forward_s;

  int total_rows = 0;
  for (Strategy s : strategies)
    total_rows += SweepsBudgets(s) ? static_cast<int>(budgets.size()) : 1;
  Workspace ws;
  double controller_spearman = kNaN, scan_spearman = kNaN;
  for (Strategy s : strategies) {
    switch (s) {
      case Strategy::kBestFirst:
        SPECPLAN_RETURN_IF_ERROR(SweepBestFirst(trace, latency, o, budgets, ws, &report.rows));
        break;
      case Strategy::kController:
        SPECPLAN_RETURN_IF_ERROR(RunBudgetController(trace, latency, o, s, n_max, ws, &report.rows,
                                                     &controller_spearman));
        break;
      case Strategy::kScan:
        SPECPLAN_RETURN_IF_ERROR(
            RunBudgetController(trace, latency, o, s, n_max, ws, &report.rows, &scan_spearman));
        break;
      default:
        for (int b : budgets) {
          SPECPLAN_RETURN_IF_ERROR(ReplayPolicy(trace, latency, o, s, b, ws, &report.rows));
          if (o.progress) o.progress(static_cast<int>(report.rows.size()), total_rows);
        }
        continue;
    }
    if (o.progress) o.progress(static_cast<int>(report.rows.size()), total_rows);
  }

  // Oracle: the best fixed best-first budget in hindsight (ties: the smaller budget).
  for (const WhatIfRow& r : report.rows) {
    if (r.strategy != Strategy::kBestFirst || r.steps_used == 0 || !std::isfinite(r.speedup)) {
      continue;
    }
    if (!report.oracle.found || r.speedup > report.oracle.speedup) {
      report.oracle.found = true;
      report.oracle.budget = r.budget;
      report.oracle.speedup = r.speedup;
      report.oracle.accepted_per_step = r.accepted_per_step;
    }
  }
  for (const WhatIfRow& r : report.rows) {
    if (r.strategy == Strategy::kController) {
      report.controller = Summarize(r, report.oracle);
      report.surrogate.controller_pearson = r.pearson;
      report.surrogate.controller_spearman = controller_spearman;
    } else if (r.strategy == Strategy::kScan) {
      report.scan = Summarize(r, report.oracle);
    }
  }
  (void)scan_spearman;
  ComputeChainSurrogate(trace, &report.surrogate);
  return report;
}

}  // namespace specplan::whatif
