// `calibrate`: resolves the target (registry name or HF config), times verification passes over the
// (s, c) grid with the chosen timer, fits every latency-model kind, writes the profile, its raw
// samples (CSV) and the fit chart (PNG). Over 500 lines because it is the one place that ties the
// runtime's passes to the cost model's fits; each stage is its own function below.

#include "profiler/calibration.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile_json.h"
#include "plot/chart.h"
#include "profiler/cuda_graph.h"
#include "profiler/cuda_info.h"
#include "profiler/device_check.h"
#include "profiler/samples_file.h"
#include "runtime/transformer.h"
#include "util/atomic_file.h"
#include "util/shipped_dir.h"
#include "util/status_macros.h"

namespace specplan::profiler {
namespace {

using costmodel::DType;
using costmodel::LatencySample;
using costmodel::ModelSpec;
using costmodel::Profile;

void Say(const CalibrateOptions& o, const std::string& line) {
  if (o.progress != nullptr) *o.progress << "calibrate: " << line << std::endl;
}

std::string PngPathFor(const std::string& profile_path) {
  std::filesystem::path p(profile_path);
  if (p.extension() == ".json") return p.replace_extension(".png").string();
  return profile_path + ".png";
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

PassTiming MedianTiming(const std::vector<PassTiming>& runs) {
  auto field = [&](auto member) {
    std::vector<double> v;
    for (const PassTiming& t : runs) v.push_back(static_cast<double>(t.*member));
    return Median(v);
  };
  PassTiming m;
  m.seconds = field(&PassTiming::seconds);
  m.kernels = static_cast<int64_t>(field(&PassTiming::kernels) + 0.5);
  m.kernel_seconds = field(&PassTiming::kernel_seconds);
  m.span_seconds = field(&PassTiming::span_seconds);
  m.gemm_seconds = field(&PassTiming::gemm_seconds);
  m.attention_seconds = field(&PassTiming::attention_seconds);
  m.other_seconds = field(&PassTiming::other_seconds);
  return m;
}

// Inputs of one verification pass of a random tree of s tokens over c cached tokens:
// parents[i] uniform in [0, i), positions c + depth(i), the tree's ancestor mask.
struct PassInputs {
  torch::Tensor tokens, positions, mask;
};
PassInputs RandomTreeInputs(int64_t s, int64_t c, int64_t vocab, std::mt19937_64& rng,
                            torch::Device device) {
  std::vector<int64_t> parents(s, -1), depth(s, 0), positions(s);
  std::vector<planner::TokenId> tokens(s);
  std::vector<uint8_t> dense(static_cast<size_t>(s * s), 0);
  std::uniform_int_distribution<int64_t> token_dist(0, vocab - 1);
  for (int64_t i = 0; i < s; ++i) {
    if (i > 0) {
      parents[i] = std::uniform_int_distribution<int64_t>(0, i - 1)(rng);
      depth[i] = depth[parents[i]] + 1;
      for (int64_t j = 0; j < s; ++j) dense[i * s + j] = dense[parents[i] * s + j];
    }
    dense[i * s + i] = 1;
    tokens[i] = static_cast<planner::TokenId>(token_dist(rng));
    positions[i] = c + depth[i];
  }
  PassInputs in;
  in.tokens = torch::tensor(tokens, torch::kInt32).to(device);
  in.positions = torch::tensor(positions, torch::kInt64).to(device);
  in.mask = runtime::TreeAttentionMask(dense, s, c, device);
  return in;
}

// Times the grid: for each b, c and s, one ragged pass of b sequences, each verifying a random
// tree of s tokens over its own cache of c tokens. *timer may be replaced when the auto-chosen
// CUPTI timer fails its first pass.
absl::StatusOr<std::vector<MeasuredCell>> MeasureGrid(
    const runtime::Transformer& model, const CalibrateOptions& o,
    const std::vector<int64_t>& s_grid, const std::vector<int64_t>& c_grid,
    const std::vector<int64_t>& b_grid, int repeats, const TimerRequest& request,
    std::unique_ptr<PassTimer>* timer, std::vector<std::string>* notes, bool* all_graphs) {
  const torch::Device device = model.options().device;
  // One cache per sequence of the largest batch, consecutive rows of one arena: a pass attends
  // for all b sequences in one call per layer, as an engine's batched attention does.
  std::vector<runtime::KvCache> caches = runtime::KvCache::Batch(
      model.config(), b_grid.back(), c_grid.back() + s_grid.back(), model.options().dtype, device);
  c10::InferenceMode guard;
  std::mt19937_64 rng(o.seed ^ 0x5bd1e995ULL);
  const int64_t vocab = model.config().vocab_size;
  std::vector<MeasuredCell> cells;
  const size_t total = b_grid.size() * s_grid.size() * c_grid.size();
  bool first_pass = true;
  // CUDA graphs: each cell's pass is captured once over static input tensors; every repeat copies
  // a fresh random tree into them and times a replay. Off on the CPU, when not requested, or after
  // a capture fails (the rest of the grid then runs eager, and the note says why).
  bool graphs = device.is_cuda() && o.cuda_graphs;
  if (graphs && !BuiltWithCudaGraphs()) {
    graphs = false;
    notes->push_back("cuda graphs: not in this build; timing eager passes");
    Say(o, notes->back());
  }
  for (int64_t b : b_grid) {
    for (int64_t c : c_grid) {
      for (int64_t s : s_grid) {
        std::vector<PassTiming> runs;
        const int extra_warmup = first_pass ? 3 : 0;  // cuBLAS handles, allocator, thread pools
        std::vector<PassInputs> in;
        std::vector<runtime::ForwardSegment> segments;
        for (int64_t i = 0; i < b; ++i) {
          in.push_back(RandomTreeInputs(s, c, vocab, rng, device));
          segments.push_back({in[i].tokens, in[i].positions, c, in[i].mask, &caches[i]});
        }
        auto pass = [&] { (void)model.ForwardBatch(segments); };
        const std::string cell_name = b == 1 ? absl::StrCat("s = ", s, ", c = ", c)
                                             : absl::StrCat("b = ", b, ", s = ", s, ", c = ", c);
        std::unique_ptr<CapturedPass> graph;
        if (graphs) {
          absl::StatusOr<std::unique_ptr<CapturedPass>> captured = CapturedPass::Capture(pass);
          if (captured.ok()) {
            graph = *std::move(captured);
          } else {
            graphs = false;
            notes->push_back(absl::StrCat(std::string(captured.status().message()),
                                          "; timing eager passes from ", cell_name));
            Say(o, notes->back());
          }
        }
        std::function<void()> timed = pass;
        if (graph != nullptr) timed = [&] { graph->Replay(); };
        for (int r = 0; r < extra_warmup + o.warmup + repeats; ++r) {
          for (PassInputs& seq : in) {
            PassInputs next = RandomTreeInputs(s, c, vocab, rng, device);
            seq.tokens.copy_(next.tokens);
            seq.positions.copy_(next.positions);
            seq.mask.copy_(next.mask);
          }
          absl::StatusOr<PassTiming> t = (*timer)->Time(timed);
          if (!t.ok() && first_pass && o.timer == TimerChoice::kAuto &&
              (*timer)->Name() == "cupti") {
            timer->reset();  // release CUPTI before falling back
            auto events = MakeCudaEventTimer(request.device_index);
            const std::string name = events.ok() ? "cuda_events" : "host_clock";
            notes->push_back(
                absl::StrCat("cupti: ", std::string(t.status().message()), "; using ", name));
            Say(o, notes->back());
            if (events.ok()) {
              *timer = std::move(*events);
            } else {
              *timer = std::make_unique<HostClockTimer>(request.host_sync);
            }
            t = (*timer)->Time(timed);
          }
          if (!t.ok()) {
            return absl::Status(t.status().code(), absl::StrCat("timing ", cell_name, ": ",
                                                                std::string(t.status().message())));
          }
          first_pass = false;
          if (r >= extra_warmup + o.warmup) runs.push_back(*t);
        }
        MeasuredCell cell{s, c, MedianTiming(runs), b};
        cells.push_back(cell);
        std::string line = absl::StrFormat(
            "[%d/%d] %ss=%d c=%d: %.3f ms (median of %d, %s%s)", cells.size(), total,
            b == 1 ? "" : absl::StrCat("b=", b, " "), s, c, cell.median.seconds * 1e3, repeats,
            (*timer)->Name(), graph != nullptr ? ", graph replay" : "");
        if (cell.median.kernels > 0 && cell.median.kernel_seconds > 0) {
          const double k = cell.median.kernel_seconds;
          absl::StrAppendFormat(&line, "; %d kernels, gemm %.0f%% attention %.0f%% other %.0f%%",
                                cell.median.kernels, 100 * cell.median.gemm_seconds / k,
                                100 * cell.median.attention_seconds / k,
                                100 * cell.median.other_seconds / k);
        }
        Say(o, line);
      }
    }
  }
  *all_graphs = graphs;
  return cells;
}

}  // namespace

std::vector<int64_t> DefaultSGrid(bool cuda) {
  if (cuda) return {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  return {1, 2, 4, 8, 16, 32};
}

std::vector<int64_t> DefaultCGrid(bool cuda) {
  if (cuda) return {0, 256, 512, 1024, 2048, 4096};
  return {0, 64, 128, 256};
}

absl::StatusOr<std::vector<int64_t>> ParseGrid(const std::string& text, const std::string& flag,
                                               int64_t min_value) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::string item(absl::StripAsciiWhitespace(part));
    if (item.empty()) {
      if (absl::StripAsciiWhitespace(text).empty()) break;
      return absl::InvalidArgumentError(absl::StrCat(flag, " '", text, "': empty entry"));
    }
    int64_t v = 0;
    if (!absl::SimpleAtoi(item, &v)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", item, "' is not an integer"));
    }
    if (v < min_value) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", v, " is out of range (must be >= ", min_value, ")"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": empty"));
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] == out[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", out[i], " appears twice"));
    }
  }
  return out;
}

