#include "profiler/device_check.h"

#include <gtest/gtest.h>

#include "costmodel/hardware/gpu_spec.h"
#include "tests/profiler/test_util.h"

namespace specplan::profiler {
namespace {

TEST(DeviceMatchesGpuTest, RegistryNamesAgainstDriverNames) {
  struct Case {
    const char* gpu;     // registry name
    const char* device;  // the driver's name of the device
    bool matches;
  };
  const Case cases[] = {
      {"h100-sxm", "NVIDIA H100 80GB HBM3", true},
      {"h100-pcie", "NVIDIA H100 PCIe", true},
      {"h100-sxm", "NVIDIA H100 PCIe", false},
      {"h100-pcie", "NVIDIA H100 80GB HBM3", false},
      {"h200", "NVIDIA H200", true},
      {"a100-80g", "NVIDIA A100-SXM4-80GB", true},
      {"a100-40g", "NVIDIA A100-SXM4-40GB", true},
      {"rtx4090", "NVIDIA GeForce RTX 4090", true},
      {"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", true},
      {"a6000", "NVIDIA RTX A6000", true},
      {"l4", "NVIDIA L4", true},
      {"l4", "NVIDIA L40S", false},
      {"l40s", "NVIDIA L40S", true},
      {"a100-80g", "NVIDIA H100 80GB HBM3", false},
      {"h100-sxm", "NVIDIA H200", false},
      {"h200", "NVIDIA H100 80GB HBM3", false},
      {"b200", "", false},
      {"", "NVIDIA H100 80GB HBM3", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DeviceMatchesGpu(c.gpu, c.device), c.matches) << c.gpu << " on " << c.device;
  }
}

TEST(CheckDeviceMatchesGpuTest, CpuAcceptsOnlyCpuUnlessForced) {
  DeviceInfo cpu;
  cpu.name = "Some CPU";
  auto h100 = costmodel::LookupGpu("h100");
  auto host = costmodel::LookupGpu("cpu");
  ASSERT_TRUE(h100.ok() && host.ok());
  EXPECT_TRUE(CheckDeviceMatchesGpu(*host, cpu, false).ok());
  absl::Status st = CheckDeviceMatchesGpu(*h100, cpu, false);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("--gpu h100-sxm"), std::string::npos) << st;
  EXPECT_NE(st.message().find("--force"), std::string::npos) << st;
  EXPECT_TRUE(CheckDeviceMatchesGpu(*h100, cpu, true).ok());
}

TEST(CheckDeviceMatchesGpuTest, CudaDevices) {
  DeviceInfo h100_dev;
  h100_dev.cuda = true;
  h100_dev.name = "NVIDIA H100 80GB HBM3";
  auto a100 = costmodel::LookupGpu("a100");
  auto h100 = costmodel::LookupGpu("h100");
  auto host = costmodel::LookupGpu("cpu");
  ASSERT_TRUE(a100.ok() && h100.ok() && host.ok());
  EXPECT_TRUE(CheckDeviceMatchesGpu(*h100, h100_dev, false).ok());
  absl::Status st = CheckDeviceMatchesGpu(*a100, h100_dev, false);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("NVIDIA H100 80GB HBM3"), std::string::npos) << st;
  EXPECT_TRUE(CheckDeviceMatchesGpu(*a100, h100_dev, true).ok());
  EXPECT_FALSE(CheckDeviceMatchesGpu(*host, h100_dev, false).ok());
  DeviceInfo unknown;
  unknown.cuda = true;  // name unreadable: nothing to check against
  EXPECT_FALSE(CheckDeviceMatchesGpu(*h100, unknown, false).ok());
  EXPECT_TRUE(CheckDeviceMatchesGpu(*h100, unknown, true).ok());
}

TEST(SoftwareVersionsTest, RecordsLibTorch) {
  auto sw = SoftwareVersions(false);
  ASSERT_EQ(sw.count("libtorch"), 1u);
  EXPECT_EQ(sw.size(), 1u);  // no CUDA versions for a CPU run
  EXPECT_EQ(SoftwareVersions(true).count("libtorch"), 1u);
  EXPECT_NE(sw["libtorch"].find('.'), std::string::npos);
  EXPECT_FALSE(HostCpuName().empty());
}

TEST(NvidiaDriverVersionTest, ParsesTheProcFile) {
  testing::TempDir dir;
  testing::WriteAll(dir.File("version"),
                    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 "
                    "07:09:58 UTC 2025\nGCC version:  gcc version 12.2.0\n");
  EXPECT_EQ(NvidiaDriverVersion(dir.File("version")), "580.65.06");
  testing::WriteAll(dir.File("odd"), "something else\n");
  EXPECT_EQ(NvidiaDriverVersion(dir.File("odd")), "");
  EXPECT_EQ(NvidiaDriverVersion(dir.File("missing")), "");
}

}  // namespace
}  // namespace specplan::profiler
