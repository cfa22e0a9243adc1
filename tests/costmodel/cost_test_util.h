// Shared by the cost model tests: the registry's H100 / Qwen3-8B roofline, tiny hand-sized model
// specs whose roofline terms are computed by hand in the tests, and the kernel-sum coefficients
// the fit tests take as ground truth.
#ifndef SPECPLAN_TESTS_COSTMODEL_COST_TEST_UTIL_H_
#define SPECPLAN_TESTS_COSTMODEL_COST_TEST_UTIL_H_

#include <cstdint>
#include <string>

#include "costmodel/kernel_sum_latency.h"
#include "costmodel/model_registry.h"
#include "costmodel/model_spec.h"
#include "costmodel/roofline_latency.h"

namespace specplan::costmodel {

inline RooflineLatency H100Qwen8b() {
  return RooflineLatency(*LookupModel("qwen3-8b"), *LookupGpu("h100"));
}

// A tiny bf16 model: L = layers, h = hidden, n_q and n_kv heads of width d = head_dim, h_ffn = ffn
// (0 for an MoE, whose experts the caller sets), V = vocab; gated MLP, tp = 1.
inline ModelSpec TinyModel(const std::string& model_type, int64_t layers, int64_t hidden,
                           int64_t n_q, int64_t n_kv, int64_t head_dim, int64_t ffn,
                           int64_t vocab) {
  ModelSpec m;
  m.model_type = model_type;
  m.layers = layers;
  m.hidden = hidden;
  m.n_q = n_q;
  m.n_kv = n_kv;
  m.head_dim = head_dim;
  m.ffn = ffn;
  m.vocab = vocab;
  m.dtype = DType::kBFloat16;
  return m;
}

// The kernel-sum model the fit tests recover: 3 ms of launches, GEMMs at 1.3x the roofline (p = 6),
// weights at 1.2x, the decode attention kernel at 1.4x, the verify one at 15x per wave plus
// 0.2 ms, score FLOPs at 0.5x, elementwise kernels at 6x, attention tiles of 512 tokens.
inline KernelSumCoefficients KernelSumTruth() {
  KernelSumCoefficients k;
  k.overhead_s = 3e-3;
  k.gemm = 1.3;
  k.weights = 1.2;
  k.p = 6;
  k.decode = 1.4;
  k.verify = 15;
  k.verify_overhead_s = 2e-4;
  k.attention = 0.5;
  k.elementwise = 6;
  k.tile = 1;
  k.attention_tile = 512;
  return k;
}

}  // namespace specplan::costmodel

#endif  // SPECPLAN_TESTS_COSTMODEL_COST_TEST_UTIL_H_
