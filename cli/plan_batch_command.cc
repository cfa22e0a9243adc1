// specplan plan-batch: one tree budget across the B requests an engine verifies together
// (planner/batch/batch_plan.h).
//
//   specplan plan-batch --requests FILE.jsonl --model M --gpu G (--n-max N | --budget N)
//                       [--profile F] [--scan] [--max-ms-per-token X] [--json]
//                       [--layout ragged|sglang [--tree-mask-mode M] [--draft-token-num D]]
//                       [--server HOST:PORT]
//
// Each line of FILE is one request: {"marginals": {"root_token", "tokens", "probs"}, "c": int}
// with optional "n_max" (cap on that request's draft nodes) and "weight" (> 0, default 1). Blank
// lines are skipped. --n-max / --budget is the total over the batch.
// JSON output: {"n_total", "requests": [{"n", "tokens", "parents", "depths", "positions",
// "retrieve", "expected_accepted"}], "curve": [{"n", "expected_accepted", "cycle_s", "goodput"}],
// ...}; a curve point's expected_accepted is Σ Â_i and goodput is tokens per second.
// --server plans on a specplan-server (the PlanBatch RPC) and prints the same output byte for
// byte; the cost is the server's stored profile for --gpu/--model/--dtype when it has one, else
// the bare roofline (--profile and --latency-model are local only, as for `plan`).
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/layout_json.h"
#include "cli/remote.h"
#include "ops/plan_batch.h"
#include "ops/plan_tree.h"
#include "planner/batch/batch_plan.h"
#include "planner/marginals/marginals.h"
#include "util/enum_names.h"
#include "util/json_util.h"
#include "util/lines.h"

namespace specplan::cli {
namespace {

struct PlanBatchArgs : CostFlags {
  std::string requests;
  int n_max = -1;
  int budget = -1;
  bool scan = false;
  double max_ms_per_token = 0;
  bool json = false;
  double t_draft_ms = 0;
  double draft_batch_growth = 0;
  std::string layout;
  std::string tree_mask_mode = "QLEN_ONLY";
  int draft_token_num = 0;
  std::string server;
};

// One parsed line of the requests file.
struct RequestLine {
  planner::Marginals marginals;
  int64_t c = 0;
  int n_max = -1;
  double weight = 1.0;
};

absl::StatusOr<RequestLine> ParseRequestLine(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "marginals" && it.key() != "c" && it.key() != "n_max" && it.key() != "weight") {
      return absl::InvalidArgumentError(
          absl::StrCat(it.key(), ": unknown field (known: marginals, c, n_max, weight)"));
    }
  }
  RequestLine r;
  if (!j.contains("marginals")) return absl::InvalidArgumentError("marginals: missing");
  auto m = planner::ParseMarginalsJson(j["marginals"]);
  if (!m.ok())
    return absl::Status(m.status().code(), absl::StrCat("marginals.", m.status().message()));
  r.marginals = std::move(*m);
  if (!j.contains("c")) return absl::InvalidArgumentError("c: missing");
  const nlohmann::json& c = j["c"];
  if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("c = ", json_util::Quote(c), ": expected an integer in [0, 16777216]"));
  }
  r.c = c.get<int64_t>();
  if (j.contains("n_max")) {
    const nlohmann::json& n = j["n_max"];
    if (!n.is_number_integer() || n.get<int64_t>() < 0 ||
        n.get<int64_t>() >= planner::kMaxTreeNodes) {
      return absl::InvalidArgumentError(absl::StrCat("n_max = ", json_util::Quote(n),
                                                     ": expected an integer in [0, ",
                                                     planner::kMaxTreeNodes - 1, "]"));
    }
    r.n_max = static_cast<int>(n.get<int64_t>());
  }
  if (j.contains("weight")) {
    const nlohmann::json& w = j["weight"];
    if (!w.is_number() || !std::isfinite(w.get<double>()) || w.get<double>() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight = ", json_util::Quote(w), ": expected a number > 0"));
    }
    r.weight = w.get<double>();
  }
  return r;
}

