// Runs the built specplan-tokenizer: train, encode (both formats), decode, and its errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/paths/test_paths.h"
#include "tests/run_binary.h"

namespace specplan::tokenizer {
namespace {

using specplan::testing::CommandResult;
using ::testing::HasSubstr;

CommandResult RunTool(const std::string& args) {
  return specplan::testing::RunBinary(SPECPLAN_TOKENIZER_BINARY, args);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(TokenizerCli, TrainEncodeDecodeRoundTrip) {
  const std::string dir = ::testing::TempDir() + "/tokenizer_cli." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string readme = ::specplan::test_paths::SourceDir() + "/README.md";
  auto train = RunTool("train --input " + readme + " --model-prefix " + dir +
                       "/tok --vocab-size 400 --threads 1");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_THAT(train.output, HasSubstr("wrote " + dir + "/tok.model"));

  WriteAll(dir + "/prompts.txt", "The planner plans a tree.\n\nOne more prompt, ✓.\n");
  auto enc = RunTool("encode --model " + dir + "/tok.model --input " + dir +
                     "/prompts.txt --output " + dir + "/prompts.jsonl");
  ASSERT_EQ(enc.exit_code, 0) << enc.output;
  EXPECT_THAT(enc.output, HasSubstr("encoded 2 lines into"));
  const std::string jsonl = ReadAll(dir + "/prompts.jsonl");
  EXPECT_EQ(jsonl.rfind("{\"ids\":[", 0), 0u) << jsonl;  // specplan-bench's prompts format
  auto dec = RunTool("decode --model " + dir + "/tok.model --input " + dir + "/prompts.jsonl");
  ASSERT_EQ(dec.exit_code, 0) << dec.output;
  EXPECT_EQ(dec.output, "The planner plans a tree.\nOne more prompt, ✓.\n");

  // The training stream: int32 ids, each line closed by the end-of-sequence id 2.
  auto ids = RunTool("encode --model " + dir + "/tok.model --format ids --input " + dir +
                     "/prompts.txt --output " + dir + "/prompts.ids");
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  const std::string stream = ReadAll(dir + "/prompts.ids");
  ASSERT_EQ(stream.size() % 4, 0u);
  int eos = 0;
  for (size_t i = 0; i < stream.size(); i += 4) {
    int32_t v;
    std::memcpy(&v, stream.data() + i, 4);
    EXPECT_TRUE(v >= 0 && v < 400) << v;
    eos += v == 2 ? 1 : 0;
  }
  EXPECT_EQ(eos, 2);
  std::filesystem::remove_all(dir);
}

TEST(TokenizerCli, ErrorsNameTheFileAndLine) {
  const std::string dir = ::testing::TempDir() + "/tokenizer_cli_bad." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  EXPECT_THAT(RunTool("encode --model " + dir + "/none.model").output,
              HasSubstr("none.model: not a SentencePiece model"));
  const std::string readme = ::specplan::test_paths::SourceDir() + "/README.md";
  ASSERT_EQ(RunTool("train --input " + readme + " --model-prefix " + dir + "/tok --vocab-size 400")
                .exit_code,
            0);
  WriteAll(dir + "/bad.jsonl", "{\"ids\": [5, 6]}\n{\"ids\": [5, \"x\"]}\n");
  auto bad = RunTool("decode --model " + dir + "/tok.model --input " + dir +
                     "/bad.jsonl --output " + dir + "/out.txt");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("bad.jsonl:2: ids[1] = \"x\": expected an integer"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.txt"));
  auto help = RunTool("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* sub : {"train", "encode", "decode"}) EXPECT_THAT(help.output, HasSubstr(sub));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace specplan::tokenizer
