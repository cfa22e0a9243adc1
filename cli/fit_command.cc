// specplan fit: fit a latency profile to samples measured elsewhere (an engine's own timings, or
// public measurements), without LibTorch. The same fit as `calibrate --from-samples`
// (costmodel::FitProfile); calibrate is the tool that also measures. `fit --refit PROFILE` refits
// an existing profile's own samples with this build's forms and keeps what it says about where they
// were measured (device, timer, software, created_utc, provenance). `--score FILE` scores every
// model of the written profile on other samples. Neither writes into the shipped profiles
// directory (calib/) unless --force asks for it (util/shipped_dir.h): a new fit needs --out or
// --force, and a refit of a shipped profile needs --out or --force.
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/fit/samples_file.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "util/clock.h"
#include "util/shipped_dir.h"

namespace specplan::cli {
namespace {

struct FitArgs {
  std::string model;
  std::string gpu;
  std::string dtype = "bf16";
  std::string samples;
  std::string refit;
  std::string out;
  std::string provenance;
  std::string score;  // --score: samples to score the written profile's models on
  std::string add;    // --add-samples: fitted beside a refitted profile's own samples
  double holdout = 0;
  uint64_t seed = 1;
  int64_t tp = 1;
  bool force = false;  // --force: write into the shipped profiles directory
  bool mkdir = false;  // --mkdir: create --out's missing parent directories
};

// OK when `out` may be written: outside the shipped profiles directories, or --force; a --out
// whose directory is missing needs --mkdir (cli/command_util.h CheckOutputPath; the default path
// under the profiles directory is created as before).
absl::Status CheckOut(const FitArgs& a, const std::string& what, const std::string& out) {
  return CheckOutputPath(what, out, {a.force, a.mkdir || a.out.empty()});
}

int Fail(const absl::Status& st) {
  std::cerr << "specplan fit: " << st.message() << "\n";
  return 1;
}

// The samples file `path` a flag names (--score, --add-samples), its errors after "<flag>: ".
absl::StatusOr<std::vector<specplan::costmodel::LatencySample>> ReadFlagSamples(
    const std::string& flag, const std::string& path) {
  auto samples = specplan::costmodel::ReadSamplesFile(path);
  if (!samples.ok()) {
    return absl::Status(samples.status().code(),
                        absl::StrCat(flag, ": ", samples.status().message()));
  }
  return samples;
}

// Every model of the profile scored on samples it was not fitted to.
void PrintScores(const specplan::costmodel::Profile& p, const std::string& file,
                 const std::vector<specplan::costmodel::LatencySample>& samples) {
  using namespace specplan::costmodel;
  if (samples.empty()) return;
  std::cout << absl::StrFormat("score    %s (%d samples)\n", file, samples.size());
  for (const std::string& kind : LatencyModelKinds()) {
    auto model = MakeLatencyModel(p, kind);
    if (!model.ok()) continue;
    const FitStats st = Evaluate(**model, samples);
    std::cout << absl::StrFormat("  %-10s  MAPE %6.2f%%  RMSE %.4f ms  max %.4f ms\n", kind,
                                 100 * st.mape, st.rmse_s * 1e3, st.max_abs_s * 1e3);
  }
}

// What a fit and a refit share once their inputs are read: the --score samples are read (before
// anything is fitted or written), `samples` are fitted on `model` x `gpu` with --holdout and
// --seed (a failure reads "<what>: <error>"), `annotate` records what the fit cannot know (where
// the samples were measured), and the profile is written to `out`; then prints
// "profile  <out><title>", the fit and the scores. Returns the command's exit code.
int FitAndWrite(const FitArgs& a, const specplan::costmodel::ModelSpec& model,
                const specplan::costmodel::GpuSpec& gpu,
                const std::vector<specplan::costmodel::LatencySample>& samples,
                const std::string& what, const std::string& out, const std::string& title,
                absl::FunctionRef<void(specplan::costmodel::Profile&)> annotate) {
  using namespace specplan::costmodel;
  std::vector<LatencySample> score;
  if (!a.score.empty()) {
    auto read = ReadFlagSamples("--score", a.score);
    if (!read.ok()) return Fail(read.status());
    score = *std::move(read);
  }
  FitOptions options;
  options.heldout_fraction = a.holdout;
  options.seed = a.seed;
  auto fitted = FitProfile(model, gpu, samples, options);
  if (!fitted.ok()) {
    return Fail(
        absl::Status(fitted.status().code(), absl::StrCat(what, ": ", fitted.status().message())));
  }
  Profile& p = *fitted;
  annotate(p);
  if (absl::Status st = SaveProfile(p, out); !st.ok()) return Fail(st);
  std::cout << absl::StrFormat("profile  %s%s\n", out, title);
  std::cout << DescribeFit(p);
  PrintScores(p, a.score, score);
  return 0;
}

// Refits a profile's own samples (held-out ones too unless --holdout asks for a new split) on its
// own model_spec and gpu_spec, and carries its measurement metadata over to the new profile.
int RunRefit(const FitArgs& a) {
  using namespace specplan::costmodel;
  if (!a.samples.empty() || !a.model.empty() || !a.gpu.empty() || !a.provenance.empty()) {
    return Fail(absl::InvalidArgumentError(
        "--refit: takes the samples, model, GPU and provenance from the profile; drop "
        "--from-samples, --model, --gpu and --provenance"));
  }
  const std::string out = a.out.empty() ? a.refit : a.out;
  if (absl::Status st =
          CheckOut(a, a.out.empty() ? "--refit (no --out: writes over)" : "--out", out);
      !st.ok()) {
    return Fail(st);
  }
  auto old = LoadProfile(a.refit);
  if (!old.ok()) return Fail(old.status());
  std::vector<LatencySample> samples;
  for (const ProfileSample& x : old->samples) samples.push_back(x.sample);
  std::vector<LatencySample> added;
  if (!a.add.empty()) {
    auto read = ReadFlagSamples("--add-samples", a.add);
    if (!read.ok()) return Fail(read.status());
    added = *std::move(read);
    samples.insert(samples.end(), added.begin(), added.end());
  }
  return FitAndWrite(
      a, old->model_spec, old->gpu_spec, samples, absl::StrCat(a.refit, ": refit"), out,
      absl::StrCat(" (refit of ", a.refit, ")"), [&](Profile& p) {
        p.gpu = old->gpu;
        p.model = old->model;
        p.device_name = old->device_name;
        p.timer = old->timer;
        p.software = old->software;
        p.created_utc = old->created_utc;
        p.provenance = old->provenance;
        p.engine = old->engine;
        p.engine_version = old->engine_version;
        p.notes.push_back(absl::StrCat(
            "refit ", UtcTimestamp(), " by `specplan fit --refit` from the profile's own samples",
            added.empty() ? ""
                          : absl::StrCat(" and ", added.size(), " added from ", a.add,
                                         " (measured apart: their run is not created_utc)"),
            "; created_utc is when the profile's first samples were measured"));
      });
}

int RunFit(const FitArgs& a) {
  using namespace specplan::costmodel;
  if (!a.refit.empty()) return RunRefit(a);
  if (!a.add.empty()) {
    return Fail(absl::InvalidArgumentError(
        "--add-samples: only with --refit (a new fit takes all its samples from --from-samples)"));
  }
  auto fail = Fail;
  if (a.model.empty() || a.gpu.empty() || a.samples.empty()) {
    return fail(absl::InvalidArgumentError(
        "--model, --gpu and --from-samples are required (or --refit PROFILE)"));
  }
  auto dtype = ParseDType(a.dtype);
  if (!dtype.ok()) return fail(dtype.status());
  auto model = ResolveModel(a.model);
  if (!model.ok()) return fail(model.status());
  model->dtype = *dtype;
  auto gpu = ResolveGpu(a.gpu);
  if (!gpu.ok()) return fail(gpu.status());
  if (const std::string why = TensorParallelProblem(*model, *gpu, a.tp); !why.empty()) {
    return fail(absl::InvalidArgumentError(absl::StrCat("--tp ", a.tp, ": ", why)));
  }
  model->tp = a.tp;
  // The path is known before anything is fitted (the profile's gpu, model and dtype are the
  // resolved ones), so a refused path is refused before any work.
  const std::string out =
      a.out.empty() ? BundledProfilePath(DefaultCalibDir(), gpu->name, model->name, *dtype, a.tp)
                    : a.out;
  if (absl::Status st = CheckOut(a, a.out.empty() ? "no --out: default path" : "--out", out);
      !st.ok()) {
    return fail(st);
  }
  auto samples = ReadSamplesFile(a.samples);
  if (!samples.ok()) return fail(samples.status());
  return FitAndWrite(a, *model, *gpu, *samples, absl::StrCat(a.samples, ": fit"), out, "",
                     [&](Profile& p) {
                       p.timer = "external";
                       p.device_name = "unknown (external samples)";
                       p.provenance = a.provenance;
                     });
}

}  // namespace

void RegisterFitCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand(
      &app, "fit",
      "Fit a latency profile to samples measured elsewhere (no LibTorch needed; the same fit as "
      "calibrate --from-samples) and write it",
      exit_code, &RunFit);
  AddModelOption(cmd, &args->model);
  AddGpuOption(cmd, &args->gpu);
  AddDTypeOption(cmd, &args->dtype);
  cmd->add_option("--from-samples", args->samples,
                  "CSV (header s,c and one of seconds, latency_s, latency_ms, latency_us; an "
                  "optional b column marks passes of b sequences) or JSON");
  cmd->add_option("--refit", args->refit,
                  "Refit this profile's own samples with this build's latency forms, keeping its "
                  "device_name, timer, software, created_utc and provenance; writes over it "
                  "unless --out is given, and not over a shipped profile (calib/) without "
                  "--force (replaces --model, --gpu and --from-samples)");
  cmd->add_option("--add-samples", args->add,
                  "With --refit: also fit these samples (same formats as --from-samples), e.g. "
                  "batch passes measured later on the same device; the profile keeps them and a "
                  "note names the file");
  cmd->add_option("--out", args->out,
                  "Profile path to write. Without it a new fit is refused (its default, "
                  "calib/<gpu>/<model>-<dtype>.json, is a shipped profile) unless --force; with "
                  "--refit the default is the refitted profile itself");
  AddForceFlag(cmd, &args->force);
  AddMkdirFlag(cmd, &args->mkdir);
  cmd->add_option("--holdout", args->holdout,
                  "Fraction of the samples held out of the fit and scored (0 = fit on everything; "
                  "the default model is chosen by cross-validation either way)")
      ->capture_default_str()
      ->check(FiniteRange(0, 0.95));
  cmd->add_option("--tp", args->tp,
                  "Tensor parallelism the samples were measured at (recorded in the profile; "
                  "features per GPU plus two all-reduces per layer)")
      ->capture_default_str();
  cmd->add_option("--score", args->score,
                  "Also score every model of the written profile on these samples (same formats "
                  "as --from-samples), e.g. passes measured apart from the fit");
  cmd->add_option("--seed", args->seed, "Seed of the held-out split and k-fold shuffle")
      ->capture_default_str();
  cmd->add_option("--provenance", args->provenance,
                  "Where the samples come from, recorded in the profile (e.g. \"derived from "
                  "public measurements: microsoft/vidur@7d47513 ...\")");
}

}  // namespace specplan::cli
