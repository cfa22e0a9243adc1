#include "costmodel/hardware/gpu_spec.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

constexpr double kT = 1e12;  // tera
constexpr double kG = 1e9;   // giga (decimal, as vendors quote GB and GB/s)

constexpr double kUs = 1e-6;  // microsecond

// Dense (non-sparse) BF16 tensor-core FLOP/s, peak memory bandwidth, memory size, interconnect
// bandwidth per direction, ring-step latency. Vendors usually headline the 2:4-sparsity figure;
// the dense figure is half of it. They quote NVLink bandwidth as the bidirectional total per GPU;
// a ring all-reduce sends and receives at the same time, so the per-direction figure (half) is
// what bounds it.
// Latency per ring step: NCCL's own cost model (src/graph/tuning.cc, hwLat[NVLINK][Ring][LL])
// uses 0.47 us per NVLink hop; for PCIe and Infinity Fabric we assume 1 us per step (no published
// per-hop figure we could check). NCCL's fixed per-collective base latency is not included: it
// is a constant per pass, which calibrated models absorb into their overhead term.
const std::vector<GpuSpec>& Registry() {
  static const std::vector<GpuSpec> kGpus = {
      // NVIDIA A100 datasheet (2021): BF16 tensor 312 TFLOPS dense; 80GB SXM 2,039 GB/s;
      // NVLink3 600 GB/s bidirectional -> 300 GB/s per direction.
      {"a100-80g", "NVIDIA A100 SXM4 80GB", 312 * kT, 2039 * kG, 80 * kG, 300 * kG, 0.47 * kUs},
      // NVIDIA A100 datasheet: 40GB SXM 1,555 GB/s; NVLink3 as above.
      {"a100-40g", "NVIDIA A100 SXM4 40GB", 312 * kT, 1555 * kG, 40 * kG, 300 * kG, 0.47 * kUs},
      // NVIDIA H100 datasheet: SXM BF16 1,979 TFLOPS with sparsity -> 989.4 dense; 3.35 TB/s HBM3;
      // NVLink4 900 GB/s bidirectional -> 450 GB/s per direction.
      {"h100-sxm", "NVIDIA H100 SXM5 80GB", 989.4 * kT, 3350 * kG, 80 * kG, 450 * kG, 0.47 * kUs},
      // NVIDIA H100 datasheet: PCIe BF16 1,513 TFLOPS with sparsity -> 756 dense; 2.0 TB/s HBM2e;
      // NVLink bridge 600 GB/s bidirectional -> 300 per direction (bridges join pairs of cards:
      // beyond tp = 2 traffic crosses PCIe Gen5, 64 GB/s per direction; pass a JSON spec for that).
      {"h100-pcie", "NVIDIA H100 PCIe 80GB", 756 * kT, 2000 * kG, 80 * kG, 300 * kG, 0.47 * kUs},
      // NVIDIA H200 datasheet: SXM BF16 1,979 TFLOPS with sparsity -> 989.4 dense; 4.8 TB/s, 141
      // GB;
      // NVLink 900 GB/s bidirectional -> 450 per direction.
      {"h200", "NVIDIA H200 SXM 141GB", 989.4 * kT, 4800 * kG, 141 * kG, 450 * kG, 0.47 * kUs},
      // NVIDIA RTX A6000 datasheet: tensor 309.7 TFLOPS with sparsity -> 154.8 dense; 768 GB/s, 48
      // GB;
      // NVLink bridge 112.5 GB/s bidirectional -> 56.25 per direction (pairs of cards).
      {"a6000", "NVIDIA RTX A6000", 154.8 * kT, 768 * kG, 48 * kG, 56.25 * kG, 0.47 * kUs},
      // NVIDIA L4 datasheet: BF16 242 TFLOPS with sparsity -> 121 dense; 300 GB/s, 24 GB;
      // PCIe Gen4 x16 64 GB/s bidirectional -> 32 per direction.
      {"l4", "NVIDIA L4", 121 * kT, 300 * kG, 24 * kG, 32 * kG, 1 * kUs},
      // NVIDIA L40S datasheet: BF16 733 TFLOPS with sparsity -> 366 dense; 864 GB/s, 48 GB;
      // PCIe Gen4 x16 64 GB/s bidirectional -> 32 per direction.
      {"l40s", "NVIDIA L40S", 366 * kT, 864 * kG, 48 * kG, 32 * kG, 1 * kUs},
      // NVIDIA Ada whitepaper: RTX 4090 BF16 (FP32 accumulate) 165.2 TFLOPS dense; 1,008 GB/s, 24
      // GB;
      // no NVLink: PCIe Gen4 x16, 32 GB/s per direction.
      {"rtx4090", "NVIDIA GeForce RTX 4090", 165.2 * kT, 1008 * kG, 24 * kG, 32 * kG, 1 * kUs},
      // NVIDIA RTX PRO 6000 Blackwell datasheet: 4 PFLOPS FP4 with sparsity -> 2 PFLOPS FP4 dense,
      // BF16 at a quarter of FP4 dense = 504 TFLOPS; 1,792 GB/s GDDR7, 96 GB; PCIe Gen5 x16
      // 128 GB/s bidirectional -> 64 per direction.
      {"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell", 504 * kT, 1792 * kG, 96 * kG, 64 * kG,
       1 * kUs},
      // NVIDIA HGX B200 datasheet: BF16 4.5 PFLOPS with sparsity -> 2.25 PFLOPS dense; 8 TB/s,
      // 180 GB; NVLink5 1.8 TB/s bidirectional -> 900 per direction.
      {"b200", "NVIDIA B200", 2250 * kT, 8000 * kG, 180 * kG, 900 * kG, 0.47 * kUs},
      // AMD Instinct MI300X datasheet: BF16 1,307.4 TFLOPS dense; 5.3 TB/s HBM3, 192 GB; Infinity
      // Fabric 896 GB/s aggregate bidirectional peer bandwidth (7 links) -> 448 per direction.
      {"mi300x", "AMD Instinct MI300X", 1307.4 * kT, 5300 * kG, 192 * kG, 448 * kG, 1 * kUs},
      // Nominal CPU host (not a datasheet figure): ~1 TFLOP/s fp32 SIMD across cores, 50 GB/s DRAM,
      // 64 GB, no interconnect. Only a starting point: calibrate --gpu cpu measures the real
      // machine.
      {"cpu", "host CPU (nominal)", 1 * kT, 50 * kG, 64 * kG, 0, 0},
  };
  return kGpus;
}

