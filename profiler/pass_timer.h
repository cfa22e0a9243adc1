// Timers for one verification pass, behind one interface:
//   host_clock   std::chrono::steady_clock around the pass (CPU; or CUDA with a host-side sync)
//   cuda_events  cudaEventRecord on the legacy default stream before and after the pass
//   cupti        CUPTI activity records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): the kernels the
//   pass
//                ran, summed and spanned, with a per-kernel-class breakdown (GEMM, attention,
//                other)
// The CUDA timers exist only in builds with -DSPECPLAN_WITH_CUPTI=ON where CUDA (and CUPTI) were
// found (SPECPLAN_HAVE_CUDA / SPECPLAN_HAVE_CUPTI); MakePassTimer falls back cupti -> cuda_events
// -> host_clock and says why.
#ifndef SPECPLAN_PROFILER_PASS_TIMER_H_
#define SPECPLAN_PROFILER_PASS_TIMER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace specplan::profiler {

// Kernel classes of the per-term breakdown.
enum class KernelClass { kGemm, kAttention, kOther };
const char* KernelClassName(KernelClass k);  // "gemm" | "attention" | "other"
// Classifies a (mangled or demangled) kernel name by substrings, case-insensitively:
// attention = flash / fmha / attention / attn / sdpa / softmax; GEMM = gemm / gemv / cutlass /
// cublas / xmma / nvjet / splitk; everything else (norms, RoPE, elementwise, copies) = other.
// Attention is tested first, so a fused attention kernel built from cutlass is attention. Note: an
// unfused attention's QK^T and PV products run as batched GEMMs and so count as GEMM.
KernelClass ClassifyKernel(const std::string& name);

// What one timed pass cost.
struct PassTiming {
  double seconds = 0;  // the pass latency the profile records (see each timer)
  // Filled by the CUPTI timer only (0 otherwise):
  int64_t kernels = 0;        // kernels launched by the pass
  double kernel_seconds = 0;  // sum of kernel durations
  double span_seconds = 0;    // first kernel start to last kernel end
  double gemm_seconds = 0;    // kernel time per class; the three sum to kernel_seconds
  double attention_seconds = 0;
  double other_seconds = 0;
};

// Times passes. Not thread-safe; one pass at a time.
class PassTimer {
 public:
  virtual ~PassTimer() = default;
  // "host_clock" | "cuda_events" | "cupti": the profile's `timer` field.
  virtual std::string Name() const = 0;
  // Runs `pass` once and times it. `pass` enqueues the work (it need not synchronise); the timer
  // waits for the device as needed.
  virtual absl::StatusOr<PassTiming> Time(const std::function<void()>& pass) = 0;
};

// Wall clock around pass() then sync() (sync may be empty, e.g. on CPU where ops are synchronous).
// seconds = elapsed wall time.
class HostClockTimer : public PassTimer {
 public:
  explicit HostClockTimer(std::function<void()> sync = {}) : sync_(std::move(sync)) {}
  std::string Name() const override { return "host_clock"; }
  absl::StatusOr<PassTiming> Time(const std::function<void()>& pass) override;

 private:
  std::function<void()> sync_;
};

// Which timer to build. kAuto: cupti, else cuda_events, else host_clock on CUDA; host_clock on CPU.
enum class TimerChoice { kAuto, kCupti, kCudaEvents, kHostClock };
absl::StatusOr<TimerChoice> ParseTimerChoice(const std::string& name);  // "auto", "cupti", ...

struct TimerRequest {
  bool cuda = false;     // the pass runs on a CUDA device
  int device_index = 0;  // CUDA device ordinal
  TimerChoice choice = TimerChoice::kAuto;
  std::function<void()> host_sync;  // used by host_clock on CUDA (waits for the device)
};

// Builds the requested timer. With kAuto, falls back as described above and appends one line per
// fallback to *notes (e.g. "cupti: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; using
// cuda_events"). An explicit choice that cannot be honoured is an error (FAILED_PRECONDITION for
// CUDA timers on CPU, UNIMPLEMENTED when the build lacks them).
absl::StatusOr<std::unique_ptr<PassTimer>> MakePassTimer(const TimerRequest& request,
                                                         std::vector<std::string>* notes);

// True when this build compiled the CUDA-event / CUPTI timers.
bool BuiltWithCudaTimers();
bool BuiltWithCupti();

// Direct constructors of the CUDA timers (UNIMPLEMENTED in builds without them; FAILED_PRECONDITION
// / UNAVAILABLE when no device is present or CUPTI cannot subscribe). Only one CUPTI timer may
// exist per process at a time (CUPTI's activity callbacks are process-global).
absl::StatusOr<std::unique_ptr<PassTimer>> MakeCudaEventTimer(int device_index);
absl::StatusOr<std::unique_ptr<PassTimer>> MakeCuptiTimer(int device_index);

// Number of CUDA devices visible to the CUDA runtime this build links (0 without CUDA timers, or
// without a driver / device).
int CudaDeviceCount();

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_PASS_TIMER_H_
