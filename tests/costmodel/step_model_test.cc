// The engine's whole step (costmodel/step/step_model.h) on the bundled H100 Llama-3.1-8B vLLM
// profile: each term against the header's formula computed from its pieces (the profile's verify
// model, the drafter's composed table, the engine's host-time fields), the plain step, the
// drafting given by hand, n-gram, the roofline fallback, trees, ragged batches, validation, the
// engines' host defaults, and the planner's terms.
#include "costmodel/step/step_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "costmodel/cost_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/step/host_time.h"
#include "tests/costmodel/cost_test_util.h"
#include "util/check.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const ResolvedLatencyModel& Vllm() { return H100Llama8bVllm(); }

StepModel Make(const StepOptions& o, const std::string& engine = "vllm",
               const std::map<std::string, DrafterProfile>* drafters = &Vllm().drafters) {
  auto m = StepModel::Create(Vllm().model.get(), Vllm().model_spec, Vllm().gpu_spec, drafters,
                             engine, o);
  SPECPLAN_CHECK(m.ok(), "StepModel::Create");
  return *std::move(m);
}

BatchShape Uniform(int64_t b, int64_t s, int64_t c) {
  BatchShape shape;
  for (int64_t i = 0; i < b; ++i) shape.Add(s, c);
  return shape;
}

// The target's pass as the header says: the profile's model (VerifySeconds for one sequence).
double TargetPass(int64_t b, int64_t s, int64_t c) {
  return b == 1 ? Vllm().model->VerifySeconds(s, c)
                : Vllm().model->VerifyBatchSeconds(Uniform(b, s, c));
}

// One drafter forward priced by the profile's composed table, built here independently.
class DrafterTable {
 public:
  explicit DrafterTable(const std::string& name)
      : t_(RooflineLatency(Vllm().drafters.at(name).arch.layers, Vllm().gpu_spec),
           Vllm().drafters.at(name).table) {}
  double operator()(int64_t b, int64_t s, int64_t c) const {
    return b == 1 ? t_.VerifySeconds(s, c) : t_.VerifyBatchSeconds(Uniform(b, s, c));
  }

 private:
  TableLatency t_;
};

HostTime VllmHost() {
  auto h = DefaultHostTime("vllm");
  SPECPLAN_CHECK(h.ok());
  return *h;
}

void ExpectSum(const StepBreakdown& r) {
  EXPECT_EQ(r.step_s(), r.verify_s + r.draft_s + r.sample_s + r.host_s);
}

// The (b, s, c) cells the step tests price: one sequence to 256, chains of 1 to 5 drafted tokens,
// short to long contexts.
const std::tuple<int64_t, int64_t, int64_t> kStepCells[] = {
    {1, 4, 1024}, {8, 4, 1024}, {64, 4, 1024}, {16, 6, 300},
    {3, 2, 5000}, {64, 4, 186}, {128, 4, 186}, {256, 6, 3000}};

// m.Step(b, s, c) with the terms every drafter shares checked: T_verify is the pass plus the
// engine's per-token excess, T_host the work per step and per sequence (nothing for drafting), and
// the terms sum to step_s.
StepBreakdown CheckedStep(const StepModel& m, const HostTime& h, int64_t b, int64_t s, int64_t c) {
  const StepBreakdown r = m.Step(b, s, c);
  const double bd = static_cast<double>(b);
  EXPECT_DOUBLE_EQ(r.verify_s, TargetPass(b, s, c) + h.verify_per_token_s * bd * s);
  EXPECT_DOUBLE_EQ(r.host_s, h.step_s + h.per_sequence_s * bd);
  ExpectSum(r);
  return r;
}

TEST(StepModel, StepIsVerifyPlusDraftPlusSamplePlusHost) {
  ASSERT_EQ(Vllm().engine, "vllm");
  ASSERT_TRUE(Vllm().drafters.count("eagle3"));
  const StepModel m = Make({});  // eagle3, D = s - 1, topk 1, vLLM's host defaults
  EXPECT_EQ(m.draft_priced_by(), "kernel tables");
  EXPECT_EQ(m.engine(), "vllm");
  EXPECT_TRUE(m.has_drafter());
  const HostTime h = VllmHost();
  const DrafterTable draft("eagle3");
  for (const auto& [b, s, c] : kStepCells) {
    SCOPED_TRACE(testing::Message() << "b = " << b << ", s = " << s << ", c = " << c);
    const StepBreakdown r = CheckedStep(m, h, b, s, c);  // T_verify, T_host, the sum
    const int d = static_cast<int>(s - 1);
    // T_draft: the extend over s verified tokens, then D - 1 single-token forwards at c + s, each
    // with the host's per-forward time.
    double want_draft = draft(b, s, c) + h.per_draft_forward_s;
    if (d > 1) want_draft += (d - 1) * (draft(b, 1, c + s) + h.per_draft_forward_s);
    EXPECT_EQ(r.draft_forwards, d);
    EXPECT_NEAR(r.draft_s, want_draft, 1e-15);
    EXPECT_DOUBLE_EQ(m.DraftForwardSeconds(b, s, c), draft(b, s, c));
    // T_sample: the target's call and one per drafter forward.
    EXPECT_DOUBLE_EQ(r.sample_s, h.sample_call_s * (1 + d));
    EXPECT_GT(r.draft_s, 0);
  }
}

