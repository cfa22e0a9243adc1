// Pins what the planners plan: a fingerprint (FNV-1a over every field, doubles bit for bit) of the
// best-first and batch plans, and of the outputs of their trees, on the micro-benchmarks'
// workloads (gamma = 16, K = 8; N = 64 .. 1024 for one request, B = 8 and 64 at N = 4096 for a
// batch) in every budget mode. The constants were recorded before the planners' speed work
// (docs/planner.md, Performance); an optimisation must leave every one of them unchanged. After
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
      {"controller/seed1/n0", 0x9af20d6615528d2aull},
      {"controller/stepped/seed1/n0", 0x115812a08cd0f917ull},
      {"controller/seed1/n1", 0xd4f4e24772bc3054ull},
      {"controller/stepped/seed1/n1", 0x9c7c1880c3c56deeull},
      {"controller/seed1/n64", 0x6258b2e8d3e2d757ull},
      {"controller/stepped/seed1/n64", 0x0b340f1c5c3319d8ull},
      {"controller/seed1/n256", 0x6258b2e8d3e2d757ull},
      {"controller/stepped/seed1/n256", 0x0b340f1c5c3319d8ull},
      {"controller/seed1/n1024", 0x6258b2e8d3e2d757ull},
      {"controller/stepped/seed1/n1024", 0x0b340f1c5c3319d8ull},
      {"scan/seed1/n0", 0x9af20d6615528d2aull},
      {"scan/stepped/seed1/n0", 0x115812a08cd0f917ull},
      {"scan/seed1/n1", 0xd4f4e24772bc3054ull},
      {"scan/stepped/seed1/n1", 0x9c7c1880c3c56deeull},
      {"scan/seed1/n64", 0x5979c07dd9fb7a19ull},
      {"scan/stepped/seed1/n64", 0x04fad69b47c4a924ull},
      {"scan/seed1/n256", 0x64bb20694a8b579eull},
      {"scan/stepped/seed1/n256", 0xdf2229b5f2d16507ull},
      {"scan/seed1/n1024", 0x397e0ec0ce3f6856ull},
      {"scan/stepped/seed1/n1024", 0x2c9313dd667d5c13ull},
      {"fixed/seed2/n0", 0x66520f620f0ed9f4ull},
      {"fixed/seed2/n1", 0xd239b5bed1f4d465ull},
      {"fixed/seed2/n64", 0xb96d421946957d20ull},
      {"fixed/seed2/n256", 0xcac6c02d905d80d7ull},
      {"fixed/seed2/n1024", 0x04c0bea266e39902ull},
      {"controller/seed2/n0", 0x9af20d6615528d2aull},
      {"controller/stepped/seed2/n0", 0x115812a08cd0f917ull},
      {"controller/seed2/n1", 0xb9a6bfcf79657117ull},
      {"controller/stepped/seed2/n1", 0xb4d68fb311fbc5c5ull},
      {"controller/seed2/n64", 0xe69ee4336be2f08eull},
      {"controller/stepped/seed2/n64", 0xa8f3d23a713e3025ull},
      {"controller/seed2/n256", 0xe69ee4336be2f08eull},
      {"controller/stepped/seed2/n256", 0xa8f3d23a713e3025ull},
      {"controller/seed2/n1024", 0xe69ee4336be2f08eull},
      {"controller/stepped/seed2/n1024", 0xa8f3d23a713e3025ull},
      {"scan/seed2/n0", 0x9af20d6615528d2aull},
      {"scan/stepped/seed2/n0", 0x115812a08cd0f917ull},
      {"scan/seed2/n1", 0xb9a6bfcf79657117ull},
      {"scan/stepped/seed2/n1", 0xb4d68fb311fbc5c5ull},
      {"scan/seed2/n64", 0x789a63c4517bed27ull},
      {"scan/stepped/seed2/n64", 0xce354a421ead996aull},
      {"scan/seed2/n256", 0x594fb312fffe4b2cull},
      {"scan/stepped/seed2/n256", 0x0ad3643965efe9f4ull},
      {"scan/seed2/n1024", 0x30f8b1541af23c1full},
      {"scan/stepped/seed2/n1024", 0x7314cf77fcce1193ull},
      {"fixed/seed3/n0", 0x66520f620f0ed9f4ull},
      {"fixed/seed3/n1", 0xdf5bd1f54795aa56ull},
      {"fixed/seed3/n64", 0x9c48a3de17fdd54dull},
      {"fixed/seed3/n256", 0xc96168348d35084bull},
      {"fixed/seed3/n1024", 0x62b5cdf3e590675dull},
      {"controller/seed3/n0", 0x9af20d6615528d2aull},
      {"controller/stepped/seed3/n0", 0x115812a08cd0f917ull},
      {"controller/seed3/n1", 0x173e404f915f40aeull},
      {"controller/stepped/seed3/n1", 0x0427c61061eb6e7aull},
      {"controller/seed3/n64", 0x48c234255bae2357ull},
      {"controller/stepped/seed3/n64", 0x2199fe3b4ca0e805ull},
      {"controller/seed3/n256", 0x48c234255bae2357ull},
      {"controller/stepped/seed3/n256", 0x2199fe3b4ca0e805ull},
      {"controller/seed3/n1024", 0x48c234255bae2357ull},
      {"controller/stepped/seed3/n1024", 0x2199fe3b4ca0e805ull},
      {"scan/seed3/n0", 0x9af20d6615528d2aull},
      {"scan/stepped/seed3/n0", 0x115812a08cd0f917ull},
      {"scan/seed3/n1", 0x173e404f915f40aeull},
      {"scan/stepped/seed3/n1", 0x0427c61061eb6e7aull},
      {"scan/seed3/n64", 0x86ac0877dde0930aull},
      {"scan/stepped/seed3/n64", 0x2630d6281b1c12d2ull},
      {"scan/seed3/n256", 0xde0d702c7efe8426ull},
      {"scan/stepped/seed3/n256", 0xb983d97f133a1978ull},
      {"scan/seed3/n1024", 0x85ef1a354081de18ull},
      {"scan/stepped/seed3/n1024", 0x8d90e0ea8143af3eull},
};
constexpr Pin kBatchPins[] = {
      {"fixed/B1/n0", 0xf7cd07f38a7a9c3aull},
      {"controller/B1/n0", 0x180cffe7c67c57b1ull},
      {"scan/B1/n0", 0x180cffe7c67c57b1ull},
      {"latency/B1/n0", 0x180cffe7c67c57b1ull},
      {"fixed/B1/n300", 0x533ca671b4038e1full},
      {"controller/B1/n300", 0x93757173c50f01f1ull},
      {"scan/B1/n300", 0xe44018b919c06b39ull},
      {"latency/B1/n300", 0xe44018b919c06b39ull},
      {"fixed/B1/n4096", 0xd6fb98ffb81e0bebull},
      {"controller/B1/n4096", 0x93757173c50f01f1ull},
      {"scan/B1/n4096", 0x55434b1503faf667ull},
      {"latency/B1/n4096", 0x55434b1503faf667ull},
      {"fixed/B8/n0", 0xa946c75455fbc0d5ull},
      {"controller/B8/n0", 0xe2974ff165f6d802ull},
      {"scan/B8/n0", 0xe2974ff165f6d802ull},
      {"latency/B8/n0", 0xc23c955b9b381b47ull},
      {"fixed/B8/n300", 0xe932f59f8a9721f8ull},
      {"controller/B8/n300", 0x0f3cc168a3bde4deull},
      {"scan/B8/n300", 0x1acf05a04c0ec878ull},
      {"latency/B8/n300", 0x1acf05a04c0ec878ull},
      {"fixed/B8/n4096", 0xa1aed29349dc742eull},
      {"controller/B8/n4096", 0x0f3cc168a3bde4deull},
      {"scan/B8/n4096", 0x6a2c6f9ec8715be3ull},
      {"latency/B8/n4096", 0x6a2c6f9ec8715be3ull},
      {"fixed/B64/n0", 0x968a8006a6c8f2c3ull},
      {"controller/B64/n0", 0x94d5947a8069962dull},
      {"scan/B64/n0", 0x94d5947a8069962dull},
      {"latency/B64/n0", 0x8f998687935f51acull},
      {"fixed/B64/n300", 0xfa3ad90d18d9beefull},
      {"controller/B64/n300", 0xb9b7efd12ab81149ull},
      {"scan/B64/n300", 0xb9b7efd12ab81149ull},
      {"latency/B64/n300", 0x4ca5246a7bc27d81ull},
      {"fixed/B64/n4096", 0x22ecf350898ec10bull},
      {"controller/B64/n4096", 0xb1658f070be7877full},
      {"scan/B64/n4096", 0x9601c15f7e5a1bb2ull},
      {"latency/B64/n4096", 0x21b261814407753eull},
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
