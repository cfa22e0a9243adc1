// Tensor parallelism: per-GPU roofline terms, ring all-reduce time, the head-split rule, the GPU
// registry's interconnects, calibrated forms and profiles at tp > 1 (hand-computed values).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/cost_spec.h"
#include "costmodel/fit/fit.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

// L = 2, h = 8, n_q = 4, n_kv = 2, d = 2 (h_q = 8, h_kv = 4), h_ffn = 16, V = 10, bp = 2.
ModelSpec TinyDense(int64_t tp) {
  ModelSpec m = TinyModel("llama", 2, 8, 4, 2, 2, 16, 10);
  m.name = "tiny";
  m.tp = tp;
  return m;
}

GpuSpec TestGpu() {
  GpuSpec g;
  g.name = "test";
  g.peak_flops = 1e12;
  g.mem_bw = 1e9;
  g.mem_bytes = 1e9;
  g.link_bw = 1e9;          // bytes/s per direction
  g.link_latency_s = 1e-6;  // per ring step
  return g;
}

// tp = 2: per GPU h_q' = 4, h_kv' = 1 head * 2 = 2, n_q' = 2; s = 3, c = 5.
TEST(TensorParallel, PerGpuTermsMatchHandComputedValues) {
  const RooflineTerms t = ComputeRooflineTerms(TinyDense(2), 3, 5);
  EXPECT_DOUBLE_EQ(t.attn_proj_flops, 1152);  // 2 (4*3*8*4 + 4*3*8*2)
  EXPECT_DOUBLE_EQ(t.attn_score_flops, 768);  // 2 * 4*3*8*4
  EXPECT_DOUBLE_EQ(t.ffn_flops, 2304);        // 2 * 6*3*8*16 / 2
  EXPECT_DOUBLE_EQ(t.lm_head_flops, 240);     // 2*3*8*10 / 2
  EXPECT_DOUBLE_EQ(t.weight_bytes, 1312);     // 2 [2 (2*8*4 + 2*8*2 + 3*8*16/2) + 2*10*8/2]
  EXPECT_DOUBLE_EQ(t.kv_bytes, 128);          // 2 [2 (2*5*2 + 2*3*2)]
  // 2 [2 (4*3*8 + 4*3*4 + 2*3*2 + 4*3*16/2 + 2*2*3*8) + 3*8 + 3*10/2] = 2 [2 * 348 + 39]
  EXPECT_DOUBLE_EQ(t.activation_bytes, 1470);
  EXPECT_EQ(t.allreduces, 4);               // two per layer
  EXPECT_DOUBLE_EQ(t.allreduce_bytes, 48);  // bp s h = 2*3*8
  // tp = 1 has no all-reduce and the full widths.
  const RooflineTerms one = ComputeRooflineTerms(TinyDense(1), 3, 5);
  EXPECT_EQ(one.allreduces, 0);
  EXPECT_DOUBLE_EQ(one.attn_proj_flops, 2304);
}

TEST(TensorParallel, RingAllReduceTime) {
  const GpuSpec g = TestGpu();
  EXPECT_EQ(AllReduceSeconds(g, 1, 1e6), 0);
  // N = 2, 48 bytes: 2*1*1e-6 + 2*1/2 * 48 / 1e9 = 2e-6 + 4.8e-8.
  EXPECT_DOUBLE_EQ(AllReduceSeconds(g, 2, 48), 2.048e-6);
  // H100 SXM, N = 8, 1 MB: 14 * 0.47 us + 14/8 * 1e6 / 450e9 = 6.58 us + 3.8889 us.
  auto h100 = LookupGpu("h100");
  ASSERT_TRUE(h100.ok());
  EXPECT_NEAR(AllReduceSeconds(*h100, 8, 1e6), 10.4689e-6, 1e-10);
  // A pass: 2L = 4 all-reduces of 48 bytes, added to the max of compute and memory.
  const RooflineEstimate e = EstimateRoofline(TinyDense(2), g, 3, 5);
  EXPECT_DOUBLE_EQ(e.comm_s, 4 * 2.048e-6);
  EXPECT_DOUBLE_EQ(CommunicationSeconds(TinyDense(2), g, 3), e.comm_s);
  // memory: (1312 + 128 + 1470) bytes / 1e9 B/s = 2.91e-6 s > compute 4464 / 1e12.
  EXPECT_DOUBLE_EQ(e.memory_s, 2.91e-6);
  EXPECT_DOUBLE_EQ(e.seconds, 2.91e-6 + 8.192e-6);
}

