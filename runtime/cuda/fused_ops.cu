#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "runtime/cuda/fused_ops.h"

namespace specplan::runtime::cuda {
namespace {

// Float <-> element type: to float exactly, back with round-to-nearest-even, as LibTorch converts.
template <typename T>
struct Elem;
template <>
struct Elem<float> {
  static __device__ __forceinline__ float ToFloat(float v) { return v; }
  static __device__ __forceinline__ float FromFloat(float v) { return v; }
};
template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 FromFloat(float v) {
    return __float2bfloat16_rn(v);
  }
};
template <>
struct Elem<__half> {
  static __device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half FromFloat(float v) { return __float2half_rn(v); }
};

template <typename T>
__device__ __forceinline__ float ToFloat(T v) {
  return Elem<T>::ToFloat(v);
}
template <typename T>
__device__ __forceinline__ T FromFloat(float v) {
  return Elem<T>::FromFloat(v);
}

// The block's sum of v, returned to every thread. blockDim.x is a multiple of 32, at most 1024.
__device__ float BlockSum(float v) {
  __shared__ float warp_sums[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? warp_sums[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__global__ void RmsNormKernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ out,
                              int64_t width, int64_t inner_count, int64_t stride_outer,
                              int64_t stride_inner, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + (row / inner_count) * stride_outer + (row % inner_count) * stride_inner;
  T* outr = out + row * width;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    const float v = ToFloat(xr[i]);
    sum += v * v;
  }
  sum = BlockSum(sum);
  const float r = rsqrtf(sum / static_cast<float>(width) + eps);
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    const T normed = FromFloat<T>(__fmul_rn(ToFloat(xr[i]), r));  // HF: .to(dtype), then * weight
    outr[i] = FromFloat<T>(__fmul_rn(ToFloat(normed), ToFloat(w[i])));
  }
}

template <typename T>
__global__ void RotaryKernel(const T* __restrict__ x, const T* __restrict__ cos,
                             const T* __restrict__ sin, T* __restrict__ out, int64_t total,
                             int64_t heads, int64_t d, int64_t rotary_dim, int64_t stride_token,
                             int64_t stride_head) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const int64_t i = idx % d;
  const int64_t h = (idx / d) % heads;
  const int64_t t = idx / (d * heads);
  const T* xr = x + t * stride_token + h * stride_head;
  if (i >= rotary_dim) {
    out[idx] = xr[i];
    return;
  }
  const int64_t half = rotary_dim / 2;
  // LibTorch: x * cos + cat(-x2, x1) * sin, each product and the sum rounded to T (the _rn
  // intrinsics keep the compiler from fusing them into one FMA, which LibTorch's separate kernels
  // cannot do).
  const float partner = i < half ? -ToFloat(xr[i + half]) : ToFloat(xr[i - half]);
  const T a = FromFloat<T>(__fmul_rn(ToFloat(xr[i]), ToFloat(cos[t * rotary_dim + i])));
  const T b = FromFloat<T>(__fmul_rn(partner, ToFloat(sin[t * rotary_dim + i])));
  out[idx] = FromFloat<T>(__fadd_rn(ToFloat(a), ToFloat(b)));
}

template <typename T>
__global__ void SiluMulKernel(const T* __restrict__ gate, const T* __restrict__ up,
                              T* __restrict__ out, int64_t total, int64_t width,
                              int64_t stride_gate, int64_t stride_up) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const int64_t r = idx / width, i = idx % width;
  const float g = ToFloat(gate[r * stride_gate + i]);
  const T s = FromFloat<T>(g / (1.f + expf(-g)));  // LibTorch's silu, rounded as its output
  out[idx] = FromFloat<T>(__fmul_rn(ToFloat(s), ToFloat(up[r * stride_up + i])));
}

constexpr int kThreads = 256;

int64_t Blocks(int64_t total) { return (total + kThreads - 1) / kThreads; }

template <typename T>
int RmsNormAs(const void* x, const void* w, void* out, int64_t rows, int64_t width,
              int64_t inner_count, int64_t stride_outer, int64_t stride_inner, float eps,
              cudaStream_t stream) {
  // A multiple of 32 threads, no more than the row needs (a 128-wide q/k norm takes 128).
  const int threads = static_cast<int>(width >= kThreads ? kThreads : ((width + 31) / 32) * 32);
  RmsNormKernel<T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(out), width, inner_count,
      stride_outer, stride_inner, eps);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int RotaryAs(const void* x, const void* cos, const void* sin, void* out, int64_t tokens,
             int64_t heads, int64_t d, int64_t rotary_dim, int64_t stride_token,
             int64_t stride_head, cudaStream_t stream) {
  const int64_t total = tokens * heads * d;
  RotaryKernel<T><<<static_cast<unsigned>(Blocks(total)), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(cos), static_cast<const T*>(sin),
      static_cast<T*>(out), total, heads, d, rotary_dim, stride_token, stride_head);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int SiluMulAs(const void* gate, const void* up, void* out, int64_t rows, int64_t width,
              int64_t stride_gate, int64_t stride_up, cudaStream_t stream) {
  const int64_t total = rows * width;
  SiluMulKernel<T><<<static_cast<unsigned>(Blocks(total)), kThreads, 0, stream>>>(
      static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<T*>(out), total, width,
      stride_gate, stride_up);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int LaunchRmsNorm(ElemType type, const void* x, const void* w, void* out, int64_t rows,
                  int64_t width, int64_t inner_count, int64_t stride_outer, int64_t stride_inner,
                  float eps, void* stream) {
  if (rows == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case ElemType::kFloat32:
      return RmsNormAs<float>(x, w, out, rows, width, inner_count, stride_outer, stride_inner, eps,
                              s);
    case ElemType::kBFloat16:
      return RmsNormAs<__nv_bfloat16>(x, w, out, rows, width, inner_count, stride_outer,
                                      stride_inner, eps, s);
    case ElemType::kFloat16:
      return RmsNormAs<__half>(x, w, out, rows, width, inner_count, stride_outer, stride_inner, eps,
                               s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int LaunchRotary(ElemType type, const void* x, const void* cos, const void* sin, void* out,
                 int64_t tokens, int64_t heads, int64_t d, int64_t rotary_dim, int64_t stride_token,
                 int64_t stride_head, void* stream) {
  if (tokens * heads * d == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case ElemType::kFloat32:
      return RotaryAs<float>(x, cos, sin, out, tokens, heads, d, rotary_dim, stride_token,
                             stride_head, s);
    case ElemType::kBFloat16:
      return RotaryAs<__nv_bfloat16>(x, cos, sin, out, tokens, heads, d, rotary_dim, stride_token,
                                     stride_head, s);
    case ElemType::kFloat16:
      return RotaryAs<__half>(x, cos, sin, out, tokens, heads, d, rotary_dim, stride_token,
                              stride_head, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int LaunchSiluMul(ElemType type, const void* gate, const void* up, void* out, int64_t rows,
                  int64_t width, int64_t stride_gate, int64_t stride_up, void* stream) {
  if (rows * width == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case ElemType::kFloat32:
      return SiluMulAs<float>(gate, up, out, rows, width, stride_gate, stride_up, s);
    case ElemType::kBFloat16:
      return SiluMulAs<__nv_bfloat16>(gate, up, out, rows, width, stride_gate, stride_up, s);
    case ElemType::kFloat16:
      return SiluMulAs<__half>(gate, up, out, rows, width, stride_gate, stride_up, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

const char* ErrorName(int code) { return cudaGetErrorName(static_cast<cudaError_t>(code)); }

}  // namespace specplan::runtime::cuda
