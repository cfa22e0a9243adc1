// An engine-side program built against the installed package alone: it includes only
// <specplan/specplan.h>, makes a specplan::Planner from a bundled profile (H100 x Qwen3-8B under
// SGLang's kernels) with the EAGLE-3 drafter, prices the engine's whole step of one sequence
// verifying 4 tokens over 1024 cached, and plans one tree with the step's own cycle. Prints
//   step_s=<seconds> plain_s=<seconds> nodes=<n> cycle_s=<seconds> speedup=<S> profile=<id>
// which tests/install/install_test.sh compares with `specplan estimate` and `specplan plan`.
#include <specplan/specplan.h>

#include <cstdio>

int main() {
  specplan::PlannerConfig config;
  config.gpu = "h100";
  config.model = "qwen3-8b";
  config.engine = "sglang";
  config.drafter = "eagle3";
  absl::StatusOr<specplan::Planner> planner = specplan::Planner::Create(config);
  if (!planner.ok()) {
    std::fprintf(stderr, "%s\n", planner.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<specplan::costmodel::StepBreakdown> step = planner->Step(1, 4, 1024);
  absl::StatusOr<specplan::costmodel::StepBreakdown> plain = planner->PlainStep(1, 1024);
  if (!step.ok() || !plain.ok()) {
    std::fprintf(stderr, "%s\n", (step.ok() ? plain.status() : step.status()).ToString().c_str());
    return 1;
  }
  // A confident drafter's marginals: 4 positions x top-2.
  specplan::planner::Marginals m;
  m.root_token = 1;
  m.gamma = 4;
  m.k = 2;
  for (int d = 0; d < m.gamma; ++d) {
    m.tokens.insert(m.tokens.end(), {10 * d, 10 * d + 1});
    m.probs.insert(m.probs.end(), {0.8f, 0.15f});
  }
  specplan::planner::BestFirstOptions options;
  options.n_max = 8;
  specplan::TreePlan plan;
  if (const absl::Status st = planner->PlanTree(m, 1024, options, &plan); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("step_s=%.9g plain_s=%.9g nodes=%d cycle_s=%.9g speedup=%.6f profile=%s\n",
              step->step_s(), plain->step_s(), plan.plan.n, plan.plan.cycle_s, plan.plan.speedup,
              planner->profile_id().c_str());
  return plan.plan.n > 0 ? 0 : 1;
}