struct Alias {
  const char* alias;
  const char* name;
};
constexpr Alias kAliases[] = {
    {"h100", "h100-sxm"}, {"a100", "a100-80g"}, {"h100-sxm5", "h100-sxm"}, {"rtx-a6000", "a6000"}};

}  // namespace

absl::Status ValidateGpuSpec(const GpuSpec& g) {
  const std::pair<const char*, double> fields[] = {
      {"peak_flops", g.peak_flops}, {"mem_bw", g.mem_bw}, {"mem_bytes", g.mem_bytes}};
  for (const auto& [field, value] : fields) {
    if (!std::isfinite(value) || value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": must be > 0"));
    }
  }
  const std::pair<const char*, double> link[] = {{"link_bw", g.link_bw},
                                                 {"link_latency_s", g.link_latency_s}};
  for (const auto& [field, value] : link) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " = ", value, ": must be >= 0 (0 = no interconnect)"));
    }
  }
  if (g.name.empty()) return absl::InvalidArgumentError("name: must not be empty");
  return absl::OkStatus();
}

absl::StatusOr<GpuSpec> LookupGpu(const std::string& name) {
  std::string key = absl::AsciiStrToLower(name);
  for (const Alias& a : kAliases) {
    if (key == a.alias) key = a.name;
  }
  for (const GpuSpec& g : Registry()) {
    if (key == g.name) return g;
  }
  return absl::NotFoundError(absl::StrCat("gpu: unknown name '", name,
                                          "' (known: ", absl::StrJoin(KnownGpuNames(), ", "),
                                          "; or pass a path to a JSON spec file)"));
}

std::vector<std::string> KnownGpuNames() {
  std::vector<std::string> names;
  for (const GpuSpec& g : Registry()) names.push_back(g.name);
  for (const Alias& a : kAliases) names.push_back(absl::StrCat(a.alias, "=", a.name));
  return names;
}

absl::StatusOr<GpuSpec> GpuSpecFromJson(const nlohmann::json& j) {
  GpuSpec g;
  SPECPLAN_ASSIGN_OR_RETURN(g.name, json_util::GetString(j, "name"));
  SPECPLAN_ASSIGN_OR_RETURN(g.peak_flops, json_util::GetNumber(j, "peak_flops"));
  SPECPLAN_ASSIGN_OR_RETURN(g.mem_bw, json_util::GetNumber(j, "mem_bw"));
  SPECPLAN_ASSIGN_OR_RETURN(g.mem_bytes, json_util::GetNumber(j, "mem_bytes"));
  if (j.contains("description")) {
    SPECPLAN_ASSIGN_OR_RETURN(g.description, json_util::GetString(j, "description"));
  }
  // Optional: profiles and spec files written before tensor parallelism have no interconnect.
  if (j.contains("link_bw")) {
    SPECPLAN_ASSIGN_OR_RETURN(g.link_bw, json_util::GetNumber(j, "link_bw"));
  }
  if (j.contains("link_latency_s")) {
    SPECPLAN_ASSIGN_OR_RETURN(g.link_latency_s, json_util::GetNumber(j, "link_latency_s"));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateGpuSpec(g));
  return g;
}

absl::StatusOr<GpuSpec> GpuSpecFromJsonFile(const std::string& path) {
  return json_util::ReadJsonFileAs(path, GpuSpecFromJson);
}

nlohmann::json GpuSpecToJson(const GpuSpec& g) {
  return nlohmann::json{{"name", g.name},
                        {"description", g.description},
                        {"peak_flops", g.peak_flops},
                        {"mem_bw", g.mem_bw},
                        {"mem_bytes", g.mem_bytes},
                        {"link_bw", g.link_bw},
                        {"link_latency_s", g.link_latency_s}};
}

absl::StatusOr<GpuSpec> ResolveGpu(const std::string& name_or_path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec)) return GpuSpecFromJsonFile(name_or_path);
  return LookupGpu(name_or_path);
}

}  // namespace specplan::costmodel
