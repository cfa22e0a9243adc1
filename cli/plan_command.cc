// specplan plan: best-first draft tree from drafter marginals, with the hardware-aware budget
// controller (BASTION (docs/references.md) Alg. 1) or a fixed budget.
//
//   specplan plan --marginals FILE --model M --gpu G --c C (--n-max N | --budget N)
//                 [--profile FILE] [--scan] [--json] [--repeat R]
//                 [--layout sglang [--tree-mask-mode M] [--draft-token-num D]]
//
// --n-max: controller mode (first decrease of S(n), or the full argmax with --scan) over
// n = 0..N draft nodes. --budget: exactly min(N, lattice size) draft nodes.
// JSON output fields: n (draft nodes, root excluded), tokens, parents (-1 for the root), depths,
// path_probs (rho, 1 for the root), expected_accepted (Â, root included), positions (absolute:
// c + depth), retrieve (one row per leaf, -1 padded), cycle_s, speedup, l_ar_s, and in controller
// and scan modes `curve` (one entry per evaluated n: n, expected_accepted, cycle_s, speedup).
// With --repeat R the same input is planned R times and `plan_us` is the mean microseconds per
// plan including validation and all outputs (positions, packed mask, retrieve).
// With --json --layout sglang the object gains `sglang`: the plan in SGLang's EAGLE verification
// layout (planner/tree/engine_layouts.h) as a batch of one: draft_token_num, tree_mask_mode,
// draft_tokens, positions, retrive_index / retrive_next_token / retrive_next_sibling ([1][D]) and
// tree_mask (flat: 0/1 entries for FULL_MASK and QLEN_ONLY, one integer per row for
// QLEN_ONLY_BITPACKING). The other keys are unchanged.
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/layout_json.h"
#include "cli/remote.h"
#include "ops/plan_tree.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"
#include "util/enum_names.h"