absl::StatusOr<ResolvedTarget> ResolveTarget(const std::string& model,
                                             const std::string& config_path, DType dtype) {
  if (model.empty()) return absl::InvalidArgumentError("--model: required");
  absl::StatusOr<costmodel::HfConfig> config;
  if (!config_path.empty()) {
    config = costmodel::HfConfigFromFile(config_path);
    if (!config.ok()) return config.status();
  } else if (auto builtin = runtime::BuiltinConfig(model); builtin.ok()) {
    config = *std::move(builtin);
  } else {
    config = costmodel::LookupHfConfig(model);
    if (!config.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model '", model, "': not a built-in runtime config (",
          absl::StrJoin(runtime::BuiltinConfigNames(), ", "), ") nor a known model (",
          absl::StrJoin(costmodel::KnownModelNames(), ", "), "); pass --config config.json"));
    }
  }
  ResolvedTarget t;
  t.spec = costmodel::ToModelSpec(*config);
  if (!config_path.empty()) t.spec.name = model;  // else the built-in's or registry's own name
  t.spec.dtype = dtype;
  if (absl::Status runnable = runtime::ValidateModelConfig(*config); runnable.ok()) {
    t.config = *std::move(config);
  } else {
    // The cost model reads model types the runtime does not run (MoE): enough to fit samples
    // measured elsewhere; RunCalibration refuses to time a target without a runtime config.
    t.runtime_problem = std::string(runnable.message());
    if (!config_path.empty())
      t.runtime_problem = absl::StrCat(config_path, ": ", t.runtime_problem);
  }
  absl::Status st = costmodel::ValidateModelSpec(t.spec);
  if (!st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model ", model, ": ", std::string(st.message())));
  }
  return t;
}

