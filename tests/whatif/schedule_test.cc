// Tests of the engine schedules (whatif/schedule.h) and of best-chain, the replay they are chosen
// from (whatif/concurrency.h). Over 500 lines because each engine format is read back by its own
// parser and lookup rule, written out here from the engine's source, and checked cell by cell.
//
// The format checks read each rendered schedule back and apply the engine's own lookup rule, as
// its source states it (read for this work; quoted where each check is):
//   vLLM      vllm/config/speculative.py: num_speculative_tokens_per_batch_size is
//             list[tuple[int, int, int]], "Each entry is (range_start, range_end,
//             num_speculative_tokens) with an inclusive batch-size range";
//             vllm/v1/spec_decode/dynamic/utils.py build_dynamic_sd_schedule_lookup: ranges sorted
//             and non-overlapping, the first starting at 1, "Fill any gap before the next
//             configured range by carrying forward the previous K", "Fill the tail after the final
//             configured range by carrying forward the last K", K clamped to
//             min(num_speculative_tokens, K) (vLLM PR #32374, Dynamic SD).
//   TRT-LLM   tensorrt_llm/llmapi/llm_args.py DecodingBaseConfig.draft_len_schedule: "Maps batch
//             size to draft lengths ... {4:4, 8:2, 32:1}: Batch sizes 1-4 use draft_len=4, 5-8 use
//             2, 9-32 use 1, 33+ use draft_len=0 (implicit, speculation disabled)"; the validator:
//             keys >= 1, lengths >= 0, "draft_len_schedule[smallest] must equal max_draft_len",
//             all lengths <= max_draft_len (an older release: "draft_len_schedule must include
//             batch_size=1"); the lookup (PR #10860, speculative/utils.py): bisect_left over the
//             sorted keys, "the index of the first key >= batch_size", else 0.
//   SGLang    server args speculative_num_steps / speculative_eagle_topk /
//             speculative_num_draft_tokens (docs.sglang.io "Speculative Decoding");
//             sglang/srt/speculative/eagle_utils.py organize_draft_results: "top_scores =
//             torch.topk(score_list, num_draft_token - 1, dim=-1)" over the candidates of every
//             draft step (step 0: topk children of the root; later steps: topk children of each
//             of the topk beams, the topk best of which are the next beams).
#include "whatif/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/latency/batch_shape.h"
#include "planner/policies/best_first.h"
#include "test_util.h"
#include "util/check.h"
#include "whatif/concurrency.h"
#include "whatif/trace.h"

