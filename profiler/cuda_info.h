// What the CUDA runtime this build links says about the machine. Without CUDA timers in the build
// (SPECPLAN_HAVE_CUDA unset) every query answers UNIMPLEMENTED / empty.
#ifndef SPECPLAN_PROFILER_CUDA_INFO_H_
#define SPECPLAN_PROFILER_CUDA_INFO_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace specplan::profiler {

// The driver's name for device `index`, e.g. "NVIDIA H100 80GB HBM3".
absl::StatusOr<std::string> CudaDeviceName(int index);

// {"cuda_driver": "13.0", "cuda_runtime": "13.0", "cupti": "130001"} -- the keys that could be
// read.
std::map<std::string, std::string> CudaSoftwareVersions();

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_CUDA_INFO_H_
