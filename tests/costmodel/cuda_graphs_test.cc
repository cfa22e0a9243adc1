// CUDA-graph buckets (costmodel/step/cuda_graphs.h): the engines' ladders written out from their
// code's rules, the padding of a pass, the eager fallback, and the step model reading its verify
// pass at the bucket (the header's formula computed from the profile's own pass).
#include "costmodel/step/cuda_graphs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "costmodel/step/step_model.h"
#include "tests/costmodel/cost_test_util.h"
#include "util/check.h"

namespace specplan::costmodel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CudaGraphs Vllm() {
  CudaGraphs g;
  SPECPLAN_CHECK(DefaultCudaGraphs("vllm", 80e9, &g), "vllm ladder");
  return g;
}
CudaGraphs Sglang(double mem = 80e9) {
  CudaGraphs g;
  SPECPLAN_CHECK(DefaultCudaGraphs("sglang", mem, &g), "sglang ladder");
  return g;
}

TEST(CudaGraphs, VllmPlainLadderIsOneTwoFourThenEightsThenSixteensUpTo512) {
  const std::vector<int64_t> s = GraphBuckets(Vllm()).CapturedSizes(1);
  ASSERT_GE(s.size(), 4u);
  EXPECT_THAT(std::vector<int64_t>(s.begin(), s.begin() + 5), ElementsAre(1, 2, 4, 8, 16));
  EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 248));
  EXPECT_FALSE(std::binary_search(s.begin(), s.end(), 264));  // every 16 from 256
  EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 272));
  EXPECT_EQ(s.back(), 512);  // min(1024 x 1 x 2, 512)
  EXPECT_EQ(s.size(), 3u + 31u + 17u);
}

TEST(CudaGraphs, VllmSpeculativeSizesAreRoundedUpToMultiplesOfTheQueryLength) {
  // K = 3: query length 4. 1, 2, 4 all round to 4; every size stays <= 512.
  const std::vector<int64_t> s = GraphBuckets(Vllm()).CapturedSizes(4);
  EXPECT_EQ(s.front(), 4);
  for (int64_t v : s) EXPECT_EQ(v % 4, 0) << v;
  EXPECT_EQ(s.back(), 512);
  // K = 2: query length 3. 8 -> 9, 16 -> 18, 256 -> 258, 512 -> 513 is above 512 and dropped.
  const std::vector<int64_t> t = GraphBuckets(Vllm()).CapturedSizes(3);
  EXPECT_THAT(std::vector<int64_t>(t.begin(), t.begin() + 4), ElementsAre(3, 6, 9, 18));
  EXPECT_EQ(t.back(), 498);  // 496 -> 498; 512 -> 513 dropped
}

TEST(CudaGraphs, VllmPadsADecodeBatchToTheNextCapturedTokenCount) {
  const GraphBuckets g(Vllm());
  // K = 3: 65 requests are 260 tokens; the next size is 272 = 68 requests.
  GraphPass p = g.PadDecodeBatch(65, 4);
  EXPECT_TRUE(p.graphed);
  EXPECT_EQ(p.padded, 68);
  // 64 requests (256 tokens) and 128 (512) are captured as they are.
  EXPECT_EQ(g.PadDecodeBatch(64, 4).padded, 64);
  EXPECT_EQ(g.PadDecodeBatch(128, 4).padded, 128);
  EXPECT_EQ(g.PadDecodeBatch(1, 4).padded, 1);
  // 129 requests are 516 tokens: above 512, eager.
  p = g.PadDecodeBatch(129, 4);
  EXPECT_FALSE(p.graphed);
  EXPECT_EQ(p.padded, 129);
  // Plain decoding: 3 -> 4, 300 -> 304, 513 eager.
  EXPECT_EQ(g.PadDecodeBatch(3, 1).padded, 4);
  EXPECT_EQ(g.PadDecodeBatch(300, 1).padded, 304);
  EXPECT_FALSE(g.PadDecodeBatch(513, 1).graphed);
}

TEST(CudaGraphs, VllmMaximumFollowsMaxNumSeqsAndTheTokenBudget) {
  CudaGraphs c = Vllm();
  c.max_num_seqs = 8;  // min(8 x 4 x 2, 512) = 64 tokens at K = 3
  EXPECT_EQ(GraphBuckets(c).CapturedSizes(4).back(), 64);
  EXPECT_FALSE(GraphBuckets(c).PadDecodeBatch(17, 4).graphed);
  c = Vllm();
  c.max_num_batched_tokens = 256;
  EXPECT_EQ(GraphBuckets(c).CapturedSizes(1).back(), 256);
}

