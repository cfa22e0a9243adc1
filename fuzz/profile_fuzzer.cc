// Profile JSON -> LoadProfile (ProfileFromJson) -> MakeLatencyModel for every kind -> VerifySeconds
// on a few points, an EMA correction over it, and one controller / scan plan with that cost. A
// profile that validates must give finite, non-negative predictions and round-trip through
// ProfileToJson.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "costmodel/cycle_cost.h"
#include "costmodel/latency/ema_latency.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "fuzz/fuzz_util.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"

namespace specplan::fuzz {
namespace {

const planner::Marginals& FixedMarginals() {
  static const planner::Marginals* const kM = [] {
    auto* m = new planner::Marginals;
    m->root_token = 1;
    m->gamma = 4;
    m->k = 3;
    m->tokens = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
    m->probs = {0.7f, 0.2f, 0.1f, 0.5f, 0.3f, 0.1f, 0.9f, 0.05f, 0.0f, 0.4f, 0.4f, 0.2f};
    return m;
  }();
  return *kM;
}

}  // namespace
}  // namespace specplan::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  using namespace specplan::fuzz;
  // Through the file reader the CLI and the server use (LoadProfile = read + parse + validate).
  auto profile = costmodel::LoadProfile(WriteScratchFile(AsText(data, size)));
  if (!profile.ok()) return 0;
  auto again = costmodel::ProfileFromJson(costmodel::ProfileToJson(*profile));
  CheckOk(again.status(), "ProfileFromJson(ProfileToJson)");
  SPECPLAN_CHECK(again->default_model == profile->default_model);

  CheckOk(costmodel::MakeLatencyModel(*profile).status(), "MakeLatencyModel(default_model)");
  for (const char* kind : {"", "roofline", "linear", "per_term", "overlap", "table", "bogus"}) {
    auto model = costmodel::MakeLatencyModel(*profile, kind);
    if (!model.ok()) continue;
    std::shared_ptr<const costmodel::LatencyModel> shared(std::move(*model));
    for (int64_t s : {int64_t{1}, int64_t{2}, int64_t{17}, int64_t{64}, int64_t{8192}}) {
      for (int64_t c : {int64_t{0}, int64_t{1000}, int64_t{100000}, int64_t{1} << 24}) {
        const double t = shared->VerifySeconds(s, c);
        SPECPLAN_CHECK(std::isfinite(t) && t >= 0, "VerifySeconds not finite >= 0");
      }
    }
    costmodel::EmaCorrectedLatency ema(shared, 0.5);
    ema.Observe(4, 100, 1e-3);
    (void)ema.VerifySeconds(4, 100);

    const costmodel::CycleCost cost(shared.get(), costmodel::DrafterCost{}, 0.0, 512);
    planner::BestFirstPlanner planner;
    planner::BestFirstPlan plan;
    for (planner::BudgetMode mode :
         {planner::BudgetMode::kController, planner::BudgetMode::kScan}) {
      planner::BestFirstOptions options;
      options.mode = mode;
      options.n_max = 40;
      // A zero-latency model gives L_AR = 0, which the planner rejects; otherwise it must plan.
      const absl::Status st = planner.Plan(FixedMarginals(), options, &cost, &plan);
      if (st.ok()) CheckOk(planner::ValidateTree(plan.tree), "plan.tree");
    }
  }
  return 0;
}
