// Safetensors: single-file and sharded round trips through a real model, strict header checks.
#include "runtime/safetensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/model_loader.h"
#include "tests/runtime/test_models.h"

namespace specplan::runtime {
namespace {

namespace fs = std::filesystem;
using testing::TinyModel;

std::string TempDir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("specplan_st_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void WriteRaw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header << data;
}

void WriteConfig(const std::string& dir, const std::string& model_type) {
  ModelConfig c = *BuiltinConfig(model_type == "gpt_neox" ? "tiny-neox" : "tiny-qwen3");
  nlohmann::json j = {{"model_type", model_type},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.hidden_size},
                      {"intermediate_size", c.intermediate_size},
                      {"num_hidden_layers", c.num_layers},
                      {"num_attention_heads", c.num_heads},
                      {"num_key_value_heads", c.num_kv_heads},
                      {"head_dim", c.head_dim},
                      {"tie_word_embeddings", c.tie_word_embeddings},
                      {"rope_theta", c.rope_theta}};
  if (model_type == "gpt_neox") {
    j["rotary_pct"] = c.rotary_pct;
    j["use_parallel_residual"] = true;
    j["hidden_act"] = "gelu";
    j["layer_norm_eps"] = c.norm_eps;
  } else {
    j["rms_norm_eps"] = c.norm_eps;
  }
  std::ofstream(fs::path(dir) / "config.json") << j.dump();
}

class RoundTripTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(RoundTripTest, LoadedModelMatches) {
  const std::string model_type = std::get<0>(GetParam());
  const int shards = std::get<1>(GetParam());
  const std::string dir = TempDir(model_type + std::to_string(shards));
  WriteConfig(dir, model_type);
  auto config = LoadHfConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  auto model = *Transformer::CreateRandom(*config, 5, RuntimeOptions());
  if (shards == 1) {
    ASSERT_TRUE(
        WriteSafetensors(dir + "/model.safetensors", model->NamedParameters(), {{"format", "pt"}})
            .ok());
  } else {
    ASSERT_TRUE(WriteShardedSafetensors(dir, model->NamedParameters(), shards).ok());
  }
  auto loaded = LoadModel(dir, /*seed=*/0, RuntimeOptions());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  KvCache a = model->NewCache(8), b = (*loaded)->NewCache(8);
  EXPECT_TRUE(torch::equal(model->ForwardCausal({1, 2, 3, 4}, 0, &a),
                           (*loaded)->ForwardCausal({1, 2, 3, 4}, 0, &b)));
  // bf16 conversion on load.
  RuntimeOptions bf16;
  bf16.dtype = torch::kBFloat16;
  auto half = LoadModel(dir, 0, bf16);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ((*half)->NamedParameters()[0].second.scalar_type(), torch::kBFloat16);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, RoundTripTest,
                         ::testing::Combine(::testing::Values("qwen3", "gpt_neox"),
                                            ::testing::Values(1, 3)));

TEST(SafetensorsTest, MissingTensorAndWrongShapeNamed) {
  const std::string dir = TempDir("missing");
  WriteConfig(dir, "qwen3");
  auto config = *LoadHfConfig(dir);
  auto model = *Transformer::CreateRandom(config, 5, RuntimeOptions());
  auto params = model->NamedParameters();
  params.erase(params.begin() + 3);
  const std::string missing = model->NamedParameters()[3].first;
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", params).ok());
  auto r = LoadModel(dir, 0, RuntimeOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(missing), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("missing"), std::string::npos) << r.status();

  params = model->NamedParameters();
  params[2].second = torch::zeros({3, 5});
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", params).ok());
  r = LoadModel(dir, 0, RuntimeOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(params[2].first + ": shape [3, 5], expected"),
            std::string::npos)
      << r.status();

  params = model->NamedParameters();
  params.emplace_back("model.layers.9.mlp.up_proj.weight", torch::zeros({2}));
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", params).ok());
  r = LoadModel(dir, 0, RuntimeOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.layers.9.mlp.up_proj.weight: unexpected"),
            std::string::npos)
      << r.status();
  fs::remove_all(dir);
}

TEST(SafetensorsTest, HeaderValidation) {
  const std::string where = "x.safetensors";
  auto err = [&](const std::string& header, int64_t data_size) {
    auto r = ParseSafetensorsHeader(header, data_size, where);
    EXPECT_FALSE(r.ok()) << header;
    return std::string(r.status().message());
  };
  auto ok = ParseSafetensorsHeader(
      R"({"__metadata__":{"a":"b"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})",
      32, where);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ(err("{not json", 0).substr(0, 49), "x.safetensors: header:1:3: not valid JSON: syntax");
  // Bad headers (with the data block's size) and a piece of the error each gets.
  struct Bad {
    std::string header;
    int64_t data_size;
    std::string error;
  };
  const Bad bad[] = {
      {R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4,
       "tensor \"w\": dtype = \"F33\": unknown"},
      {R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24,
       "tensor \"w\": data_offsets = [0, 20]: span 20 bytes, expected 24"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8,
       "past the end of the data block (8 bytes)"},
      {R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 8,
       "tensor \"w\": shape[0] = -1"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "need 0 <= begin <= end"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "overlaps tensor"},
      {R"({"w":{"dtype":"F32","shape":[1]}})", 4, "tensor \"w\": data_offsets"},
      // Regression (fuzz seed huge_shape): two dims of 2^40 used to overflow int64 before the
      // element-count check.
      {R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
       R"("data_offsets":[0,16]}})",
       64, "too many elements"},
  };
  for (const Bad& b : bad) {
    EXPECT_NE(err(b.header, b.data_size).find(b.error), std::string::npos) << b.error;
  }
  EXPECT_EQ(SafetensorsElementSize("BF16"), 2);
  EXPECT_EQ(SafetensorsElementSize("F99"), 0);
}

TEST(SafetensorsTest, BadFilesRejected) {
  const std::string dir = TempDir("bad");
  WriteRaw(dir + "/short.safetensors", "", "");
  {
    std::ofstream(dir + "/tiny.safetensors") << "abc";
    auto r = SafetensorsFile::Open(dir + "/tiny.safetensors");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("too small"), std::string::npos);
  }
  {
    std::ofstream out(dir + "/huge.safetensors", std::ios::binary);
    uint64_t n = 1u << 30;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
    out << "{}";
  }
  auto r = SafetensorsFile::Open(dir + "/huge.safetensors");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("header length = 1073741824: exceeds the file"),
            std::string::npos)
      << r.status();
  // A tensor named in the index but absent from its shard.
  const std::string sharded = TempDir("index");
  ASSERT_TRUE(WriteSafetensors(sharded + "/a.safetensors", {{"x", torch::ones({2})}}).ok());
  std::ofstream(sharded + "/model.safetensors.index.json")
      << R"({"weight_map": {"x": "a.safetensors", "y": "a.safetensors"}})";
  auto ck = SafetensorsCheckpoint::Open(sharded);
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.status().message().find("weight_map[\"y\"]"), std::string::npos) << ck.status();
  fs::remove_all(dir);
  fs::remove_all(sharded);
}

}  // namespace
}  // namespace specplan::runtime
