// specplan fit: fit a latency profile to samples measured elsewhere (an engine's own timings, or
// public measurements), without LibTorch. The same fit as `calibrate --from-samples`
// (costmodel::FitProfile); calibrate is the tool that also measures.
#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "costmodel/model_spec.h"
#include "costmodel/profile.h"
#include "costmodel/samples_file.h"

namespace specplan::cli {
namespace {

struct FitArgs {
  std::string model;
  std::string gpu;
  std::string dtype = "bf16";
  std::string samples;
  std::string out;
  std::string provenance;
  double holdout = 0;
  uint64_t seed = 1;
};

int RunFit(const FitArgs& a) {
  using namespace specplan::costmodel;
  auto fail = [](const absl::Status& st) {
    std::cerr << "specplan fit: " << st.message() << "\n";
    return 1;
  };
  auto dtype = ParseDType(a.dtype);
  if (!dtype.ok()) return fail(dtype.status());
  auto model = ResolveModel(a.model);
  if (!model.ok()) return fail(model.status());
  model->dtype = *dtype;
  auto gpu = ResolveGpu(a.gpu);
  if (!gpu.ok()) return fail(gpu.status());
  auto samples = ReadSamplesFile(a.samples);
  if (!samples.ok()) return fail(samples.status());
  FitOptions options;
  options.heldout_fraction = a.holdout;
  options.seed = a.seed;
  auto fitted = FitProfile(*model, *gpu, *samples, options);
  if (!fitted.ok()) {
    return fail(absl::Status(fitted.status().code(),
                             absl::StrCat(a.samples, ": fit: ", fitted.status().message())));
  }
  Profile& p = *fitted;
  p.timer = "external";
  p.device_name = "unknown (external samples)";
  p.provenance = a.provenance;
  const std::string out =
      a.out.empty() ? BundledProfilePath(DefaultCalibDir(), p.gpu, p.model, p.dtype) : a.out;
  if (absl::Status st = SaveProfile(p, out); !st.ok()) return fail(st);
  std::cout << absl::StrFormat("profile  %s\n", out);
  std::cout << DescribeFit(p);
  return 0;
}

}  // namespace

void RegisterFitCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Fit a latency profile to samples measured elsewhere (no LibTorch needed; the same fit as "
      "calibrate --from-samples) and write it");
  cmd->add_option("--model", args->model, "Target model: registry name or HF config.json")
      ->required();
  cmd->add_option("--gpu", args->gpu, "GPU: registry name or GPU spec JSON")->required();
  cmd->add_option("--dtype", args->dtype, "fp32 | bf16 | fp16 | fp8")->capture_default_str();
  cmd->add_option("--from-samples", args->samples,
                  "CSV (header s,c and one of seconds, latency_s, latency_ms, latency_us) or JSON")
      ->required();
  cmd->add_option("--out", args->out,
                  "Profile path (default calib/<gpu>/<model>-<dtype>.json under the bundled "
                  "profiles directory)");
  cmd->add_option("--holdout", args->holdout,
                  "Fraction of the samples held out of the fit and scored (0 = fit on everything; "
                  "the default model is chosen by cross-validation either way)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.95));
  cmd->add_option("--seed", args->seed, "Seed of the held-out split and k-fold shuffle")
      ->capture_default_str();
  cmd->add_option("--provenance", args->provenance,
                  "Where the samples come from, recorded in the profile (e.g. \"derived from "
                  "public measurements: microsoft/vidur@7d47513 ...\")");
  cmd->callback([args, exit_code] { *exit_code = RunFit(*args); });
}

}  // namespace specplan::cli