namespace specplan::whatif {
namespace {

using ::testing::HasSubstr;
using S = Strategy;

const Trace& BundledTrace() {
  static const Trace* trace = [] {
    auto t = LoadTrace(DefaultTracePath());
    SPECPLAN_CHECK(t.ok());
    return new Trace(*std::move(t));
  }();
  return *trace;
}

// The shipped engine-grade profile of H100 x Qwen3-8B for `engine`.
const costmodel::LatencyModel& EngineProfile(const std::string& engine) {
  static std::map<std::string, costmodel::ResolvedLatencyModel>* cache =
      new std::map<std::string, costmodel::ResolvedLatencyModel>();
  auto it = cache->find(engine);
  if (it == cache->end()) {
    costmodel::CostSpec spec;
    spec.model = "qwen3-8b";
    spec.gpu = "h100";
    spec.engine = engine;
    auto r = costmodel::ResolveCost(spec);
    SPECPLAN_CHECK(r.ok());
    it = cache->emplace(engine, *std::move(r)).first;
  }
  return *it->second.model;
}

// The README's setting: a drafter pass of 1 ms, growing 2 % per further request.
ScheduleOptions ReadmeOptions() {
  ScheduleOptions o;
  o.replay.batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  o.replay.n_max = 64;
  o.replay.drafter.t_net_s = 1e-3;
  return o;
}

// ---- best-chain ------------------------------------------------------------------------------

// The ring replay of the top-1 chain of K nodes at batch size B, written out from the contract
// in concurrency.h: request j at ring position (floor(j S / B) + t) mod S at batch step t, accepted
// length = the leading draft tokens that equal the recorded continuation, one ragged pass priced
// by BatchCycleCost with the batch's largest gamma. Returns tokens per second.
double ReferenceChainThroughput(const Trace& trace, const costmodel::LatencyModel& latency,
                                const ConcurrencyOptions& o, int B, int K) {
  std::vector<const TraceStep*> ring;
  for (const TraceStep& s : trace.steps) {
    if (s.marginals) ring.push_back(&s);
  }
  const int S = static_cast<int>(ring.size());
  double tokens = 0, seconds = 0;
  costmodel::BatchShape shape;
  for (int t = 0; t < S; ++t) {
    shape.Clear();
    int gamma = 1;
    for (int j = 0; j < B; ++j) {
      const TraceStep& s = *ring[(static_cast<int64_t>(j) * S / B + t) % S];
      const planner::Marginals& m = *s.marginals;
      gamma = std::max(gamma, m.gamma);
      const int n = std::min(K, m.gamma);
      int l = 0;
      while (l < n && l < static_cast<int>(s.continuation.size()) &&
             m.token(l, 0) == s.continuation[static_cast<size_t>(l)]) {
        ++l;
      }
      tokens += 1 + l;
      shape.Add(n + 1, s.c);
    }
    costmodel::DrafterCost d = o.drafter;
    d.gamma = gamma;
    seconds += costmodel::BatchCycleCost(&latency, d, o.t_aux_s).Seconds(shape);
  }
  return tokens / seconds;
}

TEST(BestChain, LengthsAreOneToTheMarginalsGamma) {
  EXPECT_EQ(ChainLengths(4, 64), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(ChainLengths(16, 3), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(ChainLengths(0, 8).empty());
}

// best-chain is, per B, the chain replay of its K, and no K (nor plain decoding) beats it;
// every K's throughput in best_chain_settings is the reference replay's.
TEST(BestChain, IsTheChainReplayOfItsLengthAndNoLengthBeatsIt) {
  const costmodel::LatencyModel& latency = EngineProfile("vllm");
  ConcurrencyOptions o = ReadmeOptions().replay;
  o.batch_sizes = {1, 8, 64, 256};
  o.best_chain = true;
  auto r = RunConcurrency(BundledTrace(), latency, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->best_chain_lengths.size(), 4u);
  EXPECT_EQ(r->best_chain_settings.sizes, ChainLengths(4, o.n_max));  // the trace's gamma is 4
  EXPECT_EQ(r->rows.size(), 4u * 5u);
  for (size_t i = 0; i < o.batch_sizes.size(); ++i) {
    const int B = o.batch_sizes[i];
    const ConcurrencyRow* row = FindConcurrencyRow(*r, B, S::kBestChain);
    ASSERT_NE(row, nullptr);
    const double ar = FindConcurrencyRow(*r, B, S::kAr)->throughput;
    EXPECT_GE(row->throughput, ar);
    for (size_t k = 0; k < r->best_chain_settings.sizes.size(); ++k) {
      const int K = r->best_chain_settings.sizes[k];
      const double ref = ReferenceChainThroughput(BundledTrace(), latency, o, B, K);
      EXPECT_NEAR(r->best_chain_settings.at(i, k), ref, ref * 1e-12) << "B " << B << " K " << K;
      EXPECT_GE(row->throughput, ref * (1 - 1e-12)) << "B " << B << " K " << K;
      if (K == r->best_chain_lengths[i]) {
        EXPECT_NEAR(row->throughput, ref, ref * 1e-12);
      }
    }
    if (r->best_chain_lengths[i] == 0) {
      EXPECT_EQ(row->plain_steps, row->steps);
      EXPECT_DOUBLE_EQ(row->throughput, ar);
    } else {
      EXPECT_NEAR(row->mean_tree_size, r->best_chain_lengths[i], 1e-12);  // gamma 4 >= every K
    }
  }
  EXPECT_GT(r->best_chain_lengths.front(), 0);
  EXPECT_EQ(r->best_chain_lengths.back(), 0);
  const nlohmann::json j = ConcurrencyReportToJson(*r);
  EXPECT_EQ(j["best_chain_lengths"].size(), 4u);
  EXPECT_EQ(j["options"]["strategies"].back(), "best-chain");
  EXPECT_THAT(FormatConcurrencyTable(*r), HasSubstr("best-chain length per B"));
}

// ---- SGLang tree mapping -----------------------------------------------------------------------

// SGLang's EAGLE tree over marginals, as organize_draft_results builds it (see the top): returns
// the summed path score of the num_draft_tokens - 1 verified candidates and their count.
std::pair<double, int> SglangTreeScore(const planner::Marginals& m, const SglangTree& t) {
  struct Cand {
    double score;
    int order;
  };
  std::vector<Cand> pool, beams, step;
  auto by_score = [](const Cand& a, const Cand& b) {
    return a.score != b.score ? a.score > b.score : a.order < b.order;
  };
  const int width = std::min(t.eagle_topk, m.k);
  for (int r = 0; r < width; ++r)
    beams.push_back({m.prob(0, r), static_cast<int>(pool.size())}), pool.push_back(beams.back());
  for (int i = 1; i < std::min(t.num_steps, m.gamma); ++i) {
    step.clear();
    for (const Cand& b : beams) {
      for (int r = 0; r < width; ++r) {
        step.push_back({b.score * m.prob(i, r), static_cast<int>(pool.size())});
        pool.push_back(step.back());
      }
    }
    std::sort(step.begin(), step.end(), by_score);
    beams.assign(step.begin(), step.begin() + std::min<size_t>(step.size(), t.eagle_topk));
  }
  std::sort(pool.begin(), pool.end(), by_score);
  const int n = std::min<int>(t.num_draft_tokens - 1, static_cast<int>(pool.size()));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += pool[static_cast<size_t>(i)].score;
  return {sum, n};
}

// On the bundled trace, for every budget: SGLang's tree under SglangTreeFor's settings is
// best-first's tree (the same summed rho, the same size) at every step, and one step fewer or one
// beam fewer loses nodes of it at some step.
TEST(SglangTree, ReproducesTheBestFirstTreeOnEveryStep) {
  const Trace& trace = BundledTrace();
  planner::BestFirstPlanner planner;
  planner::BestFirstPlan plan;
  for (int n : BestFixedBudgets(64)) {
    auto t = SglangTreeFor(trace, n);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->num_draft_tokens, t->eagle_topk == 1 ? t->num_steps + 1 : n + 1) << "n " << n;
    SglangTree fewer_steps = *t, fewer_beams = *t;
    --fewer_steps.num_steps;
    --fewer_beams.eagle_topk;
    bool steps_needed = false, beams_needed = false;
    for (const TraceStep& s : trace.steps) {
      if (!s.marginals) continue;
      ASSERT_TRUE(planner.PlanFixed(*s.marginals, n, &plan).ok());
      const double rho = plan.tree.expected_accepted() - 1;
      const auto [score, count] = SglangTreeScore(*s.marginals, *t);
      EXPECT_EQ(count, plan.n) << "n " << n;
      EXPECT_NEAR(score, rho, 1e-9) << "n " << n;
      if (fewer_steps.num_steps >= 1) {
        steps_needed =
            steps_needed || SglangTreeScore(*s.marginals, fewer_steps).first < rho - 1e-9;
      }
      if (fewer_beams.eagle_topk >= 1) {
        beams_needed =
            beams_needed || SglangTreeScore(*s.marginals, fewer_beams).first < rho - 1e-9;
      }
    }
    if (t->num_steps > 1) {
      EXPECT_TRUE(steps_needed) << "n " << n;
    }
    if (t->eagle_topk > 1) {
      EXPECT_TRUE(beams_needed) << "n " << n;
    }
  }
  auto off = SglangTreeFor(trace, 0);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->num_draft_tokens, 0);
  EXPECT_EQ(SglangTreeFor(trace, 1)->num_steps, 1);
  EXPECT_EQ(SglangTreeFor(trace, 1)->eagle_topk, 1);
  EXPECT_EQ(SglangTreeFor(trace, 1)->num_draft_tokens, 2);
  EXPECT_THAT(SglangTreeFor(trace, -1).status().message(), HasSubstr("n = -1"));
}

// ---- choosing the schedule ---------------------------------------------------------------------

// The expected setting at batch size B by the range rule: the largest grid point <= B.
int ExpectedSetting(const Schedule& s, int batch) {
  int setting = 0;
  for (const SchedulePoint& p : s.points) {
    if (p.batch <= batch) setting = p.setting;
  }
  return setting;
}

// On the bundled trace with an engine profile: the draft length shrinks as the batch grows and is
// 0 at large B, unconstrained as well as monotone; the choice is best-chain's where unconstrained.
TEST(Schedule, ChainsShrinkWithTheBatchAndStopAtLargeBatches) {
  for (const char* engine : {"vllm", "trtllm"}) {
    SCOPED_TRACE(engine);
    const ScheduleFormat format = *ParseScheduleFormat(engine);
    ScheduleOptions o = ReadmeOptions();
    o.monotone = false;
    auto free = BuildSchedule(BundledTrace(), EngineProfile(engine), format, o);
    ASSERT_TRUE(free.ok()) << free.status();
    o.monotone = true;
    auto s = BuildSchedule(BundledTrace(), EngineProfile(engine), format, o);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->points.size(), 9u);
    EXPECT_TRUE(s->chains);
    for (size_t i = 0; i < s->points.size(); ++i) {
      const SchedulePoint& p = s->points[i];
      // Unconstrained, each point is best-chain's choice (TensorRT-LLM: capped at K(1)).
      if (format == ScheduleFormat::kVllm) {
        EXPECT_EQ(free->points[i].setting, free->report.best_chain_lengths[i]);
      }
      EXPECT_EQ(p.best_setting, s->report.best_chain_lengths[i]);
      EXPECT_LE(p.throughput, p.best_throughput);
      if (i > 0) {
        EXPECT_LE(p.setting, s->points[i - 1].setting) << "B " << p.batch;
      }
      EXPECT_LE(free->points[i].setting, free->points[0].setting) << "B " << p.batch;
      EXPECT_EQ(
          p.setting != p.best_setting,
          std::count(s->constrained_batches.begin(), s->constrained_batches.end(), p.batch) == 1);
    }
    EXPECT_GT(s->points.front().setting, 0);
    EXPECT_GT(free->points.front().setting, free->points.back().setting);
    EXPECT_EQ(s->points.back().setting, 0);  // B = 256
    EXPECT_EQ(free->points.back().setting, 0);
    // The schedule is never below the best single static setting, summed over the grid.
    EXPECT_GE(s->schedule_throughput_sum, s->static_throughput_sum * (1 - 1e-12));
    double sum = 0;
    for (const SchedulePoint& p : s->points) sum += p.static_throughput;
    EXPECT_NEAR(s->static_throughput_sum, sum, 1e-9 * sum);
    // The static setting is the best one used everywhere: no K beats its sum.
    const StaticSettings& chain = s->report.best_chain_settings;
    for (size_t k = 0; k < chain.sizes.size(); ++k) {
      double total = 0;
      for (size_t bi = 0; bi < s->points.size(); ++bi) total += chain.at(bi, k);
      EXPECT_LE(total, s->static_throughput_sum * (1 + 1e-12)) << "K " << chain.sizes[k];
    }
    // Ranges: contiguous from 1 to ScheduleMaxBatch(), merged, the rule's setting everywhere.
    ASSERT_FALSE(s->ranges.empty());
    EXPECT_EQ(s->ranges.front().lo, 1);
    EXPECT_EQ(s->ranges.back().hi, ScheduleMaxBatch());
    for (size_t i = 1; i < s->ranges.size(); ++i) {
      EXPECT_EQ(s->ranges[i].lo, s->ranges[i - 1].hi + 1);
      EXPECT_NE(s->ranges[i].setting, s->ranges[i - 1].setting);
    }
    for (int b = 1; b <= 600; ++b) EXPECT_EQ(ScheduleSettingAt(*s, b), ExpectedSetting(*s, b));
  }
}

TEST(Schedule, TreesShrinkWithTheBatchAndMapToSglang) {
  auto s = BuildSchedule(BundledTrace(), EngineProfile("sglang"), ScheduleFormat::kSglang,
                         ReadmeOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->chains);
  EXPECT_GT(s->points.front().setting, 0);
  EXPECT_EQ(s->points.back().setting, 0);
  for (size_t i = 0; i < s->points.size(); ++i) {
    const SchedulePoint& p = s->points[i];
    EXPECT_EQ(p.best_setting, s->report.best_fixed_budgets[i]);
    if (i > 0) {
      EXPECT_LE(p.setting, s->points[i - 1].setting);
    }
    auto t = SglangTreeFor(BundledTrace(), p.setting);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(p.sglang.num_steps, t->num_steps);
    EXPECT_EQ(p.sglang.eagle_topk, t->eagle_topk);
    EXPECT_EQ(p.sglang.num_draft_tokens, t->num_draft_tokens);
  }
}

// With ScheduleOptions::sglang_drafter each tree setting pays the drafting SGLang runs for it:
// here 1 ms per draft step plus 0.25 ms per further beam (num_steps levels of eagle_topk beams).
// Budget n's replayed throughput at every B is then the plain replay's with that one drafter, and
// the schedule shrinks where beams and levels cost more than they accept.
TEST(Schedule, SglangSettingsPayTheDraftingSglangRunsForThem) {
  auto drafting = [](const SglangTree& t) -> absl::StatusOr<costmodel::DrafterCost> {
    costmodel::DrafterCost d;
    d.gamma = std::max(1, t.num_steps);
    d.t_net_s = 1e-3 * t.num_steps + 0.25e-3 * (t.eagle_topk - 1);
    d.batch_growth = 0.02;
    return d;
  };
  const costmodel::LatencyModel& latency = EngineProfile("sglang");
  ScheduleOptions o = ReadmeOptions();
  o.replay.batch_sizes = {1, 8, 64};
  o.sglang_drafter = drafting;
  auto s = BuildSchedule(BundledTrace(), latency, ScheduleFormat::kSglang, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->sglang_drafting);
  const std::vector<int>& budgets = s->report.best_fixed_settings.sizes;
  ASSERT_EQ(s->sglang_draft_s.size(), budgets.size());
  for (size_t k = 0; k < budgets.size(); ++k) {
    auto t = SglangTreeFor(BundledTrace(), budgets[k]);
    ASSERT_TRUE(t.ok());
    const costmodel::DrafterCost d = *drafting(*t);
    EXPECT_DOUBLE_EQ(s->sglang_draft_s[k], d.t_net_s) << "n " << budgets[k];
    ConcurrencyOptions alone = o.replay;
    alone.best_fixed = true;
    alone.drafter = d;
    auto r = RunConcurrency(BundledTrace(), latency, alone);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t bi = 0; bi < o.replay.batch_sizes.size(); ++bi) {
      const double ref = r->best_fixed_settings.at(bi, k);
      EXPECT_NEAR(s->report.best_fixed_settings.at(bi, k), ref, ref * 1e-12)
          << "n " << budgets[k] << " B " << o.replay.batch_sizes[bi];
    }
  }
  const nlohmann::json j = nlohmann::json::parse(RenderSchedule(*s, ScheduleSource{}));
  EXPECT_THAT(j["specplan"]["drafting_cost"].get<std::string>(), HasSubstr("eagle_worker.py"));
  EXPECT_EQ(j["specplan"]["drafting_per_setting"].size(), budgets.size());
  EXPECT_THAT(FormatScheduleSummary(*s, ScheduleSource{}),
              HasSubstr("sglang drafting: each setting pays SGLang's own at every step"));
  // Without the hook every budget pays replay.drafter (1 ms), whatever its levels and beams.
  auto flat = BuildSchedule(BundledTrace(), latency, ScheduleFormat::kSglang, ReadmeOptions());
  ASSERT_TRUE(flat.ok());
  EXPECT_FALSE(flat->sglang_drafting);
  EXPECT_THAT(FormatScheduleSummary(*flat, ScheduleSource{}),
              ::testing::Not(HasSubstr("sglang drafting")));
  EXPECT_GE(flat->points.front().setting, s->points.front().setting);
  // A hook that fails names the setting.
  o.sglang_drafter = [](const SglangTree&) -> absl::StatusOr<costmodel::DrafterCost> {
    return absl::InvalidArgumentError("topk = 99: must be in [1, 64]");
  };
  EXPECT_THAT(BuildSchedule(BundledTrace(), latency, ScheduleFormat::kSglang, o).status().message(),
              HasSubstr("sglang drafting of n = 1 (steps 1, topk 1): topk = 99"));
}