TEST(StepModel, ArStepIsThePlainPassOneSampleAndTheHost) {
  const StepModel m = Make({});
  const HostTime h = VllmHost();
  for (int64_t b : {1, 8, 64}) {
    SCOPED_TRACE(b);
    const StepBreakdown r = m.ArStep(b, 1024);
    EXPECT_DOUBLE_EQ(r.verify_s, TargetPass(b, 1, 1024) + h.verify_per_token_s * b);
    EXPECT_EQ(r.draft_s, 0);
    EXPECT_EQ(r.draft_forwards, 0);
    EXPECT_EQ(r.sample_s, h.sample_call_s);
    EXPECT_DOUBLE_EQ(r.host_s, h.step_s + h.per_sequence_s * b);
    ExpectSum(r);
    // A speculative step costs more than a plain one.
    EXPECT_GT(m.Step(b, 4, 1024).step_s(), r.step_s());
  }
  // No drafter: the step model prices the plain step alone.
  StepOptions none;
  none.drafter = "";
  const StepModel plain = Make(none);
  EXPECT_FALSE(plain.has_drafter());
  EXPECT_EQ(plain.draft_priced_by(), "none");
  EXPECT_EQ(plain.ArStep(8, 1024).step_s(), m.ArStep(8, 1024).step_s());
  const StepBreakdown r = plain.Step(8, 4, 1024);
  EXPECT_EQ(r.draft_s, 0);
  EXPECT_EQ(r.draft_forwards, 0);
}

TEST(StepModel, DraftGivenByHandReplacesDraftingWithoutPerForwardHost) {
  StepOptions o;
  o.draft_s = 2.5e-3;
  const StepModel m = Make(o);
  EXPECT_EQ(m.draft_priced_by(), "given");
  const StepModel composed = Make({});
  for (int64_t b : {1, 32}) {
    const StepBreakdown r = m.Step(b, 4, 1024);
    const StepBreakdown c = composed.Step(b, 4, 1024);
    EXPECT_EQ(r.draft_s, 2.5e-3);  // the whole of it: no per-forward host time added
    EXPECT_EQ(r.draft_forwards, 3);
    EXPECT_EQ(r.verify_s, c.verify_s);
    EXPECT_EQ(r.sample_s, c.sample_s);  // sampling still counts each drafter forward
    EXPECT_EQ(r.host_s, c.host_s);
  }
  // Zero by hand is zero.
  o.draft_s = 0.0;
  EXPECT_EQ(Make(o).Step(4, 4, 1024).draft_s, 0);
}

TEST(StepModel, NgramDraftIsAFractionOfTheVerifyPass) {
  const HostTime h = VllmHost();
  ASSERT_EQ(h.ngram_verify_fraction, 0.005875);
  for (const char* name : {"ngram", "suffix"}) {
    SCOPED_TRACE(name);
    StepOptions o;
    o.drafter = name;
    const StepModel m = Make(o);
    EXPECT_EQ(m.draft_priced_by(), "host only");
    EXPECT_EQ(m.DraftForwardSeconds(8, 4, 1024), 0);
    for (const auto& [b, s, c] : kStepCells) {
      SCOPED_TRACE(testing::Message() << "b = " << b << ", s = " << s << ", c = " << c);
      // T_verify and T_host as for any drafter: nothing per sequence for the proposal.
      const StepBreakdown r = CheckedStep(m, h, b, s, c);
      // The proposal is the drafter's time: the fraction of this step's verify term.
      EXPECT_DOUBLE_EQ(r.draft_s, h.ngram_verify_fraction * r.verify_s);
      EXPECT_EQ(r.draft_forwards, 0);
      EXPECT_EQ(r.sample_s, h.sample_call_s);
      EXPECT_EQ(r.host_s, m.ArStep(b, c).host_s);  // the plain step's host term
    }
    // A ragged batch: the fraction of its own verify pass.
    BatchShape ragged;
    ragged.Add(4, 100);
    ragged.Add(2, 3000);
    ragged.Add(4, 700);
    const StepBreakdown r = m.Step(ragged);
    EXPECT_DOUBLE_EQ(r.draft_s, h.ngram_verify_fraction * r.verify_s);
    EXPECT_DOUBLE_EQ(r.host_s, h.step_s + h.per_sequence_s * 3);
    // The plain step has no n-gram proposal.
    EXPECT_EQ(m.ArStep(8, 1024).draft_s, 0);
    EXPECT_DOUBLE_EQ(m.ArStep(8, 1024).host_s, h.step_s + h.per_sequence_s * 8);
  }
  // The draft term is proportional to the fraction (0: none), and drafting by hand replaces it.
  StepOptions o;
  o.drafter = "ngram";
  o.host = h;
  o.host->ngram_verify_fraction = 0.1;
  const StepBreakdown tenth = Make(o).Step(32, 4, 1024);
  EXPECT_DOUBLE_EQ(tenth.draft_s, 0.1 * tenth.verify_s);
  o.host->ngram_verify_fraction = 0;
  EXPECT_EQ(Make(o).Step(32, 4, 1024).draft_s, 0);
  // A step that drafts nothing proposes nothing.
  o.host = std::nullopt;
  o.draft_steps = 0;
  EXPECT_EQ(Make(o).Step(32, 4, 1024).draft_s, 0);
  o.draft_steps = -1;
  EXPECT_EQ(Make(o).Step(32, 1, 1024).draft_s, 0);  // D = s - 1 = 0
  o.draft_s = 2e-3;
  EXPECT_EQ(Make(o).Step(32, 4, 1024).draft_s, 2e-3);
}

