#include "runtime/layer_ops.h"

#include "runtime/fused_ops.h"

namespace specplan::runtime {

torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  if (torch::Tensor fused = FusedRmsNorm(x, w, eps); fused.defined()) return fused;
  torch::Tensor xf = x.to(torch::kFloat32);
  xf = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return w * xf.to(x.scalar_type());
}

torch::Tensor ApplyRotary(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, int64_t rotary_dim) {
  if (torch::Tensor fused = FusedRotary(x, cos, sin, rotary_dim); fused.defined()) return fused;
  const int64_t rd = rotary_dim, d = x.size(-1);
  torch::Tensor xr = rd == d ? x : x.narrow(-1, 0, rd);
  torch::Tensor x1 = xr.narrow(-1, 0, rd / 2);
  torch::Tensor x2 = xr.narrow(-1, rd / 2, rd / 2);
  torch::Tensor rotated = torch::cat({-x2, x1}, -1);
  torch::Tensor out = xr * cos + rotated * sin;
  if (rd == d) return out;
  return torch::cat({out, x.narrow(-1, rd, d - rd)}, -1);
}

torch::Tensor Activate(Activation a, const torch::Tensor& x) {
  switch (a) {
    case Activation::kSilu:
      return torch::silu(x);
    case Activation::kGelu:
      return torch::gelu(x);
    case Activation::kGeluTanh:
      return torch::gelu(x, "tanh");
    case Activation::kRelu:
      return torch::relu(x);
  }
  return x;
}

torch::Tensor GatedActivation(Activation a, const torch::Tensor& gate, const torch::Tensor& up) {
  if (a == Activation::kSilu) {
    if (torch::Tensor fused = FusedSiluMul(gate, up); fused.defined()) return fused;
  }
  return Activate(a, gate) * up;
}

}  // namespace specplan::runtime
