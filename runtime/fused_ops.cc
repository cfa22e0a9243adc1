#include "runtime/fused_ops.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/check.h"

#ifndef SPECPLAN_WITH_CUDA_KERNELS
#define SPECPLAN_WITH_CUDA_KERNELS 0
#endif

#if SPECPLAN_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "runtime/cuda/fused_ops.h"
#endif

namespace specplan::runtime {
namespace {

std::atomic<int>& EnabledFlag() {  // -1: not read yet
  static std::atomic<int> flag{-1};
  return flag;
}

#if SPECPLAN_WITH_CUDA_KERNELS
bool ElemTypeOf(const torch::Tensor& t, cuda::ElemType* type) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      *type = cuda::ElemType::kFloat32;
      return true;
    case torch::kBFloat16:
      *type = cuda::ElemType::kBFloat16;
      return true;
    case torch::kFloat16:
      *type = cuda::ElemType::kFloat16;
      return true;
    default:
      return false;
  }
}

// The kernels apply: enabled, every tensor on the same CUDA device with one supported dtype, each
// one's last axis contiguous, and none recording gradients (the kernels have no backward: training
// composes the ops, whose autograd LibTorch provides).
bool Applies(std::initializer_list<const torch::Tensor*> ts, cuda::ElemType* type) {
  if (!FusedKernelsEnabled()) return false;
  const torch::Tensor& first = **ts.begin();
  if (!first.is_cuda() || !ElemTypeOf(first, type)) return false;
  for (const torch::Tensor* t : ts) {
    if (!t->is_cuda() || t->device() != first.device() || t->scalar_type() != first.scalar_type() ||
        t->dim() < 1 || t->stride(-1) != 1 || t->requires_grad()) {
      return false;
    }
  }
  return true;
}

void* Stream(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

void CheckLaunch(int code, const char* kernel) {
  if (code == 0) return;
  std::fprintf(stderr, "%s: %s\n", kernel, cuda::ErrorName(code));
  SPECPLAN_CHECK(code == 0, "a fused CUDA kernel failed to launch");
}
#endif

}  // namespace

bool FusedKernelsBuilt() { return SPECPLAN_WITH_CUDA_KERNELS != 0; }

bool FusedKernelsEnabled() {
  if (!FusedKernelsBuilt()) return false;
  int v = EnabledFlag().load();
  if (v < 0) {
    const char* env = std::getenv("SPECPLAN_FUSED_KERNELS");
    v = env != nullptr && std::strcmp(env, "0") == 0 ? 0 : 1;
    EnabledFlag().store(v);
  }
  return v == 1;
}

void SetFusedKernelsEnabled(bool enabled) { EnabledFlag().store(enabled ? 1 : 0); }

torch::Tensor FusedRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
#if SPECPLAN_WITH_CUDA_KERNELS
  cuda::ElemType type;
  if (!Applies({&x, &w}, &type) || (x.dim() != 2 && x.dim() != 3) || w.dim() != 1 ||
      !w.is_contiguous() || w.size(0) != x.size(-1) || x.size(-1) == 0) {
    return torch::Tensor();
  }
  const int64_t width = x.size(-1);
  const int64_t inner = x.dim() == 3 ? x.size(1) : 1;
  const int64_t rows = x.numel() / width;
  torch::Tensor out = torch::empty(x.sizes(), x.options());
  CheckLaunch(cuda::LaunchRmsNorm(type, x.data_ptr(), w.data_ptr(), out.data_ptr(), rows, width,
                                  inner, x.stride(0), x.dim() == 3 ? x.stride(1) : 0,
                                  static_cast<float>(eps), Stream(x)),
              "fused RMSNorm");
  return out;
#else
  (void)x, (void)w, (void)eps;
  return torch::Tensor();
#endif
}

torch::Tensor FusedRotary(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, int64_t rotary_dim) {
#if SPECPLAN_WITH_CUDA_KERNELS
  cuda::ElemType type;
  if (!Applies({&x, &cos, &sin}, &type) || x.dim() != 3 || !cos.is_contiguous() ||
      !sin.is_contiguous() || rotary_dim % 2 != 0 || rotary_dim > x.size(2) ||
      cos.numel() != x.size(0) * rotary_dim || sin.numel() != cos.numel()) {
    return torch::Tensor();
  }
  torch::Tensor out = torch::empty(x.sizes(), x.options());
  CheckLaunch(cuda::LaunchRotary(type, x.data_ptr(), cos.data_ptr(), sin.data_ptr(), out.data_ptr(),
                                 x.size(0), x.size(1), x.size(2), rotary_dim, x.stride(0),
                                 x.stride(1), Stream(x)),
              "fused rotary");
  return out;
#else
  (void)x, (void)cos, (void)sin, (void)rotary_dim;
  return torch::Tensor();
#endif
}

torch::Tensor FusedSiluMul(const torch::Tensor& gate, const torch::Tensor& up) {
#if SPECPLAN_WITH_CUDA_KERNELS
  cuda::ElemType type;
  if (!Applies({&gate, &up}, &type) || gate.dim() != 2 || up.sizes() != gate.sizes()) {
    return torch::Tensor();
  }
  torch::Tensor out = torch::empty(gate.sizes(), gate.options());
  CheckLaunch(
      cuda::LaunchSiluMul(type, gate.data_ptr(), up.data_ptr(), out.data_ptr(), gate.size(0),
                          gate.size(1), gate.stride(0), up.stride(0), Stream(gate)),
      "fused SiLU x up");
  return out;
#else
  (void)gate, (void)up;
  return torch::Tensor();
#endif
}

}  // namespace specplan::runtime
