// specplan-logits end to end: runs the built binary on the HF fixtures (tests/runtime/data/hf) and
// checks its --out and --json logits against transformers' reference logits, and that bad flags
// are refused with messages that name them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/safetensors.h"
#include "tests/paths/test_paths.h"
#include "tests/runtime/tool_test_util.h"

namespace specplan::runtime {
namespace {

namespace fs = std::filesystem;

std::string Tool() { return testing::RuntimeTool("specplan-logits"); }
std::string FixtureDir(const std::string& arch) {
  return ::specplan::test_paths::SourceDir() + "/tests/runtime/data/hf/" + arch;
}

using testing::ReadText;
using testing::RunShell;
using LogitsCliTest = testing::ToolTest;

double RelativeError(const torch::Tensor& got, const torch::Tensor& ref) {
  torch::Tensor g = got.to(torch::kFloat64), r = ref.to(torch::kFloat64);
  return (g - r).norm().item<double>() / r.norm().item<double>();
}

// As hf_reference_test.cc: float32 against transformers' float64 is ~1e-7 relative.
constexpr double kTolerance = 1e-5;

TEST_F(LogitsCliTest, OutMatchesTransformersReference) {
  for (const std::string arch : {"llama", "qwen3", "gpt_neox"}) {
    const std::string ref_path = FixtureDir(arch) + "/reference.safetensors";
    const std::string out = Path(arch + ".safetensors");
    const std::string cmd = Tool() + " --model " + FixtureDir(arch) + " --ids-file " + ref_path +
                            " --threads 1 --out " + out + " > " + Path("table.txt") + " 2>&1";
    ASSERT_EQ(RunShell(cmd), 0) << cmd << "\n" << ReadText(Path("table.txt"));
    auto ref = SafetensorsFile::Open(ref_path);
    ASSERT_TRUE(ref.ok()) << ref.status();
    auto got = SafetensorsFile::Open(out);
    ASSERT_TRUE(got.ok()) << got.status();
    const torch::Tensor ref_ids = *(*ref)->Get("input_ids");
    const torch::Tensor got_ids = *(*got)->Get("input_ids");
    EXPECT_TRUE(torch::equal(got_ids, ref_ids)) << arch;
    const torch::Tensor ref_logits = *(*ref)->Get("logits");
    const torch::Tensor got_logits = *(*got)->Get("logits");
    ASSERT_EQ(got_logits.scalar_type(), torch::kFloat32);
    ASSERT_EQ(got_logits.sizes(), ref_logits.sizes()) << arch;
    for (int64_t t = 0; t < ref_logits.size(0); ++t) {
      EXPECT_LT(RelativeError(got_logits[t], ref_logits[t]), kTolerance) << arch << " pos " << t;
    }
    // The table names every position with its argmax.
    const std::string table = ReadText(Path("table.txt"));
    EXPECT_NE(table.find("argmax"), std::string::npos) << table;
    const int64_t last = ref_logits.size(0) - 1;
    std::string last_row = std::to_string(last) + " ";
    EXPECT_NE(table.find(last_row), std::string::npos) << table;
  }
}

TEST_F(LogitsCliTest, JsonHasTheFullMatrix) {
  const std::string cmd = Tool() + " --model " + FixtureDir("qwen3") + " --ids 3,1,4,1,5" +
                          " --threads 1 --json > " + Path("out.json") + " 2> " + Path("err.txt");
  ASSERT_EQ(RunShell(cmd), 0) << cmd << "\n" << ReadText(Path("err.txt"));
  std::ifstream in(Path("out.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("input_ids"), nlohmann::json({3, 1, 4, 1, 5}));
  EXPECT_EQ(j.at("vocab_size"), 128);
  ASSERT_EQ(j.at("logits").size(), 5u);
  for (const auto& row : j.at("logits")) EXPECT_EQ(row.size(), 128u);
  // The JSON rows are the same numbers as --out writes.
  const std::string out = Path("same.safetensors");
  ASSERT_EQ(RunShell(Tool() + " --model " + FixtureDir("qwen3") +
                     " --ids '3 1 4 1 5' --threads 1 --out " + out + " > /dev/null 2>&1"),
            0);
  auto file = SafetensorsFile::Open(out);
  ASSERT_TRUE(file.ok()) << file.status();
  const torch::Tensor logits = *(*file)->Get("logits");
  for (int64_t t = 0; t < 5; ++t) {
    for (int64_t v = 0; v < 128; ++v) {
      ASSERT_EQ(j["logits"][t][v].get<float>(), logits[t][v].item<float>()) << t << " " << v;
    }
  }
}

TEST_F(LogitsCliTest, BadFlagsAreNamed) {
  struct Case {
    std::string flags;
    std::string expect;  // in stderr
  };
  const std::string model = " --model " + FixtureDir("llama");
  std::ofstream(Path("ids.txt")) << "1, 2\nthree\n";
  const std::vector<Case> cases = {
      {model + " --ids 1,x", "--ids = \"1,x\": \"x\" (token 1) is not an integer"},
      {model + " --ids 1,999", "--ids: token 1 = 999: must be in [0, 128)"},
      {model + " --ids-file " + Path("ids.txt"), "\"three\" (token 2) is not an integer"},
      {model + " --ids-file " + Path("missing.txt"), "missing.txt\": cannot open"},
      {model, "give exactly one of --ids and --ids-file"},
      {model + " --ids 1 --out x.bin", "--out = \"x.bin\": expected a FILE.safetensors path"},
      {" --model random:no-such-model --ids 1", "--model = \"random:no-such-model\""},
      {model + " --ids 1 --top-k 0", "--top-k"},
      {model + " --ids 1 --dtype fp8", "--dtype: "},
  };
  for (const Case& c : cases) {
    const std::string cmd = Tool() + c.flags + " > /dev/null 2> " + Path("err.txt");
    EXPECT_NE(RunShell(cmd), 0) << cmd;
    const std::string err = ReadText(Path("err.txt"));
    EXPECT_NE(err.find(c.expect), std::string::npos) << cmd << "\n" << err;
  }
}

}  // namespace
}  // namespace specplan::runtime
