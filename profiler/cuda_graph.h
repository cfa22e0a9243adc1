// One verification pass captured as a CUDA graph and replayed, as engines run their decode and
// verification steps. Timing a replay measures the GPU's work without the host's launch cost:
// eager LibTorch spends roughly 10 us of CPU per op, and a 36-layer target's forward is about
// 2,000 ops, so an eager pass of an 8B model is bound by the CPU, not the GPU (measured on an H100:
// 21-40 ms eager span against 10.7 ms of kernels at s = 1, c = 1024).
//
// Real only in builds with CUDA timers and a CUDA LibTorch (SPECPLAN_HAVE_CUDA_GRAPHS); elsewhere
// Capture answers UNIMPLEMENTED.
#ifndef SPECPLAN_PROFILER_CUDA_GRAPH_H_
#define SPECPLAN_PROFILER_CUDA_GRAPH_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"

namespace specplan::profiler {

class CapturedPass {
 public:
  // Runs `pass` twice on a side stream (warm-up: cuBLAS handles, allocator), then captures one
  // run of it. Every tensor the pass reads must stay alive at the same address while the graph
  // exists; feed new inputs by copying into those tensors before Replay. Errors
  // (FAILED_PRECONDITION) when an op cannot be captured; the device is synchronised either way.
  static absl::StatusOr<std::unique_ptr<CapturedPass>> Capture(const std::function<void()>& pass);
  virtual ~CapturedPass() = default;
  // Enqueues the captured work on the current CUDA stream (the default stream, which the timers
  // bracket).
  virtual void Replay() = 0;
};

bool BuiltWithCudaGraphs();

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_CUDA_GRAPH_H_
