// The train tool's files: token streams, checkpoints that load back through runtime::LoadModel with
// the held-out loss they were written with, the training init, and specplan-train end to end.
#include "train/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/draft_heads.h"
#include "runtime/model_loader.h"
#include "tests/paths/test_paths.h"
#include "tests/run_binary.h"
#include "tests/train/counting_corpus.h"
#include "train/heads_training.h"
#include "train/lm_training.h"

namespace specplan::train {
namespace {

// The built specplan-train binary.
std::string TrainBinary() { return ::specplan::test_paths::BinaryDir() + "/train/specplan-train"; }

using planner::TokenId;
using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/train_ckpt_" + std::to_string(getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteStream(const std::string& path, const std::vector<TokenId>& ids) {
  std::ofstream out(path, std::ios::binary);
  for (TokenId v : ids) {
    const uint32_t u = static_cast<uint32_t>(v);
    const char b[4] = {static_cast<char>(u & 0xff), static_cast<char>((u >> 8) & 0xff),
                       static_cast<char>((u >> 16) & 0xff), static_cast<char>(u >> 24)};
    out.write(b, 4);
  }
}

// The counting language over the toy vocabulary of ToyConfigJson.
std::vector<TokenId> Corpus(int64_t n, uint64_t seed) { return CountingCorpus(n, seed, 48); }

// A toy qwen3 (q/k norms, tied embeddings, GQA) as the config.json the tool reads.
std::string ToyConfigJson() {
  return nlohmann::json{
      {"model_type", "qwen3"},          {"vocab_size", 48},       {"hidden_size", 32},
      {"intermediate_size", 64},        {"num_hidden_layers", 2}, {"num_attention_heads", 4},
      {"num_key_value_heads", 2},       {"head_dim", 8},          {"hidden_act", "silu"},
      {"max_position_embeddings", 256}, {"rms_norm_eps", 1e-6},   {"rope_theta", 10000.0},
      {"tie_word_embeddings", true}}
      .dump(2);
}

TEST(TokenStream, ReadsLittleEndianInt32AndNamesBadInput) {
  const std::string dir = TempDir("stream");
  WriteStream(dir + "/ok.ids", {0, 7, 47, 300});
  auto ok = ReadTokenStream(dir + "/ok.ids", 301);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, (std::vector<TokenId>{0, 7, 47, 300}));
  EXPECT_THAT(ReadTokenStream(dir + "/ok.ids", 48).status().message(),
              HasSubstr("ok.ids: token 3 = 300: outside the vocabulary [0, 48)"));
  WriteStream(dir + "/neg.ids", {1, -2});
  EXPECT_THAT(ReadTokenStream(dir + "/neg.ids", 48).status().message(), HasSubstr("token 1 = -2"));
  std::ofstream(dir + "/odd.ids", std::ios::binary) << "abcde";
  EXPECT_THAT(ReadTokenStream(dir + "/odd.ids", 48).status().message(),
              HasSubstr("5 bytes, not a whole number of int32 tokens"));
  std::ofstream(dir + "/empty.ids", std::ios::binary).flush();
  EXPECT_THAT(ReadTokenStream(dir + "/empty.ids", 48).status().message(), HasSubstr("no tokens"));
  EXPECT_EQ(ReadTokenStream(dir + "/missing.ids", 48).status().code(), absl::StatusCode::kNotFound);
}

TEST(Checkpoint, LoadsBackWithTheSameHeldOutLossAndTheTrainingInitStartsNearUniform) {
  auto config = runtime::ParseHfConfig(nlohmann::json::parse(ToyConfigJson()), "toy");
  ASSERT_TRUE(config.ok()) << config.status();
  auto model = runtime::Transformer::CreateTrainable(*config, 1, {});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<TokenId> heldout = Corpus(4000, 9);
  // CreateTrainable's demo draw starts far above ln 48 = 3.87; the training init near it.
  auto demo = HeldoutLoss(**model, heldout, 32);
  ASSERT_TRUE(demo.ok());
  InitForTraining(model->get(), 1);
  auto start = HeldoutLoss(**model, heldout, 32);
  ASSERT_TRUE(start.ok());
  EXPECT_GT(*demo, std::log(48.0) + 1.0);
  EXPECT_NEAR(*start, std::log(48.0), 0.2);

  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    const std::string dir = TempDir(dtype == torch::kFloat32 ? "fp32" : "bf16");
    ASSERT_TRUE(WriteHfCheckpoint(**model, ToyConfigJson(), dir, dtype).ok());
    EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
    auto back = runtime::LoadModel(dir, 0, {});
    ASSERT_TRUE(back.ok()) << back.status();
    auto loss = HeldoutLoss(**back, heldout, 32);
    ASSERT_TRUE(loss.ok());
    if (dtype == torch::kFloat32) {
      EXPECT_NEAR(*loss, *start, 1e-6);  // the same weights
    } else {
      EXPECT_NEAR(*loss, *start, 0.05);  // rounded to bf16
    }
  }
}