// Reads the JSONL file. Errors name the line and the request index, e.g.
// "requests.jsonl:4 (requests[3]): marginals.probs[2][1] = ...", and a syntax error its column:
// "requests.jsonl:2:3: not valid JSON: ... (requests[1])".
absl::StatusOr<std::vector<RequestLine>> LoadRequests(const std::string& path) {
  std::vector<RequestLine> out;
  absl::Status read = ForEachNonBlankLine(path, [&](std::string_view line, size_t line_no) {
    const std::string where = absl::StrCat(path, ":", line_no, " (requests[", out.size(), "])");
    // "<path>:<line>:<column>: not valid JSON: <what> (requests[i])" (util/json_error.h).
    absl::StatusOr<nlohmann::json> j = json_util::ParseJson(line, path, line_no);
    if (!j.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(j.status().message(), " (requests[", out.size(), "])"));
    }
    auto r = ParseRequestLine(*j);
    if (!r.ok())
      return absl::Status(r.status().code(), absl::StrCat(where, ": ", r.status().message()));
    out.push_back(std::move(*r));
    if (out.size() > static_cast<size_t>(planner::kMaxBatchRequests)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": more than ", planner::kMaxBatchRequests, " requests"));
    }
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no requests"));
  return out;
}

int RunPlanBatch(const PlanBatchArgs& a) {
  using namespace specplan::planner;
  const char* kCmd = "specplan plan-batch: ";
  if (LayoutWithoutJson(kCmd, a.layout, a.json)) return 1;
  auto lines = LoadRequests(a.requests);
  if (Failed(kCmd, lines.status(), "--requests ")) return 1;
  ops::PlanBatchRequest req;
  SetBudgetMode(a.n_max, a.budget, a.scan, &req.options);
  if (a.max_ms_per_token > 0) {
    // The operation checks it against the mode (ops::Validate, below, in the flags' words).
    req.options.objective = BatchObjective::kLatencyBound;
    req.options.max_seconds_per_token = a.max_ms_per_token * 1e-3;
  }
  req.cost = a;
  req.t_draft_ms = a.t_draft_ms;
  req.draft_batch_growth = a.draft_batch_growth;
  req.requests.reserve(lines->size());
  for (const RequestLine& r : *lines)
    req.requests.push_back({&r.marginals, r.c, r.n_max, r.weight});
  auto parsed = a.Parse(a.t_draft_ms);
  if (Failed(kCmd, parsed.status())) return 1;
  // The request's own rules first, for --server too (the server applies the same ones).
  if (Failed(kCmd, CostErrorInFlags(ops::Validate(req)))) return 1;
  const bool want_cost = a.NeedsCost(req.options.mode == BudgetMode::kFixed);

  ops::PlanBatchResult result;
  const int B = static_cast<int>(req.requests.size());
  if (!a.server.empty()) {
    if (Failed(kCmd, a.CheckRemote())) return 1;
    costmodel::DrafterCost drafter = parsed->drafter;
    drafter.gamma = ops::MaxGamma(req.requests);
    drafter.batch_growth = a.draft_batch_growth;
    auto remote_cost = a.ToRemoteCost(parsed->dtype, drafter, /*context=*/0);
    if (Failed(kCmd, remote_cost.status())) return 1;
    const RemoteCost& rc = *remote_cost;
    result.outputs.resize(static_cast<size_t>(B));
    auto used = RemotePlanBatch(a.server, req.requests, req.options, want_cost ? &rc : nullptr,
                                &result.plan, &result.outputs);
    if (Failed(kCmd, used.status())) return 1;
    result.priced = want_cost;
    result.latency_model = used->latency_model;
    result.profile = used->profile;
    // The search the server ran (the same rule as in-process; marginals requests only).
    const bool scan = req.options.mode == BudgetMode::kScan ||
                      req.options.objective == BatchObjective::kLatencyBound;
    result.plan.search =
        SearchFor(req.options.mode == BudgetMode::kFixed || !want_cost ? BudgetMode::kFixed
                  : scan                                               ? BudgetMode::kScan
                                                                       : BudgetMode::kController,
                  want_cost && ops::DraftsByLevel(a, a.t_draft_ms), ops::MaxGamma(req.requests));
  } else {
    auto planned = ops::PlanBatch(req);
    if (Failed(kCmd, CostErrorInFlags(planned.status()))) return 1;
    result = *std::move(planned);
  }
  const BatchPlan& plan = result.plan;
  const char* mode_name = EnumName(kBudgetModeNames, req.options.mode);
  if (a.json) {
    nlohmann::json j = ops::ToJson(req, result);
    if (!a.layout.empty()) {
      std::vector<int64_t> contexts;
      for (const BatchRequest& r : req.requests) contexts.push_back(r.c);
      auto layout = a.layout == "sglang"
                        ? SglangJson(plan.trees, contexts, a.tree_mask_mode, a.draft_token_num)
                        : RaggedJson(plan.trees, contexts);
      if (Failed(kCmd, layout.status(), "--layout " + a.layout + ": ")) return 1;
      j[a.layout] = std::move(*layout);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  double total_a = 0;
  for (double x : plan.expected_accepted) total_a += x;
  std::cout << absl::StrFormat(
      "plan-batch (%s, %d requests, n_max %d over the batch): N* = %d draft nodes, "
      "%.2f per request\n  expected accepted %.3f tokens in all (roots included)\n",
      mode_name, B, req.options.n_max, plan.n_total, static_cast<double>(plan.n_total) / B,
      total_a);
  if (plan.search == PlanSearch::kFirstDecreasePerDepth ||
      plan.search == PlanSearch::kScanPerDepth) {
    std::cout << absl::StrFormat("  search: %s (the drafting priced per tree level)\n",
                                 EnumName(kPlanSearchNames, plan.search));
  }
  if (want_cost) {
    std::cout << absl::StrFormat(
        "  cycle %.4f ms, goodput %.1f tokens/s; plain decoding %.1f tokens/s (%s latency "
        "model%s)\n",
        plan.cycle_s * 1e3, plan.goodput, plan.ar_goodput, result.latency_model,
        result.profile.empty() ? "" : ", profile " + result.profile);
    if (plan.n_total == 0)
      std::cout << "  speculation does not pay at this load: no request drafts\n";
    if (req.options.objective == BatchObjective::kLatencyBound && !plan.bound_met) {
      std::cout << absl::StrFormat(
          "  no budget meets %.4f ms per token for every request; this plan has the smallest "
          "worst case\n",
          a.max_ms_per_token);
    }
  }
  std::cout << "  request      c      n   expected accepted\n";
  for (int i = 0; i < B; ++i) {
    std::cout << absl::StrFormat("  %7d %6d %6d   %.4f\n", i, req.requests[i].c, plan.n[i],
                                 plan.expected_accepted[i]);
  }
  return 0;
}

}  // namespace

void RegisterPlanBatchCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand(&app, "plan-batch",
                                "One tree budget across a batch of requests verified in one pass",
                                exit_code, &RunPlanBatch);
  cmd->add_option("--requests", args->requests,
                  "JSONL, one request per line: {\"marginals\": {...}, \"c\": int} with optional "
                  "\"n_max\" and \"weight\"")
      ->required();
  AddCostFlags(cmd, args);
  AddBudgetOptions(cmd, &args->n_max, &args->budget, planner::kMaxBatchNodes,
                   "Search N = 0..N draft nodes in all (first decrease of the goodput, or its "
                   "argmax with --scan)",
                   "Fixed: exactly min(N, lattice sizes) draft nodes in all");
  AddDraftTimeOption(
      cmd, &args->t_draft_ms,
      "Draft network time for one sequence, ms (per step for ar, per block otherwise)");
  AddDraftBatchGrowthOption(cmd, &args->draft_batch_growth,
                            "Fraction of one sequence's draft time each further sequence adds (0 "
                            "= weight-bound drafter)");
  cmd->add_flag("--scan", args->scan, "Evaluate every N and take the argmax");
  cmd->add_option("--max-ms-per-token", args->max_ms_per_token,
                  "Per-request bound: expected ms per accepted token (cycle / Â_i) for every "
                  "request; maximises goodput under it")
      ->check(FiniteRange(0, ops::kMaxMs, "ms", /*lo_open=*/true));
  AddJsonFlag(cmd, &args->json);
  AddServerOption(cmd, &args->server, "Plan",
                  " (the PlanBatch RPC) instead of in-process (same output)");
  auto* layout = cmd->add_option("--layout", args->layout,
                                 "With --json, add the batch in an engine's layout: ragged (key "
                                 "`ragged`: cu_seqlens, tokens, positions, parents) or sglang "
                                 "(key `sglang`)")
                     ->check(CLI::IsMember({"ragged", "sglang"}));
  AddSglangLayoutOptions(cmd, layout, &args->tree_mask_mode, &args->draft_token_num,
                         "SGLang draft_token_num (slots per request, root included) for --layout "
                         "sglang; 0 = the largest tree's size");
}

}  // namespace specplan::cli
