// A scratch engine folder for the composer's tests: <temp>/h100_sxm/sglang-0.5.14 holding copies
// of the shipped H100 SGLang tables (gemm, context and generation attention, SOURCE.txt), to which
// a test adds the optional tables calibrate writes (tree_attention.csv, elementwise.csv); and the
// model and GPU those tables price (qwen3-8b on an H100 SXM).
#ifndef SPECPLAN_TESTS_COSTMODEL_SCRATCH_ENGINE_FOLDER_H_
#define SPECPLAN_TESTS_COSTMODEL_SCRATCH_ENGINE_FOLDER_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "tests/paths/test_paths.h"
#include "tests/util/temp_dir.h"

namespace specplan::costmodel::testing {

class ScratchEngineFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::FreshTestDir("specplan_scratch_tables_");
    dir_ = root_ / "h100_sxm" / "sglang-0.5.14";
    std::filesystem::create_directories(dir_);
    const std::filesystem::path src = std::filesystem::path(::specplan::test_paths::SourceDir()) /
                                      "data" / "kernels" / "h100_sxm" / "sglang-0.5.14";
    for (const char* f :
         {"gemm.csv", "context_attention.csv", "generation_attention.csv", "SOURCE.txt"}) {
      std::filesystem::copy_file(src / f, dir_ / f);
    }
    auto spec = ResolveModel("qwen3-8b");
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec_ = *spec;
    auto gpu = LookupGpu("h100-sxm");
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = *gpu;
  }
  // The folder's tables as they are now (LoadEngineKernelTables).
  EngineKernelTables Load() {
    auto t = LoadEngineKernelTables(dir_.string());
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : EngineKernelTables{};
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& file, const std::string& text) {
    std::ofstream(dir_ / file) << text;
  }
  std::filesystem::path root_, dir_;
  ModelSpec spec_;
  GpuSpec gpu_;
};

}  // namespace specplan::costmodel::testing

#endif  // SPECPLAN_TESTS_COSTMODEL_SCRATCH_ENGINE_FOLDER_H_