// The floor of TensorRT-LLM PR #16888: with min_chain 1 no range is 0 and the expected throughput
// is that of the chosen K >= 1.
TEST(Schedule, MinChainKeepsEveryRangeSpeculating) {
  ScheduleOptions o = ReadmeOptions();
  o.min_chain = 1;
  auto s = BuildSchedule(BundledTrace(), EngineProfile("trtllm"), ScheduleFormat::kTrtllm, o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (const SchedulePoint& p : s->points) EXPECT_GE(p.setting, 1) << "B " << p.batch;
  EXPECT_GE(s->static_setting, 1);
  const StaticSettings& chain = s->report.best_chain_settings;
  const SchedulePoint& last = s->points.back();
  EXPECT_DOUBLE_EQ(last.throughput, chain.at(s->points.size() - 1, last.setting - 1));
}

// A TPOT SLO: every point's TPOT is B over its setting's throughput, the SLO marks the points that
// meet it, and the schedule names the largest such B beside plain decoding's. The SLO is set
// between two points' TPOTs, so the test fails if either is off by a grid step.
TEST(Schedule, TpotSloNamesTheLargestBatchThatMeetsIt) {
  ScheduleOptions o = ReadmeOptions();
  auto plain = BuildSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm, o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const std::vector<SchedulePoint>& pts = plain->points;
  ASSERT_GE(pts.size(), 5u);
  for (const SchedulePoint& p : pts) {
    EXPECT_DOUBLE_EQ(p.tpot_s, p.batch / p.throughput);
    EXPECT_DOUBLE_EQ(p.plain_tpot_s, p.batch / p.ar_throughput);
    EXPECT_TRUE(p.slo_met);  // no SLO
  }
  EXPECT_EQ(plain->slo_max_batch, 0);
  // Between grid point 3's TPOT and point 4's (TPOT grows with B).
  o.slo_tpot_s = (pts[3].tpot_s + pts[4].tpot_s) / 2;
  auto s = BuildSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm, o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (size_t i = 0; i < s->points.size(); ++i) {
    EXPECT_EQ(s->points[i].slo_met, i <= 3) << "B " << s->points[i].batch;
    EXPECT_EQ(s->points[i].setting, pts[i].setting);  // the SLO does not change the choice
  }
  EXPECT_EQ(s->slo_max_batch, pts[3].batch);
  int plain_max = 0;
  for (const SchedulePoint& p : pts) {
    if (p.plain_tpot_s <= o.slo_tpot_s) plain_max = p.batch;
  }
  EXPECT_EQ(s->slo_plain_max_batch, plain_max);
  EXPECT_LE(s->slo_plain_max_batch, s->slo_max_batch);
  const std::string summary = FormatScheduleSummary(*s, ScheduleSource{});
  EXPECT_THAT(summary, HasSubstr(absl::StrCat("the schedule meets it up to B = ", pts[3].batch)));
}

TEST(Schedule, RejectsBadOptionsNamingTheField) {
  const costmodel::LatencyModel& latency = EngineProfile("vllm");
  ScheduleOptions o = ReadmeOptions();
  o.replay.batch_sizes = {2, 4};
  EXPECT_THAT(BuildSchedule(BundledTrace(), latency, ScheduleFormat::kVllm, o).status().message(),
              HasSubstr("batch_sizes: the grid starts at 2"));
  o = ReadmeOptions();
  o.min_chain = 1;
  EXPECT_THAT(BuildSchedule(BundledTrace(), latency, ScheduleFormat::kSglang, o).status().message(),
              HasSubstr("min_chain = 1: applies to chain formats"));
  o.min_chain = 5;
  EXPECT_THAT(BuildSchedule(BundledTrace(), latency, ScheduleFormat::kVllm, o).status().message(),
              HasSubstr("min_chain = 5: longer than the longest chain"));
  o = ReadmeOptions();
  o.replay.recorded = true;
  EXPECT_THAT(BuildSchedule(BundledTrace(), latency, ScheduleFormat::kVllm, o).status().message(),
              HasSubstr("recorded"));
  EXPECT_EQ(ParseScheduleFormat("tgi").status().message(),
            "\"tgi\": unknown format (vllm, trtllm, sglang)");
}

// ---- rendering, read back in each engine's format ----------------------------------------------

ScheduleSource Source(const std::string& engine) {
  ScheduleSource src;
  src.profile = "h100-sxm/qwen3-8b-bf16@" + engine;
  src.engine = engine;
  src.engine_version = "test";
  src.model = "qwen3-8b";
  src.gpu = "h100-sxm";
  src.dtype = "bf16";
  src.trace_path = DefaultTracePath();
  return src;
}

// vLLM's dense lookup (build_dynamic_sd_schedule_lookup), for batch sizes 1..max_batch.
std::vector<int> VllmLookup(const nlohmann::json& config, int max_batch) {
  const int max_k = config.at("num_speculative_tokens").get<int>();
  std::vector<std::array<int, 3>> entries;
  for (const nlohmann::json& e : config.at("num_speculative_tokens_per_batch_size")) {
    SPECPLAN_CHECK(e.is_array() && e.size() == 3);
    entries.push_back({e[0].get<int>(), e[1].get<int>(), e[2].get<int>()});
    SPECPLAN_CHECK(entries.back()[0] >= 1 && entries.back()[0] <= entries.back()[1]);
    SPECPLAN_CHECK(entries.back()[2] >= 0);
  }
  std::sort(entries.begin(), entries.end());
  int previous_end = 0;
  for (const auto& e : entries) {
    SPECPLAN_CHECK(e[0] > previous_end);  // non-overlapping
    previous_end = e[1];
  }
  SPECPLAN_CHECK(!entries.empty() && entries.front()[0] == 1);
  std::vector<int> dense(static_cast<size_t>(max_batch) + 1, 0);
  int next = 1, last_k = -1;
  for (const auto& [lo, hi, k] : entries) {
    if (lo > next && last_k >= 0) {
      for (int b = next; b < std::min(lo, max_batch + 1); ++b) dense[b] = std::min(max_k, last_k);
    }
    for (int b = std::max(lo, next); b <= std::min(hi, max_batch); ++b) {
      dense[b] = std::min(max_k, k);
    }
    next = std::max(next, hi + 1);
    last_k = k;
    if (next > max_batch) break;
  }
  for (int b = next; b <= max_batch; ++b) dense[b] = std::min(max_k, last_k);
  return dense;
}

TEST(RenderSchedule, VllmReadsBackAsTheSchedule) {
  auto s =
      BuildSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm, ReadmeOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string text = RenderSchedule(*s, Source("vllm"));
  const nlohmann::json j = nlohmann::json::parse(text);
  const nlohmann::json& config = j.at("speculative_config");
  EXPECT_EQ(config.at("num_speculative_tokens").get<int>(), s->max_setting);
  const std::vector<int> dense = VllmLookup(config, 1024);
  for (int b = 1; b <= 1024; ++b) EXPECT_EQ(dense[b], ExpectedSetting(*s, b)) << "B " << b;
  // The metadata block: profile and engine, trace, expected throughput per grid point.
  const nlohmann::json& m = j.at("specplan");
  EXPECT_EQ(m.at("profile"), "h100-sxm/qwen3-8b-bf16@vllm");
  EXPECT_EQ(m.at("engine"), "vllm");
  EXPECT_EQ(m.at("trace").at("path"), DefaultTracePath());
  ASSERT_EQ(m.at("expected_tokens_per_s").size(), s->points.size());
  for (size_t i = 0; i < s->points.size(); ++i) {
    const nlohmann::json& e = m.at("expected_tokens_per_s")[i];
    EXPECT_EQ(e.at("batch"), s->points[i].batch);
    EXPECT_EQ(e.at("k"), s->points[i].setting);
    EXPECT_NEAR(e.at("throughput").get<double>(), s->points[i].throughput, 0.05);
    EXPECT_NEAR(e.at("batch_planner_throughput").get<double>(), s->points[i].batch_throughput,
                0.05);
    EXPECT_NEAR(e.at("best_static_throughput").get<double>(), s->points[i].static_throughput, 0.05);
  }
  EXPECT_EQ(m.at("best_static").at("k"), s->static_setting);
}

// The YAML the schedule writes for TensorRT-LLM: block mappings of "key: value", two spaces per
// level, '#' comments. Reads the speculative_config mapping: max_draft_len and the schedule.
struct TrtllmConfig {
  int max_draft_len = -1;
  std::map<int, int> schedule;
};
TrtllmConfig ReadTrtllmYaml(const std::string& text) {
  TrtllmConfig c;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t indent = line.find_first_not_of(' ');
    const size_t colon = line.find(':');
    SPECPLAN_CHECK(colon != std::string::npos);
    const std::string key = line.substr(indent, colon - indent);
    const std::string value =
        colon + 1 < line.size() ? line.substr(line.find_first_not_of(' ', colon + 1)) : "";
    if (indent == 0) {
      SPECPLAN_CHECK(key == "speculative_config" && value.empty());
    } else if (indent == 2) {
      section = key;
      if (key == "max_draft_len") c.max_draft_len = std::stoi(value);
    } else {
      SPECPLAN_CHECK(indent == 4 && section == "draft_len_schedule");
      SPECPLAN_CHECK(c.schedule.emplace(std::stoi(key), std::stoi(value)).second);
    }
  }
  return c;
}