// Runs specplan-train with `args` writing to `out` for `steps` steps: it succeeds, reports the
// last step, and its training.json (returned in *log) has one loss a step, the last below
// `ratio` times the first.
void RunTraining(const std::string& args, const std::string& out, int steps, double ratio,
                 nlohmann::json* log) {
  const std::string last = "step " + std::to_string(steps) + "/" + std::to_string(steps);
  auto r = specplan::testing::RunBinary(
      TrainBinary(), args + "--steps " + std::to_string(steps) + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(last));
  std::ifstream log_file(out + "/training.json");
  *log = nlohmann::json::parse(log_file);
  const std::vector<double> losses = (*log)["train_losses"];
  ASSERT_EQ(losses.size(), static_cast<size_t>(steps));
  EXPECT_LT(losses.back(), ratio * losses.front());
}

// specplan-train end to end: a few steps on a toy corpus, the loss goes down, the files load, and
// the held-out loss recorded in training.json is the reloaded checkpoint's to 1e-4.
TEST(TrainCli, TrainsWritesAndRecordsAReproducibleHeldOutLoss) {
  const std::string dir = TempDir("cli");
  std::ofstream(dir + "/config.json") << ToyConfigJson();
  WriteStream(dir + "/train.ids", Corpus(20000, 1));
  WriteStream(dir + "/heldout.ids", Corpus(3000, 2));
  const std::string common = "--config " + dir + "/config.json --train " + dir +
                             "/train.ids --heldout " + dir +
                             "/heldout.ids --batch 8 --seq-len 32 "
                             "--lr 1e-2 --warmup 5 --threads 1 ";
  nlohmann::json log;
  ASSERT_NO_FATAL_FAILURE(RunTraining(common, dir + "/model", 40, 0.6, &log));
  EXPECT_EQ(log["stored_dtype"], "bf16");
  auto back = runtime::LoadModel(dir + "/model", 0, {});
  ASSERT_TRUE(back.ok()) << back.status();
  const std::vector<TokenId> heldout = Corpus(3000, 2);
  auto loss = HeldoutLoss(**back, heldout, 32);
  ASSERT_TRUE(loss.ok());
  EXPECT_NEAR(*loss, log["heldout_loss"].get<double>(), 1e-4);

  // Bad input is named, and nothing is written.
  WriteStream(dir + "/bad.ids", {1, 2, 99});
  auto bad = specplan::testing::RunBinary(
      TrainBinary(), "--config " + dir + "/config.json --train " + dir + "/bad.ids --heldout " +
                         dir + "/heldout.ids --out " + dir + "/unwritten");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("bad.ids: token 2 = 99: outside the vocabulary [0, 48)"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/unwritten"));
  auto steps =
      specplan::testing::RunBinary(TrainBinary(), common + "--steps 0 --out " + dir + "/unwritten");
  EXPECT_NE(steps.exit_code, 0);
  EXPECT_THAT(steps.output, HasSubstr("steps = 0"));
}

// --heads-for: draft heads trained on a frozen toy target. On the counting language the token k
// places after the root is predictable from the target's last hidden row, so the parallel heads'
// loss falls and their top-1 rate climbs; the recorded held-out figures are those of the files.
TEST(TrainCli, TrainsDraftHeadsOnAFrozenTarget) {
  const std::string dir = TempDir("heads");
  std::ofstream(dir + "/config.json") << ToyConfigJson();
  std::ofstream(dir + "/heads.json") << R"({"num_heads": 3, "causal_state": 16, "causal_rank": 8})";
  WriteStream(dir + "/train.ids", Corpus(20000, 1));
  WriteStream(dir + "/heldout.ids", Corpus(3000, 2));
  const std::string data = " --train " + dir + "/train.ids --heldout " + dir +
                           "/heldout.ids --batch 8 --seq-len 32 --lr 1e-2 --warmup 5 --threads 1 ";
  auto target =
      specplan::testing::RunBinary(TrainBinary(), "--config " + dir + "/config.json" + data +
                                                      "--steps 40 --out " + dir + "/target");
  ASSERT_EQ(target.exit_code, 0) << target.output;
  nlohmann::json log;
  ASSERT_NO_FATAL_FAILURE(
      RunTraining("--heads-for " + dir + "/target --config " + dir + "/heads.json" + data,
                  dir + "/heads", 60, 0.7, &log));
  const std::vector<double> top1 = log["heldout_base_top1"];
  ASSERT_EQ(top1.size(), 3u);
  EXPECT_GT(top1[0], 0.3);  // a uniform guess over 48 tokens: 0.02

  auto frozen = LoadFrozenForTraining(dir + "/target");
  ASSERT_TRUE(frozen.ok()) << frozen.status();
  auto heads = runtime::DraftHeads::Load(dir + "/heads", **frozen);
  ASSERT_TRUE(heads.ok()) << heads.status();
  EXPECT_TRUE((*heads)->has_causal());
  auto eval = EvaluateDraftHeads(**heads, Corpus(3000, 2), 32, 8, 0.5);
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_NEAR(eval->objective, log["heldout_objective"].get<double>(), 1e-4);
  EXPECT_NEAR(eval->final_top1[1], log["heldout_final_top1"][1].get<double>(), 1e-9);

  // A config that does not fit the target is named.
  std::ofstream(dir + "/bad.json") << R"({"num_heads": 2, "hidden_size": 7})";
  auto bad = specplan::testing::RunBinary(
      TrainBinary(), "--heads-for " + dir + "/target --config " + dir + "/bad.json" + data +
                         "--steps 2 --out " + dir + "/unwritten");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("hidden_size = 7"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/unwritten"));
}

}  // namespace
}  // namespace specplan::train
