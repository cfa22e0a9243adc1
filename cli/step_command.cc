// specplan step fit: refits the engine's host-time terms (costmodel/step/host_fit.h) from the
// user's own benchmark numbers, and writes them as a host file that every command prices with
// through --host-file.
//
//   specplan step fit --model M --gpu G [--engine E] [--drafter eagle3] --points FILE
//                     [--out host.json] [--json]
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "costmodel/step/host_fit.h"
#include "util/atomic_file.h"
#include "util/file.h"

namespace specplan::cli {
namespace {

constexpr char kCmd[] = "specplan step fit: ";

struct StepFitArgs : CostFlags {
  std::string points;
  std::string out;
  bool json = false;
};

int RunStepFit(const StepFitArgs& a) {
  auto parsed = a.Parse(0);
  if (Failed(kCmd, parsed.status())) return 1;
  auto text = ReadFileToString(a.points);
  if (Failed(kCmd, text.status(), "--points ")) return 1;
  auto points = costmodel::ParseStepPoints(*text, a.points);
  if (Failed(kCmd, points.status(), "--points ")) return 1;
  auto resolved = a.Resolve(parsed->dtype);
  if (Failed(kCmd, resolved.status())) return 1;
  auto options = a.StepOptionsFor(resolved->engine, 0);
  if (Failed(kCmd, options.status())) return 1;
  auto fit = costmodel::FitHostTime(resolved->model.get(), resolved->model_spec, resolved->gpu_spec,
                                    &resolved->drafters, resolved->engine, *options, *points);
  if (Failed(kCmd, fit.status(), "--points " + a.points + ": ")) return 1;
  if (!a.out.empty()) {
    const absl::Status st =
        WriteFileAtomically(a.out, costmodel::HostTimeToJson(fit->host).dump(2) + "\n");
    if (Failed(kCmd, st, "--out " + a.out + ": ")) return 1;
  }
  if (a.json) {
    nlohmann::json j = costmodel::HostFitToJson(*fit);
    j["points"] = a.points;
    j["profile"] = a.profile.empty() ? resolved->profile_id : resolved->profile_path;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("host terms fitted to %d measured steps (%s on %s, %s):\n",
                               points->size(), resolved->model_spec.name, resolved->gpu_spec.name,
                               resolved->engine.empty() ? "no engine" : resolved->engine);
  const costmodel::HostTime& h = fit->host;
  std::cout << absl::StrFormat(
      "  step %.4f ms, per sequence %.4f ms, per draft forward %.4f ms, per verified token "
      "%.4f us; sampling call %.4f ms (kept)\n",
      h.step_s * 1e3, h.per_sequence_s * 1e3, h.per_draft_forward_s * 1e3,
      h.verify_per_token_s * 1e6, h.sample_call_s * 1e3);
  std::cout << "  fitted: " << absl::StrJoin(fit->fitted, ", ") << "\n";
  if (!fit->kept.empty()) std::cout << "  kept: " << absl::StrJoin(fit->kept, "; ") << "\n";
  std::cout << absl::StrFormat("  %6s %3s %8s %12s %12s\n", "batch", "k", "context", "measured ms",
                               "fitted ms");
  for (size_t i = 0; i < points->size(); ++i) {
    const costmodel::StepPoint& p = (*points)[i];
    std::cout << absl::StrFormat("  %6d %3d %8d %12.4f %12.4f\n", p.b, p.k, p.c, p.step_s * 1e3,
                                 fit->predicted_s[i] * 1e3);
  }
  std::cout << absl::StrFormat("  MAPE %.2f %%\n", 100 * fit->mape);
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
  cmd->add_flag("--json", args->json, "Print one JSON object");
}

}  // namespace specplan::cli
