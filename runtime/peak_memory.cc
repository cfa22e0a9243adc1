#include "runtime/peak_memory.h"

#include <fstream>
#include <sstream>
#include <string>

#if SPECPLAN_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace specplan::runtime {
namespace {

#if SPECPLAN_TORCH_HAS_CUDA
c10::DeviceIndex CudaIndex(const torch::Device& device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}
#endif

}  // namespace

bool ResetPeakMemory(const torch::Device& device) {
#if SPECPLAN_TORCH_HAS_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(CudaIndex(device));
#else
  (void)device;
#endif
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

PeakMemory ReadPeakMemory(const torch::Device& device) {
  PeakMemory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream ss(line.substr(6));
      int64_t kb = 0;
      if (ss >> kb) m.host_rss_bytes = kb * 1024;
      break;
    }
  }
#if SPECPLAN_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    // allocated_bytes[0] is StatType::AGGREGATE (all pools).
    m.device_bytes =
        c10::cuda::CUDACachingAllocator::getDeviceStats(CudaIndex(device)).allocated_bytes[0].peak;
  }
#else
  (void)device;
#endif
  return m;
}

}  // namespace specplan::runtime
