// Peak numbers of an accelerator, as the roofline needs them.
#ifndef SPECPLAN_COSTMODEL_GPU_SPEC_H_
#define SPECPLAN_COSTMODEL_GPU_SPEC_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace specplan::costmodel {

struct GpuSpec {
  std::string name;         // registry name, e.g. "h100-sxm"
  std::string description;  // marketing name, e.g. "NVIDIA H100 SXM5 80GB"
  double peak_flops = 0;    // FLOP/s, dense BF16 tensor-core peak (no sparsity)
  double mem_bw = 0;        // bytes/s, peak DRAM (HBM/GDDR) bandwidth
  double mem_bytes = 0;     // bytes of device memory
  // GPU-to-GPU interconnect, for tensor parallelism (roofline.h AllReduceSeconds). 0 = none
  // (then tp must be 1).
  double link_bw = 0;         // bytes/s one GPU sends (= receives) to its peers, per direction
  double link_latency_s = 0;  // seconds per step of a ring all-reduce (hop latency)
};

// Checks all numbers are finite and > 0 (link_bw and link_latency_s >= 0); names the bad field.
absl::Status ValidateGpuSpec(const GpuSpec& spec);

// Registry lookup, case-insensitive, aliases included ("h100" = "h100-sxm").
absl::StatusOr<GpuSpec> LookupGpu(const std::string& name);
std::vector<std::string> KnownGpuNames();  // canonical names, then "alias=name" entries

// User-supplied spec: {"name": str, "peak_flops": FLOP/s, "mem_bw": bytes/s, "mem_bytes": bytes,
// "description": str (optional), "link_bw": bytes/s per direction (optional, default 0 = no
// interconnect), "link_latency_s": seconds per ring step (optional, default 0)}.
absl::StatusOr<GpuSpec> GpuSpecFromJson(const nlohmann::json& j);
absl::StatusOr<GpuSpec> GpuSpecFromJsonFile(const std::string& path);
nlohmann::json GpuSpecToJson(const GpuSpec& spec);

// Resolves a --gpu argument: a registry name, or a path to a JSON spec file.
absl::StatusOr<GpuSpec> ResolveGpu(const std::string& name_or_path);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_GPU_SPEC_H_