TEST(StepModel, RooflineWhenTheProfileLacksTheDrafter) {
  const HostTime h = VllmHost();
  auto check_roofline = [&](const StepModel& m, const DrafterArch& arch) {
    EXPECT_EQ(m.draft_priced_by(), "roofline");
    const RooflineLatency roof(arch.layers, Vllm().gpu_spec);
    EXPECT_DOUBLE_EQ(m.DraftForwardSeconds(1, 4, 1024), roof.VerifySeconds(4, 1024));
    EXPECT_DOUBLE_EQ(m.DraftForwardSeconds(8, 1, 1028),
                     roof.VerifyBatchSeconds(Uniform(8, 1, 1028)));
    const StepBreakdown r = m.Step(8, 4, 1024);
    EXPECT_NEAR(r.draft_s,
                roof.VerifyBatchSeconds(Uniform(8, 4, 1024)) +
                    2 * roof.VerifyBatchSeconds(Uniform(8, 1, 1028)) + 3 * h.per_draft_forward_s,
                1e-15);
  };
  // No tables at all (a measured profile, the bare roofline).
  check_roofline(Make({}, "vllm", nullptr), *DrafterArchFor("eagle3", Vllm().model_spec));
  const std::map<std::string, DrafterProfile> empty;
  check_roofline(Make({}, "vllm", &empty), *DrafterArchFor("eagle3", Vllm().model_spec));
  // A drafter the profile does not compose.
  StepOptions draft_model;
  draft_model.drafter = "draft:llama-3.2-1b";
  check_roofline(Make(draft_model), *DrafterArchFor("draft:llama-3.2-1b", Vllm().model_spec));
  // Another draft vocabulary than the composed table's.
  StepOptions vocab;
  vocab.drafter_options.draft_vocab = 64000;
  DrafterOptions dv;
  dv.draft_vocab = 64000;
  check_roofline(Make(vocab), *DrafterArchFor("eagle3", Vllm().model_spec, dv));
}

TEST(StepModel, TopkMultipliesTheDraftStepBatch) {
  StepOptions o;
  o.topk = 4;
  const StepModel tree = Make(o);
  const DrafterTable draft("eagle3");
  const HostTime h = VllmHost();
  for (int64_t b : {1, 8}) {
    const StepBreakdown r = tree.Step(b, 4, 1024);
    EXPECT_EQ(r.draft_forwards, 3);
    EXPECT_NEAR(r.draft_s,
                draft(b, 4, 1024) + 2 * draft(4 * b, 1, 1028) + 3 * h.per_draft_forward_s, 1e-15);
    EXPECT_GT(r.draft_s, Make({}).Step(b, 4, 1024).draft_s);
  }
}

