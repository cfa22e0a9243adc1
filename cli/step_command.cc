// specplan step fit: refits the engine's host-time terms (costmodel/step/host_fit.h) from the
// user's own benchmark numbers, and writes them as a host file that every command prices with
// through --host-file.
//
//   specplan step fit --model M --gpu G [--engine E] [--drafter eagle3] --points FILE
//                     [--out host.json] [--json]
//
// An adapter over ops::StepFit (ops/step_fit_op.h); writing --out stays here.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/match.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "costmodel/step/host_time.h"
#include "ops/step_fit_op.h"
#include "util/atomic_file.h"

namespace specplan::cli {
namespace {

constexpr char kCmd[] = "specplan step fit: ";

struct StepFitArgs : CostFlags {
  std::string points;
  std::string out;
  OutputFlags output;  // --force, --mkdir for --out
  bool json = false;
};

int RunStepFit(const StepFitArgs& a) {
  // The output path first: nothing runs (or is written) for a path the command would refuse.
  if (!a.out.empty() && Failed(kCmd, CheckOutputPath("--out", a.out, a.output))) return 1;
  ops::StepFitRequest req;
  req.cost = a;
  req.points = a.points;
  auto result = ops::StepFit(req);
  if (!result.ok()) {
    const std::string msg(result.status().message());
    // "points ..." names --points; the cost request's fields their flags.
    if (absl::StartsWith(msg, "points ")) {
      std::cerr << kCmd << "--" << msg << "\n";
      return 1;
    }
    Failed(kCmd, CostErrorInFlags(result.status()));
    return 1;
  }
  if (!a.out.empty() &&
      !WriteOutput(kCmd, "--out", a.out, costmodel::HostTimeToJson(result->fit.host).dump(2) + "\n",
                   a.output)) {
    return 1;
  }
  if (a.json) {
    std::cout << ops::ToJson(*result).dump(2) << "\n";
    return 0;
  }
  std::cout << ops::ToText(*result);
  if (!a.out.empty()) {
    std::cout << "wrote " << a.out << " (pass it as --host-file to estimate, whatif, schedule, "
              << "plan)\n";
  }
  return 0;
}

}  // namespace

void RegisterStepCommand(CLI::App& app, int* exit_code) {
  CLI::App* step = app.add_subcommand(
      "step", "The engine's whole step (verify + draft + sample + host): refit its host terms");
  step->require_subcommand(1);
  auto [cmd, args] = AddCommand(
      step, "fit",
      "Fit the engine's host-time terms (per step, per sequence, per draft forward, per verified "
      "token) to your own benchmark: a few batch sizes with and without speculation "
      "(docs/step-model.md)",
      exit_code, &RunStepFit);
  const CostFlagOptions cost = AddCostFlags(cmd, args);
  cost.model->required();
  cost.gpu->required();
  cmd->add_option("--points", args->points,
                  "CSV with a header: batch, k (0 = no speculation), context, and step_ms, or "
                  "tokens_per_s with acceptance_length (tokens per step, bonus included; needed "
                  "where k > 0)")
      ->required();
  cmd->add_option("--out", args->out, "Write the fitted host terms as JSON (for --host-file)");
  AddOutputFlags(cmd, &args->output);
  AddJsonFlag(cmd, &args->json);
}

}  // namespace specplan::cli
