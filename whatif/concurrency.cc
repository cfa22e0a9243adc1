// The replay under concurrency (whatif/concurrency.h) in named steps: the options are checked
// (CheckedBatchSizes), every ring step is planned alone once (PlanRing: fixed, controller,
// best-fixed's budgets, best-chain's chains), and a BatchReplay prices every strategy's rows on the
// same batch steps, so that they compare exactly, for the ring at each batch size (ReplayRing) or
// for the recorded passes (ReplayRecorded). Its JSON and table are concurrency_render.cc's.
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
#include "costmodel/latency/batch_shape.h"
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

// One replayed ring step and the per-request plans that do not depend on the batch.
struct RingStep {
  const TraceStep* step = nullptr;
  int fixed_n = 0;       // fixed: draft nodes
  int fixed_l = 0;       // fixed: realised accepted length
  int fixed_d = 0;       // fixed: the tree's depth
  int controller_n = 0;  // controller: n*
  int controller_l = 0;  // controller: realised accepted length
  int controller_d = 0;  // controller: the tree's depth
  // best-fixed: draft nodes, realised accepted length and depth at each of
  // BestFixedBudgets(n_max)
  std::vector<int> static_n, static_l, static_d;
  // best-chain: the same at each of ChainLengths(gamma, n_max)
  std::vector<int> chain_n, chain_l, chain_d;
};

// Sums of one (B, strategy) row.
struct RowSums {
  double tokens = 0, seconds = 0, accepted = 0, nodes = 0;
  int64_t plain_steps = 0;

  // One request step that drafted n nodes and realised l of them.
  void AddRequest(int n, int l) {
    tokens += 1 + l;
    accepted += l;
    nodes += n;
  }
};

// The rows every replay has, by name (best-fixed and best-chain are StaticGroups).
struct ReplaySums {
  RowSums ar, fixed, controller, batch;
};

// A named row of ReplaySums.
struct NamedRow {
  Strategy strategy;
  RowSums ReplaySums::*sums;
};