std::string CellsToCsv(const std::vector<MeasuredCell>& cells) {
  std::string out = "b,s,c,seconds,kernels,kernel_s,span_s,gemm_s,attention_s,other_s\n";
  for (const MeasuredCell& x : cells) {
    const PassTiming& t = x.median;
    absl::StrAppendFormat(&out, "%d,%d,%d,%.9g,%d,%.9g,%.9g,%.9g,%.9g,%.9g\n", x.b, x.s, x.c,
                          t.seconds, t.kernels, t.kernel_seconds, t.span_seconds, t.gemm_seconds,
                          t.attention_seconds, t.other_seconds);
  }
  return out;
}

absl::StatusOr<std::string> RenderCalibrationPng(const Profile& p) {
  constexpr uint32_t kPalette[] = {0x1f77b4, 0xd62728, 0x2ca02c, 0x9467bd,
                                   0xff7f0e, 0x8c564b, 0xe377c2, 0x17becf};
  plot::Chart scatter;
  scatter.title = absl::StrFormat("%s / %s / %s: predicted vs measured (timer %s)", p.gpu, p.model,
                                  costmodel::DTypeName(p.dtype), p.timer);
  scatter.x.label = "measured latency (ms)";
  scatter.y.label = "predicted latency (ms)";
  scatter.identity_line = true;
  size_t color = 0;
  for (const char* kind : {"linear", "per_term", "table"}) {
    auto model = costmodel::MakeLatencyModel(p, kind);
    if (!model.ok()) continue;
    plot::Series series;
    series.style = plot::SeriesStyle::kPoints;
    series.rgb = kPalette[color++ % 8];
    series.label = kind;
    if (std::string(kind) == "table") {
      series.label += " (in-sample: built from every cell)";
    } else if (auto it = p.heldout.find(kind); it != p.heldout.end()) {
      series.label += absl::StrFormat(" (held-out MAPE %.1f%%)", 100 * it->second.mape);
    }
    for (const costmodel::ProfileSample& x : p.samples) {
      series.x.push_back(x.sample.seconds * 1e3);
      series.y.push_back(costmodel::PredictSample(**model, x.sample) * 1e3);
    }
    scatter.series.push_back(std::move(series));
  }

  plot::Chart by_s;
  by_s.title = absl::StrFormat("latency vs tokens verified: measured (points), %s model (lines)",
                               p.default_model);
  by_s.x.label = "s (tokens verified)";
  by_s.y.label = "latency (ms)";
  // One series per (b, c): passes of b sequences over c cached tokens each.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, double>>> by_c;
  for (const costmodel::ProfileSample& x : p.samples) {
    by_c[{x.sample.b, x.sample.c}].push_back({x.sample.s, x.sample.seconds});
  }
  auto def = costmodel::MakeLatencyModel(p);
  color = 0;
  for (auto& [bc, points] : by_c) {
    const auto [b, c] = bc;
    std::sort(points.begin(), points.end());
    const uint32_t rgb = kPalette[color++ % 8];
    plot::Series measured;
    measured.label = b == 1 ? absl::StrCat("c=", c) : absl::StrCat("b=", b, " c=", c);
    measured.style = plot::SeriesStyle::kPoints;
    measured.rgb = rgb;
    plot::Series predicted;
    predicted.style = plot::SeriesStyle::kLine;
    predicted.rgb = rgb;
    for (const auto& [s, sec] : points) {
      measured.x.push_back(static_cast<double>(s));
      measured.y.push_back(sec * 1e3);
      if (def.ok()) {
        predicted.x.push_back(static_cast<double>(s));
        predicted.y.push_back(costmodel::PredictSample(**def, {s, c, 0, b}) * 1e3);
      }
    }
    by_s.series.push_back(std::move(measured));
    if (def.ok()) by_s.series.push_back(std::move(predicted));
  }
  return plot::RenderPng({scatter, by_s}, 900, 1100);
}