// WithTopk is the model Create makes with that topk (the other options kept), and refuses what
// Create refuses.
TEST(StepModel, WithTopkIsTheModelOfThatTopk) {
  StepOptions o;
  o.topk = 4;
  const StepModel made = Make(o);
  StepModel base = Make({});
  base.TabulateDraft();
  auto beams = base.WithTopk(4);
  ASSERT_TRUE(beams.ok()) << beams.status();
  EXPECT_EQ(beams->options().topk, 4);
  EXPECT_FALSE(beams->draft_tabulated());
  for (int64_t b : {1, 8, 64}) {
    for (int depth : {1, 3, 5}) {
      EXPECT_DOUBLE_EQ(beams->TreeStep(b, depth, depth, 1024, 8).step_s(),
                       made.TreeStep(b, depth, depth, 1024, 8).step_s());
    }
  }
  EXPECT_THAT(base.WithTopk(0).status().message(), HasSubstr("topk = 0: must be in [1, 64]"));
  EXPECT_THAT(base.WithTopk(65).status().message(), HasSubstr("topk = 65"));
  EXPECT_EQ(base.options().topk, 1);  // the original is unchanged
}

TEST(StepModel, DraftStepsGivenOverrideTheChain) {
  StepOptions o;
  o.draft_steps = 2;
  const StepModel m = Make(o);
  const DrafterTable draft("eagle3");
  const HostTime h = VllmHost();
  const StepBreakdown r = m.Step(4, 6, 512);  // verifies 6, drafts 2
  EXPECT_EQ(r.draft_forwards, 2);
  EXPECT_NEAR(r.draft_s, draft(4, 6, 512) + draft(4, 1, 518) + 2 * h.per_draft_forward_s, 1e-15);
  EXPECT_DOUBLE_EQ(r.sample_s, 3 * h.sample_call_s);
  o.draft_steps = 0;
  const StepBreakdown none = Make(o).Step(4, 6, 512);
  EXPECT_EQ(none.draft_forwards, 0);
  EXPECT_EQ(none.draft_s, 0);
  EXPECT_EQ(none.sample_s, h.sample_call_s);
}

