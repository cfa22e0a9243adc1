// What the train tool reads and writes: token streams (specplan-tokenizer encode --format ids) and
// checkpoints in HuggingFace layout that runtime::LoadModel reads back like any other.
#ifndef SPECPLAN_TRAIN_CHECKPOINT_H_
#define SPECPLAN_TRAIN_CHECKPOINT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/tree/token.h"
#include "runtime/transformer.h"

namespace specplan::train {

// A little-endian int32 token stream. Errors name the file: a size that is not a whole number of
// tokens, no tokens, or the index and value of an id outside [0, vocab_size).
absl::StatusOr<std::vector<planner::TokenId>> ReadTokenStream(const std::string& path,
                                                              int64_t vocab_size);

// Writes DIR/config.json (`config_json`, as given) and DIR/model.safetensors (the model's
// parameters by HF name, cast to `dtype`, with `metadata` in the header), each atomically: a
// failed write leaves an earlier checkpoint in DIR whole.
absl::Status WriteHfCheckpoint(const runtime::Transformer& model, const std::string& config_json,
                               const std::string& dir, torch::ScalarType dtype,
                               const std::map<std::string, std::string>& metadata = {});

// The checkpoint in `dir` (runtime::LoadModel) as ordinary fp32 CPU tensors that take no gradients:
// a frozen model that training code may differentiate through (LoadModel's tensors are inference
// tensors, which autograd refuses to save), e.g. the target under draft heads.
absl::StatusOr<std::unique_ptr<runtime::Transformer>> LoadFrozenForTraining(const std::string& dir);

}  // namespace specplan::train

#endif  // SPECPLAN_TRAIN_CHECKPOINT_H_
