// Draft heads on a target model's last hidden state: the parallel drafter and the causal-correction
// drafter of issue 18 (model classes of costmodel::DrafterClass kParallelBlock / kParallelCausal).
//
//  * Parallel heads (Medusa style): gamma residual blocks on the target's final-norm hidden state
//    h_t of the token before the pending root. Head k (1-based) gives H_k = h_t + SiLU(W_k h_t +
//    b_k) and base logits L_k = LMHead(H_k) through the TARGET's LM head (shared, not stored): its
//    distribution is the guess for the token k positions after the root. All gamma rows come from
//    one hidden row, with no draft-model pass: the gamma x K marginals best-first plans over.
//  * Causal correction (Domino (docs/references.md) §4.1.2): a GRU over the target's embeddings of
//  the drafted path
//    (root first) gives a causal state S; the correction for depth k is the low-rank
//    dL_k = W_up SiLU(W_down [H_k; S_k] + b_down), S_k = GRU(E(root), E(d_1), ..., E(d_{k-1})), and
//    the drafted distribution is softmax(L_k + dL_k): path-conditioned, at one GRU step and one
//    rank-r product per node, with no full LM head in the sequential part.
//
// On disk (a directory, next to the target's checkpoint in models/): config.json (the fields of
// DraftHeadsConfig), parallel.safetensors (parallel.K.weight [h][h], parallel.K.bias [h], K = 0 ..
// gamma - 1) and, when causal_state > 0, causal.safetensors (causal.gru.weight_ih [3s][h],
// causal.gru.weight_hh [3s][s], causal.gru.bias_ih [3s], causal.gru.bias_hh [3s] in torch's GRU
// gate order r, z, n; causal.down.weight [r][h + s], causal.down.bias [r]; causal.up.weight
// [V][r]).
#ifndef SPECPLAN_RUNTIME_DRAFT_HEADS_H_
#define SPECPLAN_RUNTIME_DRAFT_HEADS_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "runtime/transformer.h"

namespace specplan::runtime {

struct DraftHeadsConfig {
  int64_t num_heads = 4;     // gamma: depths drafted below the root
  int64_t hidden_size = 0;   // the target's hidden size
  int64_t vocab_size = 0;    // the target's vocabulary
  int64_t causal_state = 0;  // GRU state size s; 0 = no causal-correction head
  int64_t causal_rank = 64;  // r of the low-rank correction (when causal_state > 0)
};

// Errors name the field and value ("num_heads = 0: must be in [1, 64]"). `name` prefixes them.
absl::StatusOr<DraftHeadsConfig> ParseDraftHeadsConfig(const nlohmann::json& j,
                                                       const std::string& name);
// The ranges ParseDraftHeadsConfig checks, on a config built in code; errors as above.
absl::Status ValidateDraftHeadsConfig(const DraftHeadsConfig& config, const std::string& name);
nlohmann::json DraftHeadsConfigJson(const DraftHeadsConfig& config);

class DraftHeads {
 public:
  using Named = std::vector<std::pair<std::string, torch::Tensor>>;

  // Fresh heads for `target` (config hidden_size / vocab_size must match it), on its device and in
  // its dtype: residual blocks at W = 0 (each head starts as the target's own next-token head), the
  // GRU uniform in +-1/sqrt(s), W_down N(0, 0.02), W_up 0 (the correction starts at zero). Seeded.
  // `trainable`: the tensors take gradients (train/heads_training.h).
  static absl::StatusOr<std::unique_ptr<DraftHeads>> CreateRandom(const DraftHeadsConfig& config,
                                                                  const Transformer& target,
                                                                  uint64_t seed, bool trainable);
  // DIR/config.json and its safetensors files (layout above), cast to the target's dtype and
  // device. Errors name the file and tensor (a missing tensor, a wrong shape, a config that does
  // not fit the target).
  static absl::StatusOr<std::unique_ptr<DraftHeads>> Load(const std::string& dir,
                                                          const Transformer& target);
  // Writes DIR/config.json and the safetensors files (cast to `dtype`), each atomically.
  absl::Status Save(const std::string& dir, torch::ScalarType dtype,
                    const std::map<std::string, std::string>& metadata = {}) const;

  const DraftHeadsConfig& config() const { return config_; }
  bool has_causal() const { return config_.causal_state > 0; }
  int64_t num_heads() const { return config_.num_heads; }
  const Transformer& target() const { return *target_; }

  // hidden [N][h] (the target's final-norm rows) -> head states [N][gamma][h].
  torch::Tensor HeadStates(const torch::Tensor& hidden) const;
  // Head states [..][h] -> logits [..][V] float32 through the target's LM head.
  torch::Tensor Logits(const torch::Tensor& states) const;
  // One GRU step: state [N][s] (undefined = zeros) reads tokens [N] (int64 ids) -> [N][s].
  torch::Tensor CausalStep(const torch::Tensor& state, const torch::Tensor& tokens) const;
  // head_state [N][h], causal state [N][s] -> correction logits [N][V] float32.
  torch::Tensor Correction(const torch::Tensor& head_state, const torch::Tensor& state) const;

  // (name, tensor) of the parallel heads and of the causal head (empty without one); the tensors
  // alias the heads' storage.
  const Named& parallel_parameters() const { return parallel_; }
  const Named& causal_parameters() const { return causal_; }
  int64_t NumParameters() const;

 private:
  DraftHeads(const DraftHeadsConfig& config, const Transformer& target)
      : config_(config), target_(&target) {}
  // Expected (name, shape) of every tensor, parallel then causal.
  std::vector<std::pair<std::string, std::vector<int64_t>>> Shapes() const;
  void Index();  // fills w_, b_ and the causal fields from parallel_ / causal_

  DraftHeadsConfig config_;
  const Transformer* target_;
  Named parallel_, causal_;
  std::vector<torch::Tensor> w_, b_;  // [gamma] aliases of parallel_
  torch::Tensor gru_wih_, gru_whh_, gru_bih_, gru_bhh_, down_w_, down_b_, up_w_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_DRAFT_HEADS_H_
