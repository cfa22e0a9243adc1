// Next-token training of a decoder (runtime::Transformer::CreateTrainable): AdamW over random
// windows of a token stream, a linear warm-up then cosine decay of the learning rate, gradient
// clipping, all seeded; and the held-out loss that a trained checkpoint is recorded with.
//
// Loss: mean next-token cross-entropy in nats over the batch's B x T predictions, where each
// sequence is a window of T + 1 consecutive tokens (inputs the first T, targets the last T).
#ifndef SPECPLAN_TRAIN_LM_TRAINING_H_
#define SPECPLAN_TRAIN_LM_TRAINING_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/token.h"
#include "runtime/transformer.h"

namespace specplan::train {

// What one optimiser step did (progress callbacks).
struct LmTrainStep {
  int64_t step = 0;            // 1-based
  double loss = 0;             // nats, this step's batch
  double lr = 0;               // learning rate used
  double heldout_loss = -1;    // nats, when evaluated at this step; -1 otherwise
  double elapsed_seconds = 0;  // since training started
};

struct LmTrainOptions {
  int64_t steps = 1000;          // optimiser steps (>= 1)
  int64_t batch = 16;            // windows per step (>= 1)
  int64_t seq_len = 128;         // T: predictions per window (>= 1)
  double lr = 3e-3;              // peak learning rate (> 0)
  double min_lr_fraction = 0.1;  // the cosine decays to lr x this at the last step, in [0, 1]
  int64_t warmup = 50;           // steps of linear warm-up from lr / warmup (>= 0)
  double weight_decay = 0.1;     // AdamW decoupled decay (>= 0)
  double clip_norm = 1.0;        // global gradient-norm clip (> 0)
  uint64_t seed = 1;             // window sampling
  int64_t eval_every = 0;        // held-out loss every N steps (0 = at the end only)
  std::function<void(const LmTrainStep&)> on_step;  // called after every step (may be empty)
};

// Re-draws every parameter of `model` (from CreateTrainable) for training from scratch, GPT-2 /
// Llama style: N(0, 0.02) for the embedding and every matrix, 0.02 / sqrt(2 x layers) for the
// matrices that write into the residual stream (o_proj, down_proj, dense, dense_4h_to_h), norms 1,
// biases 0. Seeded. (CreateTrainable's own draw is CreateRandom's, made for peaked random-weight
// demos: its N(0, 1) tied embeddings start a language model at a loss far above ln(vocab).)
void InitForTraining(runtime::Transformer* model, uint64_t seed);

// Errors name the field and value ("seq_len = 0: must be >= 1").
absl::Status ValidateLmTrainOptions(const LmTrainOptions& options);

struct LmTrainResult {
  std::vector<double> losses;  // [steps] training loss per step, nats
  double heldout_loss = 0;     // nats, after the last step (HeldoutLoss)
  double seconds = 0;          // wall time of the whole run
};

// Trains every parameter of `model` in place. The model must come from CreateTrainable. `train`
// needs at least seq_len + 1 tokens, `heldout` likewise; token ids must be < the vocabulary.
// Errors name the field ("train: 10 tokens, fewer than seq_len + 1 = 129").
absl::StatusOr<LmTrainResult> TrainLanguageModel(runtime::Transformer* model,
                                                 absl::Span<const planner::TokenId> train,
                                                 absl::Span<const planner::TokenId> heldout,
                                                 const LmTrainOptions& options);

// The optimiser loop of TrainLanguageModel, for any loss over any parameters
// (train/heads_training.h reuses it): AdamW (betas 0.9, 0.95) over `params`, the warm-up and cosine
// schedule, global-norm clipping and progress (options.on_step). `batch_loss(step)` returns the
// scalar loss of step `step` (1-based) with its graph; `heldout()` is called every eval_every steps
// and after the last one, whose value becomes result.heldout_loss. A non-finite loss stops the run
// with an error.
absl::StatusOr<LmTrainResult> RunTrainingLoop(
    const std::vector<torch::Tensor>& params, const LmTrainOptions& options,
    const std::function<torch::Tensor(int64_t step)>& batch_loss,
    const std::function<absl::StatusOr<double>()>& heldout);

// Uniform random window starts in a token stream, seeded: windows of `span` + 1 tokens.
class WindowSampler {
 public:
  // tokens.size() must exceed span.
  WindowSampler(absl::Span<const planner::TokenId> tokens, int64_t span, uint64_t seed);
  std::vector<int64_t> Draw(int64_t n);

 private:
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int64_t> dist_;
};

// [n][seq_len + 1] int64 windows of `tokens` starting at `starts`.
torch::Tensor Windows(absl::Span<const planner::TokenId> tokens, const std::vector<int64_t>& starts,
                      int64_t seq_len);

// At least seq_len + 1 tokens, every id in [0, vocab); errors name `name` ("train: 10 tokens,
// fewer than seq_len + 1 = 129").
absl::Status CheckTokens(absl::Span<const planner::TokenId> tokens, const char* name,
                         int64_t seq_len, int64_t vocab);
// CheckTokens of the training split ("train") and then of the held-out split ("heldout").
absl::Status CheckSplits(absl::Span<const planner::TokenId> train,
                         absl::Span<const planner::TokenId> heldout, int64_t seq_len,
                         int64_t vocab);

// Appends the tensors of `named` to `params` for an optimiser; one that does not take gradients is
// an error naming it and how to build it trainable: "w: does not take gradients (REMEDY)".
absl::Status AppendTrainable(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                             const char* remedy, std::vector<torch::Tensor>* params);

// Mean next-token cross-entropy (nats) of `model` over consecutive non-overlapping windows of
// seq_len + 1 tokens of `tokens` (the tail shorter than a window is dropped), `batch` windows per
// forward. Deterministic; records no gradients. Needs >= seq_len + 1 tokens.
absl::StatusOr<double> HeldoutLoss(const runtime::Transformer& model,
                                   absl::Span<const planner::TokenId> tokens, int64_t seq_len,
                                   int64_t batch = 16);

}  // namespace specplan::train

#endif  // SPECPLAN_TRAIN_LM_TRAINING_H_
