#include "profiler/pass_timer.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <thread>

namespace specplan::profiler {
namespace {

TEST(ClassifyKernelTest, KnownKernelNames) {
  // Names as CUPTI reports them on Hopper / Ampere with PyTorch.
  EXPECT_EQ(ClassifyKernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
            KernelClass::kGemm);
  EXPECT_EQ(ClassifyKernel("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"), KernelClass::kGemm);
  EXPECT_EQ(ClassifyKernel("void gemv2T_kernel_val<int, int, __nv_bfloat16>"), KernelClass::kGemm);
  EXPECT_EQ(ClassifyKernel("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn"), KernelClass::kGemm);
  EXPECT_EQ(ClassifyKernel("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>"),
            KernelClass::kGemm);
  EXPECT_EQ(ClassifyKernel("void cublasLt::splitKreduce_kernel<32, 16, int, float>"),
            KernelClass::kGemm);
  EXPECT_EQ(ClassifyKernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>"),
            KernelClass::kAttention);
  EXPECT_EQ(ClassifyKernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80"), KernelClass::kAttention);
  EXPECT_EQ(ClassifyKernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8>"),
            KernelClass::kAttention);
  EXPECT_EQ(ClassifyKernel("void at::native::vectorized_elementwise_kernel<4, "
                           "at::native::CUDAFunctor_add<c10::BFloat16>>"),
            KernelClass::kOther);
  EXPECT_EQ(ClassifyKernel("void at::native::reduce_kernel<512, 1>"), KernelClass::kOther);
  EXPECT_EQ(ClassifyKernel(""), KernelClass::kOther);
  EXPECT_STREQ(KernelClassName(KernelClass::kGemm), "gemm");
  EXPECT_STREQ(KernelClassName(KernelClass::kAttention), "attention");
  EXPECT_STREQ(KernelClassName(KernelClass::kOther), "other");
}

TEST(HostClockTimerTest, RunsThePassThenTheSyncAndMeasuresBoth) {
  std::vector<std::string> order;
  HostClockTimer timer([&] {
    order.push_back("sync");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_EQ(timer.Name(), "host_clock");
  auto t = timer.Time([&] {
    order.push_back("pass");
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  });
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(order, (std::vector<std::string>{"pass", "sync"}));
  EXPECT_GE(t->seconds, 0.005);  // sleeps last at least as long as asked
  EXPECT_EQ(t->kernels, 0);
  EXPECT_EQ(t->kernel_seconds, 0);
}

TEST(MakePassTimerTest, CpuUsesTheHostClock) {
  std::vector<std::string> notes;
  TimerRequest req;
  auto t = MakePassTimer(req, &notes);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->Name(), "host_clock");
  EXPECT_TRUE(notes.empty());
  req.choice = TimerChoice::kHostClock;
  ASSERT_TRUE(MakePassTimer(req, nullptr).ok());
}

TEST(MakePassTimerTest, CudaTimersOnCpuAreRefused) {
  TimerRequest req;
  req.choice = TimerChoice::kCupti;
  auto t = MakePassTimer(req, nullptr);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  req.choice = TimerChoice::kCudaEvents;
  EXPECT_EQ(MakePassTimer(req, nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MakePassTimerTest, ParsesChoices) {
  EXPECT_EQ(*ParseTimerChoice("auto"), TimerChoice::kAuto);
  EXPECT_EQ(*ParseTimerChoice("cupti"), TimerChoice::kCupti);
  EXPECT_EQ(*ParseTimerChoice("cuda_events"), TimerChoice::kCudaEvents);
  EXPECT_EQ(*ParseTimerChoice("host_clock"), TimerChoice::kHostClock);
  auto bad = ParseTimerChoice("nvtx");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--timer = 'nvtx'"), std::string::npos);
}

TEST(MakePassTimerTest, AutoOnCudaFallsBackToTheHostClockWithoutCudaTimers) {
  if (BuiltWithCudaTimers() && CudaDeviceCount() > 0) {
    GTEST_SKIP() << "this machine has a CUDA device: the fallback path is not reachable";
  }
  // No device (or no CUDA timers in this build): auto must still give a working timer and say why.
  std::vector<std::string> notes;
  TimerRequest req;
  req.cuda = true;
  bool synced = false;
  req.host_sync = [&] { synced = true; };
  auto t = MakePassTimer(req, &notes);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->Name(), "host_clock");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("cupti: "), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("cuda_events: "), std::string::npos) << notes[1];
  ASSERT_TRUE((*t)->Time([] {}).ok());
  EXPECT_TRUE(synced);
  // Explicit CUDA timers are errors, not silent fallbacks.
  EXPECT_FALSE(MakeCuptiTimer(0).ok());
  EXPECT_FALSE(MakeCudaEventTimer(0).ok());
}

// Needs a GPU, a CUDA LibTorch and a build with -DSPECPLAN_WITH_CUPTI=ON.
class CudaTimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!BuiltWithCudaTimers()) GTEST_SKIP() << "built without CUDA timers";
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch has no CUDA";
  }
  // Enough work to be measurable: matmuls plus an elementwise op and a softmax.
  static void Work(const torch::Tensor& a, const torch::Tensor& b) {
    torch::Tensor x = torch::matmul(a, b);
    x = torch::softmax(x + 1.0, -1);
    (void)torch::matmul(x, b);
  }
};

TEST_F(CudaTimerTest, CudaEventsTimeAPass) {
  auto timer = MakeCudaEventTimer(0);
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_EQ((*timer)->Name(), "cuda_events");
  torch::Tensor a = torch::randn({2048, 2048}, torch::kCUDA);
  torch::Tensor b = torch::randn({2048, 2048}, torch::kCUDA);
  Work(a, b);  // warm-up
  auto t = (*timer)->Time([&] { Work(a, b); });
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->seconds, 0);
  EXPECT_LT(t->seconds, 10);
}

