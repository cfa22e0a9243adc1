// Trains a SentencePiece tokenizer on the repository's README and loads it with Tokenizer.
#include "tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/paths/test_paths.h"
#include "tokenizer/training.h"

namespace specplan::tokenizer {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One tokenizer per test binary: training takes about a second.
class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Per process: CTest runs this suite's tests in parallel processes.
    dir_ = ::testing::TempDir() + "/tokenizer_test." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    TokenizerTrainOptions o;
    o.input = ::specplan::test_paths::SourceDir() + "/README.md";
    o.model_prefix = dir_ + "/readme";
    o.vocab_size = 500;
    o.threads = 1;
    status_ = new absl::Status(TrainTokenizer(o));
  }
  static void TearDownTestSuite() {
    delete status_;
    std::filesystem::remove_all(dir_);
  }
  static std::string dir_;
  static absl::Status* status_;
};
std::string TokenizerTest::dir_;
absl::Status* TokenizerTest::status_ = nullptr;

TEST_F(TokenizerTest, TrainsLoadsAndRoundTripsText) {
  ASSERT_TRUE(status_->ok()) << *status_;
  auto tok = Tokenizer::Load(dir_ + "/readme.model");
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->vocab_size(), 500);
  const std::string text = "The planner grows the draft tree where the speedup peaks.";
  auto ids = (*tok)->Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  // Words of the corpus become pieces of several bytes: far fewer tokens than bytes.
  EXPECT_LT(ids->size(), text.size() * 3 / 4);
  for (planner::TokenId id : *ids) EXPECT_TRUE(id >= 0 && id < 500);
  auto back = (*tok)->Decode(*ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  // Characters the corpus never had come through the byte pieces.
  const std::string unseen = "Straße ✓ 東京";
  auto unseen_ids = (*tok)->Encode(unseen);
  ASSERT_TRUE(unseen_ids.ok());
  EXPECT_EQ(*(*tok)->Decode(*unseen_ids), unseen);
  EXPECT_THAT((*tok)->Decode({5, 500}).status().message(),
              HasSubstr("ids[1] = 500: outside the vocabulary [0, 500)"));
}

TEST_F(TokenizerTest, TheSameCorpusGivesTheSameModel) {
  ASSERT_TRUE(status_->ok()) << *status_;
  TokenizerTrainOptions o;
  o.input = ::specplan::test_paths::SourceDir() + "/README.md";
  o.model_prefix = dir_ + "/again";
  o.vocab_size = 500;
  o.threads = 1;
  ASSERT_TRUE(TrainTokenizer(o).ok());
  // The pieces and their scores (the .model also records its own model_prefix, so it differs).
  const std::string vocab = ReadAll(dir_ + "/readme.vocab");
  EXPECT_GT(vocab.size(), 1000u);
  EXPECT_TRUE(ReadAll(dir_ + "/again.vocab") == vocab);
}

TEST(TokenizerTraining, BadOptionsAreNamedAndWriteNothing) {
  const std::string dir = ::testing::TempDir() + "/tokenizer_bad." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  TokenizerTrainOptions o;
  o.input = ::specplan::test_paths::SourceDir() + "/README.md";
  o.model_prefix = dir + "/m";
  o.vocab_size = 100;
  EXPECT_THAT(TrainTokenizer(o).message(), HasSubstr("vocab_size = 100: must be >= 300"));
  o.vocab_size = 400;
  o.model_type = "wordpiece";
  EXPECT_THAT(TrainTokenizer(o).message(), HasSubstr("model_type = 'wordpiece'"));
  o.model_type = "bpe";
  o.input = dir + "/missing.txt";
  EXPECT_THAT(TrainTokenizer(o).message(), HasSubstr("missing.txt: not a readable file"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/m.model"));
  auto bad = Tokenizer::Load(::specplan::test_paths::SourceDir() + "/README.md");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("README.md: not a SentencePiece model"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace specplan::tokenizer