std::string EngineProfilesHint(const std::string& calib_dir, const std::string& gpu,
                               const std::string& model) {
  const costmodel::DType dtype = costmodel::DType::kBFloat16;  // what a CUDA run would measure
  // A registry name resolves to the name the files use ("qwen3-8b"); anything else is used as is.
  absl::StatusOr<costmodel::ModelSpec> spec = costmodel::ResolveModel(model);
  if (!spec.ok()) {
    // Not a model the cost model knows (a built-in runtime config such as tiny): no engine has
    // kernel timings of it and compose would refuse it, so suggest what does run.
    return absl::StrCat("--model ", model,
                        " is not in the cost model's registry (specplan profiles compose takes "
                        "registry models or an HF config.json), so no engine-grade profile can "
                        "stand in for it; calibrate it on this machine instead: calibrate --gpu "
                        "cpu --model ",
                        model, " --out FILE");
  }
  const std::string name = spec->name;
  std::vector<std::string> shipped;
  for (const std::string& engine : costmodel::KnownEngines()) {
    if (engine == costmodel::kRuntimeEngine) continue;  // engine-grade profiles only
    const std::string path = costmodel::BundledProfilePath(calib_dir, gpu, name, dtype, 1, engine);
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) shipped.push_back(path);
  }
  const std::string what = absl::StrCat(gpu, " x ", name, " (", costmodel::DTypeName(dtype), ")");
  const std::string compose = absl::StrCat(
      "specplan profiles compose --kernels DIR --engine NAME --model ", name, " --out FILE");
  if (shipped.empty()) {
    return absl::StrCat("No engine-grade profile ships for ", what,
                        "; compose one from an engine's kernel timings: ", compose);
  }
  return absl::StrCat("Engine-grade profiles of ", what,
                      " ship instead (specplan commands take them with --engine NAME): ",
                      absl::StrJoin(shipped, ", "),
                      "; or compose one from an engine's kernel timings: ", compose);
}