// TensorRT-LLM's lookup: the first key >= B, else 0.
int TrtllmDraftLen(const TrtllmConfig& c, int batch) {
  auto it = c.schedule.lower_bound(batch);
  return it == c.schedule.end() ? 0 : it->second;
}

TEST(RenderSchedule, TrtllmReadsBackAsTheSchedule) {
  for (int min_chain : {0, 1}) {
    SCOPED_TRACE(min_chain);
    ScheduleOptions o = ReadmeOptions();
    o.min_chain = min_chain;
    auto s = BuildSchedule(BundledTrace(), EngineProfile("trtllm"), ScheduleFormat::kTrtllm, o);
    ASSERT_TRUE(s.ok()) << s.status();
    const std::string text = RenderSchedule(*s, Source("trtllm"));
    const TrtllmConfig c = ReadTrtllmYaml(text);
    // The validator's rules.
    ASSERT_FALSE(c.schedule.empty());
    EXPECT_EQ(c.schedule.begin()->first, 1);
    EXPECT_EQ(c.schedule.begin()->second, c.max_draft_len);
    for (const auto& [key, len] : c.schedule) {
      EXPECT_GE(key, 1);
      EXPECT_GE(len, 0);
      EXPECT_LE(len, c.max_draft_len);
    }
    for (int b = 1; b <= ScheduleMaxBatch(); ++b) {
      ASSERT_EQ(TrtllmDraftLen(c, b), ExpectedSetting(*s, b)) << "B " << b;
    }
    EXPECT_EQ(TrtllmDraftLen(c, ScheduleMaxBatch() + 1), 0);
    // The comments: profile, trace, the per-B table, and what PR #16888 does to the schedule.
    EXPECT_THAT(text, HasSubstr("# cost: qwen3-8b on h100-sxm (bf16), profile "
                                "h100-sxm/qwen3-8b-bf16@trtllm (engine trtllm test)"));
    EXPECT_THAT(text, HasSubstr("# trace: " + DefaultTracePath()));
    EXPECT_THAT(text, HasSubstr("PR #16888"));
    EXPECT_THAT(text, HasSubstr(min_chain == 0 ? "K = 0 tiers run K = 1" : "K >= 1"));
    for (const SchedulePoint& p : s->points) {
      EXPECT_THAT(text, HasSubstr(absl::StrFormat("#   %5d %5d %12.1f %14.1f", p.batch, p.setting,
                                                  p.throughput, p.batch_throughput)));
    }
  }
}

