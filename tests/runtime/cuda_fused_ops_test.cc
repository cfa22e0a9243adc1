// The fused CUDA kernels (runtime/fused_ops.h) against LibTorch's composition of the same ops on
// the same GPU: the rotary embedding and SiLU x up bit for bit (they round where LibTorch's ops
// round), RMSNorm to float32 summation order, in fp32, bf16 and fp16, over contiguous and strided
// inputs (q and k as views of one QKV output), partial rotary and widths that are not multiples of
// the block; and that they decline where gradients are recorded. Skipped without a CUDA device or
// without the kernels in the build; on the CPU the wrappers decline and layer_ops composes the ops.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runtime/fused_ops.h"
#include "runtime/layer_ops.h"

namespace specplan::runtime {
namespace {

TEST(FusedOps, DeclineOnTheCpu) {
  const torch::Tensor x = torch::randn({3, 8}), w = torch::randn({8});
  EXPECT_FALSE(FusedRmsNorm(x, w, 1e-6).defined());
  EXPECT_FALSE(FusedSiluMul(x, x).defined());
  EXPECT_FALSE(
      FusedRotary(x.view({3, 2, 4}), torch::randn({3, 4}), torch::randn({3, 4}), 4).defined());
  // GatedActivation composes: silu(gate) * up.
  EXPECT_TRUE(torch::equal(GatedActivation(Activation::kSilu, x, w.expand({3, 8})),
                           torch::silu(x) * w.expand({3, 8})));
}

class FusedOpsCudaTest : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch/machine";
    if (!FusedKernelsBuilt()) GTEST_SKIP() << "built without -DSPECPLAN_WITH_CUDA_KERNELS=ON";
    SetFusedKernelsEnabled(true);
  }
  void TearDown() override { SetFusedKernelsEnabled(true); }
  torch::TensorOptions Opts() const {
    return torch::TensorOptions().dtype(GetParam()).device(torch::kCUDA);
  }
  // f() with the kernels, then with LibTorch's composition.
  template <typename F>
  std::pair<torch::Tensor, torch::Tensor> Both(F f) {
    SetFusedKernelsEnabled(true);
    torch::Tensor fused = f();
    SetFusedKernelsEnabled(false);
    torch::Tensor composed = f();
    SetFusedKernelsEnabled(true);
    return {fused, composed};
  }
};

TEST_P(FusedOpsCudaTest, RmsNormMatchesComposition) {
  c10::InferenceMode guard;
  for (const auto& [rows, width] :
       {std::pair{1, 4096}, {7, 4096}, {64, 128}, {5, 100}, {3, 4097}}) {
    const torch::Tensor x = torch::randn({rows, width}, Opts()) * 3;
    const torch::Tensor w = 1 + 0.1 * torch::randn({width}, Opts());
    ASSERT_TRUE(FusedRmsNorm(x, w, 1e-6).defined());
    const auto [fused, composed] = Both([&] { return RmsNorm(x, w, 1e-6); });
    const double tol = GetParam() == torch::kFloat32 ? 1e-5 : 1e-2;
    EXPECT_TRUE(torch::allclose(fused.to(torch::kFloat32), composed.to(torch::kFloat32), tol, tol))
        << rows << " x " << width << ": max diff "
        << (fused.to(torch::kFloat32) - composed.to(torch::kFloat32)).abs().max().item<float>();
  }
  // Per-head q norm over a strided view: q is the first 4 x 128 columns of a [9][768] QKV row.
  const torch::Tensor qkv = torch::randn({9, 768}, Opts());
  const torch::Tensor q = qkv.narrow(1, 0, 512).view({9, 4, 128});
  const torch::Tensor hw = 1 + 0.1 * torch::randn({128}, Opts());
  const auto [fused, composed] = Both([&] { return RmsNorm(q, hw, 1e-6); });
  const double tol = GetParam() == torch::kFloat32 ? 1e-5 : 1e-2;
  EXPECT_TRUE(torch::allclose(fused.to(torch::kFloat32), composed.to(torch::kFloat32), tol, tol));
}

// Training: the kernels have no backward, so a tensor that records gradients is composed, and
// the gradient reaches the weight.
TEST_P(FusedOpsCudaTest, DeclineWhereGradientsAreRecorded) {
  const torch::Tensor x = torch::randn({4, 256}, Opts());
  const torch::Tensor w = (1 + 0.1 * torch::randn({256}, Opts())).requires_grad_(true);
  EXPECT_FALSE(FusedRmsNorm(x, w, 1e-6).defined());
  RmsNorm(x, w, 1e-6).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_GT(w.grad().abs().sum().item<float>(), 0.0f);
  const torch::Tensor gate = torch::randn({4, 64}, Opts()).requires_grad_(true);
  EXPECT_FALSE(FusedSiluMul(gate, torch::randn({4, 64}, Opts())).defined());
}

TEST_P(FusedOpsCudaTest, RotaryIsBitIdentical) {
  c10::InferenceMode guard;
  for (const int64_t rotary_dim : {128, 32}) {  // full, and partial (gpt_neox's rotary_pct)
    const torch::Tensor qkv = torch::randn({11, 3 * 4 * 128}, Opts());
    const torch::Tensor q = qkv.narrow(1, 0, 512).view({11, 4, 128});  // strided rows
    const torch::Tensor pos =
        torch::arange(11, torch::TensorOptions().device(torch::kCUDA)).to(torch::kFloat32);
    const torch::Tensor freqs = torch::outer(
        pos, torch::rand({rotary_dim / 2}, torch::TensorOptions().device(torch::kCUDA)));
    const torch::Tensor emb = torch::cat({freqs, freqs}, -1).unsqueeze(1);
    const torch::Tensor cos = emb.cos().to(GetParam()), sin = emb.sin().to(GetParam());
    ASSERT_TRUE(FusedRotary(q, cos, sin, rotary_dim).defined());
    const auto [fused, composed] = Both([&] { return ApplyRotary(q, cos, sin, rotary_dim); });
    EXPECT_TRUE(torch::equal(fused, composed)) << "rotary_dim " << rotary_dim;
  }
}

TEST_P(FusedOpsCudaTest, SiluMulIsBitIdentical) {
  c10::InferenceMode guard;
  for (const auto& [rows, f] : {std::pair{1, 12288}, {64, 1000}, {3, 7}}) {
    const torch::Tensor gu = torch::randn({rows, 2 * f}, Opts()) * 4;
    const torch::Tensor gate = gu.narrow(1, 0, f), up = gu.narrow(1, f, f);
    ASSERT_TRUE(FusedSiluMul(gate, up).defined());
    const auto [fused, composed] =
        Both([&] { return GatedActivation(Activation::kSilu, gate, up); });
    EXPECT_TRUE(torch::equal(fused, composed)) << rows << " x " << f;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedOpsCudaTest,
                         ::testing::Values(torch::kFloat32, torch::kBFloat16, torch::kFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

}  // namespace
}  // namespace specplan::runtime
