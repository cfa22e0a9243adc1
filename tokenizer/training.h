// Training a SentencePiece tokenizer (Debian's libsentencepiece) on a text corpus: the vocabulary
// of the trained model family. The result loads with Tokenizer (tokenizer.h).
#ifndef SPECPLAN_TOKENIZER_TRAINING_H_
#define SPECPLAN_TOKENIZER_TRAINING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace specplan::tokenizer {

struct TokenizerTrainOptions {
  std::string input;                   // UTF-8 text, one sentence (or paragraph) per line
  std::string model_prefix;            // writes <model_prefix>.model and <model_prefix>.vocab
  int64_t vocab_size = 4096;           // pieces, specials and the 256 byte pieces included (>= 300)
  std::string model_type = "unigram";  // "unigram" or "bpe"
  int64_t max_sentence_length = 8192;  // bytes; longer lines are skipped by SentencePiece
  int threads = 2;
};

// Byte fallback is on (any UTF-8 text encodes, unseen characters as byte pieces), every character
// of the corpus is covered, and the input is read in order (no sampling): with threads = 1 a
// corpus gives the same pieces and scores every time. SentencePiece logs only its command line. The
// vocabulary is a soft limit above the corpus's distinct characters (all of which are kept, so
// vocab_size must hold them; SentencePiece's error says how many are needed): a corpus too small
// for vocab_size gets fewer pieces. Errors name the field or SentencePiece's message; nothing is
// written on error.
absl::Status TrainTokenizer(const TokenizerTrainOptions& options);

}  // namespace specplan::tokenizer

#endif  // SPECPLAN_TOKENIZER_TRAINING_H_
