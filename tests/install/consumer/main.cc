// Plans one draft tree on the H100 x Qwen3-8B roofline through the installed package and prints
// "nodes=<n> speedup=<S>": what an engine linking specplan::planner does every decoding step. It
// includes only the public entry headers (include/specplan/).
#include <specplan/cost.h>
#include <specplan/planner.h>

#include <cstdio>

int main() {
  using namespace specplan;
  auto model = costmodel::LookupModel("qwen3-8b");
  auto gpu = costmodel::LookupGpu("h100");
  if (!model.ok() || !gpu.ok()) return 1;
  const costmodel::RooflineLatency verify(*model, *gpu);
  costmodel::DrafterCost drafter;
  drafter.t_net_s = 5e-4;
  const costmodel::CycleCost cost(&verify, drafter, 1e-4, /*c=*/1024);
  planner::Marginals m;
  m.root_token = 1;
  m.gamma = 4;
  m.k = 2;
  for (int d = 0; d < m.gamma; ++d) {
    m.tokens.insert(m.tokens.end(), {10 * d, 10 * d + 1});
    m.probs.insert(m.probs.end(), {0.8f, 0.15f});
  }
  planner::BestFirstPlanner planner;
  planner::BestFirstPlan plan;
  planner::BestFirstOptions options;
  if (const absl::Status st = planner.Plan(m, options, &cost, &plan); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("nodes=%d speedup=%.3f\n", plan.n, plan.speedup);
  return plan.n > 0 ? 0 : 1;
}