// The step model walks the drafter's forwards itself (no vector per step): against
// DraftForwards (drafter_arch.h), each forward priced by DraftForwardSeconds, over a grid of
// drafters, shapes, D and topk; bit for bit.
TEST(StepModel, DraftingIsDraftForwardsPricedOneByOneOverAGrid) {
  const HostTime h = VllmHost();
  int checked = 0;
  for (const char* name : {"eagle3", "mtp", "draft:llama-3.2-1b", "block:llama-3.2-1b", "ngram"}) {
    for (int draft_steps : {-1, 0, 1, 3, 6}) {
      for (int topk : {1, 3}) {
        StepOptions o;
        o.drafter = name;
        o.draft_steps = draft_steps;
        o.topk = topk;
        const StepModel m = Make(o);
        const DrafterArch arch = *DrafterArchFor(name, Vllm().model_spec);
        for (int64_t b : {1, 2, 16}) {
          for (int64_t s : {1, 2, 4, 7}) {
            for (int64_t c : {0, 900}) {
              SCOPED_TRACE(testing::Message() << name << " D " << draft_steps << " topk " << topk
                                              << ": b = " << b << ", s = " << s << ", c = " << c);
              const int d = draft_steps >= 0 ? draft_steps : static_cast<int>(s - 1);
              double t = 0;
              int forwards = 0;
              for (const DraftForward& f : DraftForwards(arch, b, s, c, d, topk)) {
                forwards += f.count;
                t += f.count * m.DraftForwardSeconds(f.batch, f.tokens, f.context);
              }
              t += h.per_draft_forward_s * forwards;
              // n-gram: no forward; a step that drafts pays its proposal, a fraction of verify.
              const bool proposes = !arch.has_network() && d > 0;
              const StepBreakdown r = m.Step(b, s, c);
              EXPECT_EQ(r.draft_forwards, forwards);
              EXPECT_EQ(r.draft_s, proposes ? t + h.ngram_verify_fraction * r.verify_s : t);
              const StepBreakdown ragged = m.Step(Uniform(b, s, c));
              EXPECT_EQ(ragged.draft_forwards, forwards);
              EXPECT_EQ(ragged.draft_s,
                        proposes ? t + h.ngram_verify_fraction * ragged.verify_s : t);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 5 * 2 * 3 * 4 * 2);
}

TEST(StepModel, RaggedStepOfAUniformBatchIsTheUniformStep) {
  for (const StepOptions& o : [] {
         std::vector<StepOptions> v(4);
         v[1].topk = 4;
         v[2].drafter = "ngram";
         v[3].draft_steps = 2;
         return v;
       }()) {
    const StepModel m = Make(o);
    for (const auto& [b, s, c] :
         {std::tuple<int64_t, int64_t, int64_t>{1, 4, 1024}, {8, 4, 1024}, {64, 5, 333}}) {
      SCOPED_TRACE(testing::Message() << o.drafter << " topk " << o.topk << " D " << o.draft_steps
                                      << ": b = " << b << ", s = " << s);
      const StepBreakdown u = m.Step(b, s, c);
      const StepBreakdown r = m.Step(Uniform(b, s, c));
      EXPECT_DOUBLE_EQ(r.verify_s, u.verify_s);
      EXPECT_DOUBLE_EQ(r.draft_s, u.draft_s);
      EXPECT_EQ(r.sample_s, u.sample_s);
      EXPECT_EQ(r.host_s, u.host_s);
      EXPECT_EQ(r.draft_forwards, u.draft_forwards);
      const StepBreakdown ua = m.ArStep(b, c);
      const StepBreakdown ra = m.ArStep(Uniform(b, s, c));  // the batch's sequences at s = 1
      EXPECT_DOUBLE_EQ(ra.verify_s, ua.verify_s);
      EXPECT_EQ(ra.sample_s, ua.sample_s);
      EXPECT_EQ(ra.host_s, ua.host_s);
    }
  }
}

TEST(StepModel, RaggedStepPricesTheBatchAndDraftsItsLongestChain) {
  const StepModel m = Make({});
  BatchShape batch;
  batch.Add(5, 1000);
  batch.Add(1, 2000);
  batch.Add(3, 3000);
  const StepBreakdown r = m.Step(batch);
  const HostTime h = VllmHost();
  EXPECT_DOUBLE_EQ(r.verify_s, Vllm().model->VerifyBatchSeconds(batch) + h.verify_per_token_s * 9);
  // D = the largest s_i - 1 = 4, at the mean sequence (s 3, c 2000).
  EXPECT_EQ(r.draft_forwards, 4);
  const DrafterTable draft("eagle3");
  EXPECT_NEAR(r.draft_s, draft(3, 3, 2000) + 3 * draft(3, 1, 2003) + 4 * h.per_draft_forward_s,
              1e-15);
  ExpectSum(r);
}

TEST(StepModel, TabulatedDraftReadsTheVerifyPassExactlyAndDraftingWithinOnePercent) {
  for (const auto& [drafter, topk, steps] :
       std::vector<std::tuple<std::string, int, int>>{{"eagle3", 1, -1}, {"eagle", 4, 3}}) {
    StepOptions o;
    o.drafter = drafter;
    o.topk = topk;
    o.draft_steps = steps;
    const StepModel exact = Make(o);
    StepModel fast = Make(o);
    ASSERT_TRUE(fast.TabulateDraft()) << drafter;
    EXPECT_TRUE(fast.draft_tabulated());
    double worst = 0;
    for (int64_t b : {1, 2, 3, 5, 7, 16, 33, 64, 100, 256, 300}) {
      for (int64_t s : {2, 3, 4, 5, 7, 9}) {
        for (int64_t c : {0, 100, 1000, 1021, 3000, 9000, 30000, 40000}) {
          const StepBreakdown want = exact.Step(b, s, c);
          const StepBreakdown got = fast.Step(b, s, c);
          // The verify pass is the target's own reading (b = 1: bit for bit).
          if (b == 1) {
            EXPECT_EQ(got.verify_s, want.verify_s) << b << " " << s << " " << c;
          } else {
            EXPECT_NEAR(got.verify_s, want.verify_s, 1e-12 * want.verify_s) << b << " " << s;
          }
          EXPECT_EQ(got.draft_forwards, want.draft_forwards);
          EXPECT_EQ(got.sample_s, want.sample_s);
          EXPECT_EQ(got.host_s, want.host_s);
          const StepBreakdown ar_want = exact.ArStep(b, c), ar_got = fast.ArStep(b, c);
          EXPECT_NEAR(ar_got.verify_s, ar_want.verify_s, 1e-12 * ar_want.verify_s);
          EXPECT_EQ(ar_got.host_s, ar_want.host_s);
          const double err = std::abs(got.draft_s - want.draft_s) / want.draft_s;
          EXPECT_LT(err, 0.01) << drafter << " b " << b << " s " << s << " c " << c;
          worst = std::max(worst, err);
        }
      }
    }
    // Off the grids (b = 300, c = 40000) the step is priced forward by forward: exact.
    EXPECT_EQ(fast.Step(300, 4, 1024).draft_s, exact.Step(300, 4, 1024).draft_s);
    EXPECT_EQ(fast.Step(4, 4, 40000).draft_s, exact.Step(4, 4, 40000).draft_s);
    // A node of the grid is exact.
    EXPECT_NEAR(fast.Step(16, 4, 1024).draft_s, exact.Step(16, 4, 1024).draft_s,
                1e-12 * exact.Step(16, 4, 1024).draft_s);
    // Ragged batches are priced forward by forward.
    const BatchShape ragged({{2, 100}, {5, 3000}});
    EXPECT_EQ(fast.Step(ragged).draft_s, exact.Step(ragged).draft_s);
    RecordProperty("worst_draft_error_" + drafter, std::to_string(worst));
  }
  // Nothing to tabulate: drafting by hand, host-only drafters.
  StepOptions by_hand;
  by_hand.draft_s = 1e-3;
  StepModel given = Make(by_hand);
  EXPECT_FALSE(given.TabulateDraft());
  StepOptions ngram;
  ngram.drafter = "ngram";
  StepModel host_only = Make(ngram);
  EXPECT_FALSE(host_only.TabulateDraft());
  EXPECT_FALSE(host_only.draft_tabulated());
}

TEST(StepModel, HostOverridesAreValidatedNamingTheField) {
  HostTime host = VllmHost();
  host.step_s = 2e-3;
  host.per_sequence_s = 10e-6;
  StepOptions o;
  o.host = host;
  const StepModel m = Make(o);
  EXPECT_EQ(m.host().step_s, 2e-3);
  EXPECT_DOUBLE_EQ(m.Step(16, 4, 1024).host_s, 2e-3 + 16 * 10e-6);
  // Defaults need not exist for an engine whose host time is given.
  EXPECT_TRUE(
      StepModel::Create(Vllm().model.get(), Vllm().model_spec, Vllm().gpu_spec, nullptr, "tgi", o)
          .ok());

  struct Bad {
    double HostTime::*field;
    double value;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {&HostTime::step_s, -1e-3, "host.step_s = -0.001: must be in [0, 1] seconds"},
           {&HostTime::per_sequence_s, -1, "host.per_sequence_s = -1"},
           {&HostTime::per_draft_forward_s, 2, "host.per_draft_forward_s = 2"},
           {&HostTime::sample_call_s, std::nan(""), "host.sample_call_s = nan"},
           {&HostTime::verify_per_token_s, -1, "host.verify_per_token_s = -1"},
           {&HostTime::ngram_verify_fraction, -0.1,
            "host.ngram_verify_fraction = -0.1: must be a fraction in [0, 1] of the verify time"},
           {&HostTime::ngram_verify_fraction, 1.5, "host.ngram_verify_fraction = 1.5"},
           {&HostTime::ngram_verify_fraction, std::nan(""), "host.ngram_verify_fraction = nan"}}) {
    StepOptions b;
    b.host = VllmHost();
    (*b.host).*bad.field = bad.value;
    const absl::Status st = ValidateStepOptions(b);
    ASSERT_FALSE(st.ok()) << bad.message;
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), HasSubstr(bad.message));
    auto created = StepModel::Create(Vllm().model.get(), Vllm().model_spec, Vllm().gpu_spec,
                                     nullptr, "vllm", b);
    ASSERT_FALSE(created.ok());
    EXPECT_THAT(std::string(created.status().message()), HasSubstr(bad.message));
  }
}

TEST(StepModel, OptionsAndCreateErrorsNameTheField) {
  // Options changed from the defaults by `set`, created for `engine`: what the refusal says.
  struct Refused {
    void (*set)(StepOptions* o);
    std::string engine, message;
  };
  for (const Refused& c : std::vector<Refused>{
           {[](StepOptions* o) { o->topk = 0; }, "vllm", "topk = 0: must be in [1, 64]"},
           {[](StepOptions* o) { o->topk = 65; }, "vllm", "topk = 65"},
           {[](StepOptions* o) { o->draft_steps = -2; }, "vllm",
            "draft_steps = -2: must be in [0, 64]"},
           {[](StepOptions* o) { o->draft_steps = 65; }, "vllm", "draft_steps = 65"},
           {[](StepOptions* o) { o->draft_s = -1.0; }, "vllm",
            "draft_s = -1: must be in [0, 10] seconds"},
           {[](StepOptions* o) { o->drafter = "medusa"; }, "vllm", "drafter = 'medusa': unknown"},
           {[](StepOptions* o) { o->drafter = "draft:qwen3-0.6b"; }, "vllm",
            "drafter = 'draft:qwen3-0.6b': its vocabulary"},
           {[](StepOptions*) {}, "tgi",
            "engine = 'tgi': no host-time defaults (known: vllm, sglang, trtllm, specplan)"}}) {
    StepOptions o;
    c.set(&o);
    auto m = StepModel::Create(Vllm().model.get(), Vllm().model_spec, Vllm().gpu_spec,
                               &Vllm().drafters, c.engine, o);
    ASSERT_FALSE(m.ok()) << c.message;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.message));
  }
}