TEST(TensorParallel, HeadSplitRule) {
  auto llama = LookupModel("llama-3.3-70b");  // 64 query heads, 8 KV heads
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(TensorParallelProblem(*llama, 8), "");
  EXPECT_EQ(TensorParallelProblem(*llama, 3), "must divide n_q = 64 (query heads)");
  EXPECT_EQ(TensorParallelProblem(*llama, 0), "must be >= 1");
  // Qwen3-235B-A22B has 4 KV heads: at tp = 8 each GPU holds one replicated KV head (vLLM).
  auto q235 = LookupModel("qwen3-235b-a22b");
  ASSERT_TRUE(q235.ok());
  EXPECT_EQ(TensorParallelProblem(*q235, 8), "");
  q235->tp = 8;
  EXPECT_EQ(q235->kv_heads_per_gpu(), 1);
  // 24 query heads, 8 KV heads: tp = 12 divides n_q, but neither divides nor is a multiple of 8.
  ModelSpec odd = *llama;
  odd.n_q = 24;
  EXPECT_EQ(TensorParallelProblem(odd, 12),
            "must divide n_kv = 8 or be a multiple of it (KV heads)");
  // No interconnect: the nominal CPU.
  auto cpu = LookupGpu("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(TensorParallelProblem(*llama, *cpu, 2), "gpu 'cpu' has no interconnect (link_bw = 0)");
  EXPECT_EQ(TensorParallelProblem(*llama, *cpu, 1), "");
  ModelSpec bad = *llama;
  bad.tp = 3;
  EXPECT_EQ(ValidateModelSpec(bad).message(), "tp = 3: must divide n_q = 64 (query heads)");
}

TEST(TensorParallel, RegistryInterconnects) {
  struct Want {
    const char* name;
    double link_gbps;  // per direction
  };
  for (const Want& w : {Want{"h100-sxm", 450}, Want{"a100-80g", 300}, Want{"h200", 450},
                        Want{"b200", 900}, Want{"l4", 32}}) {
    auto g = LookupGpu(w.name);
    ASSERT_TRUE(g.ok());
    EXPECT_DOUBLE_EQ(g->link_bw, w.link_gbps * 1e9) << w.name;
    EXPECT_GT(g->link_latency_s, 0) << w.name;
  }
  // 70B-class targets for tp: Llama-3.3-70B 70.6B, Qwen3-32B 32.8B parameters.
  auto l70 = LookupModel("llama-3.3-70b");
  auto q32 = LookupModel("qwen3-32b");
  ASSERT_TRUE(l70.ok() && q32.ok());
  EXPECT_NEAR(l70->ParameterCount() / 1e9, 70.6, 0.1);
  EXPECT_NEAR(q32->ParameterCount() / 1e9, 32.8, 0.1);
  EXPECT_EQ(q32->layers, 64);
  EXPECT_EQ(q32->ffn, 25600);
  // GPU JSON without the link keys (older spec files and profiles) loads with no interconnect.
  auto j = nlohmann::json::parse(R"({"name": "x", "peak_flops": 1e12, "mem_bw": 1e9,
                                     "mem_bytes": 1e9})");
  auto g = GpuSpecFromJson(j);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->link_bw, 0);
  j["link_bw"] = -1;
  EXPECT_EQ(GpuSpecFromJson(j).status().message(),
            "link_bw = -1: must be >= 0 (0 = no interconnect)");
}

