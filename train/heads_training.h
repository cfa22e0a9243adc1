// Training of draft heads (runtime/draft_heads.h) on a frozen target: the parallel heads and the
// causal-correction head together, on the target's final-norm hidden states of random windows.
//
// For a hidden row h_t (the target's state after token t, whose own head predicts x_{t+1}, the
// root), parallel head k (1-based) is trained on x_{t+1+k}; the causal head reads the path
// x_{t+1}, ..., x_{t+k} (teacher forcing, Domino (docs/references.md) §4.2) and its corrected
// logits are trained on the same token. The loss is Domino's (docs/references.md) base-anchored
// curriculum with position weights w_k = exp(-k / gamma):
//     L = sum_k w_k ((1 - lambda) CE(L_k + dL_k) + lambda CE(L_k)) / sum_k w_k,
// lambda falling linearly from 1 at the first step to `lambda_end` at the last. Domino anneals to
// 0; here the parallel heads are a drafter of their own (best-first plans over them), so their
// loss keeps a floor (default 0.5). Without a causal head L is the weighted base loss.
#ifndef SPECPLAN_TRAIN_HEADS_TRAINING_H_
#define SPECPLAN_TRAIN_HEADS_TRAINING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/token.h"
#include "runtime/draft_heads.h"
#include "runtime/transformer.h"
#include "train/lm_training.h"

namespace specplan::train {

// Per depth k = 1 .. gamma (index k - 1), over every scored position.
struct HeadsEval {
  std::vector<double> base_loss;   // CE of the parallel head, nats
  std::vector<double> final_loss;  // CE with the causal correction (= base_loss without one)
  std::vector<double> base_top1;   // share of positions whose argmax is the true token
  std::vector<double> final_top1;
  double objective = 0;   // the training loss at lambda = lambda_end
  int64_t positions = 0;  // positions scored per depth
};

struct HeadsTrainOptions {
  LmTrainOptions lm;        // steps, batch, seq_len (hidden rows per window), lr, ...
  double lambda_end = 0.5;  // the base loss's weight at the last step, in [0, 1]
};

// Trains every tensor of `heads` (from DraftHeads::CreateRandom(..., trainable = true)) in place;
// the target is not changed. `train` and `heldout` need seq_len + gamma + 1 tokens; ids must be in
// the vocabulary. The loop is RunTrainingLoop's; result.heldout_loss is EvaluateDraftHeads'
// objective on `heldout`.
absl::StatusOr<LmTrainResult> TrainDraftHeads(runtime::DraftHeads* heads,
                                              absl::Span<const planner::TokenId> train,
                                              absl::Span<const planner::TokenId> heldout,
                                              const HeadsTrainOptions& options);

// The heads' per-depth losses and top-1 rates over consecutive non-overlapping windows of
// seq_len + gamma + 1 tokens of `tokens` (seq_len hidden rows each), `batch` windows per forward.
// Deterministic; records no gradients.
absl::StatusOr<HeadsEval> EvaluateDraftHeads(const runtime::DraftHeads& heads,
                                             absl::Span<const planner::TokenId> tokens,
                                             int64_t seq_len, int64_t batch, double lambda_end);

}  // namespace specplan::train

#endif  // SPECPLAN_TRAIN_HEADS_TRAINING_H_