TEST(CudaGraphs, VllmMixedPassesUseTheRawLadder) {
  const GraphBuckets g(Vllm());
  // 300 tokens of prefill and decode: the raw size 304, not a multiple of the query length.
  GraphPass p = g.PadRaggedPass(300, 4);
  EXPECT_TRUE(p.graphed);
  EXPECT_EQ(p.padded, 304);
  EXPECT_FALSE(g.PadRaggedPass(900, 4).graphed);
}

TEST(CudaGraphs, GivenVllmSizesAreRoundedAndTheirLargestIsTheMaximum) {
  CudaGraphs c = Vllm();
  c.sizes = {8, 16, 32};
  const GraphBuckets g(c);
  EXPECT_THAT(g.CapturedSizes(4), ElementsAre(8, 16, 32));
  EXPECT_THAT(g.CapturedSizes(3), ElementsAre(9, 18));  // 32 -> 33 is above 32
  EXPECT_EQ(g.PadDecodeBatch(1, 4).padded, 2);          // 4 tokens run the 8-token graph
  EXPECT_FALSE(g.PadDecodeBatch(9, 4).graphed);         // 36 tokens > 32
}

TEST(CudaGraphs, SglangSpeculativeLadderAndItsMaximumFromMemory) {
  const std::vector<int64_t> s = GraphBuckets(Sglang()).CapturedSizes(4);
  EXPECT_THAT(std::vector<int64_t>(s.begin(), s.begin() + 10),
              ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 10, 12));
  EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 44));
  EXPECT_FALSE(std::binary_search(s.begin(), s.end(), 68));
  EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 72));
  EXPECT_EQ(s.back(), 256);  // H100 80 GB at tp 1
  // 48 GB (L40S): 32; 16 GB: 8; unknown memory: 160.
  EXPECT_EQ(GraphBuckets(Sglang(48e9)).CapturedSizes(1).back(), 32);
  EXPECT_EQ(GraphBuckets(Sglang(16e9)).CapturedSizes(1).back(), 8);
  EXPECT_EQ(GraphBuckets(Sglang(0)).CapturedSizes(1).back(), 160);
  CudaGraphs c = Sglang();
  c.speculative = false;
  const std::vector<int64_t> plain = GraphBuckets(c).CapturedSizes(1);
  EXPECT_THAT(std::vector<int64_t>(plain.begin(), plain.begin() + 6),
              ElementsAre(1, 2, 4, 8, 12, 16));
  c.max_size = 100;  // the maximum itself is appended
  EXPECT_EQ(GraphBuckets(c).CapturedSizes(1).back(), 100);
}

TEST(CudaGraphs, SglangPadsRequestsWhateverTheQueryLength) {
  const GraphBuckets g(Sglang());
  EXPECT_EQ(g.PadDecodeBatch(9, 4).padded, 10);
  EXPECT_EQ(g.PadDecodeBatch(9, 21).padded, 10);
  EXPECT_EQ(g.PadDecodeBatch(65, 4).padded, 72);
  EXPECT_FALSE(g.PadDecodeBatch(257, 4).graphed);
  EXPECT_FALSE(g.PadRaggedPass(300, 4).graphed);  // extend passes: no decode graph
}

TEST(CudaGraphs, DisabledRunsEveryPassEagerly) {
  CudaGraphs c = Vllm();
  c.enabled = false;
  EXPECT_FALSE(GraphBuckets(c).PadDecodeBatch(1, 1).graphed);
  EXPECT_TRUE(GraphBuckets(c).CapturedSizes(1).empty());
  EXPECT_DOUBLE_EQ(GraphBuckets(c).EagerLaunchSeconds(32), 32 * 10 * 10e-6);
}

TEST(CudaGraphs, OtherEnginesHaveNoModelledLadder) {
  CudaGraphs c;
  EXPECT_FALSE(DefaultCudaGraphs("trtllm", 80e9, &c));
  EXPECT_FALSE(DefaultCudaGraphs("specplan", 80e9, &c));
  EXPECT_TRUE(DefaultCudaGraphs("", 80e9, &c));  // the bare roofline: vLLM's
}

TEST(CudaGraphs, ValidationNamesTheField) {
  CudaGraphs c = Vllm();
  c.sizes = {4, 0};
  EXPECT_THAT(std::string(ValidateCudaGraphs(c).message()), HasSubstr("cuda_graphs.sizes[1] = 0"));
  c.sizes = {8, 4};
  EXPECT_THAT(std::string(ValidateCudaGraphs(c).message()),
              HasSubstr("must be above the size before it (8)"));
  c = Vllm();
  c.eager_launch_s = 1;
  EXPECT_THAT(std::string(ValidateCudaGraphs(c).message()), HasSubstr("eager_launch_s = 1"));
  c = Vllm();
  c.launches_per_layer = -1;
  EXPECT_FALSE(ValidateCudaGraphs(c).ok());
  EXPECT_TRUE(ValidateCudaGraphs(Vllm()).ok());
}