TEST(RenderSchedule, SglangReadsBackAsTheSchedule) {
  auto s = BuildSchedule(BundledTrace(), EngineProfile("sglang"), ScheduleFormat::kSglang,
                         ReadmeOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  const nlohmann::json j = nlohmann::json::parse(RenderSchedule(*s, Source("sglang")));
  const nlohmann::json& ranges = j.at("sglang").at("ranges");
  ASSERT_FALSE(ranges.empty());
  EXPECT_EQ(ranges.front().at("batch_lo"), 1);
  std::map<int, SglangTree> trees;
  for (int b = 1; b <= 1024; ++b) {
    const nlohmann::json* range = nullptr;
    for (const nlohmann::json& r : ranges) {
      if (r.at("batch_lo").get<int>() <= b && b <= r.at("batch_hi").get<int>()) {
        ASSERT_EQ(range, nullptr) << "B " << b << " in two ranges";
        range = &r;
      }
    }
    ASSERT_NE(range, nullptr) << "B " << b;
    const int n = ExpectedSetting(*s, b);
    auto cached = trees.find(n);
    if (cached == trees.end()) cached = trees.emplace(n, *SglangTreeFor(BundledTrace(), n)).first;
    const SglangTree& t = cached->second;
    EXPECT_EQ(range->value("speculative_num_steps", 0), t.num_steps) << "B " << b;
    EXPECT_EQ(range->value("speculative_eagle_topk", 0), t.eagle_topk) << "B " << b;
    EXPECT_EQ(range->value("speculative_num_draft_tokens", 0), t.num_draft_tokens) << "B " << b;
    if (n > 0) {
      EXPECT_EQ(range->at("args"),
                absl::StrFormat("--speculative-num-steps %d --speculative-eagle-topk %d "
                                "--speculative-num-draft-tokens %d",
                                t.num_steps, t.eagle_topk, t.num_draft_tokens));
    } else {
      EXPECT_EQ(range->at("speculate"), false);
    }
  }
  EXPECT_EQ(j.at("sglang").at("static").at("draft_nodes"), s->static_setting);
  EXPECT_EQ(j.at("specplan").at("engine"), "sglang");
}

// A drafter so slow that speculation never pays: every format says so and stays valid.
TEST(RenderSchedule, NeverSpeculatingIsStillAValidConfig) {
  ScheduleOptions o = ReadmeOptions();
  o.replay.drafter.t_net_s = 1.0;
  for (ScheduleFormat f :
       {ScheduleFormat::kVllm, ScheduleFormat::kTrtllm, ScheduleFormat::kSglang}) {
    SCOPED_TRACE(ScheduleFormatName(f));
    auto s = BuildSchedule(BundledTrace(), EngineProfile("vllm"), f, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->max_setting, 0);
    ASSERT_EQ(s->ranges.size(), 1u);
    const std::string text = RenderSchedule(*s, Source("vllm"));
    if (f == ScheduleFormat::kTrtllm) {
      const TrtllmConfig c = ReadTrtllmYaml(text);
      EXPECT_EQ(c.schedule, (std::map<int, int>{{1, 0}}));
      EXPECT_EQ(c.max_draft_len, 0);
      EXPECT_THAT(text, HasSubstr("leave speculative_config out"));
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(text);
    EXPECT_THAT(j.at("specplan").at("note").get<std::string>(), HasSubstr("does not pay"));
    if (f == ScheduleFormat::kVllm) {
      EXPECT_EQ(j["speculative_config"]["num_speculative_tokens"], 1);  // vLLM requires > 0
      for (int k : VllmLookup(j["speculative_config"], 300)) EXPECT_EQ(k, 0);
    }
  }
}

TEST(RenderSchedule, SummaryListsThePerBatchTable) {
  auto s =
      BuildSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm, ReadmeOptions());
  ASSERT_TRUE(s.ok());
  const std::string summary = FormatScheduleSummary(*s, Source("vllm"));
  EXPECT_THAT(summary, HasSubstr("batch planner"));
  EXPECT_THAT(summary, HasSubstr("throughput per K"));
  EXPECT_THAT(summary, HasSubstr("best single static setting"));
  EXPECT_THAT(summary, HasSubstr("schedule: 1-"));
}

// ---- the context axis (vLLM RFC #48627) -----------------------------------------------------
//
// The format, as vLLM RFC #48627 and PR #48944 (both open when read) describe it: "5-tuple
// entries; 3-tuple entries mean 'all context lengths'": [bs_lo, bs_hi, ctx_lo, ctx_hi, K], both
// ranges inclusive, e.g. [65, 256, 0, 768, 0] and [65, 256, 769, 32768, 3].

// The 5-item entries' lookup: the K of the entry whose two inclusive ranges hold (batch, ctx); the
// entries must not overlap. -1 where none does.
int VllmContextLookup(const nlohmann::json& config, int batch, int64_t ctx) {
  int found = -1;
  for (const nlohmann::json& e : config.at("num_speculative_tokens_per_batch_size")) {
    SPECPLAN_CHECK(e.is_array() && e.size() == 5);
    SPECPLAN_CHECK(e[0].get<int>() >= 1 && e[0].get<int>() <= e[1].get<int>());
    SPECPLAN_CHECK(e[2].get<int64_t>() >= 0 && e[2].get<int64_t>() <= e[3].get<int64_t>());
    if (batch >= e[0].get<int>() && batch <= e[1].get<int>() && ctx >= e[2].get<int64_t>() &&
        ctx <= e[3].get<int64_t>()) {
      SPECPLAN_CHECK(found < 0);  // non-overlapping
      found = std::min(config.at("num_speculative_tokens").get<int>(), e[4].get<int>());
    }
  }
  return found;
}

TEST(ContextOffset, LongerContextsCostMoreAndDraftNoLess) {
  ConcurrencyOptions o = ReadmeOptions().replay;
  o.batch_sizes = {1, 64};
  o.best_chain = true;
  auto base = RunConcurrency(BundledTrace(), EngineProfile("vllm"), o);
  ASSERT_TRUE(base.ok()) << base.status();
  o.context_offset = 16384;
  auto longer = RunConcurrency(BundledTrace(), EngineProfile("vllm"), o);
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_EQ(longer->context_offset, 16384);
  for (int b : {1, 64}) {
    const ConcurrencyRow* a = FindConcurrencyRow(*base, b, S::kAr);
    const ConcurrencyRow* l = FindConcurrencyRow(*longer, b, S::kAr);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(l, nullptr);
    EXPECT_LT(l->throughput, a->throughput) << "B " << b;  // attention over 16k more tokens
    EXPECT_EQ(l->tokens, a->tokens);                       // acceptance is the trace's
  }
  // At B = 64 the pass is no longer weight-bound: a chain pays where it did not at c + 0.
  EXPECT_EQ(base->best_chain_lengths[1], 0);
  EXPECT_GT(longer->best_chain_lengths[1], 0);
  o.context_offset = -1;
  auto bad = RunConcurrency(BundledTrace(), EngineProfile("vllm"), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("context_offset = -1"));
}

TEST(ContextSchedule, RowsAreTheBatchSchedulesAtEachContextAndTheCellsReadBack) {
  const std::vector<int64_t> grid = {0, 4096, 32768};
  auto cs = BuildContextSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm,
                                 ReadmeOptions(), grid);
  ASSERT_TRUE(cs.ok()) << cs.status();
  ASSERT_EQ(cs->rows.size(), 3u);
  // Row 0 is the batch-only schedule.
  auto plain =
      BuildSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm, ReadmeOptions());
  ASSERT_TRUE(plain.ok());
  for (size_t i = 0; i < plain->points.size(); ++i) {
    EXPECT_EQ(cs->rows[0].points[i].setting, plain->points[i].setting);
  }
  // Each row is BuildSchedule at its offset.
  ScheduleOptions o = ReadmeOptions();
  o.replay.context_offset = 4096;
  auto mid = BuildSchedule(BundledTrace(), EngineProfile("vllm"), ScheduleFormat::kVllm, o);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(cs->rows[1].report.context_offset, 4096);
  for (size_t i = 0; i < mid->points.size(); ++i) {
    EXPECT_EQ(cs->rows[1].points[i].setting, mid->points[i].setting);
  }
  // Long contexts keep speculating at batch sizes where short ones stop (the RFC's point).
  EXPECT_EQ(ScheduleSettingAt(cs->rows[0], 256), 0);
  EXPECT_GT(ScheduleSettingAt(cs->rows[2], 256), 0);

  const nlohmann::json j = nlohmann::json::parse(RenderContextSchedule(*cs, Source("vllm")));
  // The batch-only config is row 0's, as RenderSchedule writes it.
  EXPECT_EQ(
      j.at("speculative_config"),
      nlohmann::json::parse(RenderSchedule(cs->rows[0], Source("vllm"))).at("speculative_config"));
  const nlohmann::json& config = j.at("speculative_config_context_axis");
  EXPECT_EQ(config.at("num_speculative_tokens").get<int>(), std::max(1, cs->max_setting));
  // Every (batch, ctx) of the grid's ranges reads back as its row's setting; the cells cover
  // 1..4096 x 0..kMaxContextOffset without a gap.
  for (int b : {1, 2, 3, 7, 8, 31, 32, 63, 64, 200, 256, 4096}) {
    for (int64_t c : {int64_t{0}, int64_t{4095}, int64_t{4096}, int64_t{32767}, int64_t{32768},
                      kMaxContextOffset}) {
      const size_t row = c >= 32768 ? 2 : c >= 4096 ? 1 : 0;
      EXPECT_EQ(VllmContextLookup(config, b, c), ScheduleSettingAt(cs->rows[row], b))
          << "B " << b << " ctx " << c;
      EXPECT_EQ(ContextScheduleSettingAt(*cs, b, c), ScheduleSettingAt(cs->rows[row], b));
    }
  }
  const nlohmann::json& axis = j.at("specplan").at("context_axis");
  EXPECT_EQ(axis.at("contexts"), grid);
  ASSERT_EQ(axis.at("rows").size(), 3u);
  EXPECT_EQ(axis.at("rows")[2].at("expected_tokens_per_s").size(), 9u);
}

TEST(ContextSchedule, RejectsBadGridsNamingTheField) {
  const auto& lat = EngineProfile("vllm");
  auto expect_error = [&](ScheduleFormat f, const std::vector<int64_t>& grid,
                          const std::string& text) {
    auto cs = BuildContextSchedule(BundledTrace(), lat, f, ReadmeOptions(), grid);
    ASSERT_FALSE(cs.ok());
    EXPECT_EQ(cs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(cs.status().message(), HasSubstr(text));
  };
  expect_error(ScheduleFormat::kVllm, {}, "must start at 0");
  expect_error(ScheduleFormat::kVllm, {1024}, "starts at 1024");
  expect_error(ScheduleFormat::kVllm, {0, 4096, 4096}, "contexts[2] = 4096");
  expect_error(ScheduleFormat::kVllm, {0, kMaxContextOffset + 1}, "at most");
  expect_error(ScheduleFormat::kSglang, {0, 1024}, "not sglang");
}

}  // namespace
}  // namespace specplan::whatif