TEST(DefaultHostTime, EachEngineAndAnUnknownOne) {
  const HostTime v = VllmHost();
  EXPECT_EQ(v.step_s, 1.207e-3);
  EXPECT_EQ(v.per_sequence_s, 0);
  EXPECT_EQ(v.per_draft_forward_s, 0.355e-3);
  EXPECT_EQ(v.sample_call_s, 43e-6);
  EXPECT_EQ(v.verify_per_token_s, 8.73e-6);
  EXPECT_EQ(v.ngram_verify_fraction, 0.005875);  // SpecDecode-Bench's simulator
  EXPECT_THAT(v.provenance, HasSubstr("SpecDecode-Bench"));

  // The other engines take vLLM's terms except their `own`, checked term by term.
  const auto expect_vllms_but = [&](const char* engine, std::set<std::string> own) {
    SCOPED_TRACE(engine);
    auto h = DefaultHostTime(engine);
    ASSERT_TRUE(h.ok()) << h.status();
    for (const HostTimeTerm& t : HostTimeTerms()) {
      if (own.count(t.name) == 0) {
        EXPECT_EQ((*h).*t.member, v.*t.member) << t.name;
      }
    }
  };
  expect_vllms_but("", {});
  EXPECT_THAT(DefaultHostTime("")->provenance, StartsWith("no engine named: vLLM's defaults"));
  expect_vllms_but("sglang", {"step_s"});
  EXPECT_EQ(DefaultHostTime("sglang")->step_s, 0);  // the overlap scheduler hides it
  EXPECT_THAT(DefaultHostTime("sglang")->provenance, StartsWith("SGLang"));
  expect_vllms_but("trtllm", {});
  EXPECT_THAT(DefaultHostTime("trtllm")->provenance,
              StartsWith("TensorRT-LLM: no public measurement"));

  auto own = DefaultHostTime("specplan");
  ASSERT_TRUE(own.ok());
  for (double x : {own->step_s, own->per_sequence_s, own->per_draft_forward_s, own->sample_call_s,
                   own->verify_per_token_s}) {
    EXPECT_EQ(x, 0);
  }
  // Its n-gram lookup proposes outside the passes calibrate times: vLLM's fraction stands in.
  EXPECT_EQ(own->ngram_verify_fraction, v.ngram_verify_fraction);
  EXPECT_THAT(own->provenance, HasSubstr("calibrate times whole passes"));
  EXPECT_THAT(own->provenance, HasSubstr("vLLM's 0.5875 % of the verify time"));

  for (const char* bad : {"tgi", "vLLM", "sglang-0.5.14"}) {
    auto h = DefaultHostTime(bad);
    ASSERT_FALSE(h.ok()) << bad;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(h.status().message()),
                HasSubstr(std::string("engine = '") + bad + "': no host-time defaults"));
  }

  const nlohmann::json j = HostTimeToJson(v);
  EXPECT_EQ(j["step_s"], v.step_s);
  EXPECT_EQ(j["per_draft_forward_s"], v.per_draft_forward_s);
  EXPECT_EQ(j["verify_per_token_s"], v.verify_per_token_s);
  EXPECT_EQ(j["ngram_verify_fraction"], v.ngram_verify_fraction);
  EXPECT_EQ(j["provenance"], v.provenance);
  EXPECT_EQ(j.size(), 7u);  // six terms and the provenance
}

