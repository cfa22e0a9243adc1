#include "tokenizer/tokenizer.h"

#include "absl/strings/str_cat.h"
#include "tokenizer/sentencepiece_bridge.h"
#include "util/check.h"

namespace specplan::tokenizer {

Tokenizer::Tokenizer(std::unique_ptr<sentencepiece_bridge::Processor> processor, std::string path)
    : processor_(std::move(processor)), path_(std::move(path)) {}
Tokenizer::~Tokenizer() = default;

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  std::string error;
  std::unique_ptr<sentencepiece_bridge::Processor> p =
      sentencepiece_bridge::Processor::Load(path, &error);
  if (p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a SentencePiece model: ", error));
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(p), path));
}

absl::StatusOr<std::vector<planner::TokenId>> Tokenizer::Encode(const std::string& text) const {
  std::vector<int> ids;
  std::string error;
  if (!processor_->Encode(text, &ids, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": encode: ", error));
  }
  return std::vector<planner::TokenId>(ids.begin(), ids.end());
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const planner::TokenId> ids) const {
  const int n = processor_->PieceCount();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("ids[", i, "] = ", ids[i], ": outside the vocabulary [0, ", n, ")"));
    }
  }
  std::string text, error;
  if (!processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": decode: ", error));
  }
  return text;
}

int64_t Tokenizer::vocab_size() const { return processor_->PieceCount(); }

std::string Tokenizer::Piece(planner::TokenId id) const {
  SPECPLAN_CHECK(id >= 0 && id < processor_->PieceCount());
  return processor_->Piece(id);
}

}  // namespace specplan::tokenizer
