#include "costmodel/hardware/gpu_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/costmodel/cost_test_util.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

TEST(GpuSpec, RegistryHasEveryNamedGpu) {
  for (const char* name : {"a100-80g", "a100-40g", "h100-sxm", "h100", "h100-pcie", "h200", "a6000",
                           "l4", "l40s", "rtx4090", "rtx-pro-6000", "b200", "mi300x", "cpu"}) {
    auto g = LookupGpu(name);
    ASSERT_TRUE(g.ok()) << name;
    EXPECT_TRUE(ValidateGpuSpec(*g).ok()) << name;
  }
  EXPECT_EQ(LookupGpu("H100")->name, "h100-sxm");
  EXPECT_DOUBLE_EQ(LookupGpu("h100")->mem_bw, 3.35e12);
  EXPECT_DOUBLE_EQ(LookupGpu("a100-80g")->peak_flops, 312e12);
  // H200 has the H100's compute and more bandwidth.
  EXPECT_DOUBLE_EQ(LookupGpu("h200")->peak_flops, LookupGpu("h100")->peak_flops);
  EXPECT_GT(LookupGpu("h200")->mem_bw, LookupGpu("h100")->mem_bw);
}

TEST(GpuSpec, UnknownNameListsKnownNames) {
  ExpectUnknownNameListsKnown(LookupGpu("v100").status(), "v100", {"h100-sxm", "mi300x"});
}

TEST(GpuSpec, UserSpecFromJson) {
  nlohmann::json j = {
      {"name", "my-gpu"}, {"peak_flops", 1e14}, {"mem_bw", 1e12}, {"mem_bytes", 2e10}};
  auto g = GpuSpecFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->name, "my-gpu");
  auto back = GpuSpecFromJson(GpuSpecToJson(*g));
  ASSERT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(back->mem_bw, 1e12);

  auto bad = j;
  bad["mem_bw"] = -5;
  EXPECT_THAT(GpuSpecFromJson(bad).status().message(), HasSubstr("mem_bw = -5"));
  bad = j;
  bad.erase("peak_flops");
  EXPECT_THAT(GpuSpecFromJson(bad).status().message(), HasSubstr("peak_flops"));
  bad = j;
  bad["mem_bytes"] = "lots";
  EXPECT_THAT(GpuSpecFromJson(bad).status().message(), HasSubstr("mem_bytes"));
}

}  // namespace
}  // namespace specplan::costmodel
