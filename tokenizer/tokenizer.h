// A SentencePiece tokenizer (Debian's libsentencepiece): text <-> token ids, for text prompts and
// decoded output. The model file is what training.h writes (or any SentencePiece .model file).
//
// Not for processes that load LibTorch: Debian's libsentencepiece exports the protobuf-lite it
// bundles, and a process that also maps LibTorch's libprotobuf crashes at start-up. Keep it in
// processes of its own (the tokenizer library links no Torch).
#ifndef SPECPLAN_TOKENIZER_TOKENIZER_H_
#define SPECPLAN_TOKENIZER_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/token.h"

namespace specplan::tokenizer {

namespace sentencepiece_bridge {
class Processor;
}

class Tokenizer {
 public:
  ~Tokenizer();
  // Errors name the path ("m.model: ... cannot be read").
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);

  // UTF-8 text to ids in [0, vocab_size()).
  absl::StatusOr<std::vector<planner::TokenId>> Encode(const std::string& text) const;
  // Ids back to text; an id outside [0, vocab_size()) is an error naming its index and value.
  absl::StatusOr<std::string> Decode(absl::Span<const planner::TokenId> ids) const;
  int64_t vocab_size() const;
  std::string Piece(
      planner::TokenId id) const;  // the piece's text, e.g. "▁the"; requires a valid id
  const std::string& path() const { return path_; }

 private:
  Tokenizer(std::unique_ptr<sentencepiece_bridge::Processor> processor, std::string path);
  std::unique_ptr<sentencepiece_bridge::Processor> processor_;
  std::string path_;
};

}  // namespace specplan::tokenizer

#endif  // SPECPLAN_TOKENIZER_TOKENIZER_H_
