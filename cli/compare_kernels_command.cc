// specplan profiles compare-kernels: one folder of kernel tables against another on the shapes
// both measured (costmodel/compose/kernel_compare.h), e.g. what `calibrate --kernels` timed on a
// GPU against aiconfigurator's tables for that GPU in data/kernels/.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "costmodel/compose/kernel_compare.h"

namespace specplan::cli {
namespace {

struct CompareArgs {
  std::string ours, theirs;
  double tolerance = 0.10;
  int worst = 5;
  bool json = false;
};

std::string Describe(const costmodel::EngineKernelTables& t) {
  std::string engine = t.engine.empty() ? "unknown engine" : t.engine;
  if (!t.engine_version.empty()) engine += " " + t.engine_version;
  return absl::StrFormat("%s (%s, %s, %s)", t.dir, engine,
                         t.device.empty() ? "device not recorded" : t.device, t.gpu_folder);
}

std::string SummaryLine(const costmodel::RatioSummary& r, double tolerance) {
  return absl::StrFormat(
      "median ours/theirs %.3f, geometric mean %.3f, %.0f %% within %.0f %%, worst %+.1f %%",
      r.median, r.geomean, 100 * r.within, 100 * tolerance, 100 * r.worst_error);
}

nlohmann::json SummaryJson(const costmodel::RatioSummary& r) {
  return {{"shapes", r.count},
          {"median_ratio", r.median},
          {"geomean_ratio", r.geomean},
          {"within_fraction", r.within},
          {"worst_error", r.worst_error}};
}

// The shared shapes furthest from ratio 1 (|ratio - 1|), at most n.
std::vector<costmodel::SharedKernelShape> Worst(std::vector<costmodel::SharedKernelShape> shapes,
                                                int n) {
  std::sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return std::abs(a.ratio() - 1) > std::abs(b.ratio() - 1);
  });
  if (static_cast<int>(shapes.size()) > n) shapes.resize(n);
  return shapes;
}

// The folder's tables; on error prints "<me><flag> <message>" (the loader names the folder or the
// file, line and column, and calls the folder "--kernels DIR", compose's flag).
absl::StatusOr<costmodel::EngineKernelTables> Load(const char* me, const std::string& flag,
                                                   const std::string& dir) {
  absl::StatusOr<costmodel::EngineKernelTables> t = costmodel::LoadEngineKernelTables(dir);
  if (!t.ok()) {
    std::cerr << me << flag << " " << absl::StripPrefix(t.status().message(), "--kernels ") << "\n";
  }
  return t;
}

int RunCompare(const CompareArgs& a) {
  const char* me = "specplan profiles compare-kernels: ";
  if (!(a.tolerance > 0 && a.tolerance < 10)) {
    std::cerr << me << "--tolerance " << a.tolerance << ": must be in (0, 10)\n";
    return 1;
  }
  if (a.worst < 0) {
    std::cerr << me << "--worst " << a.worst << ": must be >= 0\n";
    return 1;
  }
  absl::StatusOr<costmodel::EngineKernelTables> ours = Load(me, "--ours", a.ours);
  if (!ours.ok()) return 1;
  absl::StatusOr<costmodel::EngineKernelTables> theirs = Load(me, "--theirs", a.theirs);
  if (!theirs.ok()) return 1;
  const costmodel::KernelComparison cmp =
      costmodel::CompareKernelTables(*ours, *theirs, a.tolerance);
  if (a.json) {
    nlohmann::json out = {{"ours", a.ours}, {"theirs", a.theirs}, {"tolerance", a.tolerance}};
    for (const costmodel::KernelTableComparison& t : cmp.tables) {
      nlohmann::json j = {{"ours_points", t.ours_points},
                          {"theirs_points", t.theirs_points},
                          {"summary", SummaryJson(t.all)}};
      for (const auto& [name, r] : t.bands) j["bands"][name] = SummaryJson(r);
      j["shapes"] = nlohmann::json::array();
      for (const costmodel::SharedKernelShape& s : t.shared) {
        j["shapes"].push_back(
            {{"shape", s.shape}, {"ours_ms", s.ours_s * 1e3}, {"theirs_ms", s.theirs_s * 1e3}});
      }
      out["tables"][t.table] = j;
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "ours:   " << Describe(*ours) << "\n"
            << "theirs: " << Describe(*theirs) << "\n";
  for (const costmodel::KernelTableComparison& t : cmp.tables) {
    std::cout << absl::StrFormat("%s: %d shared shapes (ours %d, theirs %d)", t.table,
                                 static_cast<int>(t.all.count), static_cast<int>(t.ours_points),
                                 static_cast<int>(t.theirs_points));
    if (t.all.count == 0) {
      std::cout << "; nothing to compare\n";
      continue;
    }
    std::cout << ": " << SummaryLine(t.all, a.tolerance) << "\n";
    for (const auto& [name, r] : t.bands) {
      std::cout << absl::StrFormat("  %s: %d shapes, ", name, static_cast<int>(r.count))
                << SummaryLine(r, a.tolerance) << "\n";
    }
    for (const costmodel::SharedKernelShape& s : Worst(t.shared, a.worst)) {
      std::cout << absl::StrFormat("  worst: %s: ours %.4g ms, theirs %.4g ms (%.3fx)\n", s.shape,
                                   s.ours_s * 1e3, s.theirs_s * 1e3, s.ratio());
    }
  }
  return 0;
}

}  // namespace

void RegisterProfilesCompareKernelsCommand(CLI::App* profiles, int* exit_code) {
  auto [cmd, a] = AddCommand(
      profiles, "compare-kernels",
      "Compare two folders of kernel tables (gemm, generation_attention, context_attention; "
      "data/kernels/README.md layout) on the shapes both measured: ratio ours / theirs per "
      "shape, median, geometric mean, share within --tolerance, GEMMs by m band, worst shapes",
      exit_code, &RunCompare);
  cmd->add_option("--ours", a->ours,
                  "Folder compared, e.g. what calibrate --kernels wrote "
                  "(kernels/h100_sxm/specplan-libtorch2.11.0)")
      ->required();
  cmd->add_option("--theirs", a->theirs,
                  "Reference folder, e.g. data/kernels/h100_sxm/sglang-0.5.14")
      ->required();
  cmd->add_option("--tolerance", a->tolerance,
                  "A shape agrees when |ours / theirs - 1| is at most this (0.10 = 10 %)")
      ->capture_default_str();
  cmd->add_option("--worst", a->worst, "Shapes furthest from agreement listed per table")
      ->capture_default_str();
  AddJsonFlag(cmd, &a->json, ": every table's summary, bands and shared shapes (ms)");
}

}  // namespace specplan::cli
