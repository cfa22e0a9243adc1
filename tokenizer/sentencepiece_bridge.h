// The one translation unit that includes SentencePiece's headers. They declare
// `namespace absl { using std::string_view; }`, which clashes with abseil's own string_view, so
// nothing here includes abseil: plain strings and bool + error text. tokenizer.h and training.h
// wrap it in absl::Status.
#ifndef SPECPLAN_TOKENIZER_SENTENCEPIECE_BRIDGE_H_
#define SPECPLAN_TOKENIZER_SENTENCEPIECE_BRIDGE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace specplan::tokenizer::sentencepiece_bridge {

class Processor {
 public:
  ~Processor();
  // A model file written by Train; nullptr with *error set when it cannot be read.
  static std::unique_ptr<Processor> Load(const std::string& path, std::string* error);
  bool Encode(const std::string& text, std::vector<int>* ids, std::string* error) const;
  bool Decode(const std::vector<int>& ids, std::string* text, std::string* error) const;
  int PieceCount() const;
  std::string Piece(int id) const;  // requires 0 <= id < PieceCount()
  int UnknownId() const;

 private:
  struct Impl;
  explicit Processor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// SentencePieceTrainer::Train with its flags as key -> value (e.g. "input" -> path, so paths may
// hold spaces); false with *error set.
bool Train(const std::map<std::string, std::string>& flags, std::string* error);

}  // namespace specplan::tokenizer::sentencepiece_bridge

#endif  // SPECPLAN_TOKENIZER_SENTENCEPIECE_BRIDGE_H_