TEST_F(CudaTimerTest, CuptiSumsKernelsPerClass) {
  if (!BuiltWithCupti()) GTEST_SKIP() << "built without CUPTI";
  auto timer = MakeCuptiTimer(0);
  if (!timer.ok() && timer.status().code() == absl::StatusCode::kUnavailable) {
    GTEST_SKIP() << "CUPTI cannot subscribe here: " << timer.status();
  }
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_EQ((*timer)->Name(), "cupti");
  // Only one CUPTI timer per process.
  EXPECT_EQ(MakeCuptiTimer(0).status().code(), absl::StatusCode::kUnavailable);
  torch::Tensor a = torch::randn({2048, 2048}, torch::kCUDA);
  torch::Tensor b = torch::randn({2048, 2048}, torch::kCUDA);
  Work(a, b);
  auto t = (*timer)->Time([&] { Work(a, b); });
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GE(t->kernels, 3);  // two GEMMs, the add and the softmax (maybe fused differently)
  EXPECT_GT(t->gemm_seconds, 0);
  EXPECT_GT(t->attention_seconds, 0);  // the softmax
  EXPECT_NEAR(t->gemm_seconds + t->attention_seconds + t->other_seconds, t->kernel_seconds,
              1e-9 + 1e-9 * t->kernel_seconds);
  EXPECT_GE(t->span_seconds, t->kernel_seconds * 0.999);  // one stream: kernels do not overlap
  EXPECT_EQ(t->seconds, t->span_seconds);
  // A second pass sees only its own kernels.
  auto t2 = (*timer)->Time([&] { (void)torch::matmul(a, b); });
  ASSERT_TRUE(t2.ok()) << t2.status();
  EXPECT_GE(t2->kernels, 1);
  EXPECT_LT(t2->kernels, t->kernels);
  timer->reset();
  EXPECT_TRUE(MakeCuptiTimer(0).ok());  // released on destruction
}

}  // namespace
}  // namespace specplan::profiler
