// Shared by the cost model tests: the bundled H100 / Llama-3.1-8B vLLM profile, the registry's
// H100 / Qwen3-8B roofline, tiny hand-sized model
// specs whose roofline terms are computed by hand in the tests, and the kernel-sum coefficients
// the fit tests take as ground truth.
#ifndef SPECPLAN_TESTS_COSTMODEL_COST_TEST_UTIL_H_
#define SPECPLAN_TESTS_COSTMODEL_COST_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "costmodel/cost_spec.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/profile.h"
#include "tests/paths/test_paths.h"

namespace specplan::costmodel {

// ResolveCost of a model and a GPU (and a profile file), with no engine named: what a caller that
// does not choose an engine resolves.
inline absl::StatusOr<ResolvedLatencyModel> ResolveModelOn(const std::string& model,
                                                           const std::string& gpu,
                                                           const std::string& profile_path = "") {
  CostSpec spec;
  spec.model = model;
  spec.gpu = gpu;
  spec.profile_path = profile_path;
  return ResolveCost(spec);
}

// A profile of qwen3-8b on an H100 fitted to `scale` x the roofline plus 1 ms, of `engine`
// (the engine-choice tests of the cost model and the CLI ship it as a bundled profile).
inline Profile EngineProfile(const std::string& engine, double scale,
                             const std::string& version = "") {
  const ModelSpec model = *LookupModel("qwen3-8b");
  const GpuSpec gpu = *LookupGpu("h100");
  const RooflineLatency roofline(model, gpu);
  std::vector<LatencySample> samples;
  for (int64_t c : {0, 512, 2048}) {
    for (int64_t s : {1, 8, 32, 128}) {
      samples.push_back({s, c, scale * roofline.VerifySeconds(s, c) + 1e-3});
    }
  }
  auto p = FitProfile(model, gpu, samples);
  EXPECT_TRUE(p.ok()) << p.status();
  p->engine = engine;
  p->engine_version = version;
  return *p;
}

// The bundled H100 Llama-3.1-8B vLLM profile, resolved once (the step-model tests' cost: its
// verify table, its composed drafter tables and the vLLM engine).
inline const ResolvedLatencyModel& H100Llama8bVllm() {
  static const ResolvedLatencyModel* r = [] {
    CostSpec spec;
    spec.model = "llama-3.1-8b";
    spec.gpu = "h100";
    spec.engine = "vllm";
    spec.calib_dir = ::specplan::test_paths::SourceDir() + "/calib";
    auto resolved = ResolveCost(spec);
    if (!resolved.ok()) std::abort();  // the bundled profile must load
    return new ResolvedLatencyModel(*std::move(resolved));
  }();
  return *r;
}

inline RooflineLatency H100Qwen8b() {
  return RooflineLatency(*LookupModel("qwen3-8b"), *LookupGpu("h100"));
}

// A tiny bf16 model: L = layers, h = hidden, n_q and n_kv heads of width d = head_dim, h_ffn = ffn
// (0 for an MoE, whose experts the caller sets), V = vocab; gated MLP, tp = 1.
inline ModelSpec TinyModel(const std::string& model_type, int64_t layers, int64_t hidden,
                           int64_t n_q, int64_t n_kv, int64_t head_dim, int64_t ffn,
                           int64_t vocab) {
  // name, model_type, layers, hidden, n_q, n_kv, head_dim, ffn, vocab (the leading fields).
  ModelSpec m{"", model_type, layers, hidden, n_q, n_kv, head_dim, ffn, vocab};
  m.dtype = DType::kBFloat16;
  return m;
}

// The kernel-sum model the fit tests recover: 3 ms of launches, GEMMs at 1.3x the roofline (p = 6),
// weights at 1.2x, the decode attention kernel at 1.4x, the verify one at 15x per wave plus
// 0.2 ms, score FLOPs at 0.5x, elementwise kernels at 6x, attention tiles of 512 tokens.
inline KernelSumCoefficients KernelSumTruth() {
  // overhead_s, gemm, weights, p, decode, verify, verify_overhead_s, attention, elementwise, tile,
  // attention_tile.
  return KernelSumCoefficients{3e-3, 1.3, 1.2, 6, 1.4, 15, 2e-4, 0.5, 6, 1, 512};
}

// A registry's refusal of an unknown name (LookupGpu, LookupModel): it names `name` and lists the
// known names, `known` among them.
inline void ExpectUnknownNameListsKnown(const absl::Status& st, const std::string& name,
                                        std::initializer_list<const char*> known) {
  ASSERT_FALSE(st.ok()) << name;
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(name));
  for (const char* k : known) EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(k));
}

}  // namespace specplan::costmodel

#endif  // SPECPLAN_TESTS_COSTMODEL_COST_TEST_UTIL_H_