// The step model on the bundled H100 x Llama-3.1-8B vLLM profile.
StepModel Step(std::optional<CudaGraphs> graphs) {
  const ResolvedLatencyModel& r = H100Llama8bVllm();
  StepOptions o;
  o.graphs = std::move(graphs);
  auto m = StepModel::Create(r.model.get(), r.model_spec, r.gpu_spec, &r.drafters, "vllm", o);
  SPECPLAN_CHECK(m.ok(), "StepModel::Create");
  return *std::move(m);
}

double Pass(int64_t b, int64_t s, int64_t c) {
  const LatencyModel& m = *H100Llama8bVllm().model;
  if (b == 1) return m.VerifySeconds(s, c);
  BatchShape shape;
  for (int64_t i = 0; i < b; ++i) shape.Add(s, c);
  return m.VerifyBatchSeconds(shape);
}

TEST(CudaGraphsStep, PaddedRowsAddTheirPassAtNoContext) {
  const StepModel exact = Step(std::nullopt);
  const StepModel graphed = Step(Vllm());
  // K = 3, b = 65 -> 68 requests.
  const double want = Pass(65, 4, 1024) + Pass(68, 4, 0) - Pass(65, 4, 0);
  EXPECT_NEAR(graphed.Step(65, 4, 1024).verify_s - exact.Step(65, 4, 1024).verify_s,
              want - Pass(65, 4, 1024), 1e-9);
  EXPECT_GT(graphed.Step(65, 4, 1024).verify_s, exact.Step(65, 4, 1024).verify_s);
  // Captured as they are: no change.
  for (int64_t b : {1, 16, 64, 128}) {
    EXPECT_DOUBLE_EQ(graphed.Step(b, 4, 1024).verify_s, exact.Step(b, 4, 1024).verify_s) << b;
    EXPECT_DOUBLE_EQ(graphed.ArStep(b, 1024).verify_s, exact.ArStep(b, 1024).verify_s) << b;
  }
  // The staircase: at no context 65 requests' pass is 68's (the per-token host term counts the
  // real tokens only).
  const double per_token = graphed.host().verify_per_token_s;
  EXPECT_NEAR(graphed.Step(65, 4, 0).verify_s - per_token * 260,
              graphed.Step(68, 4, 0).verify_s - per_token * 272, 1e-12);
}

TEST(CudaGraphsStep, AboveTheLadderTheLaunchesBoundThePass) {
  CudaGraphs c = Vllm();
  c.enabled = false;
  c.eager_launch_s = 1e-3 / 10;  // 32 layers x 10 launches x 100 us = 32 ms
  const StepModel eager = Step(c);
  const StepModel exact = Step(std::nullopt);
  EXPECT_NEAR(eager.ArStep(1, 1024).verify_s - exact.ArStep(1, 1024).verify_s,
              0.032 - Pass(1, 1, 1024), 1e-9);
  // A pass the GPU takes longer than the launches is unchanged.
  c.eager_launch_s = 1e-6;
  EXPECT_DOUBLE_EQ(Step(c).ArStep(1, 1024).verify_s, exact.ArStep(1, 1024).verify_s);
  // Above 512 tokens the default ladder runs eager: 129 requests of 4 tokens at the default
  // 10 us (3.2 ms of launches, below the GPU's pass) are priced as the exact pass.
  EXPECT_DOUBLE_EQ(Step(Vllm()).Step(129, 4, 1024).verify_s, exact.Step(129, 4, 1024).verify_s);
}

TEST(CudaGraphsStep, RaggedPassesPadTheirTokens) {
  const StepModel graphed = Step(Vllm());
  const StepModel exact = Step(std::nullopt);
  BatchShape mixed;  // 2 decoding requests of 4 tokens and a 290-token prefill chunk: 298 -> 304
  mixed.Add(4, 500);
  mixed.Add(4, 700);
  mixed.Add(290, 0);
  EXPECT_NEAR(graphed.VerifyPassSeconds(mixed) - exact.VerifyPassSeconds(mixed),
              Pass(1, 304, 0) - Pass(1, 298, 0), 1e-9);
  BatchShape decode;  // uniform s, ragged c: a decode batch of 3 -> 4 requests (K = 0)
  decode.Add(1, 100);
  decode.Add(1, 200);
  decode.Add(1, 300);
  EXPECT_NEAR(graphed.VerifyPassSeconds(decode) - exact.VerifyPassSeconds(decode),
              Pass(4, 1, 0) - Pass(3, 1, 0), 1e-9);
}

}  // namespace
}  // namespace specplan::costmodel
