// The calibration run behind `calibrate`: build the target architecture with random weights on the
// device, time tree-verification passes of random trees of s tokens over c cached tokens on the
// (s, c) grid (and ragged passes of b such sequences for each b of an optional batch grid)
// (warm-up, repeats, median), fit the cost model (costmodel::FitProfile: linear, per-term, overlap
// and table models, the default chosen by cross-validation), save the profile atomically and render
// a measured-vs-predicted PNG next to it. Or, with from_samples, fit samples measured elsewhere.
//
// Nothing is written unless the whole run succeeds: the profile replaces an existing file only
// once it is complete (costmodel::SaveProfile is atomic), and the PNG is written after it.
#ifndef SPECPLAN_PROFILER_CALIBRATION_H_
#define SPECPLAN_PROFILER_CALIBRATION_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/profile.h"
#include "profiler/device_check.h"
#include "profiler/pass_timer.h"
#include "runtime/model_config.h"

namespace specplan::profiler {

struct CalibrateOptions {
  std::string gpu;     // --gpu: registry name ("h100", "cpu") or a GPU spec JSON file
  std::string model;   // --model: built-in runtime config ("tiny", ...), a costmodel registry
                       // name ("qwen3-8b"), or, with `config`, the name to record
  std::string config;  // --config: HF config.json (file or directory); overrides the lookup
  std::string dtype;   // --dtype; "" = fp32 on CPU, bf16 on CUDA
  std::string device;  // --device "cpu" | "cuda" | "cuda:N"; "" = cuda when LibTorch has it
  std::vector<int64_t> s_grid;  // tokens per pass; empty = the device's default grid
  std::vector<int64_t> c_grid;  // cached tokens; empty = the device's default grid
  // Sequences per pass (--b-grid): each cell b > 1 times one ragged pass of b sequences, each
  // verifying its own random tree of s tokens over its own c cached tokens. Must include 1;
  // empty = {1} (single sequences, as every profile before the batch axis).
  std::vector<int64_t> b_grid;
  int repeats = 0;           // timed passes per cell (median); 0 = 5 on CPU, 10 on CUDA
  int warmup = 2;            // untimed passes per cell (plus a few before the first cell)
  std::string out;           // profile path; "" = costmodel::BundledProfilePath(calib_dir, ...)
  std::string calib_dir;     // "" = costmodel::DefaultCalibDir()
  std::string from_samples;  // fit these samples (CSV or JSON, profiler/samples_file.h) instead
  std::string samples_out;   // optional CSV of the measured cells with the kernel breakdown
  bool force = false;        // accept a --gpu that does not match the device, and write into
                             // the shipped profiles directory (calib/, util/shipped_dir.h)
  bool plot = true;          // render <out minus .json>.png
  uint64_t seed = 1;         // random weights, trees, the held-out split and k-fold shuffle
  double holdout = 0;        // --holdout: fraction of samples held out of the fit, in [0, 1)
  int64_t tp = 1;            // --tp: tensor parallelism the samples were measured at
                             // (--from-samples only; recorded as model_spec.tp)
  std::string provenance;    // --provenance: recorded in the profile ("" = measured here)
  TimerChoice timer = TimerChoice::kAuto;
  // CUDA: time replays of each cell's pass captured as a CUDA graph (profiler/cuda_graph.h), as
  // engines run their steps; false, or a build/op that cannot capture, times eager passes.
  bool cuda_graphs = true;
  std::ostream* progress = nullptr;  // progress lines (stderr in the CLI); nullptr = silent
  // Kernels mode (profiler/kernel_bench.h) only:
  double budget_s = 0;           // --budget-s: cap on the timing's wall time (0 = none); coarsens
  std::string kernels_dir;       // --kernels-dir: root of the tables ("" = <out's folder>/kernels)
  bool progress_bar = false;     // redraw one bar line (a terminal) instead of plain lines
  std::function<bool()> cancel;  // polled between timings; true = stop (SIGINT in the CLI)
};

// Defaults the CLI documents.
std::vector<int64_t> DefaultSGrid(bool cuda);  // CPU: 1 2 4 8 16 32; CUDA: 1 .. 256
std::vector<int64_t> DefaultCGrid(bool cuda);  // CPU: 0 64 128 256; CUDA: 0 .. 4096

// Parses "1,2,4,8" (spaces allowed) into a sorted list of distinct integers >= min_value. Errors
// name the flag and the bad entry: "--s-grid: '4x' is not an integer", "--c-grid: empty".
absl::StatusOr<std::vector<int64_t>> ParseGrid(const std::string& text, const std::string& flag,
                                               int64_t min_value);

// The target to calibrate: the runtime architecture (absent when only the cost-model spec is
// known) and the cost-model spec the profile records.
struct ResolvedTarget {
  std::optional<runtime::ModelConfig> config;
  costmodel::ModelSpec spec;    // spec.name = the profile's model name; spec.dtype = `dtype`
  std::string runtime_problem;  // why `config` is absent (e.g. a MoE target the runtime does not
                                // run); such a target can only be fitted from samples
};
// config_path set: that config.json (costmodel::HfConfigFromFile), named `model`. Else a built-in
// runtime config ("tiny", "tiny-qwen3", ...), else a costmodel registry model (qwen3-8b,
// llama-3.1-8b, ...: costmodel::LookupHfConfig, its published config). The spec is
// costmodel::ToModelSpec of the config. A config the runtime cannot build (MoE) resolves with only
// the spec and `runtime_problem` set.
absl::StatusOr<ResolvedTarget> ResolveTarget(const std::string& model,
                                             const std::string& config_path,
                                             costmodel::DType dtype);

// Largest --b-grid entry.
inline constexpr int64_t kMaxBatch = 1024;

// One measured grid cell: medians over the repeats.
struct MeasuredCell {
  int64_t s = 0, c = 0;
  PassTiming median;  // each field the median of its own repeats
  int64_t b = 1;      // sequences in the pass
};

struct CalibrationResult {
  costmodel::Profile profile;
  std::string profile_path;
  std::string png_path;   // empty when no PNG was written
  std::string plot_note;  // why no PNG was written (e.g. the plot library is unimplemented)
  std::vector<MeasuredCell> cells;  // empty for --from-samples
  std::vector<std::string> notes;   // timer fallbacks and other remarks, also sent to progress
  // Kernels mode: the engine folder the tables were written to and the tables written.
  std::string kernels_dir;
  std::vector<std::string> tables;
};

// The device calibrate runs on (--device, else cuda when --gpu is not cpu and LibTorch has CUDA),
// checked against --gpu (CheckDeviceMatchesGpu; the error ends with EngineProfilesHint when the
// run cannot happen here).
struct RunDevice {
  DeviceInfo info;
  torch::Device device;
};
absl::StatusOr<RunDevice> ResolveRunDevice(const CalibrateOptions& options,
                                           const costmodel::GpuSpec& gpu);

// Runs the whole pipeline of `calibrate --mode runtime` (and of --from-samples). Errors (nothing
// written): bad options (each naming its flag), a device/--gpu mismatch without force
// (FAILED_PRECONDITION), unreadable or invalid samples, a failed fit or save. When the run cannot
// happen on this machine's device (a --gpu that is not the device, or no CUDA), the error ends with
// EngineProfilesHint.
absl::StatusOr<CalibrationResult> RunCalibration(const CalibrateOptions& options);

// What stands in for calibrating `gpu` x `model` elsewhere: the engine-grade bf16 profiles that
// ship for them under calib_dir (BundledProfilePath with each engine but "specplan"), and the
// command that composes one from an engine's kernel timings ("specplan profiles compose --kernels
// DIR --engine NAME --model MODEL --out FILE"). `gpu` is a registry name ("a100-80g"); `model` is
// resolved as --model is (costmodel::ResolveModel) for the name the files use, else used as is.
std::string EngineProfilesHint(const std::string& calib_dir, const std::string& gpu,
                               const std::string& model);

// Two-panel chart: predicted vs measured (ms, one series per model in the profile, identity line)
// and latency vs s per c (measured points, default-model lines). PNG bytes, or the plot library's
// error.
absl::StatusOr<std::string> RenderCalibrationPng(const costmodel::Profile& profile);

// CSV of measured cells: b,s,c,seconds,kernels,kernel_s,span_s,gemm_s,attention_s,other_s. It is
// a valid --from-samples input.
std::string CellsToCsv(const std::vector<MeasuredCell>& cells);

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_CALIBRATION_H_