TEST(StepModel, EnginesHostTimeChangesOnlyTheHostTerms) {
  const StepModel v = Make({}, "vllm");
  const StepModel s = Make({}, "sglang");
  const StepBreakdown a = v.Step(8, 4, 1024), b = s.Step(8, 4, 1024);
  EXPECT_EQ(a.verify_s, b.verify_s);
  EXPECT_EQ(a.draft_s, b.draft_s);
  EXPECT_DOUBLE_EQ(a.host_s - b.host_s, 1.207e-3);
  const StepBreakdown own = Make({}, "specplan").Step(8, 4, 1024);
  EXPECT_EQ(own.sample_s, 0);
  EXPECT_EQ(own.host_s, 0);
  EXPECT_EQ(own.verify_s, TargetPass(8, 4, 1024));
  EXPECT_EQ(own.draft_s,
            DrafterTable("eagle3")(8, 4, 1024) + 2 * DrafterTable("eagle3")(8, 1, 1028));
}

TEST(StepBreakdownJson, HasEveryTermAndTheirSum) {
  const StepBreakdown r = Make({}).Step(8, 4, 1024);
  const nlohmann::json j = StepBreakdownToJson(r);
  EXPECT_EQ(j["verify_s"], r.verify_s);
  EXPECT_EQ(j["draft_s"], r.draft_s);
  EXPECT_EQ(j["sample_s"], r.sample_s);
  EXPECT_EQ(j["host_s"], r.host_s);
  EXPECT_EQ(j["step_s"], r.step_s());
  EXPECT_EQ(j["draft_forwards"], 3);
}

