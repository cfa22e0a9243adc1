// Peak memory of one measured phase (one strategy's run in specplan-bench): the process's
// resident-set high-water mark and, on CUDA, the caching allocator's peak allocated bytes.
// ResetPeakMemory before the phase, ReadPeakMemory after it.
#ifndef SPECPLAN_RUNTIME_PEAK_MEMORY_H_
#define SPECPLAN_RUNTIME_PEAK_MEMORY_H_

#include <torch/types.h>

#include <cstdint>

namespace specplan::runtime {

struct PeakMemory {
  int64_t host_rss_bytes = -1;  // VmHWM (/proc/self/status), bytes; -1 when unreadable
  int64_t device_bytes = -1;    // CUDA peak allocated bytes on the device; -1 when not on CUDA
};

// Resets the host high-water mark to the current RSS (Linux: "5" into /proc/self/clear_refs) and,
// when `device` is CUDA and this LibTorch has CUDA, torch's peak statistics on that device.
// Returns false when the host reset failed (then host_rss_bytes is the process's lifetime peak).
bool ResetPeakMemory(const torch::Device& device);

PeakMemory ReadPeakMemory(const torch::Device& device);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_PEAK_MEMORY_H_
