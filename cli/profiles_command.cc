// specplan profiles: list bundled calibrated profiles grouped by engine (whose kernels their costs
// describe), or validate one file. `specplan profiles compose` (compose_command.cc) is registered
// under it.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/remote.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"

namespace specplan::cli {
namespace {

struct ProfilesArgs {
  std::string dir;
  std::string check;
  std::string server;
};

// A profile's engine; "" (a server older than engines) is specplan's runtime.
std::string EngineOf(const costmodel::Profile& p) {
  return p.engine.empty() ? costmodel::kRuntimeEngine : p.engine;
}

// The heading of one engine's group.
std::string EngineHeading(const std::string& engine) {
  if (engine == costmodel::kRuntimeEngine) {
    return absl::StrFormat("engine %s (measured on specplan's runtime, or fitted to samples)",
                           engine);
  }
  return absl::StrFormat("engine %s (composed from engine kernel timings)", engine);
}

// One line per profile: the engine version when recorded, the cross-validated MAPE per model when
// the profile has it (profiles written before cross-validation have held-out scores only; a
// profile composed from kernel timings was not fitted and says so instead of a MAPE), then
// its provenance: the recorded one, or for a profile calibrate measured, the device, timer, pass
// mode and date.
void PrintProfileLine(const std::string& path, const costmodel::Profile& p) {
  const bool cv = !p.cv.empty();
  std::string stats;
  for (const auto& [kind, s] : cv ? p.cv : p.heldout) {
    stats += absl::StrFormat(" %s=%.2f%%", kind, s.mape * 100);
  }
  std::string score = absl::StrCat(cv ? "cv" : "held-out", " MAPE:", stats);
  if (stats.empty()) {
    score = EngineOf(p) == costmodel::kRuntimeEngine
                ? "MAPE: none (no samples scored)"
                : "MAPE: none (composed from kernel timings, not fitted)";
  }
  const std::string version =
      p.engine_version.empty() ? "" : absl::StrFormat("%s %s ", EngineOf(p), p.engine_version);
  std::cout << absl::StrFormat("%-12s %-16s %-5s %sdefault=%-9s timer=%-11s %s  %s\n", p.gpu,
                               p.model, costmodel::DTypeName(p.dtype), version, p.default_model,
                               p.timer, score, path);
  if (!p.provenance.empty()) {
    std::cout << "  provenance: " << p.provenance << "\n";
  } else if (p.timer != "external" && !p.device_name.empty()) {
    // Measured here by calibrate: say on what, how and when.
    const auto pass = p.software.find("pass");
    std::cout << "  provenance: measured on " << p.device_name << " (timer " << p.timer
              << (pass != p.software.end() ? ", " + pass->second : "") << ", " << p.created_utc
              << ")\n";
  }
}

// The profiles under a heading per engine, engines in KnownEngines() order (the order a lookup
// without --engine tries them), each group in the given order.
void PrintGrouped(const std::vector<std::pair<std::string, costmodel::Profile>>& profiles) {
  std::vector<std::string> engines = costmodel::KnownEngines();
  for (const auto& [label, p] : profiles) {  // an engine this build does not know, last
    if (std::find(engines.begin(), engines.end(), EngineOf(p)) == engines.end()) {
      engines.push_back(EngineOf(p));
    }
  }
  bool first = true;
  for (const std::string& engine : engines) {
    bool heading = false;
    for (const auto& [label, p] : profiles) {
      if (EngineOf(p) != engine) continue;
      if (!heading) {
        std::cout << (first ? "" : "\n") << EngineHeading(engine) << "\n";
        heading = true;
        first = false;
      }
      PrintProfileLine(label, p);
    }
  }
}

int RunProfiles(const ProfilesArgs& a) {
  namespace fs = std::filesystem;
  if (!a.server.empty()) {
    auto profiles = RemoteProfiles(a.server);
    if (!profiles.ok()) {
      std::cerr << "specplan profiles: " << profiles.status().message() << "\n";
      return 1;
    }
    PrintGrouped(*profiles);
    if (profiles->empty()) std::cout << "no profiles on " << a.server << "\n";
    return 0;
  }
  if (!a.check.empty()) {
    auto p = costmodel::LoadProfile(a.check);
    if (!p.ok()) {
      std::cerr << "specplan profiles: " << p.status().message() << "\n";
      return 1;
    }
    PrintGrouped({{a.check, *std::move(p)}});
    return 0;
  }
  const std::string dir = a.dir.empty() ? costmodel::DefaultCalibDir() : a.dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::cerr << "specplan profiles: --dir " << dir << ": not a directory\n";
    return 1;
  }
  std::vector<std::string> paths;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  int bad = 0;
  std::vector<std::pair<std::string, costmodel::Profile>> profiles;
  for (const std::string& path : paths) {
    auto p = costmodel::LoadProfile(path);
    if (!p.ok()) {
      std::cerr << "invalid: " << p.status().message() << "\n";
      ++bad;
      continue;
    }
    profiles.emplace_back(path, *std::move(p));
  }
  PrintGrouped(profiles);
  if (paths.empty()) std::cout << "no profiles under " << dir << "\n";
  return bad == 0 ? 0 : 1;
}

}  // namespace

void RegisterProfilesCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ProfilesArgs>();
  CLI::App* cmd = app.add_subcommand("profiles", "List calibrated latency profiles, or check one");
  cmd->add_option("--dir", args->dir, "Profiles directory (default: the bundled calib/)");
  cmd->add_option("--check", args->check, "Validate one profile file and print its summary");
  cmd->add_option("--server", args->server,
                  "List the profiles a specplan-server at HOST:PORT (or replicas: A:P,B:Q,... or "
                  "dns:///NAME:PORT, round robin with retries) holds instead of a local dir");
  RegisterProfilesComposeCommand(cmd, exit_code);
  RegisterProfilesCompareKernelsCommand(cmd, exit_code);
  // A sub-subcommand (`profiles compose`) runs its own callback; the listing runs without one.
  cmd->callback([cmd, args, exit_code] {
    if (!cmd->get_subcommands().empty()) return;
    *exit_code = RunProfiles(*args);
  });
}

}  // namespace specplan::cli
