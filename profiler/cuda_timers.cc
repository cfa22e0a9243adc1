// CUDA-event and CUPTI pass timers, and CUDA device queries. Compiled against the CUDA runtime and
// CUPTI only when CMake found them (SPECPLAN_HAVE_CUDA, SPECPLAN_HAVE_CUPTI); otherwise every entry
// point reports UNIMPLEMENTED so callers fall back to the host clock.
//
// Every CUDA / CUPTI call goes through SPECPLAN_CUDA_RETURN_IF_ERROR /
// SPECPLAN_CUPTI_RETURN_IF_ERROR, which turn the error code into an absl::Status naming the call
// and the error.
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "profiler/cuda_info.h"
#include "profiler/pass_timer.h"

#ifndef SPECPLAN_HAVE_CUDA
#define SPECPLAN_HAVE_CUDA 0
#endif
#ifndef SPECPLAN_HAVE_CUPTI
#define SPECPLAN_HAVE_CUPTI 0
#endif

#if SPECPLAN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <vector>
#endif
#if SPECPLAN_HAVE_CUPTI
#include <cupti.h>
#endif

namespace specplan::profiler {

// Returns to_status(#expr, result) from the enclosing function when `expr` gives a result other
// than `ok` (the CUDA runtime's and CUPTI's error codes alike).
#define SPECPLAN_API_RETURN_IF_ERROR(expr, ok, to_status) \
  do {                                                    \
    const auto specplan_api_result_ = (expr);             \
    if (specplan_api_result_ != (ok)) {                   \
      return to_status(#expr, specplan_api_result_);      \
    }                                                     \
  } while (0)

#if SPECPLAN_HAVE_CUDA
namespace {

absl::Status CudaError(const char* call, cudaError_t e) {
  const std::string msg =
      absl::StrCat(call, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    return absl::FailedPreconditionError(msg);
  }
  return absl::InternalError(msg);
}

#define SPECPLAN_CUDA_RETURN_IF_ERROR(expr) \
  SPECPLAN_API_RETURN_IF_ERROR(expr, cudaSuccess, ::specplan::profiler::CudaError)

std::string VersionString(int v) {  // 13000 -> "13.0"
  return absl::StrCat(v / 1000, ".", (v % 1000) / 10);
}

absl::Status RequireDevice(int index) {
  int count = 0;
  SPECPLAN_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda device ", index, ": not present (", count, " visible)"));
  }
  SPECPLAN_CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
  return absl::OkStatus();
}

// Events on the legacy default stream, which LibTorch uses unless a caller sets another stream;
// the legacy stream also orders against every blocking stream.
class CudaEventTimer : public PassTimer {
 public:
  static absl::StatusOr<std::unique_ptr<PassTimer>> Create(int index) {
    absl::Status st = RequireDevice(index);
    if (!st.ok()) return st;
    auto t = std::unique_ptr<CudaEventTimer>(new CudaEventTimer());
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t->start_));
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t->stop_));
    return std::unique_ptr<PassTimer>(std::move(t));
  }
  ~CudaEventTimer() override {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  std::string Name() const override { return "cuda_events"; }
  absl::StatusOr<PassTiming> Time(const std::function<void()>& pass) override {
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, cudaStreamLegacy));
    pass();
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, cudaStreamLegacy));
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
    float ms = 0;
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
    PassTiming t;
    t.seconds = static_cast<double>(ms) * 1e-3;
    return t;
  }

 private:
  CudaEventTimer() = default;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace
#endif  // SPECPLAN_HAVE_CUDA

#if SPECPLAN_HAVE_CUPTI
namespace {

absl::Status CuptiError(const char* call, CUptiResult r) {
  const char* name = nullptr;
  if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS || name == nullptr) name = "unknown";
  return absl::UnavailableError(absl::StrCat(call, ": ", name));
}

