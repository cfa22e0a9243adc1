// Cycle cost of one speculative step (BASTION (docs/references.md) eq. 7, Domino
// (docs/references.md) §4):
//   C(n) = T_draft + T_aux + T_verify(n + 1, c) [+ per_sequence + per_token (n + 1)]
// where n is the number of draft nodes (the root/bonus token makes s = n + 1). For a batch of B
// requests verified in one ragged pass (BatchCycleCost):
//   C(n_1..n_B) = T_draft(B) + T_aux + T_verify({(n_i + 1, c_i)})
//                 [+ per_sequence B + per_token sum (n_i + 1)]
// The bracketed engine terms are DrafterCost's step terms (0 for a drafter priced by class).
//
// The cycle of a tree (DESIGN.md "Cycle cost"; TreeSeconds): a drafter that drafts level by level
// (DrafterCost::depth_s, from costmodel::PlannerTermsFor for eagle, eagle3, mtp, draft:MODEL) pays
// T_draft(d) for a tree of depth d, so C(T) = T_draft(depth of T) + T_aux + T_verify(|T| + 1, c)
// [+ ...]; a block drafter or a cost class pays DraftSeconds() at every depth. A tree of no draft
// node drafts nothing: its cycle is the plain step (PlainSeconds).
#ifndef SPECPLAN_COSTMODEL_CYCLE_COST_H_
#define SPECPLAN_COSTMODEL_CYCLE_COST_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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
  // The drafting of a tree by its depth, for a drafter that drafts level by level (one extend
  // forward, then a forward per level: costmodel::PlannerTermsFor): depth_s[d] = seconds of one
  // sequence's drafting of a tree of depth d, d = 0..gamma (depth_s[0] = 0, non-decreasing), and
  // depth_growth[d] its batch_growth. Empty: the drafting does not depend on the tree
  // (DraftSeconds() at every depth: a block drafter, ngram, a cost class, a time given by hand).
  std::vector<double> depth_s = {};       // [gamma + 1] seconds
  std::vector<double> depth_growth = {};  // [gamma + 1], >= 0

  // Whether the drafting steps with the tree's depth (depth_s given).
  bool depth_stepped() const { return !depth_s.empty(); }
  // T_draft of a tree of depth d (clamped to the table), one sequence; DraftSeconds() when
  // depth-flat.
  double DraftSecondsAtDepth(int depth) const {
    if (depth_s.empty()) return DraftSeconds();
    return depth_s[static_cast<size_t>(
        std::clamp<int>(depth, 0, static_cast<int>(depth_s.size()) - 1))];
  }
  // The same for B sequences drafted together (each batched forward (1 + growth (B - 1)) times
  // one sequence's).
  double DraftSecondsAtDepth(int depth, int batch) const;

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
  // C(T) for a tree of n draft nodes and depth `depth` (see the top of this file): the drafting at
  // that depth, T_aux and the verify pass of n + 1 tokens; n = 0 is the plain step (PlainSeconds).
  // Seconds(n) is the cycle that pays the drafter's full depth (gamma levels).
  double TreeSeconds(int64_t n, int depth) const {
    if (n == 0) return PlainSeconds();
    return Seconds(n) + DepthSeconds(depth);
  }
  // What a tree of depth d pays for its drafting beyond Seconds(n)'s (<= 0; 0 when depth-flat).
  double DepthSeconds(int depth) const {
    return depth_s_.empty() ? 0.0
                            : depth_s_[static_cast<size_t>(std::clamp<int>(
                                  depth, 0, static_cast<int>(depth_s_.size()) - 1))];
  }
  bool depth_stepped() const { return !depth_s_.empty(); }
  // The deepest depth the drafting table covers (gamma); 0 when depth-flat.
  int max_priced_depth() const {
    return depth_s_.empty() ? 0 : static_cast<int>(depth_s_.size()) - 1;
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
  std::vector<double> depth_s_;  // [gamma + 1] T_draft(d) - T_draft(gamma); empty: depth-flat
  double fixed_s_;               // draft + aux + per_sequence_s
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
  // C of a batch whose deepest tree has depth `depth` (see the top of this file): every request
  // drafts that many levels together (the drafting at that depth for the batch's B sequences);
  // a batch that drafts nothing (every s_i = 1) is the plain step (PlainSeconds).
  double TreeSeconds(const BatchShape& batch, int depth) const {
    if (batch.totals().tokens <= static_cast<double>(batch.size())) return PlainSeconds(batch);
    return DraftSeconds(batch.size(), depth) + aux_s_ + StepTerms(batch) +
           verify_->VerifyBatchSeconds(batch);
  }
  bool depth_stepped() const { return drafter_.depth_stepped(); }
  int max_priced_depth() const {
    return drafter_.depth_s.empty() ? 0 : static_cast<int>(drafter_.depth_s.size()) - 1;
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
  // T_draft(B) of trees of depth d (DrafterCost::DraftSecondsAtDepth).
  double DraftSeconds(int batch, int depth) const {
    return drafter_.depth_s.empty() ? DraftSeconds(batch)
                                    : drafter_.DraftSecondsAtDepth(depth, batch);
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
