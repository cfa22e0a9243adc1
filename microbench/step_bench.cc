// Pricing the engine's whole step (costmodel/step/step_model.h: verify + draft + sample + host)
// against pricing the verification pass alone, on the bundled H100 Llama-3.1-8B vLLM profile
// (composed kernel tables, EAGLE-3 drafter), at b = 1 and 64 sequences of s = 4 tokens over
// c = 1024. The budget (issue 41): a step with the drafter costs no more than 2x the verify pass
// alone, since the step is what every replay and what-if now prices per simulated step; met by
// BM_StepTabulated against BM_VerifyPassLocated (docs/step-model.md, "What pricing a step costs").
//   BM_VerifyPass        the profile's LatencyModel: VerifySeconds(s, c) at b = 1, else
//                        VerifyBatchSeconds of a uniform batch built in the loop (what a caller
//                        that holds only (b, s, c) must do)
//   BM_VerifyPassShaped  the same at b > 1 with the batch built once, outside the loop
//   BM_VerifyPassLocated the same pass read as a step reads it once tabulated: one
//                        TableLatency::Locate + ReadAt (no batch built)
//   BM_Step              StepModel::Step(b, s, c) with the drafter, priced forward by forward
//   BM_StepTabulated     the same after StepModel::TabulateDraft (what replays and sweeps use):
//                        the verify pass and the drafting read with one grid search
//   BM_TabulateDraft     the one-off cost of TabulateDraft
//   BM_ThreePasses       the three passes a step prices (target, drafter extend, drafter forward)
//                        read straight from the models: the floor under BM_Step
//   BM_ArStep            StepModel::ArStep(b, c)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "costmodel/cost_spec.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/step/step_model.h"
#include "util/check.h"

