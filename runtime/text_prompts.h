// Text in and out of specplan-bench without linking SentencePiece into a LibTorch process
// (tokenizer/tokenizer.h explains why they cannot share one): the texts go through the
// specplan-tokenizer binary as a child process, over temporary files.
#ifndef SPECPLAN_RUNTIME_TEXT_PROMPTS_H_
#define SPECPLAN_RUNTIME_TEXT_PROMPTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/tree/token.h"

namespace specplan::runtime {

class TokenizerProcess {
 public:
  // `binary`: the specplan-tokenizer executable; `model`: a SentencePiece .model file.
  TokenizerProcess(std::string binary, std::string model)
      : binary_(std::move(binary)), model_(std::move(model)) {}

  // One id list per text (`specplan-tokenizer encode --format jsonl`). A text may not be empty or
  // contain a line break (the tool reads one text per line); the error names its index.
  absl::StatusOr<std::vector<std::vector<planner::TokenId>>> Encode(
      const std::vector<std::string>& texts) const;
  // One text per id list (`specplan-tokenizer decode`).
  absl::StatusOr<std::vector<std::string>> Decode(
      const std::vector<std::vector<planner::TokenId>>& ids) const;

 private:
  // Runs binary_ with `args`, its stdout and stderr into the file `log`; an error carries the log.
  absl::Status Run(const std::vector<std::string>& args, const std::string& log) const;

  std::string binary_, model_;
};

// The specplan-tokenizer built beside the running executable (<dir>/../tokenizer/
// specplan-tokenizer, the build tree's layout), else "specplan-tokenizer" (found on PATH).
std::string DefaultTokenizerBinary();

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_TEXT_PROMPTS_H_
