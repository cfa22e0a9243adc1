#include "tokenizer/sentencepiece_bridge.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

namespace specplan::tokenizer::sentencepiece_bridge {

struct Processor::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

Processor::Processor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Processor::~Processor() = default;

std::unique_ptr<Processor> Processor::Load(const std::string& path, std::string* error) {
  auto impl = std::make_unique<Impl>();
  const sentencepiece::util::Status st = impl->sp.Load(path);
  if (!st.ok()) {
    *error = st.ToString();
    return nullptr;
  }
  return std::unique_ptr<Processor>(new Processor(std::move(impl)));
}

bool Processor::Encode(const std::string& text, std::vector<int>* ids, std::string* error) const {
  const sentencepiece::util::Status st = impl_->sp.Encode(text, ids);
  if (!st.ok()) *error = st.ToString();
  return st.ok();
}

bool Processor::Decode(const std::vector<int>& ids, std::string* text, std::string* error) const {
  const sentencepiece::util::Status st = impl_->sp.Decode(ids, text);
  if (!st.ok()) *error = st.ToString();
  return st.ok();
}

int Processor::PieceCount() const { return impl_->sp.GetPieceSize(); }
std::string Processor::Piece(int id) const { return impl_->sp.IdToPiece(id); }
int Processor::UnknownId() const { return impl_->sp.unk_id(); }

bool Train(const std::map<std::string, std::string>& flags, std::string* error) {
  const std::unordered_map<std::string, std::string> kwargs(flags.begin(), flags.end());
  const sentencepiece::util::Status st = sentencepiece::SentencePieceTrainer::Train(kwargs);
  if (!st.ok()) *error = st.ToString();
  return st.ok();
}

}  // namespace specplan::tokenizer::sentencepiece_bridge
