#include "profiler/pass_timer.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/enum_names.h"

namespace specplan::profiler {

namespace {

constexpr EnumEntry<KernelClass> kKernelClassNames[] = {{KernelClass::kGemm, "gemm"},
                                                        {KernelClass::kAttention, "attention"},
                                                        {KernelClass::kOther, "other"}};

}  // namespace

const char* KernelClassName(KernelClass k) { return EnumName(kKernelClassNames, k); }

KernelClass ClassifyKernel(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (const char* key : {"flash", "fmha", "attention", "attn", "sdpa", "softmax"}) {
    if (absl::StrContains(n, key)) return KernelClass::kAttention;
  }
  for (const char* key : {"gemm", "gemv", "cutlass", "cublas", "xmma", "nvjet", "splitk"}) {
    if (absl::StrContains(n, key)) return KernelClass::kGemm;
  }
  return KernelClass::kOther;
}

absl::StatusOr<PassTiming> HostClockTimer::Time(const std::function<void()>& pass) {
  const auto t0 = std::chrono::steady_clock::now();
  pass();
  if (sync_) sync_();
  PassTiming t;
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

absl::StatusOr<TimerChoice> ParseTimerChoice(const std::string& name) {
  if (name == "auto") return TimerChoice::kAuto;
  if (name == "cupti") return TimerChoice::kCupti;
  if (name == "cuda_events") return TimerChoice::kCudaEvents;
  if (name == "host_clock") return TimerChoice::kHostClock;
  return absl::InvalidArgumentError(
      absl::StrCat("--timer = '", name, "': expected auto, cupti, cuda_events or host_clock"));
}

absl::StatusOr<std::unique_ptr<PassTimer>> MakePassTimer(const TimerRequest& request,
                                                         std::vector<std::string>* notes) {
  auto note = [&](const std::string& line) {
    if (notes != nullptr) notes->push_back(line);
  };
  if (!request.cuda) {
    if (request.choice == TimerChoice::kCupti || request.choice == TimerChoice::kCudaEvents) {
      return absl::FailedPreconditionError(
          "--timer: cupti and cuda_events need a CUDA device (this run is on the CPU)");
    }
    return std::unique_ptr<PassTimer>(std::make_unique<HostClockTimer>());
  }
  switch (request.choice) {
    case TimerChoice::kCupti:
      return MakeCuptiTimer(request.device_index);
    case TimerChoice::kCudaEvents:
      return MakeCudaEventTimer(request.device_index);
    case TimerChoice::kHostClock:
      return std::unique_ptr<PassTimer>(std::make_unique<HostClockTimer>(request.host_sync));
    case TimerChoice::kAuto:
      break;
  }
  auto cupti = MakeCuptiTimer(request.device_index);
  if (cupti.ok()) return cupti;
  auto events = MakeCudaEventTimer(request.device_index);
  note(absl::StrCat("cupti: ", std::string(cupti.status().message()), "; using ",
                    events.ok() ? "cuda_events" : "host_clock"));
  if (events.ok()) return events;
  note(absl::StrCat("cuda_events: ", std::string(events.status().message()), "; using host_clock"));
  return std::unique_ptr<PassTimer>(std::make_unique<HostClockTimer>(request.host_sync));
}

}  // namespace specplan::profiler