// Calibrated forms add the all-reduce time unscaled; the per-term fit subtracts it before fitting.
TEST(TensorParallel, CalibratedFormsAddCommunication) {
  PerTermFeatures f;
  f.compute_s = 1;
  f.weights_s = 2;
  f.kv_attention_s = 0.5;
  f.comm_s = 0.25;
  EXPECT_DOUBLE_EQ(PerTermCoefficients{}.Predict(f), 2.75);  // max(1, 2 + 0.5) + 0.25
  OverlapFeatures o;
  o.gemm_s = 3;
  o.weights_s = 4;
  o.comm_s = 0.5;
  OverlapCoefficients oc;  // p = 2: sqrt(3^2 + 4^2) = 5
  EXPECT_DOUBLE_EQ(oc.Predict(o), 5.5);

  // Samples from a known per-term model at tp = 4 on an H100: the fit recovers its coefficients
  // only if it removes the all-reduce time the model adds.
  auto llama = LookupModel("llama-3.3-70b");
  auto h100 = LookupGpu("h100");
  ASSERT_TRUE(llama.ok() && h100.ok());
  llama->tp = 4;
  const RooflineLatency roofline(*llama, *h100);
  const PerTermCoefficients truth{1.6, 2e-4, 1.25, 2.0};  // compute (+ overhead), weights, KV
  const PerTermLatency model(roofline, truth);
  std::vector<LatencySample> samples;
  for (int64_t s : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
    for (int64_t c : {0, 1024, 4096}) samples.push_back({s, c, model.VerifySeconds(s, c)});
  }
  EXPECT_GT(CommunicationSeconds(*llama, *h100, 1), 0.02 * samples[0].seconds);  // 0.46 of 13.6 ms
  auto fit = FitPerTerm(roofline, samples);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->weights, 1.25, 1e-6);
  EXPECT_NEAR(fit->kv_attention, 2.0, 1e-6);
  EXPECT_NEAR(fit->compute, 1.6, 1e-6);

  // A profile fitted at tp = 4 records it, round-trips, and predicts the same after loading.
  auto profile = FitProfile(*llama, *h100, samples);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(ProfileToJson(*profile).at("model_spec").at("tp"), 4);
  auto loaded = ProfileFromJson(ProfileToJson(*profile));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model_spec.tp, 4);
  auto a = MakeLatencyModel(*profile);
  auto b = MakeLatencyModel(*loaded);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ((*a)->VerifySeconds(64, 2048), (*b)->VerifySeconds(64, 2048));
  EXPECT_EQ(ProfileId(profile->gpu, profile->model, profile->dtype, 4),
            "h100-sxm/llama-3.3-70b-bf16-tp4");
  EXPECT_EQ(BundledProfilePath("calib", "h100-sxm", "llama-3.3-70b", DType::kBFloat16, 4),
            "calib/h100-sxm/llama-3.3-70b-bf16-tp4.json");
  // A tp = 4 profile on a GPU without interconnect is refused, naming the field.
  nlohmann::json j = ProfileToJson(*profile);
  j["gpu_spec"]["link_bw"] = 0;
  EXPECT_EQ(ProfileFromJson(j).status().message(),
            "model_spec.tp = 4: gpu 'h100-sxm' has no interconnect (link_bw = 0)");
}

TEST(TensorParallel, ResolveCostNamesTheField) {
  CostSpec spec;
  spec.model = "llama-3.3-70b";
  spec.gpu = "h100";
  spec.tp = 3;
  auto r = ResolveCost(spec);
  EXPECT_EQ(r.status().message(), "tp = 3: must divide n_q = 64 (query heads)");
  spec.gpu = "cpu";
  spec.tp = 2;
  r = ResolveCost(spec);
  EXPECT_EQ(r.status().message(), "tp = 2: gpu 'cpu' has no interconnect (link_bw = 0)");
  spec.gpu = "h100";
  spec.tp = 4;
  r = ResolveCost(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model_spec.tp, 4);
  // Roofline at tp = 4 (no bundled profile): per-GPU memory time plus 160 all-reduces.
  const RooflineEstimate e = EstimateRoofline(r->model_spec, r->gpu_spec, 1, 0);
  EXPECT_DOUBLE_EQ(r->model->VerifySeconds(1, 0), e.seconds);
  // 2L = 160 all-reduces of bp s h = 16384 bytes over 4 GPUs:
  // 160 (6 * 0.47 us + 1.5 * 16384 / 450e9) = 160 * 2.874613 us = 459.938 us.
  EXPECT_NEAR(e.comm_s, 459.938e-6, 1e-9);
}

}  // namespace
}  // namespace specplan::costmodel
