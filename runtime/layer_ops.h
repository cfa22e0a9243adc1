// The elementwise pieces of a transformer layer as specplan's runtime computes them (LibTorch ops,
// HuggingFace's arithmetic): the Transformer's forward passes call these, and `calibrate
// --kernels` times these same functions for its elementwise table (profiler/kernel_bench.h), so a
// kernel-composed profile prices the norms, RoPE and activations the runtime actually runs.
#ifndef SPECPLAN_RUNTIME_LAYER_OPS_H_
#define SPECPLAN_RUNTIME_LAYER_OPS_H_

#include <torch/torch.h>

#include <cstdint>

#include "runtime/model_config.h"

namespace specplan::runtime {

// On a CUDA device each op below runs as one fused kernel where the build has them
// (runtime/fused_ops.h), with the same arithmetic; elsewhere as LibTorch's ops.

// HF LlamaRMSNorm over the last axis: normalise in float32, cast back, then scale by w ([width]).
torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps);

// Rotary embedding (rotate-half) on the first rotary_dim channels of x ([..., d]); cos and sin
// broadcast against x's first rotary_dim channels. rotary_dim even, <= d.
torch::Tensor ApplyRotary(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, int64_t rotary_dim);

// The MLP's activation.
torch::Tensor Activate(Activation a, const torch::Tensor& x);

// A gated MLP's activation(gate) * up, gate and up [rows][ffn] (views into one gate/up GEMM's
// output, or two tensors).
torch::Tensor GatedActivation(Activation a, const torch::Tensor& gate, const torch::Tensor& up);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_LAYER_OPS_H_
