#include "profiler/cuda_graph.h"

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#if SPECPLAN_HAVE_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace specplan::profiler {

#if SPECPLAN_HAVE_CUDA_GRAPHS
namespace {

class GraphPass : public CapturedPass {
 public:
  void Replay() override { graph_.replay(); }
  at::cuda::CUDAGraph graph_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CapturedPass>> CapturedPass::Capture(
    const std::function<void()>& pass) {
  auto captured = std::make_unique<GraphPass>();
  try {
    c10::InferenceMode guard;
    c10::cuda::device_synchronize();
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      pass();
      pass();
      side.synchronize();
      captured->graph_.capture_begin();
      pass();
      captured->graph_.capture_end();
    }
    c10::cuda::device_synchronize();
  } catch (const std::exception& e) {
    try {
      c10::cuda::device_synchronize();
    } catch (const std::exception&) {
    }
    return absl::FailedPreconditionError(absl::StrCat("cuda graph capture: ", e.what()));
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