#define SPECPLAN_CUPTI_RETURN_IF_ERROR(expr) \
  SPECPLAN_API_RETURN_IF_ERROR(expr, CUPTI_SUCCESS, ::specplan::profiler::CuptiError)

// The kernel record layout of the CUPTI headers this build uses (CUDA 13: version 10; CUDA 12: 9).
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
using KernelActivity = CUpti_ActivityKernel10;
#else
using KernelActivity = CUpti_ActivityKernel9;
#endif

struct KernelRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  KernelClass cls = KernelClass::kOther;
};

// CUPTI's buffer callbacks are process-global C functions: they deliver into this state. Never
// destroyed, so a late callback during exit cannot touch a dead object.
struct CuptiState {
  std::mutex mu;
  std::vector<KernelRecord> records;  // guarded by mu
  size_t dropped = 0;                 // guarded by mu
  std::atomic<bool> in_use{false};    // one CuptiTimer per process
};
CuptiState& State() {
  static CuptiState* state = new CuptiState();
  return *state;
}

constexpr size_t kBufferBytes = 8 << 20;  // CUPTI recommends 1-10 MB activity buffers
constexpr size_t kBufferAlign = 8;        // ACTIVITY_RECORD_ALIGNMENT

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext /*ctx*/, uint32_t /*stream_id*/, uint8_t* buffer,
                              size_t /*size*/, size_t valid_size) {
  std::vector<KernelRecord> local;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const KernelActivity*>(record);
      if (k->start == 0 && k->end == 0) continue;  // no timestamps collected
      local.push_back({k->start, k->end, ClassifyKernel(k->name != nullptr ? k->name : "")});
    }
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::free(buffer);
  CuptiState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.records.insert(s.records.end(), local.begin(), local.end());
  s.dropped += dropped;
}

// Kernel time of one pass from CUPTI activity records. The pass is bracketed by device
// synchronisations and forced flushes, so exactly its kernels land in the record list.
// seconds = span (first kernel start to last kernel end), which includes launch gaps between
// kernels but not the host time before the first launch.
class CuptiTimer : public PassTimer {
 public:
  static absl::StatusOr<std::unique_ptr<PassTimer>> Create(int index) {
    absl::Status st = RequireDevice(index);
    if (!st.ok()) return st;
    CuptiState& s = State();
    bool expected = false;
    if (!s.in_use.compare_exchange_strong(expected, true)) {
      return absl::UnavailableError("cupti: another CuptiTimer in this process holds CUPTI");
    }
    auto t = std::unique_ptr<CuptiTimer>(new CuptiTimer());
    st = t->Subscribe();
    if (!st.ok()) return st;  // ~CuptiTimer releases in_use
    return std::unique_ptr<PassTimer>(std::move(t));
  }
  ~CuptiTimer() override {
    if (enabled_) {
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    CuptiState& s = State();
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.records.clear();
    }
    s.in_use.store(false);
  }
  std::string Name() const override { return "cupti"; }

  absl::StatusOr<PassTiming> Time(const std::function<void()>& pass) override {
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    SPECPLAN_CUPTI_RETURN_IF_ERROR(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    CuptiState& s = State();
    size_t dropped_before = 0;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.records.clear();
      dropped_before = s.dropped;
    }
    pass();
    SPECPLAN_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    SPECPLAN_CUPTI_RETURN_IF_ERROR(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::vector<KernelRecord> records;
    size_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      records.swap(s.records);
      dropped = s.dropped - dropped_before;
    }
    if (dropped > 0) {
      return absl::DataLossError(absl::StrCat("cupti: ", dropped, " activity records dropped"));
    }
    if (records.empty()) {
      return absl::FailedPreconditionError(
          "cupti: the pass produced no kernel records (is another profiler attached?)");
    }
    PassTiming t;
    uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
    for (const KernelRecord& r : records) {
      const double d = static_cast<double>(r.end_ns - r.start_ns) * 1e-9;
      t.kernel_seconds += d;
      switch (r.cls) {
        case KernelClass::kGemm:
          t.gemm_seconds += d;
          break;
        case KernelClass::kAttention:
          t.attention_seconds += d;
          break;
        case KernelClass::kOther:
          t.other_seconds += d;
          break;
      }
      first = std::min(first, r.start_ns);
      last = std::max(last, r.end_ns);
    }
    t.kernels = static_cast<int64_t>(records.size());
    t.span_seconds = static_cast<double>(last - first) * 1e-9;
    t.seconds = t.span_seconds;
    return t;
  }