// The rows every replay has, in row order (AllConcurrencyStrategies()).
constexpr NamedRow kReplayRows[] = {{Strategy::kAr, &ReplaySums::ar},
                                    {Strategy::kFixed, &ReplaySums::fixed},
                                    {Strategy::kController, &ReplaySums::controller},
                                    {Strategy::kBatch, &ReplaySums::batch}};

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
  std::vector<int> depths;  // the batch step's deepest tree per setting

  explicit StaticGroup(size_t settings) : sums(settings), shapes(settings), depths(settings) {}
  void ClearShapes() {
    for (BatchShape& shape : shapes) shape.Clear();
    std::fill(depths.begin(), depths.end(), 0);
  }
  // One request step at context c: setting k drafts n[k] nodes of depth d[k] and realises l[k]
  // of them.
  void Add(const std::vector<int>& n, const std::vector<int>& l, const std::vector<int>& d,
           int64_t c) {
    for (size_t k = 0; k < sums.size(); ++k) {
      shapes[k].Add(n[k] + 1, c);
      sums[k].AddRequest(n[k], l[k]);
      depths[k] = std::max(depths[k], d[k]);
    }
  }
  // Prices the batch step of every setting as one ragged pass, drafting its deepest tree's
  // levels (a step that drafts nothing is a plain step): setting k on per_setting[k] when given
  // (ConcurrencyOptions::best_fixed_drafters), else on `cost`.
  void Price(const BatchCycleCost& cost, const std::vector<BatchCycleCost>& per_setting = {}) {
    for (size_t k = 0; k < sums.size(); ++k) {
      const BatchCycleCost& c = per_setting.empty() ? cost : per_setting[k];
      sums[k].seconds += c.TreeSeconds(shapes[k], depths[k]);
    }
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

// A drafter cost's batch_growth: a finite number >= 0; `field` names it in the error.
absl::Status CheckBatchGrowth(const costmodel::DrafterCost& d, const char* field) {
  if (!(d.batch_growth >= 0) || !std::isfinite(d.batch_growth)) {
    return Invalid(absl::StrCat(field, " = ", d.batch_growth, ": must be a finite number >= 0"));
  }
  return absl::OkStatus();
}

// The options' batch sizes, checked, sorted and deduplicated (none for a recorded replay), after
// the checks of the other options; errors name the field.
absl::StatusOr<std::vector<int>> CheckedBatchSizes(const ConcurrencyOptions& o) {
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
  if (!o.best_fixed_drafters.empty()) {
    const size_t budgets = BestFixedBudgets(o.n_max).size();
    if (!o.best_fixed || o.best_fixed_drafters.size() != budgets) {
      return Invalid(absl::StrCat("best_fixed_drafters: ", o.best_fixed_drafters.size(),
                                  " drafter costs; need best_fixed and one per budget (", budgets,
                                  " at n_max = ", o.n_max, ")"));
    }
    for (const costmodel::DrafterCost& d : o.best_fixed_drafters) {
      SPECPLAN_RETURN_IF_ERROR(CheckDrafterSeconds(d));
      SPECPLAN_RETURN_IF_ERROR(CheckBatchGrowth(d, "best_fixed_drafters: batch_growth"));
    }
  }
  if (o.context_offset < 0 || o.context_offset > kMaxContextOffset) {
    return Invalid(absl::StrCat("context_offset = ", o.context_offset, ": must be in [0, ",
                                kMaxContextOffset, "] tokens"));
  }
  SPECPLAN_RETURN_IF_ERROR(CheckBatchGrowth(o.drafter, "drafter.batch_growth"));
  return sizes;
}

// The trace's steps with marginals, in trace order; InvalidArgument when there is none.
absl::StatusOr<std::vector<RingStep>> RingOf(const Trace& trace) {
  std::vector<RingStep> ring;
  for (const TraceStep& s : trace.steps) {
    if (s.marginals) {
      ring.emplace_back();
      ring.back().step = &s;
    }
  }
  if (ring.empty()) return Invalid("trace: no step with marginals");
  return ring;
}

// Plans every ring step alone, once: fixed at n_max, best-fixed at each of `budgets`, best-chain
// at each of `lengths`, and the controller (calibrated online along the ring when asked for);
// returns the controller's final surrogate scale.
absl::StatusOr<double> PlanRing(const costmodel::LatencyModel& latency, const ConcurrencyOptions& o,
                                const std::vector<int>& budgets, const std::vector<int>& lengths,
                                std::vector<RingStep>* ring) {
  planner::BestFirstPlanner single;
  planner::BestFirstPlan plan;
  std::vector<int32_t> matched;
  single.Reserve(o.n_max);
  planner::BestFirstOptions controller;
  controller.mode = BudgetMode::kController;
  controller.n_max = o.n_max;
  controller.validate = false;  // validated with the trace
  planner::AcceptanceEstimator calibration;
  planner::Tree chain;
  for (RingStep& r : *ring) {
    const TraceStep& s = *r.step;
    absl::Status st = single.PlanFixed(*s.marginals, o.n_max, &plan);
    if (!st.ok()) return Invalid(absl::StrCat("fixed: ", std::string(st.message())));
    r.fixed_n = plan.n;
    r.fixed_l = RealizedAcceptedLength(plan.tree, s.continuation, &matched);
    r.fixed_d = plan.tree.max_depth();
    for (int n : budgets) {
      st = single.PlanFixed(*s.marginals, n, &plan);
      if (!st.ok()) return Invalid(absl::StrCat("best-fixed: ", std::string(st.message())));
      r.static_n.push_back(plan.n);
      r.static_l.push_back(RealizedAcceptedLength(plan.tree, s.continuation, &matched));
      r.static_d.push_back(plan.tree.max_depth());
    }
    for (int k : lengths) {
      TopOneChain(*s.marginals, k, &chain);
      r.chain_n.push_back(chain.num_draft());
      r.chain_l.push_back(RealizedAcceptedLength(chain, s.continuation, &matched));
      r.chain_d.push_back(chain.num_draft());
    }
    const costmodel::CycleCost cost(&latency, BatchDrafter(o, s.marginals->gamma), o.t_aux_s,
                                    s.c + o.context_offset);
    if (o.calibrate) controller.acceptance_scale = calibration.surrogate_scale();
    st = single.Plan(*s.marginals, controller, &cost, &plan);
    if (!st.ok()) return Invalid(absl::StrCat("controller: ", std::string(st.message())));
    r.controller_n = plan.n;
    r.controller_l = RealizedAcceptedLength(plan.tree, s.continuation, &matched);
    r.controller_d = plan.tree.max_depth();
    calibration.ObserveSurrogate(plan.expected_accepted, r.controller_l);
  }
  return calibration.surrogate_scale();
}

// What was analysed and the options used, before any row.
ConcurrencyReport ReportHeader(const Trace& trace, const costmodel::LatencyModel& latency,
                               const ConcurrencyOptions& o, const std::vector<int>& sizes,
                               int64_t ring_steps) {
  ConcurrencyReport report;
  static_cast<ReplayBasis&>(report) =
      BasisOf(trace, latency, o.n_max, o.drafter, o.t_aux_s, o.calibrate);
  report.trace_steps = static_cast<int64_t>(trace.steps.size());
  report.ring_steps = ring_steps;
  report.batch_sizes = sizes;
  report.context_offset = o.context_offset;
  report.batch_scan = o.batch_scan;
  report.best_fixed = o.best_fixed;
  report.best_chain = o.best_chain;
  return report;
}

// Which ring steps a schedule's batch step t replays: size(t) requests, request j at ring
// position position(t, j).
struct BatchSchedule {
  int steps = 0;
  std::function<int(int)> size;
  std::function<int(int, int)> position;
};

// Replays schedules of batch steps over the planned ring and appends their rows to a report.
// Every strategy is priced on the same batch steps.
class BatchReplay {
 public:
  BatchReplay(const costmodel::LatencyModel& latency, const ConcurrencyOptions& o,
              const std::vector<RingStep>& ring, ConcurrencyReport* report)
      : latency_(latency), o_(o), ring_(ring), report_(report) {
    options_.mode = o.batch_scan ? BudgetMode::kScan : BudgetMode::kController;
    options_.validate = false;
    for (const costmodel::DrafterCost& d : o.best_fixed_drafters) {
      static_costs_.emplace_back(&latency_, d, o.t_aux_s);
    }
  }

  // Replays `schedule`, appends its rows labelled `label`; returns whether the batch planner's
  // throughput is above ar's.
  absl::StatusOr<bool> Run(int label, const BatchSchedule& schedule) {
    Pass pass(report_->best_fixed_settings.sizes.size(), report_->best_chain_settings.sizes.size());
    for (int t = 0; t < schedule.steps; ++t) {
      SPECPLAN_RETURN_IF_ERROR(Step(t, schedule, &pass));
    }
    if (o_.calibrate) report_->batch_scales.push_back(pass.calibration.surrogate_scale());
    return AppendRows(label, schedule.steps, pass);
  }

 private:
  // The sums of one replayed schedule.
  struct Pass {
    ReplaySums sums;
    StaticGroup statics, chains;  // best-fixed's budgets, best-chain's lengths
    double request_steps = 0;
    planner::AcceptanceEstimator calibration;  // the batch planner's

    Pass(size_t budgets, size_t lengths) : statics(budgets), chains(lengths) {}
  };

  // One batch step: gathers its requests, prices every strategy on it, plans the batch.
  absl::Status Step(int t, const BatchSchedule& schedule, Pass* pass) {
    const int B = schedule.size(t);
    pass->request_steps += B;
    const int gamma = GatherRequests(t, B, schedule, pass);
    const BatchCycleCost cost(&latency_, BatchDrafter(o_, gamma), o_.t_aux_s);
    const double t_ar = PlainSeconds();
    ReplaySums& sums = pass->sums;
    sums.ar.tokens += B;
    sums.ar.seconds += t_ar;
    ++sums.ar.plain_steps;
    // fixed and controller: every request drafted; the batch is priced together, drafting the
    // levels of its deepest tree.
    sums.fixed.seconds += cost.TreeSeconds(fixed_, fixed_depth_);
    sums.controller.seconds += cost.TreeSeconds(controller_, controller_depth_);
    pass->statics.Price(cost, static_costs_);
    pass->chains.Price(cost);
    if (!controller_drafts_) ++sums.controller.plain_steps;
    return PlanBatch(t, B, cost, t_ar, pass);
  }

  // Fills the batch step's requests and shapes and adds the batch-blind rows' request sums;
  // returns the largest marginals gamma of the batch.
  int GatherRequests(int t, int B, const BatchSchedule& schedule, Pass* pass) {
    options_.n_max = static_cast<int>(
        std::min<int64_t>(static_cast<int64_t>(B) * o_.n_max, planner::kMaxBatchNodes));
    requests_.assign(static_cast<size_t>(B), planner::BatchRequest{});
    at_.resize(static_cast<size_t>(B));
    plain_.Clear();
    fixed_.Clear();
    controller_.Clear();
    pass->statics.ClearShapes();
    pass->chains.ClearShapes();
    int gamma = 1;
    controller_drafts_ = false;
    fixed_depth_ = controller_depth_ = 0;
    for (int j = 0; j < B; ++j) {
      const int k = schedule.position(t, j);
      at_[j] = k;
      const RingStep& r = ring_[k];
      const TraceStep& s = *r.step;
      const int64_t c = s.c + o_.context_offset;
      gamma = std::max(gamma, s.marginals->gamma);
      plain_.Add(1, c);
      fixed_.Add(r.fixed_n + 1, c);
      controller_.Add(r.controller_n + 1, c);
      controller_drafts_ = controller_drafts_ || r.controller_n > 0;
      fixed_depth_ = std::max(fixed_depth_, r.fixed_d);
      controller_depth_ = std::max(controller_depth_, r.controller_d);
      pass->sums.fixed.AddRequest(r.fixed_n, r.fixed_l);
      pass->sums.controller.AddRequest(r.controller_n, r.controller_l);
      pass->statics.Add(r.static_n, r.static_l, r.static_d, c);
      pass->chains.Add(r.chain_n, r.chain_l, r.chain_d, c);
      requests_[j].marginals = &*s.marginals;
      requests_[j].c = c;
      requests_[j].n_max = o_.n_max;
    }
    return gamma;
  }

  // Plain decoding of the gathered batch on the same step model as the speculative steps
  // (DrafterCost::plain_*), seconds.
  double PlainSeconds() const {
    return latency_.VerifyBatchSeconds(plain_) + o_.drafter.plain_step_s +
           (o_.drafter.per_sequence_s + o_.drafter.per_token_s) *
               static_cast<double>(plain_.size());
  }

  // The batch planner over the gathered requests; a step where speculation does not pay is a
  // plain decoding step.
  absl::Status PlanBatch(int t, int B, const BatchCycleCost& cost, double t_ar, Pass* pass) {
    if (o_.calibrate) options_.acceptance_scale = pass->calibration.surrogate_scale();
    absl::Status st = planner_.Plan(requests_, options_, &cost, &plan_);
    if (!st.ok()) {
      return Invalid(
          absl::StrCat("batch (B = ", B, ", batch step ", t, "): ", std::string(st.message())));
    }
    RowSums& batch = pass->sums.batch;
    if (!plan_.speculation_pays) {
      batch.tokens += B;
      batch.seconds += t_ar;
      ++batch.plain_steps;
      return absl::OkStatus();
    }
    batch.seconds += plan_.cycle_s;
    batch.nodes += plan_.n_total;
    for (int j = 0; j < B; ++j) {
      const int l =
          RealizedAcceptedLength(plan_.trees[j], ring_[at_[j]].step->continuation, &matched_);
      batch.tokens += 1 + l;
      batch.accepted += l;
      pass->calibration.ObserveSurrogate(plan_.expected_accepted[j], l);
    }
    return absl::OkStatus();
  }

  // Appends the replay's rows: the named ones, then best-fixed's and best-chain's when asked
  // for. Returns whether the batch planner's throughput is above ar's.
  bool AppendRows(int label, int steps, const Pass& pass) {
    const double ar_throughput = pass.sums.ar.tokens / pass.sums.ar.seconds;
    for (const NamedRow& named : kReplayRows) {
      report_->rows.push_back(MakeRow(label, named.strategy, steps, pass.request_steps,
                                      pass.sums.*named.sums, ar_throughput));
    }
    const bool pays = FindRow(label, Strategy::kBatch).throughput > ar_throughput;
    if (o_.best_fixed) {
      report_->best_fixed_budgets.push_back(AppendBestStatic(label, steps, pass, pass.statics,
                                                             Strategy::kBestFixed, ar_throughput,
                                                             &report_->best_fixed_settings));
    }
    if (o_.best_chain) {
      report_->best_chain_lengths.push_back(AppendBestStatic(label, steps, pass, pass.chains,
                                                             Strategy::kBestChain, ar_throughput,
                                                             &report_->best_chain_settings));
    }
    return pays;
  }

  const ConcurrencyRow& FindRow(int label, Strategy strategy) const {
    const ConcurrencyRow* row = FindConcurrencyRow(*report_, label, strategy);
    SPECPLAN_CHECK(row != nullptr, "the replay appended this row");
    return *row;
  }

  // The best static setting of a group: the highest throughput, or plain decoding (0) when none
  // beats it. Appends its row and every setting's throughput to `settings`; returns the setting.
  int AppendBestStatic(int label, int steps, const Pass& pass, const StaticGroup& group,
                       Strategy strategy, double ar_throughput, StaticSettings* settings) {
    const std::vector<int>& values = settings->sizes;
    int best = -1;
    double best_throughput = ar_throughput;
    for (size_t k = 0; k < values.size(); ++k) {
      const double t = group.sums[k].tokens / group.sums[k].seconds;
      settings->throughput.push_back(t);
      if (t > best_throughput) best = static_cast<int>(k), best_throughput = t;
    }
    // Plain decoding's sums count every step plain; a static setting's count none.
    const RowSums& b = best < 0 ? pass.sums.ar : group.sums[static_cast<size_t>(best)];
    report_->rows.push_back(MakeRow(label, strategy, steps, pass.request_steps, b, ar_throughput));
    return best < 0 ? 0 : values[static_cast<size_t>(best)];
  }

  const costmodel::LatencyModel& latency_;
  const ConcurrencyOptions& o_;
  const std::vector<RingStep>& ring_;
  ConcurrencyReport* report_;
  // Best-fixed's budget k priced on static_costs_[k] (ConcurrencyOptions::best_fixed_drafters);
  // empty: on the step's cost.
  std::vector<BatchCycleCost> static_costs_;
  // Reused across batch steps.
  planner::BatchPlanner planner_;
  planner::BatchPlan plan_;
  planner::BatchPlanOptions options_;
  std::vector<planner::BatchRequest> requests_;
  std::vector<int> at_;  // ring position of each request in this batch step
  std::vector<int32_t> matched_;
  BatchShape plain_, fixed_, controller_;
  bool controller_drafts_ = false;
  int fixed_depth_ = 0, controller_depth_ = 0;  // the batch step's deepest trees
};

// The recorded passes, in pass order: each is one batch step with its recorded requests.
absl::Status ReplayRecorded(const std::vector<RingStep>& ring, BatchReplay* replay,
                            ConcurrencyReport* report) {
  std::map<int64_t, std::vector<int>> by_pass;
  for (int k = 0; k < static_cast<int>(ring.size()); ++k) {
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
  report->recorded_passes = static_cast<int64_t>(passes.size());
  report->recorded_mean_batch =
      static_cast<double>(ring.size()) / static_cast<double>(passes.size());
  BatchSchedule schedule;
  schedule.steps = static_cast<int>(passes.size());
  schedule.size = [&](int t) { return static_cast<int>(passes[t]->size()); };
  schedule.position = [&](int t, int j) { return (*passes[t])[j]; };
  SPECPLAN_ASSIGN_OR_RETURN(report->recorded_pays, replay->Run(kRecordedBatch, schedule));
  return absl::OkStatus();
}

// The ring at each batch size: request j starts at ring position floor(j S / B) and advances one
// position per batch step, for S batch steps.
absl::Status ReplayRing(const ConcurrencyOptions& o, int S, BatchReplay* replay,
                        ConcurrencyReport* report) {
  const std::vector<int>& sizes = report->batch_sizes;
  for (size_t si = 0; si < sizes.size(); ++si) {
    const int B = sizes[si];
    BatchSchedule schedule;
    schedule.steps = S;
    schedule.size = [B](int) { return B; };
    schedule.position = [B, S](int t, int j) {
      const int offset = static_cast<int>(static_cast<int64_t>(j) * S / B);
      return (offset + t) % S;
    };
    SPECPLAN_ASSIGN_OR_RETURN(const bool pays, replay->Run(B, schedule));
    if (report->stop_paying_batch == 0 && !pays) report->stop_paying_batch = B;
    if (o.progress) o.progress(static_cast<int>(si) + 1, static_cast<int>(sizes.size()));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<Strategy> AllConcurrencyStrategies() {
  std::vector<Strategy> out;
  for (const NamedRow& row : kReplayRows) out.push_back(row.strategy);
  return out;
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
  SPECPLAN_ASSIGN_OR_RETURN(const std::vector<int> sizes, CheckedBatchSizes(o));
  if (o.validate_trace) SPECPLAN_RETURN_IF_ERROR(ValidateTraceSteps(trace));
  SPECPLAN_ASSIGN_OR_RETURN(std::vector<RingStep> ring, RingOf(trace));
  int max_gamma = 1;
  for (const RingStep& r : ring) max_gamma = std::max(max_gamma, r.step->marginals->gamma);
  ConcurrencyReport report =
      ReportHeader(trace, latency, o, sizes, static_cast<int64_t>(ring.size()));
  if (o.best_fixed) report.best_fixed_settings.sizes = BestFixedBudgets(o.n_max);
  if (o.best_chain) report.best_chain_settings.sizes = ChainLengths(max_gamma, o.n_max);
  SPECPLAN_ASSIGN_OR_RETURN(const double controller_scale,
                            PlanRing(latency, o, report.best_fixed_settings.sizes,
                                     report.best_chain_settings.sizes, &ring));
  if (o.calibrate) report.controller_scale = controller_scale;

  BatchReplay replay(latency, o, ring, &report);
  if (o.recorded) {
    SPECPLAN_RETURN_IF_ERROR(ReplayRecorded(ring, &replay, &report));
    if (o.progress) o.progress(1, 1);
  } else {
    SPECPLAN_RETURN_IF_ERROR(ReplayRing(o, static_cast<int>(ring.size()), &replay, &report));
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

}  // namespace specplan::whatif