absl::StatusOr<RunDevice> ResolveRunDevice(const CalibrateOptions& o,
                                           const costmodel::GpuSpec& gpu) {
  std::string dev = o.device;
  if (dev.empty()) dev = (gpu.name != "cpu" && torch::cuda::is_available()) ? "cuda" : "cpu";
  const std::string calib_dir = o.calib_dir.empty() ? costmodel::DefaultCalibDir() : o.calib_dir;
  absl::StatusOr<torch::Device> parsed = runtime::ParseDevice(dev);
  if (!parsed.ok()) {
    std::string message = absl::StrCat("--device ", dev, ": ", parsed.status().message());
    if (gpu.name != "cpu") {
      absl::StrAppend(&message, ". ", EngineProfilesHint(calib_dir, gpu.name, o.model));
    }
    return absl::InvalidArgumentError(message);
  }
  RunDevice r{DeviceInfo{}, *parsed};
  r.info.cuda = r.device.is_cuda();
  r.info.index = r.device.has_index() ? r.device.index() : 0;
  if (r.info.cuda) {
    auto name = CudaDeviceName(r.info.index);
    if (name.ok()) r.info.name = *name;
  } else {
    r.info.name = HostCpuName();
  }
  if (absl::Status st = CheckDeviceMatchesGpu(gpu, r.info, o.force); !st.ok()) {
    // Cannot run here: say what can stand in for a measurement of this GPU.
    if (gpu.name == "cpu") return st;
    return absl::Status(st.code(), absl::StrCat(st.message(), " ",
                                                EngineProfilesHint(calib_dir, gpu.name, o.model)));
  }
  return r;
}