namespace {

using specplan::costmodel::BatchShape;
using specplan::costmodel::ResolvedLatencyModel;
using specplan::costmodel::StepModel;

constexpr int64_t kS = 4;
constexpr int64_t kC = 1024;

const ResolvedLatencyModel& Vllm() {
  static const ResolvedLatencyModel* r = [] {
    specplan::costmodel::CostSpec spec;
    spec.model = "llama-3.1-8b";
    spec.gpu = "h100";
    spec.engine = "vllm";
    spec.calib_dir = std::string(SPECPLAN_SOURCE_DIR) + "/calib";
    auto resolved = specplan::costmodel::ResolveCost(spec);
    SPECPLAN_CHECK(resolved.ok(), "the bundled h100 llama-3.1-8b vllm profile");
    SPECPLAN_CHECK(resolved->drafters.count("eagle3") == 1, "the profile's eagle3 table");
    return new ResolvedLatencyModel(*std::move(resolved));
  }();
  return *r;
}

StepModel MakeStep() {
  auto step = StepModel::Create(Vllm().model.get(), Vllm().model_spec, Vllm().gpu_spec,
                                &Vllm().drafters, "vllm", {});
  SPECPLAN_CHECK(step.ok());
  SPECPLAN_CHECK(step->draft_priced_by() == "kernel tables");
  return *std::move(step);
}

const StepModel& Step() {
  static const StepModel* m = new StepModel(MakeStep());
  return *m;
}

const StepModel& TabulatedStep() {
  static const StepModel* m = [] {
    StepModel step = MakeStep();
    SPECPLAN_CHECK(step.TabulateDraft(), "the vllm profile's table and eagle3's");
    return new StepModel(std::move(step));
  }();
  return *m;
}

BatchShape Uniform(int64_t b, int64_t s, int64_t c) {
  BatchShape shape;
  shape.Reserve(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) shape.Add(s, c);
  return shape;
}

void BM_VerifyPass(benchmark::State& state) {
  const int64_t b = state.range(0);
  const auto& model = *Vllm().model;
  for (auto _ : state) {
    double t = b == 1 ? model.VerifySeconds(kS, kC) : model.VerifyBatchSeconds(Uniform(b, kS, kC));
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel("b x (s = 4, c = 1024), " + model.Kind());
}
BENCHMARK(BM_VerifyPass)->Arg(1)->Arg(64);

void BM_VerifyPassShaped(benchmark::State& state) {
  const int64_t b = state.range(0);
  const auto& model = *Vllm().model;
  const BatchShape shape = Uniform(b, kS, kC);
  for (auto _ : state) {
    double t = model.VerifyBatchSeconds(shape);
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel("batch built once");
}
BENCHMARK(BM_VerifyPassShaped)->Arg(1)->Arg(64);

void BM_VerifyPassLocated(benchmark::State& state) {
  const int64_t b = state.range(0);
  const auto& table = dynamic_cast<const specplan::costmodel::TableLatency&>(*Vllm().model);
  for (auto _ : state) {
    specplan::costmodel::TableLatency::GridPoint p;
    SPECPLAN_CHECK(table.Locate(b, kS, kC, &p));
    double t = specplan::costmodel::TableLatency::ReadAt(table.table(), p);
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel("one grid search, one read");
}
BENCHMARK(BM_VerifyPassLocated)->Arg(1)->Arg(64);

// Prices the step b x (s = 4, c = 1024) on `m`, state.range(0) = b.
void PriceSteps(benchmark::State& state, const StepModel& m, const char* label) {
  const int64_t b = state.range(0);
  for (auto _ : state) {
    auto r = m.Step(b, kS, kC);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(label);
}

void BM_Step(benchmark::State& state) {
  PriceSteps(state, Step(), "eagle3, D = 3: verify + 3 draft forwards + sample + host");
}
BENCHMARK(BM_Step)->Arg(1)->Arg(64);

void BM_StepTabulated(benchmark::State& state) {
  PriceSteps(state, TabulatedStep(),
             "after TabulateDraft: one grid search, two reads + sample + host");
}
BENCHMARK(BM_StepTabulated)->Arg(1)->Arg(64);

void BM_TabulateDraft(benchmark::State& state) {
  for (auto _ : state) {
    StepModel m = MakeStep();
    benchmark::DoNotOptimize(m.TabulateDraft());
  }
  state.SetLabel("once per model: T_draft at every node of the target's table");
}
BENCHMARK(BM_TabulateDraft)->Unit(benchmark::kMillisecond);

// The floor under BM_Step: the three passes a step must price (the target's; the EAGLE-3 head's
// extend over the s verified tokens, on the same batch; its single-token forward at c + s), read
// straight from the models, with the two batches that takes built (b > 1); no host terms, no
// bookkeeping.
const specplan::costmodel::TableLatency& Eagle3() {
  static const auto* t = [] {
    const specplan::costmodel::DrafterProfile& d = Vllm().drafters.at("eagle3");
    return new specplan::costmodel::TableLatency(
        specplan::costmodel::RooflineLatency(d.arch.layers, Vllm().gpu_spec), d.table);
  }();
  return *t;
}

void BM_ThreePasses(benchmark::State& state) {
  const int64_t b = state.range(0);
  const auto& model = *Vllm().model;
  const auto& draft = Eagle3();
  for (auto _ : state) {
    double t;
    if (b == 1) {
      t = model.VerifySeconds(kS, kC) + draft.VerifySeconds(kS, kC) +
          draft.VerifySeconds(1, kC + kS);
    } else {
      const BatchShape shape = Uniform(b, kS, kC);
      t = model.VerifyBatchSeconds(shape) + draft.VerifyBatchSeconds(shape) +
          draft.VerifyBatchSeconds(Uniform(b, 1, kC + kS));
    }
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel(b == 1 ? "3 table reads" : "3 table reads, 2 batches built");
}
BENCHMARK(BM_ThreePasses)->Arg(1)->Arg(64);

void BM_ArStep(benchmark::State& state) {
  const int64_t b = state.range(0);
  const StepModel& m = Step();
  for (auto _ : state) {
    auto r = m.ArStep(b, kC);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ArStep)->Arg(1)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
