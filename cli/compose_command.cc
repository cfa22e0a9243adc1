// specplan profiles compose: engine-grade profiles from an engine's per-kernel timings
// (costmodel/compose/compose.h, through ops/compose_op.h). One --kernels folder and one --model
// write --out FILE; several folders and models (repeated --kernels, comma-separated --model) write
// --out-dir DIR/<gpu>/ <model>-<dtype>@<engine>.json each. Every profile is composed before any
// file is written, so bad input writes nothing, and nothing is written into the shipped profiles
// directory (calib/) unless --force (util/shipped_dir.h).
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "costmodel/profile/calib_dir.h"
#include "ops/compose_op.h"
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
  int64_t moe_ep = 1;
  std::string moe_dtype;
  std::string routing = "balanced";
  bool no_extrapolate = false;
  bool kernels_only = false;
  bool quiet = false;
  bool force = false;  // --force: write into the shipped profiles directory
  bool mkdir = false;  // --mkdir: create --out's parent or --out-dir when missing
};

// The operation's field names in this command's flags ("out_file /x.json: ..." -> "--out /x.json:
// ...", "dtype: ..." -> "--dtype: ...").
std::string InFlagWords(const absl::Status& status) {
  return absl::StrReplaceAll(CostErrorInFlags(status).message(),
                             {{"out_file", "--out"},
                              {"out_dir", "--out-dir"},
                              {"kernel_dirs", "--kernels"},
                              {"one kernel folder", "one --kernels folder"},
                              {"one model (", "one --model ("}});
}

int RunCompose(const ComposeArgs& a) {
  const char* me = "specplan profiles compose: ";
  if (a.out.empty() == a.out_dir.empty()) {
    std::cerr << me << "give exactly one of --out FILE (one folder, one model) and --out-dir DIR\n";
    return 1;
  }
  ops::ComposeRequest req;
  req.kernel_dirs = a.kernels;
  req.models = a.models;
  req.dtype = a.dtype;
  req.options.engine = a.engine;
  req.options.tp = a.tp;
  req.options.gpu = a.gpu;
  req.options.unmeasured_terms = !a.kernels_only;
  req.options.allow_extrapolation = !a.no_extrapolate;
  req.options.b_grid = a.b_grid;
  req.options.s_grid = a.s_grid;
  req.options.c_grid = a.c_grid;
  req.options.drafters = a.drafters;
  req.options.moe.ep = a.moe_ep;
  req.options.moe.dtype = a.moe_dtype;
  req.options.moe.distribution = a.routing;
  req.out_file = a.out;
  req.out_dir = a.out_dir;
  req.protected_dirs = ShippedCalibDirs(costmodel::DefaultCalibDir());
  req.force = a.force;
  // The writers' convention (cli/command_util.h OutputFlags): a missing directory needs --mkdir.
  if (!a.out.empty() && Failed(me, CheckOutputPath("--out", a.out, {a.force, a.mkdir}))) return 1;
  if (std::error_code ec;
      !a.out_dir.empty() && !a.mkdir && !std::filesystem::is_directory(a.out_dir, ec)) {
    std::cerr << me << "--out-dir " << a.out_dir
              << ": not an existing directory (pass --mkdir to create it)\n";
    return 1;
  }
  // Every profile composed and every path checked before anything is written.
  absl::StatusOr<ops::ComposeResult> r = ops::Compose(req);
  if (r.ok()) {
    if (auto st = ops::Write(*r); !st.ok()) r = st;
  }
  if (!r.ok()) {
    std::cerr << me << InFlagWords(r.status()) << "\n";
    return 1;
  }
  if (a.quiet) return 0;
  for (const ops::ComposedProfile& c : r->profiles) std::cout << ops::WrittenLine(c);
  std::cout << absl::StrFormat("%d profile(s) in %.2f s\n", static_cast<int>(r->profiles.size()),
                               r->seconds);
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
  cmd->add_option("--c-grid", a->c_grid, "Cached tokens (default 0..32768)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{0}, ops::kMaxContext));
  cmd->add_option("--drafters", a->drafters,
                  "Drafter architectures to compose beside the target, comma-separated (eagle, "
                  "eagle3, mtp, draft:MODEL, block:MODEL; default: eagle, eagle3, mtp; none: "
                  "none)")
      ->delimiter(',');
  cmd->add_option("--moe-ep", a->moe_ep,
                  "MoE targets: GPUs the experts are split over within --tp (moe.csv's "
                  "moe_ep_size; each expert's width is split over tp / moe-ep)")
      ->capture_default_str();
  cmd->add_option("--moe-dtype", a->moe_dtype,
                  "MoE targets: moe.csv's moe_dtype of the experts (default: w4a16_mxfp4 for "
                  "gpt_oss, else bfloat16)");
  cmd->add_option("--routing", a->routing,
                  "MoE targets: moe.csv's routing distribution (balanced: assumes nothing about "
                  "the traffic and prices the largest MoE tax; power_law_1.01, power_law_1.2)")
      ->capture_default_str();
  cmd->add_flag("--no-extrapolate", a->no_extrapolate,
                "Refuse a grid cell that reads a table past its largest measured point");
  cmd->add_flag("--kernels-only", a->kernels_only,
                "Leave out the terms the tables do not hold (GEMM + attention + LM head only)");
  cmd->add_flag("--quiet", a->quiet, "Print nothing on success");
  AddForceFlag(cmd, &a->force);
  AddMkdirFlag(cmd, &a->mkdir);
}

}  // namespace specplan::cli
