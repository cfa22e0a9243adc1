// Pins what the planners plan: a fingerprint (FNV-1a over every field, doubles bit for bit) of the
// best-first and batch plans, and of the outputs of their trees, on the micro-benchmarks'
// workloads (gamma = 16, K = 8; N = 64 .. 1024 for one request, B = 8 and 64 at N = 4096 for a
// batch) in every budget mode. The constants were recorded before the planners' speed work
// (docs/planner.md, Performance); an optimisation must leave every one of them unchanged. The
// cost-aware ones were re-recorded when n = 0 became the plain step (its curve point, C(0) = L_AR,
// is in every fingerprint; issue 52); the fixed-budget ones did not change. After
// an intended change of what is planned, print the new values with
// SPECPLAN_PRINT_PLAN_PINS=1 build/tests/planner_tests --gtest_filter='PlanPin*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "planner/batch/batch_plan.h"
#include "planner/policies/best_first.h"
#include "planner/tree/tree_outputs.h"
#include "tests/planner/plan_test_util.h"
#include "tests/planner/random_marginals.h"

namespace specplan::planner {
namespace {

class Fingerprint {
 public:
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 1099511628211ull;
  }
  template <typename T>
  void Add(const T& v) {
    Bytes(&v, sizeof(T));
  }
  template <typename T>
  void Add(const std::vector<T>& v) {
    Add(v.size());
    if (!v.empty()) Bytes(v.data(), v.size() * sizeof(T));
  }
  void Add(const Tree& t) { AddAll(t.tokens, t.parents, t.depths, t.path_probs); }
  // Add of each argument, in order.
  template <typename... Ts>
  void AddAll(const Ts&... vs) {
    (Add(vs), ...);
  }
  void AddOutputs(const Tree& t, int64_t offset) {
    TreeOutputOptions o;
    o.position_offset = offset;
    o.dense_mask = t.size() <= 256;
    TreeOutputs out;
    ComputeTreeOutputs(t, o, &out);
    AddAll(out.size, out.mask_words, out.num_leaves, out.retrieve_width, out.max_depth,
           out.positions, out.parents, out.mask_packed, out.mask_dense, out.retrieve);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 14695981039346656037ull;
};

Marginals BenchLike(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return testing::RandomMarginalsWith(
      rng, 1, 16, 8, [&] { return std::pow(u(rng), 3.0); },
      [&](int d) {
        std::vector<int32_t> t(8);
        for (int r = 0; r < 8; ++r) t[r] = 1000 * d + r;
        return t;
      });
}

// Checks (or, with SPECPLAN_PRINT_PLAN_PINS set, prints) one pinned fingerprint.
void ExpectPin(const std::string& name, uint64_t want, uint64_t got) {
  if (std::getenv("SPECPLAN_PRINT_PLAN_PINS") != nullptr) {
    std::printf("      {\"%s\", 0x%016llxull},\n", name.c_str(),
                static_cast<unsigned long long>(got));
    return;
  }
  EXPECT_EQ(want, got) << name << ": the plan changed (got 0x" << std::hex << got << ")";
}

struct Pin {
  const char* name;
  uint64_t value;
};

uint64_t PinOf(const Pin* pins, size_t n, const std::string& name) {
  for (size_t i = 0; i < n; ++i) {
    if (name == pins[i].name) return pins[i].value;
  }
  return 0;
}

// clang-format off
constexpr Pin kBestFirstPins[] = {
      {"fixed/seed1/n0", 0x66520f620f0ed9f4ull},
      {"fixed/seed1/n1", 0xdad6172a11245279ull},
      {"fixed/seed1/n64", 0xa521120eb0992f7cull},
      {"fixed/seed1/n256", 0xdc451f61494e4343ull},
      {"fixed/seed1/n1024", 0x5633f670d50b1d13ull},
      {"controller/seed1/n0", 0xd5edc0eb21da80e8ull},
      {"controller/stepped/seed1/n0", 0x8681b49260b62a71ull},
      {"controller/seed1/n1", 0xb93752c305c417edull},
      {"controller/stepped/seed1/n1", 0xb9dfcffa89859cfbull},
      {"controller/seed1/n64", 0x9a0c7795b901823eull},
      {"controller/stepped/seed1/n64", 0x99f05cae8e0956bdull},
      {"controller/seed1/n256", 0x9a0c7795b901823eull},
      {"controller/stepped/seed1/n256", 0x99f05cae8e0956bdull},
      {"controller/seed1/n1024", 0x9a0c7795b901823eull},
      {"controller/stepped/seed1/n1024", 0x99f05cae8e0956bdull},
      {"scan/seed1/n0", 0xd5edc0eb21da80e8ull},
      {"scan/stepped/seed1/n0", 0x8681b49260b62a71ull},
      {"scan/seed1/n1", 0xb93752c305c417edull},
      {"scan/stepped/seed1/n1", 0xb9dfcffa89859cfbull},
      {"scan/seed1/n64", 0x92d565bc7752d484ull},
      {"scan/stepped/seed1/n64", 0xf1652b736c57e671ull},
      {"scan/seed1/n256", 0xbaab14d2f507a61bull},
      {"scan/stepped/seed1/n256", 0xcebfe6b22965ec36ull},
      {"scan/seed1/n1024", 0x3657efe0c48732a7ull},
      {"scan/stepped/seed1/n1024", 0x1cb6c802b5770f36ull},
      {"fixed/seed2/n0", 0x66520f620f0ed9f4ull},
      {"fixed/seed2/n1", 0xd239b5bed1f4d465ull},
      {"fixed/seed2/n64", 0xb96d421946957d20ull},
      {"fixed/seed2/n256", 0xcac6c02d905d80d7ull},
      {"fixed/seed2/n1024", 0x04c0bea266e39902ull},
      {"controller/seed2/n0", 0xd5edc0eb21da80e8ull},
      {"controller/stepped/seed2/n0", 0x8681b49260b62a71ull},
      {"controller/seed2/n1", 0x403009595dd4416aull},
      {"controller/stepped/seed2/n1", 0x1863bfd0a4a8bebcull},
      {"controller/seed2/n64", 0x48a21edc5ae8a3bfull},
      {"controller/stepped/seed2/n64", 0x6dbc61bd4cf2bd6cull},
      {"controller/seed2/n256", 0x48a21edc5ae8a3bfull},
      {"controller/stepped/seed2/n256", 0x6dbc61bd4cf2bd6cull},
      {"controller/seed2/n1024", 0x48a21edc5ae8a3bfull},
      {"controller/stepped/seed2/n1024", 0x6dbc61bd4cf2bd6cull},
      {"scan/seed2/n0", 0xd5edc0eb21da80e8ull},
      {"scan/stepped/seed2/n0", 0x8681b49260b62a71ull},
      {"scan/seed2/n1", 0x403009595dd4416aull},
      {"scan/stepped/seed2/n1", 0x1863bfd0a4a8bebcull},
      {"scan/seed2/n64", 0x5ddd413d2630941eull},
      {"scan/stepped/seed2/n64", 0x73b57ed244f02f4bull},
      {"scan/seed2/n256", 0xbbd8e8050ce6cf65ull},
      {"scan/stepped/seed2/n256", 0x6e03cac065e88d55ull},
      {"scan/seed2/n1024", 0xb95e5317da4bb88eull},
      {"scan/stepped/seed2/n1024", 0xa428767afcce9332ull},
      {"fixed/seed3/n0", 0x66520f620f0ed9f4ull},
      {"fixed/seed3/n1", 0xdf5bd1f54795aa56ull},
      {"fixed/seed3/n64", 0x9c48a3de17fdd54dull},
      {"fixed/seed3/n256", 0xc96168348d35084bull},
      {"fixed/seed3/n1024", 0x62b5cdf3e590675dull},
      {"controller/seed3/n0", 0xd5edc0eb21da80e8ull},
      {"controller/stepped/seed3/n0", 0x8681b49260b62a71ull},
      {"controller/seed3/n1", 0x4f5abb3716f863cdull},
      {"controller/stepped/seed3/n1", 0x53e482cf701a9412ull},
      {"controller/seed3/n64", 0xda7615ef877bc284ull},
      {"controller/stepped/seed3/n64", 0x35bc12de46b450a8ull},
      {"controller/seed3/n256", 0xda7615ef877bc284ull},
      {"controller/stepped/seed3/n256", 0x35bc12de46b450a8ull},
      {"controller/seed3/n1024", 0xda7615ef877bc284ull},
      {"controller/stepped/seed3/n1024", 0x35bc12de46b450a8ull},
      {"scan/seed3/n0", 0xd5edc0eb21da80e8ull},
      {"scan/stepped/seed3/n0", 0x8681b49260b62a71ull},
      {"scan/seed3/n1", 0x4f5abb3716f863cdull},
      {"scan/stepped/seed3/n1", 0x53e482cf701a9412ull},
      {"scan/seed3/n64", 0xdc9bd19d3a2de717ull},
      {"scan/stepped/seed3/n64", 0xa16624186c4b9b87ull},
      {"scan/seed3/n256", 0x41e078cbae947213ull},
      {"scan/stepped/seed3/n256", 0xc5f8e92dbe0ed1edull},
      {"scan/seed3/n1024", 0xec536cf01e92cad1ull},
      {"scan/stepped/seed3/n1024", 0xcfc077773c55b543ull},
};
constexpr Pin kBatchPins[] = {
      {"fixed/B1/n0", 0xf7cd07f38a7a9c3aull},
      {"controller/B1/n0", 0xdd6af47fce229397ull},
      {"scan/B1/n0", 0xdd6af47fce229397ull},
      {"latency/B1/n0", 0xdd6af47fce229397ull},
      {"fixed/B1/n300", 0x533ca671b4038e1full},
      {"controller/B1/n300", 0x63531c843966077cull},
      {"scan/B1/n300", 0xe78c17a861bbb7f8ull},
      {"latency/B1/n300", 0xe78c17a861bbb7f8ull},
      {"fixed/B1/n4096", 0xd6fb98ffb81e0bebull},
      {"controller/B1/n4096", 0x63531c843966077cull},
      {"scan/B1/n4096", 0xeedc6f16299eab8aull},
      {"latency/B1/n4096", 0xeedc6f16299eab8aull},
      {"fixed/B8/n0", 0xa946c75455fbc0d5ull},
      {"controller/B8/n0", 0x4ea39bee9559c5c0ull},
      {"scan/B8/n0", 0x4ea39bee9559c5c0ull},
      {"latency/B8/n0", 0x4ea39bee9559c5c0ull},
      {"fixed/B8/n300", 0xe932f59f8a9721f8ull},
      {"controller/B8/n300", 0x35185b04490dad15ull},
      {"scan/B8/n300", 0xf4b7e639b8759b6full},
      {"latency/B8/n300", 0xf4b7e639b8759b6full},
      {"fixed/B8/n4096", 0xa1aed29349dc742eull},
      {"controller/B8/n4096", 0x35185b04490dad15ull},
      {"scan/B8/n4096", 0x7f14c479825d3840ull},
      {"latency/B8/n4096", 0x7f14c479825d3840ull},
      {"fixed/B64/n0", 0x968a8006a6c8f2c3ull},
      {"controller/B64/n0", 0xa2b379b4394d77d5ull},
      {"scan/B64/n0", 0xa2b379b4394d77d5ull},
      {"latency/B64/n0", 0x0063b1d4fb12a140ull},
      {"fixed/B64/n300", 0xfa3ad90d18d9beefull},
      {"controller/B64/n300", 0x9be01f172ee9b36dull},
      {"scan/B64/n300", 0x9be01f172ee9b36dull},
      {"latency/B64/n300", 0x044826cd24e8b4b5ull},
      {"fixed/B64/n4096", 0x22ecf350898ec10bull},
      {"controller/B64/n4096", 0xe4cbca026d69325bull},
      {"scan/B64/n4096", 0xdfe7339de6834cdeull},
      {"latency/B64/n4096", 0xd1062bf8180ac27aull},
};
// clang-format on

const char* ModeName(BudgetMode m) {
  return m == BudgetMode::kFixed ? "fixed" : m == BudgetMode::kController ? "controller" : "scan";
}

TEST(PlanPin, BestFirstPlansAndOutputs) {
  testing::SmoothLatency smooth;
  testing::SteppedLatency stepped;
  const costmodel::DrafterCost drafter = testing::ParallelDrafter(1e-3);
  const costmodel::CycleCost smooth_cost(&smooth, drafter, 2e-4, 1024);
  const costmodel::CycleCost stepped_cost(&stepped, drafter, 2e-4, 1024);
  BestFirstPlanner planner;
  BestFirstPlan plan;
  for (const uint32_t seed : {1u, 2u, 3u}) {
    const Marginals m = BenchLike(seed);
    for (const BudgetMode mode : {BudgetMode::kFixed, BudgetMode::kController, BudgetMode::kScan}) {
      for (const int n_max : {0, 1, 64, 256, 1024}) {
        for (const bool step : {false, true}) {
          if (mode == BudgetMode::kFixed && step) continue;
          const BestFirstOptions options = testing::BudgetOptions(mode, n_max);
          const costmodel::CycleCost* cost = mode == BudgetMode::kFixed ? nullptr
                                             : step                     ? &stepped_cost
                                                                        : &smooth_cost;
          ASSERT_TRUE(planner.Plan(m, options, cost, &plan).ok());
          Fingerprint f;
          f.AddAll(plan.tree, plan.n, plan.expected_accepted, plan.cycle_s, plan.speedup,
                   plan.l_ar_s, plan.lattice_exhausted);
          for (const CurvePoint& p : plan.curve) {
            f.AddAll(p.n, p.expected_accepted, p.cycle_s, p.speedup);
          }
          f.AddOutputs(plan.tree, 1024);
          const std::string name = std::string(ModeName(mode)) + (step ? "/stepped" : "") +
                                   "/seed" + std::to_string(seed) + "/n" + std::to_string(n_max);
          ExpectPin(name, PinOf(kBestFirstPins, sizeof(kBestFirstPins) / sizeof(Pin), name),
                    f.value());
        }
      }
    }
  }
}

TEST(PlanPin, BatchPlansAndOutputs) {
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  const costmodel::DrafterCost drafter = testing::ParallelDrafter(5e-4);
  const costmodel::BatchCycleCost cost(&roofline, drafter, 1e-4);
  BatchPlanner planner;
  BatchPlan plan;
  for (const int B : {1, 8, 64}) {
    std::vector<Marginals> ms;
    for (int i = 0; i < B; ++i) ms.push_back(BenchLike(100 + i));
    std::vector<BatchRequest> reqs;
    for (int i = 0; i < B; ++i) reqs.push_back({&ms[i], 512 * (1 + i % 8)});
    // A cap and weights on some requests.
    if (B == 8) {
      reqs[1].n_max = 5;
      reqs[2].weight = 2.5;
      reqs[3].weight = 0.5;
    }
    for (const int n_max : {0, 300, 4096}) {
      for (int variant = 0; variant < 4; ++variant) {
        BatchPlanOptions options;
        options.n_max = n_max;
        options.mode = variant == 0   ? BudgetMode::kFixed
                       : variant == 1 ? BudgetMode::kController
                                      : BudgetMode::kScan;
        if (variant == 3) {
          options.objective = BatchObjective::kLatencyBound;
          options.max_seconds_per_token = 6e-3;
        }
        ASSERT_TRUE(planner.Plan(reqs, options, variant == 0 ? nullptr : &cost, &plan).ok());
        Fingerprint f;
        for (const Tree& t : plan.trees) f.Add(t);
        f.AddAll(plan.n, plan.expected_accepted, plan.n_total, plan.weighted_accepted, plan.cycle_s,
                 plan.goodput, plan.ar_goodput, plan.speculation_pays, plan.bound_met,
                 plan.lattice_exhausted, plan.price, plan.provider_rounds);
        for (const BatchCurvePoint& p : plan.curve) {
          f.AddAll(p.n, p.expected_accepted, p.weighted_accepted, p.cycle_s, p.goodput);
        }
        for (int i = 0; i < B; ++i) f.AddOutputs(plan.trees[i], reqs[i].c);
        const char* names[] = {"fixed", "controller", "scan", "latency"};
        const std::string name =
            std::string(names[variant]) + "/B" + std::to_string(B) + "/n" + std::to_string(n_max);
        ExpectPin(name, PinOf(kBatchPins, sizeof(kBatchPins) / sizeof(Pin), name), f.value());
      }
    }
  }
}

}  // namespace
}  // namespace specplan::planner