absl::StatusOr<CalibrationResult> RunCalibration(const CalibrateOptions& o) {
  CalibrationResult result;
  if (o.gpu.empty()) return absl::InvalidArgumentError("--gpu: required");
  absl::StatusOr<costmodel::GpuSpec> gpu = costmodel::ResolveGpu(o.gpu);
  if (!gpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu ", o.gpu, ": ", std::string(gpu.status().message())));
  }
  const bool from_samples = !o.from_samples.empty();

  // Device (runs only).
  DeviceInfo device;
  torch::Device torch_device = torch::kCPU;
  if (!from_samples) {
    SPECPLAN_ASSIGN_OR_RETURN(RunDevice run_device, ResolveRunDevice(o, *gpu));
    device = run_device.info;
    torch_device = run_device.device;
  }

  // dtype and target.
  std::string dtype_name = o.dtype;
  if (dtype_name.empty()) {
    const bool cpu = from_samples ? gpu->name == "cpu" : !device.cuda;
    dtype_name = cpu ? "fp32" : "bf16";
  }
  absl::StatusOr<DType> dtype = costmodel::ParseDType(dtype_name);
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype ", dtype_name, ": ", std::string(dtype.status().message())));
  }
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedTarget target, ResolveTarget(o.model, o.config, *dtype));
  if (o.tp != 1) {
    if (!from_samples) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tp ", o.tp, ": only with --from-samples (calibrate times one local device)"));
    }
    if (const std::string why = costmodel::TensorParallelProblem(target.spec, *gpu, o.tp);
        !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--tp ", o.tp, ": ", why));
    }
    target.spec.tp = o.tp;
  }
  if (from_samples && !o.b_grid.empty()) {
    return absl::InvalidArgumentError(
        "--b-grid: only when timing passes here (with --from-samples, the file's b column gives "
        "each sample's batch)");
  }
  if (!from_samples && !target.config) {
    return absl::InvalidArgumentError(absl::StrCat("--model ", o.model, ": ",
                                                   target.runtime_problem,
                                                   "; fit its samples with --from-samples"));
  }

  const std::string out_path =
      !o.out.empty() ? o.out
                     : costmodel::BundledProfilePath(
                           o.calib_dir.empty() ? costmodel::DefaultCalibDir() : o.calib_dir,
                           gpu->name, target.spec.name, *dtype, target.spec.tp);
  if (std::filesystem::is_directory(out_path)) {
    return absl::InvalidArgumentError(absl::StrCat("--out ", out_path, ": is a directory"));
  }
  // Never over the shipped profiles (calib/) unless --force; refused before anything runs.
  SPECPLAN_RETURN_IF_ERROR(CheckNotShipped(
      o.out.empty() ? "no --out: default path" : "--out", out_path,
      ShippedCalibDirs(o.calib_dir.empty() ? costmodel::DefaultCalibDir() : o.calib_dir), o.force));
  if (!(o.holdout >= 0 && o.holdout < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--holdout ", o.holdout, ": must be in [0, 1) (0 = fit on everything)"));
  }
  costmodel::FitOptions fit_options;
  fit_options.seed = o.seed;
  fit_options.heldout_fraction = o.holdout;

  std::vector<LatencySample> samples;
  std::string timer_name = "external";
  std::map<std::string, std::string> software;
  if (from_samples) {
    SPECPLAN_ASSIGN_OR_RETURN(samples, ReadSamplesFile(o.from_samples));
    software["samples_file"] = std::filesystem::path(o.from_samples).filename().string();
    device.name = "unknown (external samples)";
    Say(o, absl::StrCat("read ", samples.size(), " samples from ", o.from_samples));
  } else {
    const bool cuda = device.cuda;
    std::vector<int64_t> s_grid = o.s_grid.empty() ? DefaultSGrid(cuda) : o.s_grid;
    std::vector<int64_t> c_grid = o.c_grid.empty() ? DefaultCGrid(cuda) : o.c_grid;
    std::vector<int64_t> b_grid = o.b_grid.empty() ? std::vector<int64_t>{1} : o.b_grid;
    std::sort(s_grid.begin(), s_grid.end());
    std::sort(c_grid.begin(), c_grid.end());
    std::sort(b_grid.begin(), b_grid.end());
    if (b_grid.front() < 1 || b_grid.back() > kMaxBatch) {
      const int64_t bad = b_grid.front() < 1 ? b_grid.front() : b_grid.back();
      return absl::InvalidArgumentError(
          absl::StrCat("--b-grid: ", bad, " is out of range (must be in [1, ", kMaxBatch, "])"));
    }
    if (b_grid.front() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--b-grid: must include 1 (the single-sequence passes every profile holds), got ",
          absl::StrJoin(b_grid, ",")));
    }
    if (s_grid.front() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--s-grid: ", s_grid.front(), " is out of range (must be >= 1)"));
    }
    if (c_grid.front() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--c-grid: ", c_grid.front(), " is out of range (must be >= 0)"));
    }
    const int64_t max_pos = target.config->max_position_embeddings;
    if (s_grid.back() + c_grid.back() > max_pos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--s-grid/--c-grid: s = ", s_grid.back(), " over c = ", c_grid.back(),
                       " exceeds max_position_embeddings = ", max_pos, " of ", target.spec.name));
    }
    if (s_grid.size() * c_grid.size() < 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("--s-grid x --c-grid: ", s_grid.size() * c_grid.size(),
                       " cells; need >= 3 to fit and hold out"));
    }
    const int repeats = o.repeats > 0 ? o.repeats : (cuda ? 10 : 5);
    if (o.repeats < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--repeats ", o.repeats, ": must be >= 1"));
    }
    if (o.warmup < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--warmup ", o.warmup, ": must be >= 0"));
    }
    absl::StatusOr<torch::ScalarType> scalar = runtime::ParseDtype(dtype_name);
    if (!scalar.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dtype ", dtype_name, ": ", std::string(scalar.status().message())));
    }

    TimerRequest request;
    request.cuda = cuda;
    request.device_index = device.index;
    request.choice = o.timer;
    if (cuda) {
      const int64_t index = device.index;
      request.host_sync = [index] { torch::cuda::synchronize(index); };
    }
    SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PassTimer> timer,
                              MakePassTimer(request, &result.notes));
    for (const std::string& n : result.notes) Say(o, n);

    runtime::RuntimeOptions ropts;
    ropts.dtype = *scalar;
    ropts.device = torch_device;
    Say(o, absl::StrFormat("building %s (%s, random weights, seed %d) on %s", target.spec.name,
                           dtype_name, o.seed, device.name));
    absl::StatusOr<std::unique_ptr<runtime::Transformer>> model =
        runtime::Transformer::CreateRandom(*target.config, o.seed, ropts);
    if (!model.ok()) {
      return absl::Status(model.status().code(),
                          absl::StrCat("--model ", o.model, " --dtype ", dtype_name, ": ",
                                       std::string(model.status().message())));
    }
    Say(o, absl::StrFormat("timing %s%d x %d grid, %d warm-up + %d timed passes per cell (%s)",
                           b_grid.size() > 1 ? absl::StrCat(b_grid.size(), " batch sizes x ") : "",
                           s_grid.size(), c_grid.size(), o.warmup, repeats, timer->Name()));
    bool all_graphs = false;
    SPECPLAN_ASSIGN_OR_RETURN(
        result.cells, MeasureGrid(**model, o, s_grid, c_grid, b_grid, repeats, request, &timer,
                                  &result.notes, &all_graphs));
    for (const MeasuredCell& cell : result.cells) {
      samples.push_back({cell.s, cell.c, cell.median.seconds, cell.b});
    }
    timer_name = timer->Name();
    software = SoftwareVersions(cuda);
    if (!cuda) software["torch_threads"] = absl::StrCat(at::get_num_threads());
    software["calibrate"] = absl::StrFormat("repeats=%d warmup=%d seed=%d device=%s", repeats,
                                            o.warmup, o.seed, torch_device.str());
    if (b_grid.size() > 1) software["calibrate"] += " b_grid=" + absl::StrJoin(b_grid, ",");
    // How each pass ran: replays of a CUDA graph per cell, or eager LibTorch ops.
    if (cuda) software["pass"] = all_graphs ? "cuda_graph_replay" : "eager";
  }

  absl::StatusOr<Profile> fitted = costmodel::FitProfile(target.spec, *gpu, samples, fit_options);
  if (!fitted.ok()) {
    return absl::Status(fitted.status().code(),
                        absl::StrCat(from_samples ? o.from_samples + ": " : "",
                                     "fit: ", std::string(fitted.status().message())));
  }
  Profile& p = *fitted;
  p.timer = timer_name;
  p.device_name = device.name;
  p.software = software;
  p.provenance = o.provenance;

  // Optional CSV of the measured cells (written before the profile; a bad path fails the run).
  if (!o.samples_out.empty() && !result.cells.empty()) {
    SPECPLAN_RETURN_IF_ERROR(WriteFileAtomically(o.samples_out, CellsToCsv(result.cells)));
  }
  SPECPLAN_RETURN_IF_ERROR(costmodel::SaveProfile(p, out_path));
  result.profile_path = out_path;
  for (const std::string& note : p.notes) Say(o, absl::StrCat("fit: ", note));
  Say(o, absl::StrCat("wrote ", out_path, " (default model ", p.default_model, ")"));

  if (o.plot) {
    absl::StatusOr<std::string> png = RenderCalibrationPng(p);
    if (png.ok()) {
      const std::string png_path = PngPathFor(out_path);
      absl::Status st = WriteFileAtomically(png_path, *png);
      if (st.ok()) {
        result.png_path = png_path;
        Say(o, absl::StrCat("wrote ", png_path));
      } else {
        result.plot_note = std::string(st.message());
      }
    } else {
      result.plot_note = absl::StrCat("plot: ", std::string(png.status().message()));
    }
    if (!result.plot_note.empty()) Say(o, absl::StrCat("no PNG: ", result.plot_note));
  }
  result.profile = std::move(p);
  return result;
}

}  // namespace specplan::profiler
