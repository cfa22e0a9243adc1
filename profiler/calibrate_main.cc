// calibrate: measure this machine's device and write a latency profile.
//
// Two modes:
//   --kernels (the default, = --mode kernels): time LibTorch's GEMM and attention kernels at the
//     model's shapes, write kernel tables (data/kernels/ layout) and compose the profile from them
//     with the engine-grade composer (profiler/kernel_bench.h);
//   --mode runtime: time whole verification passes of specplan's runtime and fit the cost model
//     (profiler/calibration.h).
//
//   calibrate --gpu cpu --model tiny --out p.json                     # kernels, CPU, fp32
//   calibrate --mode runtime --gpu cpu --model tiny                   # CPU, small grids (CI)
//   calibrate --gpu h100 --model qwen3-8b --out p.json    # CUDA, bf16
//   calibrate --gpu h100 --model qwen3-8b --force         # into calib/h100-sxm/ (shipped)
//   calibrate --gpu h100 --model my-8b --config cfg.json --out p.json  # any HF llama/qwen/...
//   config calibrate --gpu h100 --model qwen3-8b --from-samples engine.csv --out p.json  # external
//   timings
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/profile.h"
#include "profiler/calibration.h"
#include "profiler/kernel_bench.h"
#include "runtime/tool_main.h"

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void OnInterrupt(int) { g_interrupted.store(true); }
}  // namespace

