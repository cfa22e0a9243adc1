// costmodel/hardware/memory_fit.h: the weights one GPU holds plus the KV cache, against its memory.
#include "costmodel/hardware/memory_fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"

namespace specplan::costmodel {
namespace {

TEST(MemoryFit, CountsWeightsPerGpuAndTheKvCacheOfEverySequence) {
  ModelSpec m = *ResolveModel("qwen3-8b");
  const MemoryNeed one = PassMemory(m, 1, 1, 1023);
  // 1024 tokens x 2 (K, V) x 36 layers x 8 KV heads x 128 x 2 bytes.
  EXPECT_DOUBLE_EQ(one.kv_bytes, 1024.0 * 2 * 36 * 8 * 128 * 2);
  EXPECT_DOUBLE_EQ(one.weight_bytes, static_cast<double>(m.ParameterCount()) * 2);
  EXPECT_DOUBLE_EQ(PassMemory(m, 64, 1, 1023).kv_bytes, 64 * one.kv_bytes);
  m.tp = 4;
  EXPECT_DOUBLE_EQ(PassMemory(m, 1, 1, 1023).weight_bytes, one.weight_bytes / 4);
  EXPECT_DOUBLE_EQ(PassMemory(m, 1, 1, 1023).kv_bytes, one.kv_bytes / 4);  // 2 KV heads per GPU
}

TEST(MemoryFit, RefusesWhatCannotFitWithTheNumbers) {
  const ModelSpec m = *ResolveModel("qwen3-8b");
  const GpuSpec h100 = *ResolveGpu("h100");
  EXPECT_TRUE(CheckFitsInMemory(m, h100, 64, 4, 4096).ok());
  const absl::Status st = CheckFitsInMemory(m, h100, 1, 1, 10000000);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(st.message()),
              ::testing::HasSubstr("b = 1, s = 1, c = 10000000: the KV cache of 1e+07 tokens"));
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("one h100-sxm holds 8e+10"));
  GpuSpec unknown = h100;
  unknown.mem_bytes = 0;  // not known: nothing to check against
  EXPECT_TRUE(CheckFitsInMemory(m, unknown, 1, 1, 10000000).ok());
}

}  // namespace
}  // namespace specplan::costmodel
