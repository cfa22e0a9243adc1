#include "profiler/device_check.h"

#include <torch/version.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "profiler/cuda_info.h"

namespace specplan::profiler {
namespace {

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  for (char ch : text) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(ch))) {
      cur.push_back(absl::ascii_tolower(static_cast<unsigned char>(ch)));
    } else if (!cur.empty()) {
      words.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(cur);
  return words;
}

bool HasWord(const std::vector<std::string>& words, const std::string& w) {
  for (const std::string& x : words) {
    if (x == w) return true;
  }
  return false;
}

}  // namespace

std::string NvidiaDriverVersion(const std::string& proc_file) {
  std::ifstream in(proc_file);
  std::string line;
  if (!std::getline(in, line)) return "";
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:58 UTC 2025"
  const std::string key = "Kernel Module";
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  std::vector<std::string> rest =
      absl::StrSplit(line.substr(at + key.size()), ' ', absl::SkipWhitespace());
  if (rest.empty()) return "";
  for (char ch : rest[0]) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(ch)) && ch != '.') return "";
  }
  return rest[0];
}

std::string HostCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    }
  }
  return "cpu";
}

bool DeviceMatchesGpu(const std::string& gpu, const std::string& device_name) {
  std::vector<std::string> key = Words(gpu);
  bool want_pcie = false, want_sxm = false;
  while (!key.empty()) {
    const std::string& last = key.back();
    if (last == "pcie") {
      want_pcie = true;
    } else if (last == "sxm" || last == "sxm5" || last == "sxm4") {
      want_sxm = true;
    } else if (last != "80g" && last != "40g") {
      break;
    }
    key.pop_back();
  }
  if (key.empty()) return false;
  std::string joined;
  for (const std::string& k : key) joined += k;
  const std::vector<std::string> words = Words(device_name);
  bool found = false;
  for (size_t i = 0; i < words.size() && !found; ++i) {
    std::string run;
    for (size_t j = i; j < words.size() && run.size() < joined.size(); ++j) {
      run += words[j];
      if (run == joined) {
        found = true;
        break;
      }
    }
  }
  if (!found) return false;
  const bool is_pcie = HasWord(words, "pcie");
  if (want_pcie && !is_pcie) return false;
  if (want_sxm && is_pcie) return false;
  return true;
}

absl::Status CheckDeviceMatchesGpu(const costmodel::GpuSpec& gpu, const DeviceInfo& device,
                                   bool force) {
  std::string problem;
  if (!device.cuda) {
    if (gpu.name != "cpu") {
      problem = absl::StrCat("--gpu ", gpu.name, ": this run is on the CPU (", device.name,
                             "), where the only valid --gpu is 'cpu'");
    }
  } else if (gpu.name == "cpu") {
    problem = absl::StrCat("--gpu cpu: this run is on CUDA device ", device.index, " (",
                           device.name.empty() ? "name unknown" : device.name,
                           "); use --device cpu to calibrate the host");
  } else if (device.name.empty()) {
    problem =
        absl::StrCat("--gpu ", gpu.name, ": cannot read the name of CUDA device ", device.index,
                     " in this build (configure with -DSPECPLAN_WITH_CUPTI=ON), so it "
                     "cannot be checked");
  } else if (!DeviceMatchesGpu(gpu.name, device.name)) {
    problem = absl::StrCat("--gpu ", gpu.name, " (", gpu.description, "): the device is '",
                           device.name, "'");
  }
  if (problem.empty() || force) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(problem, ". Pass --force to calibrate under that name anyway."));
}

std::map<std::string, std::string> SoftwareVersions(bool cuda) {
  std::map<std::string, std::string> out;
  if (cuda) {
    out = CudaSoftwareVersions();
    if (std::string driver = NvidiaDriverVersion(); !driver.empty()) out["nvidia_driver"] = driver;
  }
  out["libtorch"] =
      absl::StrCat(TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".", TORCH_VERSION_PATCH);
  return out;
}

}  // namespace specplan::profiler