 private:
  CuptiTimer() = default;
  absl::Status Subscribe() {
    SPECPLAN_CUPTI_RETURN_IF_ERROR(
        cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
    SPECPLAN_CUPTI_RETURN_IF_ERROR(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    enabled_ = true;
    return absl::OkStatus();
  }
  bool enabled_ = false;
};

}  // namespace
#endif  // SPECPLAN_HAVE_CUPTI

namespace {

// A CUDA timer's Create, null in a build without that timer.
using TimerFactory = absl::StatusOr<std::unique_ptr<PassTimer>> (*)(int device_index);
#if SPECPLAN_HAVE_CUDA
constexpr TimerFactory kCudaEventTimer = &CudaEventTimer::Create;
#else
constexpr TimerFactory kCudaEventTimer = nullptr;
#endif
#if SPECPLAN_HAVE_CUPTI
constexpr TimerFactory kCuptiTimer = &CuptiTimer::Create;
#else
constexpr TimerFactory kCuptiTimer = nullptr;
#endif

// factory(device_index); a timer this build lacks (a null factory) answers "<timer>: not in this
// build (configure with -DSPECPLAN_WITH_CUPTI=ON where <library> is found)".
absl::StatusOr<std::unique_ptr<PassTimer>> MakeIfBuilt(TimerFactory factory, int device_index,
                                                       const char* timer, const char* library) {
  if (factory != nullptr) return factory(device_index);
  return absl::UnimplementedError(
      absl::StrCat(timer, ": not in this build (configure with -DSPECPLAN_WITH_CUPTI=ON where ",
                   library, " is found)"));
}

}  // namespace

bool BuiltWithCudaTimers() { return SPECPLAN_HAVE_CUDA != 0; }
bool BuiltWithCupti() { return SPECPLAN_HAVE_CUPTI != 0; }

absl::StatusOr<std::unique_ptr<PassTimer>> MakeCudaEventTimer(int device_index) {
  return MakeIfBuilt(kCudaEventTimer, device_index, "cuda_events", "CUDA");
}

absl::StatusOr<std::unique_ptr<PassTimer>> MakeCuptiTimer(int device_index) {
  return MakeIfBuilt(kCuptiTimer, device_index, "cupti", "CUPTI");
}

int CudaDeviceCount() {
#if SPECPLAN_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
#else
  return 0;
#endif
}

absl::StatusOr<std::string> CudaDeviceName(int index) {
#if SPECPLAN_HAVE_CUDA
  absl::Status st = RequireDevice(index);
  if (!st.ok()) return st;
  cudaDeviceProp prop{};
  SPECPLAN_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, index));
  return std::string(prop.name);
#else
  (void)index;
  return absl::UnimplementedError(
      "cuda device name: not readable in this build (configure with -DSPECPLAN_WITH_CUPTI=ON)");
#endif
}

std::map<std::string, std::string> CudaSoftwareVersions() {
  std::map<std::string, std::string> out;
#if SPECPLAN_HAVE_CUDA
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) out["cuda_driver"] = VersionString(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0) out["cuda_runtime"] = VersionString(v);
#endif
#if SPECPLAN_HAVE_CUPTI
  uint32_t cv = 0;
  if (cuptiGetVersion(&cv) == CUPTI_SUCCESS) out["cupti_api"] = absl::StrCat(cv);
#endif
  return out;
}

}  // namespace specplan::profiler
