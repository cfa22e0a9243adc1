#include "profiler/cuda_graph.h"

#include <exception>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#if SPECPLAN_HAVE_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace specplan::profiler {

#if SPECPLAN_HAVE_CUDA_GRAPHS
namespace {

class GraphPass : public CapturedPass {
 public:
  // The graph's private memory pool goes back to the device with it: a grid of large batch
  // cells would otherwise keep every earlier cell's pool cached, and a later capture runs out
  // of memory.
  ~GraphPass() override {
    graph_.reset();
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
  void Replay() override { graph_.replay(); }
  at::cuda::CUDAGraph graph_;
};

// Ends a capture that an exception interrupted (an allocation that ran out of memory inside the
// pass, say). While a stream captures, every synchronous copy on the device fails, so the eager
// passes that follow a failed capture need it ended. capture_end also takes the allocator off the
// graph's pool; if it cannot (the capture was invalidated), the raw CUDA call ends it.
void AbandonCapture(at::cuda::CUDAGraph& graph, const c10::cuda::CUDAStream& side) {
  try {
    c10::cuda::CUDAStreamGuard on_side(side);
    graph.capture_end();
  } catch (const std::exception&) {
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(side.stream(), &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(side.stream(), &partial) == cudaSuccess && partial != nullptr) {
      cudaGraphDestroy(partial);
    }
  }
  (void)cudaGetLastError();  // clear the error the failed capture left behind
}

}  // namespace

absl::StatusOr<std::unique_ptr<CapturedPass>> CapturedPass::Capture(
    const std::function<void()>& pass) {
  auto captured = std::make_unique<GraphPass>();
  std::optional<c10::cuda::CUDAStream> side;
  bool capturing = false;
  try {
    c10::InferenceMode guard;
    c10::cuda::device_synchronize();
    side = c10::cuda::getStreamFromPool();
    {
      c10::cuda::CUDAStreamGuard on_side(*side);
      pass();
      pass();
      side->synchronize();
      captured->graph_.capture_begin();
      capturing = true;
      pass();
      capturing = false;
      captured->graph_.capture_end();
    }
    c10::cuda::device_synchronize();
  } catch (const std::exception& e) {
    if (capturing) AbandonCapture(captured->graph_, *side);
    captured.reset();  // frees the graph's pool
    try {
      c10::cuda::device_synchronize();
    } catch (const std::exception&) {
    }
    // LibTorch's messages run on with a stack trace: the first line says what failed.
    const std::string what = e.what();
    return absl::FailedPreconditionError(
        absl::StrCat("cuda graph capture: ", what.substr(0, what.find('\n'))));
  }
  return std::unique_ptr<CapturedPass>(std::move(captured));
}

bool BuiltWithCudaGraphs() { return true; }

#else

absl::StatusOr<std::unique_ptr<CapturedPass>> CapturedPass::Capture(const std::function<void()>&) {
  return absl::UnimplementedError(
      "cuda graphs: not in this build (needs -DSPECPLAN_WITH_CUPTI=ON and a CUDA LibTorch)");
}

bool BuiltWithCudaGraphs() { return false; }

#endif

}  // namespace specplan::profiler
