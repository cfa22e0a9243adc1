// Fused CUDA kernels for the runtime's elementwise work (plain CUDA, no LibTorch): RMSNorm, the
// rotate-half rotary embedding and SiLU(gate) x up, one launch each where LibTorch's composition
// takes 8, 5 and 2. Each kernel computes what LibTorch's ops compute, rounding where they round:
// the rotary and SiLU x up kernels round every intermediate to the element type as LibTorch's
// separate ops do (bit-identical results); RMSNorm sums the squares in float32 in another order
// than LibTorch's mean (the same to float32 rounding). runtime/fused_ops.h wraps them for tensors.
//
// Built only with -DSPECPLAN_WITH_CUDA_KERNELS=ON (runtime/CMakeLists.txt). Every function launches
// on `stream` (a cudaStream_t) and returns the launch's CUDA error code (0 = success).
#ifndef SPECPLAN_RUNTIME_CUDA_FUSED_OPS_H_
#define SPECPLAN_RUNTIME_CUDA_FUSED_OPS_H_

#include <cstdint>

namespace specplan::runtime::cuda {

enum class ElemType { kFloat32, kBFloat16, kFloat16 };

// out[r][i] = T(T(x_r[i] * rsqrt(mean_i(x_r^2) + eps)) * w[i]) over `rows` rows of `width`
// elements. Row r of x starts at (r / inner_count) * stride_outer + (r % inner_count) *
// stride_inner elements (a 2-D [rows][width] tensor: inner_count 1; a 3-D [a][b][width] one:
// inner_count b); its elements are contiguous. out is contiguous [rows][width].
int LaunchRmsNorm(ElemType type, const void* x, const void* w, void* out, int64_t rows,
                  int64_t width, int64_t inner_count, int64_t stride_outer, int64_t stride_inner,
                  float eps, void* stream);

// HF's rotate-half rotary embedding of x [tokens][heads][d] (strides stride_token, stride_head, 1)
// on its first rotary_dim channels, cos and sin contiguous [tokens][rotary_dim]; the other channels
// are copied. out is contiguous [tokens][heads][d]. rotary_dim even, <= d.
int LaunchRotary(ElemType type, const void* x, const void* cos, const void* sin, void* out,
                 int64_t tokens, int64_t heads, int64_t d, int64_t rotary_dim, int64_t stride_token,
                 int64_t stride_head, void* stream);

// out[r][i] = T(T(silu(gate[r][i])) * up[r][i]) over rows x width; gate's and up's rows start
// every stride_gate and stride_up elements, their elements contiguous; out is contiguous.
int LaunchSiluMul(ElemType type, const void* gate, const void* up, void* out, int64_t rows,
                  int64_t width, int64_t stride_gate, int64_t stride_up, void* stream);

// The CUDA runtime's name for an error code the functions above returned.
const char* ErrorName(int code);

}  // namespace specplan::runtime::cuda

#endif  // SPECPLAN_RUNTIME_CUDA_FUSED_OPS_H_
