// The device a calibration runs on, and whether it is the GPU the user named with --gpu.
#ifndef SPECPLAN_PROFILER_DEVICE_CHECK_H_
#define SPECPLAN_PROFILER_DEVICE_CHECK_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "costmodel/hardware/gpu_spec.h"

namespace specplan::profiler {

struct DeviceInfo {
  bool cuda = false;  // false: the host CPU
  int index = 0;      // CUDA ordinal
  std::string name;   // driver's device name ("NVIDIA H100 80GB HBM3") or the CPU model name;
                      // empty when it cannot be read (CUDA without this build's CUDA runtime)
};

// The NVIDIA kernel driver's version ("580.65.06") from /proc/driver/nvidia/version; "" when
// absent.
std::string NvidiaDriverVersion(const std::string& proc_file = "/proc/driver/nvidia/version");

// The CPU's model name from /proc/cpuinfo ("cpu" when unreadable).
std::string HostCpuName();

// Whether the device called `device_name` by its driver is an instance of the registry GPU `gpu`:
// the registry name minus its variant suffix (-sxm, -sxm5, -pcie, -80g, -40g) must equal one word,
// or several consecutive words joined, of the device name (lowercased, split at non-alphanumerics):
// "h100-sxm" matches "NVIDIA H100 80GB HBM3", "rtx4090" matches "NVIDIA GeForce RTX 4090", "l4"
// does not match "NVIDIA L40S". A "-pcie" name also needs "pcie" in the device name, a "-sxm" name
// needs its absence. Variants that differ only in memory size are not told apart.
bool DeviceMatchesGpu(const std::string& gpu, const std::string& device_name);

// Refuses (FAILED_PRECONDITION, message naming --gpu, the device and --force) when `gpu` does not
// describe `device` and `force` is false:
//   CPU device: the only valid --gpu is "cpu".
//   CUDA device: --gpu "cpu" is refused; otherwise DeviceMatchesGpu(gpu.name, device.name); a
//   device whose name cannot be read is refused too (nothing to check against).
absl::Status CheckDeviceMatchesGpu(const costmodel::GpuSpec& gpu, const DeviceInfo& device,
                                   bool force);

// Versions recorded in a profile's "software": "libtorch" always; with `cuda` (the run was on a
// CUDA device) also "nvidia_driver" (kernel module version), "cuda_driver" (the CUDA version the
// driver supports), "cuda_runtime" and "cupti_api" when this build has CUDA timers and they can be
// read.
std::map<std::string, std::string> SoftwareVersions(bool cuda);

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_DEVICE_CHECK_H_
