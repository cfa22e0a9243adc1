// Regression tests for inputs found by the fuzzers in fuzz/ (scripts/fuzz.sh). Each case feeds the
// reproducer through the normal API and checks that it is rejected with a Status, not a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/hf_config.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/profile_json.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// profile_fuzzer: a number literal beyond double range made nlohmann::json throw out_of_range
// (not parse_error), which escaped ReadJsonFile and terminated the process.
TEST(CostmodelFuzzRegression, NumberOverflowInProfileFileIsAnError) {
  const std::string path = WriteTemp("overflow_profile.json", R"({"format": 1e400})");
  auto p = LoadProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("number overflow"));
}

// hf_config_fuzzer: same escape through ModelSpecFromHfConfigFile (and GpuSpecFromJsonFile).
TEST(CostmodelFuzzRegression, NumberOverflowInConfigFilesIsAnError) {
  const std::string config = WriteTemp("overflow_config.json", R"({"hidden_size": -1E+999})");
  auto m = ModelSpecFromHfConfigFile(config);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  auto g = GpuSpecFromJsonFile(config);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
}

// hf_config_fuzzer (with its dictionary): a config with a huge width passed validation and
// ModelSpec::ParameterCount() overflowed int64 (UBSan: signed integer overflow). The reproducer
// is fuzz/corpus/hf_config_fuzzer/param_count_overflow.json.
TEST(CostmodelFuzzRegression, HugeConfigIsRejectedNotOverflowed) {
  const nlohmann::json config = nlohmann::json::parse(
      R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 429496729614336,
          "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": null,
          "head_dim": null, "vocab_size": 32000})");
  auto m = ModelSpecFromHfConfig(config, "huge");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("parameters"));

  // The largest real models (about 2e12 parameters) still validate.
  ModelSpec big = *LookupModel("qwen3-8b");
  big.layers = 128;
  big.hidden = 32768;
  big.ffn = 131072;
  EXPECT_TRUE(ValidateModelSpec(big).ok());
  EXPECT_GT(big.ParameterCount(), int64_t{1} << 40);
  big.hidden = int64_t{1} << 40;
  EXPECT_FALSE(ValidateModelSpec(big).ok());
}

}  // namespace
}  // namespace specplan::costmodel
