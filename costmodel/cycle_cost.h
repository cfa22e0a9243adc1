// Cycle cost of one speculative step (BASTION (docs/references.md) eq. 7, Domino
// (docs/references.md) §4):
//   C(n) = T_draft + T_aux + T_verify(n + 1, c) [+ per_sequence + per_token (n + 1)]
// where n is the number of draft nodes (the root/bonus token makes s = n + 1). For a batch of B
// requests verified in one ragged pass (BatchCycleCost):
//   C(n_1..n_B) = T_draft(B) + T_aux + T_verify({(n_i + 1, c_i)})
//                 [+ per_sequence B + per_token sum (n_i + 1)]
// The bracketed engine terms are DrafterCost's step terms (0 for a drafter priced by class).
#ifndef SPECPLAN_COSTMODEL_CYCLE_COST_H_
#define SPECPLAN_COSTMODEL_CYCLE_COST_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "costmodel/latency/latency_model.h"

namespace specplan::costmodel {

// How a drafter spends time producing a block of gamma positions (Domino (docs/references.md) §4).
enum class DrafterClass {
  kAutoregressive,  // gamma sequential steps: gamma * (t_net + t_head)
  kParallelBlock,   // one block pass:         t_net + t_head
  kParallelCausal,  // block pass + light causal correction: t_net + t_head + gamma * t_light
};

absl::StatusOr<DrafterClass> ParseDrafterClass(
    const std::string& name);  // "ar", "parallel", "causal"
const char* DrafterClassName(DrafterClass cls);

struct DrafterCost {
  DrafterClass cls = DrafterClass::kParallelBlock;
  int gamma = 16;         // positions drafted per cycle
  double t_net_s = 0.0;   // seconds, one draft-network forward (per step for AR, per block else)
  double t_head_s = 0.0;  // seconds, one draft LM-head projection (per step for AR, per block else)
  double t_light_s = 0.0;  // seconds, one light causal-correction step (kParallelCausal only)
  // How a batched draft step grows with the batch: each further sequence adds this fraction of
  // one sequence's time (0 = a weight-bound drafter, whose batched step costs what one sequence's
  // does; 1 = no batching benefit). >= 0.
  double batch_growth = 0.0;
  // The engine's step terms besides the passes (costmodel/step/step_model.h), so that planners and
  // replays price speculation and plain decoding on the same step model; all 0 for a drafter
  // priced by class (the verify pass alone):
  //   per_sequence_s  the host's work per sequence per step, speculative or plain
  //   per_token_s     the engine's time per token in the target's pass beyond its kernels
  //   plain_step_s    the plain step's own per-step terms (host step + one sampling call); the
  //                   speculative step's are the cycle's T_aux
  double per_sequence_s = 0.0;
  double per_token_s = 0.0;
  double plain_step_s = 0.0;

  // T_draft in seconds for this class, one sequence.
  double DraftSeconds() const;
  // T_draft for B sequences drafted together: an autoregressive drafter runs gamma batched steps,
  // a parallel drafter one batched pass; each batched step costs (1 + batch_growth (B - 1)) times
  // one sequence's. Requires batch >= 1.
  double DraftSeconds(int batch) const;
};

// C(n) for a fixed context length. Holds a non-owning pointer to the latency model, which must
// outlive it. Cheap to copy; evaluating is one virtual call.
class CycleCost {
 public:
  CycleCost(const LatencyModel* verify, DrafterCost drafter, double t_aux_s, int64_t c);

  // Seconds for a cycle that verifies n draft nodes (n >= 0).
  double Seconds(int64_t n) const {
    return fixed_s_ + per_token_s_ * static_cast<double>(n + 1) + verify_->VerifySeconds(n + 1, c_);
  }
  double DraftSeconds() const { return draft_s_; }
  double AuxSeconds() const { return aux_s_; }
  double VerifySeconds(int64_t n) const { return verify_->VerifySeconds(n + 1, c_); }
  // A plain decoding step of this sequence: T_verify(1, c) plus the drafter cost's plain_step_s,
  // per_sequence_s and per_token_s (0 for a drafter priced by class): the planners' default L_AR.
  double PlainSeconds() const { return verify_->VerifySeconds(1, c_) + plain_extra_s_; }
  int64_t context() const { return c_; }

 private:
  const LatencyModel* verify_;
  double draft_s_;
  double aux_s_;
  double fixed_s_;  // draft + aux + per_sequence_s
  double per_token_s_;
  double plain_extra_s_;
  int64_t c_;
};

// C for a ragged batch (see the top of this file). Holds a non-owning pointer to the latency
// model, which must outlive it. For one sequence it gives exactly CycleCost's figures.
class BatchCycleCost {
 public:
  BatchCycleCost(const LatencyModel* verify, DrafterCost drafter, double t_aux_s);

  // Seconds for a cycle that verifies `batch` (s_i = n_i + 1 per request).
  double Seconds(const BatchShape& batch) const {
    return DraftSeconds(batch.size()) + aux_s_ + StepTerms(batch) +
           verify_->VerifyBatchSeconds(batch);
  }
  double VerifySeconds(const BatchShape& batch) const { return verify_->VerifyBatchSeconds(batch); }
  // A plain decoding step of `plain` (every s_i = 1): its verify pass plus the drafter cost's
  // plain_step_s and its per-sequence and per-token terms.
  double PlainSeconds(const BatchShape& plain) const {
    return verify_->VerifyBatchSeconds(plain) + drafter_.plain_step_s + StepTerms(plain);
  }
  // The drafter cost's per-sequence and per-token terms of a pass over `batch`.
  double StepTerms(const BatchShape& batch) const {
    return drafter_.per_sequence_s * static_cast<double>(batch.size()) +
           drafter_.per_token_s * batch.totals().tokens;
  }
  double DraftSeconds(int batch) const {
    return batch == 1 ? draft1_s_ : drafter_.DraftSeconds(batch);
  }
  double AuxSeconds() const { return aux_s_; }
  const LatencyModel& verify_model() const { return *verify_; }

 private:
  const LatencyModel* verify_;
  DrafterCost drafter_;
  double draft1_s_;
  double aux_s_;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_CYCLE_COST_H_