namespace specplan::cli {
namespace {

struct PlanArgs : CostFlags {
  std::string marginals;
  int64_t c = 0;
  int n_max = -1;
  int budget = -1;
  bool scan = false;
  bool json = false;
  int repeat = 1;
  double t_draft_ms = 0;
  std::string server;
  std::string layout;
  std::string tree_mask_mode = "QLEN_ONLY";
  int draft_token_num = 0;
};

int RunPlan(const PlanArgs& a) {
  using namespace specplan::planner;
  const char* kCmd = "specplan plan: ";
  if (LayoutWithoutJson(kCmd, a.layout, a.json)) return 1;
  ops::PlanTreeRequest req;
  SetBudgetMode(a.n_max, a.budget, a.scan, &req.options);
  auto marginals = LoadMarginalsFile(a.marginals);
  if (Failed(kCmd, marginals.status(), "--marginals ")) return 1;
  req.marginals = &*marginals;
  req.c = a.c;
  req.cost = a;
  req.t_draft_ms = a.t_draft_ms;
  auto parsed = a.Parse(a.t_draft_ms);
  if (Failed(kCmd, parsed.status())) return 1;
  // The cost is required by the controller; in fixed mode it only fills cycle_s / speedup.
  const bool want_cost = a.NeedsCost(req.options.mode == BudgetMode::kFixed);

  ops::PlanTreeResult result;
  const int repeat = std::max(1, a.repeat);
  double plan_us = 0;
  if (!a.server.empty()) {
    if (Failed(kCmd, a.CheckRemote())) return 1;
    costmodel::DrafterCost drafter = parsed->drafter;
    drafter.gamma = marginals->gamma;
    auto remote_cost = a.ToRemoteCost(parsed->dtype, drafter, a.c);
    if (Failed(kCmd, remote_cost.status())) return 1;
    const RemoteCost& rc = *remote_cost;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < repeat; ++r) {
      auto used = RemotePlanTree(a.server, *marginals, req.options, want_cost ? &rc : nullptr, a.c,
                                 &result.plan, &result.outputs);
      if (Failed(kCmd, used.status())) return 1;
      result.priced = want_cost;
      result.latency_model = used->latency_model;
      result.profile = used->profile;
      // The search the server ran (the same rule as in-process).
      result.plan.search =
          SearchFor(want_cost ? req.options.mode : BudgetMode::kFixed,
                    want_cost && ops::DraftsByLevel(a, a.t_draft_ms), marginals->gamma);
    }
    plan_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        repeat;
  } else {
    // Resolved once; then planned `repeat` times into the same planner and result.
    std::optional<ops::ResolvedCost> cost;
    if (want_cost) {
      auto resolved = req.cost.Resolve(a.t_draft_ms, a.t_draft_ms * 1e-3);
      if (Failed(kCmd, CostErrorInFlags(resolved.status()))) return 1;
      cost = *std::move(resolved);
    }
    std::optional<ops::CostView> view;
    if (cost) view = cost->View();
    BestFirstPlanner planner;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < repeat; ++r) {
      absl::Status st = ops::PlanTreeInto(req, view ? &*view : nullptr, &planner, &result);
      if (Failed(kCmd, CostErrorInFlags(st))) return 1;
    }
    plan_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        repeat;
  }
  const BestFirstPlan& plan = result.plan;
  const TreeOutputs& outputs = result.outputs;
  const char* mode_name = EnumName(kBudgetModeNames, req.options.mode);
  if (a.json) {
    nlohmann::json j = ops::ToJson(req, result);
    if (a.layout == "sglang") {
      const int64_t c = a.c;
      auto sglang = SglangJson({&plan.tree, 1}, {&c, 1}, a.tree_mask_mode, a.draft_token_num);
      if (Failed(kCmd, sglang.status(), "--layout sglang: ")) return 1;
      j["sglang"] = *std::move(sglang);
    }
    if (a.repeat > 1) {
      j["repeat"] = a.repeat;
      j["plan_us"] = plan_us;
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat(
      "plan (%s, n_max %d): n* = %d draft nodes (s = %d), depth %d, %d leaves\n"
      "  expected accepted %.4f tokens (root included)\n",
      mode_name, req.options.n_max, plan.n, plan.n + 1, outputs.max_depth, outputs.num_leaves,
      plan.expected_accepted);
  if (want_cost) {
    std::cout << absl::StrFormat(
        "  cycle %.4f ms, L_AR %.4f ms, estimated speedup %.3fx (%s latency model%s)\n",
        plan.cycle_s * 1e3, plan.l_ar_s * 1e3, plan.speedup, result.latency_model,
        result.profile.empty() ? "" : ", profile " + result.profile);
    if (!a.DrafterIsCostClass()) {
      // Which drafter the cycle prices, and how its drafting follows the tree.
      std::string how;
      if (plan.n == 0) {
        how = "no tree drafted, the cycle is the plain step";
      } else if (ops::DraftsByLevel(a, a.t_draft_ms)) {
        how = absl::StrFormat("a forward per tree level, %d levels here", outputs.max_depth);
      } else {
        how = "one drafting cost whatever the tree";
      }
      std::cout << absl::StrFormat("  drafter %s: %s; search: %s\n", a.drafter, how,
                                   EnumName(kPlanSearchNames, plan.search));
    }
  }
  if (req.options.mode != BudgetMode::kFixed) {
    std::cout << absl::StrFormat("  evaluated n = 0..%d\n",
                                 plan.curve.empty() ? 0 : plan.curve.back().n);
  }
  if (a.repeat > 1) {
    std::cout << absl::StrFormat("  %.2f us per plan (mean of %d, all outputs)\n", plan_us,
                                 a.repeat);
  }
  return 0;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand(
      &app, "plan", "Best-first draft tree from drafter marginals with the budget controller",
      exit_code, &RunPlan);
  cmd->add_option("--marginals", args->marginals,
                  "Marginals JSON: {\"root_token\", \"tokens\": [[K]]*gamma, \"probs\": "
                  "[[K]]*gamma}")
      ->required();
  AddCostFlags(cmd, args);
  AddCachedContextOption(cmd, &args->c);
  AddBudgetOptions(cmd, &args->n_max, &args->budget, planner::kMaxTreeNodes - 1,
                   "Controller mode: search n = 0..N draft nodes",
                   "Fixed mode: exactly min(N, lattice size) draft nodes");
  AddDraftTimeOption(cmd, &args->t_draft_ms,
                     "Draft network time, ms (per step for ar, per block otherwise)");
  cmd->add_flag("--scan", args->scan,
                "Evaluate every n <= N and take the argmax (stepped / measured costs)");
  AddJsonFlag(cmd, &args->json);
  AddServerOption(cmd, &args->server, "Plan", " instead of in-process (same output)");
  cmd->add_option("--repeat", args->repeat,
                  "Plan R times and report plan_us (mean per plan; round trip with --server)")
      ->check(CLI::Range(1, 10000000));
  auto* layout =
      cmd->add_option("--layout", args->layout,
                      "With --json, add the plan in an engine's layout: sglang (key `sglang`)")
          ->check(CLI::IsMember({"sglang"}));
  AddSglangLayoutOptions(
      cmd, layout, &args->tree_mask_mode, &args->draft_token_num,
      "SGLang draft_token_num (slots, root included) for --layout sglang; 0 = tree size");
}

}  // namespace specplan::cli
