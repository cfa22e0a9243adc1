// The fused CUDA kernels of runtime/cuda/fused_ops.h for tensors: what layer_ops.h's RMSNorm,
// rotary embedding and gated activation run on a CUDA device when the build has them
// (-DSPECPLAN_WITH_CUDA_KERNELS=ON, which needs LibTorch with CUDA and nvcc).
//
// Each returns an undefined tensor when it does not apply, and the caller then composes the op
// from LibTorch's kernels: a CPU tensor, a build without the kernels, the kernels switched off
// (SetFusedKernelsEnabled(false), or SPECPLAN_FUSED_KERNELS=0 in the environment), a dtype other
// than fp32 / bf16 / fp16, a layout the kernel does not take (its last axis not contiguous), or a
// tensor that records gradients (the kernels have no backward; training composes the ops).
#ifndef SPECPLAN_RUNTIME_FUSED_OPS_H_
#define SPECPLAN_RUNTIME_FUSED_OPS_H_

#include <torch/types.h>

#include <cstdint>

namespace specplan::runtime {

// Whether this build has the kernels.
bool FusedKernelsBuilt();
// Whether they are used (built, and not switched off). Read from SPECPLAN_FUSED_KERNELS ("0" =
// off) once; SetFusedKernelsEnabled overrides it (tests compare both paths).
bool FusedKernelsEnabled();
void SetFusedKernelsEnabled(bool enabled);

// RmsNorm (layer_ops.h) of x [rows][width] or [a][b][width] by w [width].
torch::Tensor FusedRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps);
// ApplyRotary (layer_ops.h) of x [tokens][heads][d] with cos and sin of tokens x rotary_dim.
torch::Tensor FusedRotary(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, int64_t rotary_dim);
// silu(gate) * up, gate and up [rows][width].
torch::Tensor FusedSiluMul(const torch::Tensor& gate, const torch::Tensor& up);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_FUSED_OPS_H_