int main(int argc, char** argv) {
  using specplan::profiler::CalibrateOptions;
  CalibrateOptions o;
  std::string timer = "auto";
  bool no_plot = false;

  std::string mode = "kernels";
  bool kernels_flag = false;
  CLI::App app{
      "calibrate: measure this machine's device for a target model (random weights) and write a "
      "latency profile (JSON). Default (--kernels): time LibTorch's GEMM and attention kernels at "
      "the model's shapes, write kernel tables in data/kernels/'s layout (plus "
      "tree_attention.csv) and compose the profile from them as `specplan profiles compose` "
      "does. --mode runtime: time tree-verification passes of specplan's runtime over an (s, c) "
      "grid, fit the cost model and write the profile plus a measured-vs-predicted plot (PNG). "
      "Progress goes to stderr."};
  specplan::runtime::AddChoiceOption(
      app, "--mode", &mode, {"kernels", "runtime"},
      "kernels (default): time kernels and compose; runtime: time whole passes of "
      "specplan's runtime and fit");
  app.add_flag("--kernels", kernels_flag, "Same as --mode kernels (the default)");
  app.add_option("--budget-s", o.budget_s,
                 "Kernels mode: cap on the timing's wall time in seconds; the kernel grid is "
                 "thinned (every other point of each axis) until its estimate fits (0 = no cap)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--kernels-dir", o.kernels_dir,
                 "Kernels mode: root of the kernel tables; they go to "
                 "DIR/<gpu>/specplan-libtorch<version>/ (default: kernels/ beside --out)");
  app.add_option("--gpu", o.gpu,
                 "GPU the profile is for: a registry name (h100, h200, a100, ...; 'cpu' for the "
                 "host) or a GPU spec JSON file. Must match the device unless --force")
      ->required();
  app.add_option("--model", o.model,
                 "Target: a built-in runtime config (tiny, tiny-qwen3, tiny-neox, tiny-llama3), a "
                 "known model (qwen3-8b, qwen3-4b, llama-3.1-8b, ...), or with --config the name "
                 "to record")
      ->required();
  app.add_option("--config", o.config, "HuggingFace config.json (file or directory) of the target");
  specplan::runtime::AddDtypeFlag(app, &o.dtype, "default: fp32 on CPU, bf16 on CUDA");
  // The grid flags: the flag, its help, its smallest entry, the option it sets and the flag's
  // text, parsed after the command line (none: CalibrateOptions' defaults for the device).
  struct Grid {
    const char* flag;
    const char* help;
    int64_t min;
    std::vector<int64_t>* grid;
    std::string text = {};  // the flag's text, set while parsing
  } grids[] = {{"--s-grid",
                "Tokens per pass, comma-separated (default CPU 1,2,4,8,16,32; CUDA "
                "1,2,4,8,16,24,32,48,64,96,128,192,256). Kernels mode: the composed profile's s "
                "grid, from which the kernel grid is derived",
                1, &o.s_grid},
               {"--c-grid",
                "Cached tokens, comma-separated (default CPU 0,64,128,256; CUDA "
                "0,256,512,1024,2048,4096). Kernels mode: the profile's c grid",
                0, &o.c_grid},
               {"--b-grid",
                "Sequences per pass, comma-separated, including 1 (default 1): each b > 1 also "
                "times one ragged pass of b sequences per (s, c), each with its own tree of s "
                "tokens over its own c cached tokens; the fits and the table use these batch "
                "samples",
                1, &o.b_grid}};
  for (Grid& g : grids) app.add_option(g.flag, g.text, g.help);
  app.add_option("--repeats", o.repeats,
                 "Timed passes per cell, median kept (default 5 CPU, 10 CUDA; kernels mode: "
                 "samples per kernel point, default 7 CPU, 20 CUDA)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "Untimed passes per cell")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out", o.out,
                 "Profile path. Its default, calib/<gpu>/<model>-<dtype>[-tp<N>].json under the "
                 "bundled profiles directory, is a shipped profile: refused unless --force (as is "
                 "any path inside that directory)");
  app.add_option(
      "--from-samples", o.from_samples,
      "Fit samples measured elsewhere instead of running the model: CSV with header "
      "s,c,seconds or JSON [{\"s\",\"c\",\"seconds\"}], optionally with b (sequences per "
      "pass); the profile's timer is 'external'");
  app.add_option("--tp", o.tp,
                 "With --from-samples: tensor parallelism the samples were measured at (the "
                 "profile records it; its features are per GPU plus two all-reduces per layer)")
      ->capture_default_str();
  app.add_option("--samples-out", o.samples_out,
                 "Also write the measured cells as CSV (b,s,c,seconds + kernel breakdown)");
  app.add_flag("--force", o.force,
               "Calibrate even if --gpu does not match the device, and allow writing into the "
               "shipped profiles directory (calib/), over the profiles specplan ships");
  specplan::runtime::AddDeviceFlag(app, &o.device,
                                   "default: cpu for --gpu cpu, else cuda when available");
  app.add_option("--seed", o.seed,
                 "Seed of the random weights, trees, held-out split and k-fold shuffle")
      ->capture_default_str();
  specplan::runtime::AddRangeOption(
      app, "--holdout", &o.holdout, 0.0, 0.95,
      "Fraction of the samples held out of the fit and scored (0 = fit on everything; "
      "the default model is chosen by cross-validation over the fitted samples either "
      "way)");
  app.add_option("--provenance", o.provenance,
                 "Where --from-samples data come from, recorded in the profile and shown by "
                 "specplan profiles (e.g. \"derived from public measurements: SOURCE, COMMIT\")");
  app.add_option("--timer", timer,
                 "auto | cupti | cuda_events | host_clock (auto: cupti, then cuda_events, then "
                 "host_clock on CUDA; host_clock on CPU)")
      ->capture_default_str();
  app.add_flag("--no-plot", no_plot, "Do not render the PNG");
  bool no_graphs = false;
  app.add_flag("--no-cuda-graphs", no_graphs,
               "CUDA: time eager passes instead of replays of each cell's pass captured as a CUDA "
               "graph (eager timings include the host's ~10 us per op launch cost)");
  CLI11_PARSE(app, argc, argv);

  auto fail = [](const absl::Status& st) {
    return specplan::runtime::ReportFailure("calibrate", st);
  };
  for (const Grid& g : grids) {
    if (g.text.empty()) continue;
    auto parsed = specplan::profiler::ParseGrid(g.text, g.flag, g.min);
    if (!parsed.ok()) return fail(parsed.status());
    *g.grid = *std::move(parsed);
  }
  auto choice = specplan::profiler::ParseTimerChoice(timer);
  if (!choice.ok()) return fail(choice.status());
  o.timer = *choice;
  o.plot = !no_plot;
  o.cuda_graphs = !no_graphs;
  o.progress = &std::cerr;
  // --from-samples fits samples measured elsewhere: the runtime pipeline, whatever the mode.
  const bool kernels = o.from_samples.empty() && (mode == "kernels" || kernels_flag);
  if (kernels_flag && mode == "runtime") {
    return fail(absl::InvalidArgumentError("--kernels and --mode runtime: pick one"));
  }
  if (kernels) {
    if (no_graphs) {
      return fail(absl::InvalidArgumentError(
          "--no-cuda-graphs: only with --mode runtime (kernels are timed eagerly)"));
    }
    o.progress_bar = isatty(STDERR_FILENO) != 0;
    o.cancel = [] { return g_interrupted.load(); };
    std::signal(SIGINT, OnInterrupt);
    std::signal(SIGTERM, OnInterrupt);
    auto result = specplan::profiler::RunKernelCalibration(o);
    if (!result.ok()) {
      fail(result.status());
      return result.status().code() == absl::StatusCode::kCancelled ? 130 : 1;
    }
    const specplan::costmodel::Profile& p = result->profile;
    std::cout << absl::StrFormat("profile  %s\n", result->profile_path);
    std::cout << absl::StrFormat("tables   %s (%s)\n", result->kernels_dir,
                                 absl::StrJoin(result->tables, ", "));
    std::cout << absl::StrFormat(
        "gpu      %s (device: %s)\nmodel    %s  dtype %s  timer %s  engine %s\n", p.gpu,
        p.device_name, p.model, specplan::costmodel::DTypeName(p.dtype), p.timer, p.engine);
    std::cout << specplan::costmodel::DescribeFit(p);
    return 0;
  }
  if (o.budget_s > 0 || !o.kernels_dir.empty()) {
    return fail(absl::InvalidArgumentError(
        absl::StrCat(o.budget_s > 0 ? "--budget-s" : "--kernels-dir",
                     ": only in kernels mode (the default), not with --mode runtime or "
                     "--from-samples")));
  }

  auto result = specplan::profiler::RunCalibration(o);
  if (!result.ok()) return fail(result.status());
  const specplan::costmodel::Profile& p = result->profile;
  std::cout << absl::StrFormat("profile  %s\n", result->profile_path);
  std::cout << absl::StrFormat("gpu      %s (device: %s)\nmodel    %s  dtype %s  timer %s\n", p.gpu,
                               p.device_name, p.model, specplan::costmodel::DTypeName(p.dtype),
                               p.timer);
  std::cout << specplan::costmodel::DescribeFit(p);
  if (!result->png_path.empty()) {
    std::cout << "plot     " << result->png_path << "\n";
  } else if (!result->plot_note.empty()) {
    std::cout << "plot     none (" << result->plot_note << ")\n";
  }
  return 0;
}
