#include "tokenizer/training.h"

#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "tokenizer/sentencepiece_bridge.h"

namespace specplan::tokenizer {

absl::Status TrainTokenizer(const TokenizerTrainOptions& o) {
  if (o.input.empty()) return absl::InvalidArgumentError("input: required");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.input, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("input ", o.input, ": not a readable file"));
  }
  if (o.model_prefix.empty()) return absl::InvalidArgumentError("model_prefix: required");
  if (o.vocab_size < 300) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vocab_size = ", o.vocab_size, ": must be >= 300 (256 byte pieces and the specials)"));
  }
  if (o.model_type != "unigram" && o.model_type != "bpe") {
    return absl::InvalidArgumentError(
        absl::StrCat("model_type = '", o.model_type, "': expected unigram or bpe"));
  }
  if (o.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("threads = ", o.threads, ": must be >= 1"));
  }
  const std::map<std::string, std::string> flags = {
      {"input", o.input},
      {"model_prefix", o.model_prefix},
      {"vocab_size", absl::StrCat(o.vocab_size)},
      {"model_type", o.model_type},
      {"max_sentence_length", absl::StrCat(o.max_sentence_length)},
      {"num_threads", absl::StrCat(o.threads)},
      {"byte_fallback", "true"},
      {"character_coverage", "1.0"},
      {"hard_vocab_limit", "false"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", "2"},
  };
  std::string error;
  if (!sentencepiece_bridge::Train(flags, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer training: ", error));
  }
  return absl::OkStatus();
}

}  // namespace specplan::tokenizer