TEST(PlannerTermsFor, AuxIsSampleAndHostArIsThePlainStepDraftIsTheStepsDraft) {
  for (const StepOptions& o : [] {
         std::vector<StepOptions> v(3);
         v[1].drafter = "ngram";
         v[2].draft_s = 1e-3;
         return v;
       }()) {
    SCOPED_TRACE(o.drafter);
    const StepModel m = Make(o);
    const HostTime& h = m.host();
    for (int gamma : {1, 3, 7}) {
      const PlannerStepTerms t = PlannerTermsFor(m, gamma, 1024);
      const StepBreakdown one = m.Step(1, gamma + 1, 1024);
      const StepBreakdown many = m.Step(16, gamma + 1, 1024);
      // The drafting of all gamma positions, its sampling calls included.
      const double one_draft = one.draft_s + h.sample_call_s * one.draft_forwards;
      const double many_draft = many.draft_s + h.sample_call_s * many.draft_forwards;
      EXPECT_EQ(t.drafter.cls, DrafterClass::kParallelBlock);
      EXPECT_EQ(t.drafter.gamma, gamma);
      EXPECT_DOUBLE_EQ(t.drafter.t_net_s, one_draft);
      if (o.drafter == "ngram") {  // its proposal: the fraction of the verify pass, in T_draft
        EXPECT_DOUBLE_EQ(t.drafter.t_net_s, m.host().ngram_verify_fraction * one.verify_s);
      }
      // The target's sampling call and the host's step work.
      EXPECT_DOUBLE_EQ(t.t_aux_s, h.sample_call_s + h.step_s);
      // The whole step at depth gamma, as before the drafting was split by depth.
      EXPECT_DOUBLE_EQ(t.t_aux_s + t.drafter.t_net_s,
                       one.sample_s + one.host_s + one.draft_s - h.per_sequence_s);
      EXPECT_EQ(t.l_ar_s, m.ArStep(1, 1024).step_s());
      if (one_draft > 0) {
        EXPECT_DOUBLE_EQ(t.drafter.batch_growth, (many_draft / one_draft - 1) / 15);
      } else {
        EXPECT_EQ(t.drafter.batch_growth, 0);
      }
      // Only the default eagle3 drafts level by level; ngram and a time by hand are depth-flat.
      EXPECT_EQ(t.drafter.depth_stepped(), o.drafter == "eagle3" && !o.draft_s);
      if (t.drafter.depth_stepped()) {
        ASSERT_EQ(t.drafter.depth_s.size(), static_cast<size_t>(gamma) + 1);
        EXPECT_EQ(t.drafter.depth_s[0], 0);
        EXPECT_EQ(t.drafter.depth_s[gamma], t.drafter.t_net_s);
        for (int d = 1; d <= gamma; ++d) {
          EXPECT_GT(t.drafter.depth_s[d], t.drafter.depth_s[d - 1]);  // a forward per level
          const StepBreakdown chain = m.TreeStep(1, d, d, 1024, gamma);
          EXPECT_EQ(chain.draft_forwards, d);
          EXPECT_DOUBLE_EQ(t.drafter.depth_s[d],
                           chain.draft_s + h.sample_call_s * chain.draft_forwards);
        }
      }
    }
  }
  // gamma 0 is taken as 1.
  const StepModel m = Make({});
  const PlannerStepTerms zero = PlannerTermsFor(m, 0, 512);
  EXPECT_EQ(zero.drafter.gamma, 1);
  EXPECT_DOUBLE_EQ(zero.drafter.t_net_s, m.Step(1, 2, 512).draft_s + m.host().sample_call_s * 1);
}

TEST(TreeStep, AChainOfDepthDIsTheStepOfDPlusOneTokens) {
  const StepModel m = Make({});
  for (int64_t b : {1, 4, 16}) {
    for (int d = 1; d <= 6; ++d) {
      const StepBreakdown chain = m.TreeStep(b, d, d, 2048, 8);
      const StepBreakdown step = m.Step(b, d + 1, 2048);
      EXPECT_DOUBLE_EQ(chain.step_s(), step.step_s());
      EXPECT_EQ(chain.draft_forwards, step.draft_forwards);
    }
    // A tree wider than a chain of its depth: the same drafting, a larger verify pass.
    const StepBreakdown tree = m.TreeStep(b, 12, 3, 2048, 8);
    const StepBreakdown chain = m.TreeStep(b, 3, 3, 2048, 8);
    EXPECT_DOUBLE_EQ(tree.draft_s, chain.draft_s);
    EXPECT_GT(tree.verify_s, chain.verify_s);
    // No tree: the plain step.
    EXPECT_DOUBLE_EQ(m.TreeStep(b, 0, 0, 2048, 8).step_s(), m.ArStep(b, 2048).step_s());
  }
}

}  // namespace
}  // namespace specplan::costmodel
