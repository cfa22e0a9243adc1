// specplan profiles compose: engine-grade profiles from an engine's per-kernel timings
// (costmodel/compose/compose.h). One --kernels folder and one --model write --out FILE; several
// folders and models (repeated --kernels, comma-separated --model) write --out-dir DIR/<gpu>/
// <model>-<dtype>@<engine>.json each. Every profile is composed before any file is written, so
// bad input writes nothing, and nothing is written into the shipped profiles directory (calib/)
// unless --force (util/shipped_dir.h).
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "util/shipped_dir.h"

namespace specplan::cli {
namespace {

struct ComposeArgs {
  std::vector<std::string> kernels;
  std::vector<std::string> models;
  std::string engine;
  std::string gpu;
  std::string dtype = "bf16";
  int64_t tp = 1;
  std::string out;
  std::string out_dir;
  std::vector<int64_t> b_grid, s_grid, c_grid;
  std::vector<std::string> drafters;  // --drafters; empty = the defaults (eagle, eagle3, mtp)
  bool no_extrapolate = false;
  bool kernels_only = false;
  bool quiet = false;
  bool force = false;  // --force: write into the shipped profiles directory
};

int RunCompose(const ComposeArgs& a) {
  using namespace specplan::costmodel;
  const char* me = "specplan profiles compose: ";
  if (a.out.empty() == a.out_dir.empty()) {
    std::cerr << me << "give exactly one of --out FILE (one folder, one model) and --out-dir DIR\n";
    return 1;
  }
  if (!a.out.empty() && (a.kernels.size() != 1 || a.models.size() != 1)) {
    std::cerr << me << "--out " << a.out << ": takes one --kernels folder and one --model (got "
              << a.kernels.size() << " and " << a.models.size() << "); use --out-dir for more\n";
    return 1;
  }
  auto dtype = ParseDType(a.dtype);
  if (!dtype.ok()) {
    std::cerr << me << "--" << dtype.status().message() << "\n";
    return 1;
  }
  ComposeOptions o;
  o.engine = a.engine;
  o.tp = a.tp;
  o.dtype = *dtype;
  o.gpu = a.gpu;
  o.unmeasured_terms = !a.kernels_only;
  o.allow_extrapolation = !a.no_extrapolate;
  o.b_grid = a.b_grid;
  o.s_grid = a.s_grid;
  o.c_grid = a.c_grid;
  o.drafters = a.drafters;

  struct Composed {
    Profile profile;
    std::string path;
    double seconds;
  };
  std::vector<Composed> out;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& dir : a.kernels) {
    auto tables = LoadEngineKernelTables(dir);
    if (!tables.ok()) {
      std::cerr << me << tables.status().message() << "\n";
      return 1;
    }
    for (const std::string& model : a.models) {
      const auto start = std::chrono::steady_clock::now();
      auto p = ComposeProfile(*tables, model, o);
      if (!p.ok()) {
        std::cerr << me << dir << " x " << model << ": " << p.status().message() << "\n";
        return 1;
      }
      const std::string path = a.out.empty()
                                   ? BundledProfilePath(a.out_dir, p->gpu, p->model, p->dtype,
                                                        p->model_spec.tp, p->engine)
                                   : a.out;
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      out.push_back({*std::move(p), path, sec});
    }
  }
  // Nothing over the shipped profiles (calib/) unless --force; checked before anything is written.
  for (const Composed& c : out) {
    const absl::Status st = CheckNotShipped(a.out.empty() ? "--out-dir writes" : "--out", c.path,
                                            ShippedCalibDirs(DefaultCalibDir()), a.force);
    if (!st.ok()) {
      std::cerr << me << st.message() << "\n";
      return 1;
    }
  }
  // Everything composed: now write, each file atomically.
  for (const Composed& c : out) {
    if (auto st = SaveProfile(c.profile, c.path); !st.ok()) {
      std::cerr << me << st.message() << "\n";
      return 1;
    }
    if (a.quiet) continue;
    const TableLatency t(RooflineLatency(c.profile.model_spec, c.profile.gpu_spec),
                         *c.profile.table);
    const double t1 = t.VerifySeconds(1, 1024);
    BatchShape batch64;
    for (int i = 0; i < 64; ++i) batch64.Add(1, 1024);
    const double t64 = t.VerifyBatchSeconds(batch64);
    std::cout << absl::StrFormat(
        "wrote %s: %s %s on %s, T(1,1,1024) = %.3f ms, T(64,1,1024) = %.3f ms (%.2fx), composed "
        "in %.0f ms\n",
        c.path, c.profile.engine, c.profile.engine_version, c.profile.gpu, t1 * 1e3, t64 * 1e3,
        t64 / t1, c.seconds * 1e3);
  }
  if (!a.quiet) {
    std::cout << absl::StrFormat(
        "%d profile(s) in %.2f s\n", static_cast<int>(out.size()),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 0;
}

}  // namespace

void RegisterProfilesComposeCommand(CLI::App* profiles, int* exit_code) {
  auto [cmd, a] = AddCommand(
      profiles, "compose",
      "Compose an engine-grade profile from an engine's per-kernel timings (GEMM, context and "
      "generation attention tables, aiconfigurator layout; see data/kernels/README.md)",
      exit_code, &RunCompose);
  cmd->add_option("--kernels", a->kernels,
                  "Engine folder, e.g. data/kernels/h100_sxm/sglang-0.5.14 (the GPU comes from "
                  "its data); repeat for several")
      ->required()
      ->take_all();
  cmd->add_option("--model", a->models,
                  "Target model: built-in name (qwen3-8b) or HF config.json; comma-separated for "
                  "several")
      ->required()
      ->delimiter(',');
  cmd->add_option("--engine", a->engine,
                  "sglang, vllm or trtllm (default: from the folder name; must agree with it)");
  cmd->add_option("--gpu", a->gpu,
                  "GPU registry name or JSON spec (default: from the tables' device string)");
  cmd->add_option("--tp", a->tp, "Tensor parallelism (widths and heads per GPU)")
      ->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "Element type (the tables hold bf16 only)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Profile file to write (one folder, one model)");
  cmd->add_option(
      "--out-dir", a->out_dir,
      "Directory to write <gpu>/<model>-<dtype>@<engine>.json under (the shipped calib/ "
      "only with --force)");
  cmd->add_option("--b-grid", a->b_grid, "Batch sizes of the table (default 1..256)")
      ->delimiter(',');
  cmd->add_option("--s-grid", a->s_grid, "Tokens per sequence (default 1..256)")->delimiter(',');
  cmd->add_option("--c-grid", a->c_grid, "Cached tokens (default 0..32768)")->delimiter(',');
  cmd->add_option("--drafters", a->drafters,
                  "Drafter architectures to compose beside the target, comma-separated (eagle, "
                  "eagle3, mtp, draft:MODEL, block:MODEL; default: eagle, eagle3, mtp; none: "
                  "none)")
      ->delimiter(',');
  cmd->add_flag("--no-extrapolate", a->no_extrapolate,
                "Refuse a grid cell that reads a table past its largest measured point");
  cmd->add_flag("--kernels-only", a->kernels_only,
                "Leave out the terms the tables do not hold (GEMM + attention + LM head only)");
  cmd->add_flag("--quiet", a->quiet, "Print nothing on success");
  cmd->add_flag("--force", a->force,
                "Allow writing into the shipped profiles directory (calib/, or "
                "$SPECPLAN_CALIB_DIR), over the profiles specplan ships");
}

}  // namespace specplan::cli
