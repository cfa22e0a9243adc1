// Decoder-only transformer in LibTorch (Llama family and GPT-NeoX), executing s new tokens over a
// preallocated KV cache with an arbitrary additive attention mask -- the one primitive behind
// prefill, autoregressive decoding, draft-tree expansion and one-pass tree verification.
//
// Parameters are held under their HuggingFace names (NamedParameters), so checkpoints load by name
// and tests can write them back out. Every forward over a KV cache runs under c10::InferenceMode;
// TrainForward, on a model made by CreateTrainable, is the one forward that records gradients.
#ifndef SPECPLAN_RUNTIME_TRANSFORMER_H_
#define SPECPLAN_RUNTIME_TRANSFORMER_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/token.h"
#include "runtime/kv_cache.h"
#include "runtime/model_config.h"

namespace specplan::runtime {

struct RuntimeOptions {
  torch::ScalarType dtype = torch::kFloat32;  // fp32, bf16 or fp16 weights and activations
  torch::Device device = torch::kCPU;
};

// "fp32" | "float32" | "bf16" | "bfloat16" | "fp16" | "float16"; "cpu" | "cuda" | "cuda:N".
absl::StatusOr<torch::ScalarType> ParseDtype(const std::string& name);
absl::StatusOr<torch::Device> ParseDevice(const std::string& name);  // errors when CUDA is absent
const char* DtypeName(torch::ScalarType dtype);

class TensorSource;  // runtime/safetensors.h

// One sequence of a batched forward (Transformer::ForwardBatch): s_i new tokens over its own KV
// cache. The fields mean what Forward's arguments of the same names mean.
struct ForwardSegment {
  torch::Tensor tokens;     // [s_i] int32 or int64
  torch::Tensor positions;  // [s_i] int64
  int64_t start_slot = 0;
  torch::Tensor mask;        // as Forward's `mask` (undefined = causal)
  KvCache* cache = nullptr;  // not owned; one cache per segment
};

class Transformer {
 public:
  // Random weights from `seed`: matrices N(0, init_scale^2 / fan_in), an untied LM head
  // N(0, 36 / fan_in) (peaked next-token distributions, as a trained LM's), embeddings N(0, 1),
  // norm weights 1 + 0.1 N(0, 1), biases 0.1 N(0, 1). On the CPU they are drawn from a CPU
  // generator (same seed, config and dtype => identical weights); on CUDA from the device's default
  // generator reseeded with `seed` (identical on the same kind of device, but not equal to the CPU
  // draw: an 8B model's 8e9 normals take about a minute on the CPU and well under a second on a
  // GPU). For the same weights on two devices, build on one and use CopyTo.
  static absl::StatusOr<std::unique_ptr<Transformer>> CreateRandom(const ModelConfig& config,
                                                                   uint64_t seed,
                                                                   const RuntimeOptions& options,
                                                                   double init_scale = 1.0);
  // The same random weights as CreateRandom, held as ordinary tensors that take gradients
  // (requires_grad), for training (train/). It serves every forward as CreateRandom's model does.
  static absl::StatusOr<std::unique_ptr<Transformer>> CreateTrainable(const ModelConfig& config,
                                                                      uint64_t seed,
                                                                      const RuntimeOptions& options,
                                                                      double init_scale = 1.0);
  // Weights from a checkpoint, by HF name. Errors: a missing tensor, a wrong shape
  // ("model.layers.0.self_attn.q_proj.weight: shape [64, 32], expected [64, 64]"), or an unexpected
  // tensor name (known buffers such as rotary_emb.inv_freq are ignored).
  static absl::StatusOr<std::unique_ptr<Transformer>> CreateFromSource(
      const ModelConfig& config, const TensorSource& source, const RuntimeOptions& options);

  // The same weights (cast to options.dtype) on options.device.
  absl::StatusOr<std::unique_ptr<Transformer>> CopyTo(const RuntimeOptions& options) const;

  // A model made of this one's first `num_layers` blocks plus its final norm and LM head, sharing
  // the weight tensors (a cheap self-speculative draft). 1 <= num_layers <= config().num_layers.
  std::unique_ptr<Transformer> Truncated(int64_t num_layers) const;

  const ModelConfig& config() const { return config_; }
  const RuntimeOptions& options() const { return options_; }
  // (HF name, tensor) in a fixed order; the tensors alias the model's storage.
  const std::vector<std::pair<std::string, torch::Tensor>>& NamedParameters() const {
    return named_;
  }
  int64_t ParameterBytes() const;
  // The token embedding [V][h] and the LM head [V][h] (the same tensor when tied), which draft
  // heads share with the target (runtime/draft_heads.h).
  const torch::Tensor& embedding() const { return embed_; }
  const torch::Tensor& lm_head() const { return lm_head_; }

  KvCache NewCache(int64_t max_len) const {
    return KvCache(config_, max_len, options_.dtype, options_.device);
  }

  // Runs s new tokens. Writes their K/V into slots [start_slot, start_slot + s) of `cache` and
  // attends over slots [0, start_slot + s).
  //   tokens    [s] int32 (planner::TokenId) or int64 token ids; fastest on the model's device
  //   positions [s] int64 absolute RoPE positions; fastest on the model's device
  //   mask      [s][start_slot + s] additive float mask (0 = visible, -inf = hidden); or
  //             [s][k], s <= k < start_slot + s, over the last k slots only (every earlier slot
  //             visible; the full mask is then built on the model's device), e.g. [s][s] over
  //             the new tokens; or an undefined tensor for causal attention (row i sees slots
  //             <= start_slot + i)
  // Returns logits [s][V] as float32 on the model's device. Does not change cache->length().
  torch::Tensor Forward(const torch::Tensor& tokens, const torch::Tensor& positions,
                        int64_t start_slot, const torch::Tensor& mask, KvCache* cache) const;

  // B sequences in ONE pass, each over its own cache: the token-wise work (embedding, norms,
  // QKV / output / MLP projections, LM head) runs once over the S = Σ s_i packed tokens, so the
  // weights are read once per pass. Attention runs per sequence over that sequence's cache and
  // mask, unpadded (time and memory scale with Σ s_i (c_i + s_i)); except that consecutive
  // segments whose caches are consecutive rows of one arena (KvCache::Batch) attend in one call
  // per layer, padded to their longest tree and context (b s_max (c + s)_max). Returns packed
  // logits [S][V] float32 on the model's device, segment i's rows at offset Σ_{j<i} s_j. Forward is
  // the one-segment case (the same kernels, the same numbers). `hidden`, when given, receives the
  // final-norm hidden states [S][h] in the model's dtype (the rows the LM head reads; what parallel
  // draft heads read, runtime/draft_heads.h).
  torch::Tensor ForwardBatch(absl::Span<const ForwardSegment> segments,
                             torch::Tensor* hidden = nullptr) const;

  // Training forward: B sequences of T tokens ([B][T] int64 ids), each causal from position 0, with
  // no KV cache, recording gradients when the parameters take them (CreateTrainable). Returns
  // logits [B][T][V] float32; `hidden`, when given, receives the final-norm hidden states
  // [B][T][h] (what parallel draft heads read). The same layers and numbers as Forward.
  torch::Tensor TrainForward(const torch::Tensor& tokens, torch::Tensor* hidden = nullptr) const;

  // Convenience: causal forward of `tokens` at positions/slots start .. start + s - 1. On the CPU
  // the token ids are read in place (no copy). `hidden` as for ForwardBatch.
  torch::Tensor ForwardCausal(absl::Span<const planner::TokenId> tokens, int64_t start,
                              KvCache* cache, torch::Tensor* hidden = nullptr) const;

 private:
  struct Layer {
    torch::Tensor ln1_w, ln1_b, ln2_w, ln2_b;              // norms ([h]; biases only for LayerNorm)
    torch::Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;  // llama family
    // gpt_neox: its fused [3h][h] (per head q, k, v). llama family, inference models: q_w, k_w
    // and v_w are row blocks of one [q_width + 2 kv_width][h] tensor (biases likewise), so the
    // projection is one GEMM, as engines run it; trainable models keep them apart (undefined).
    torch::Tensor qkv_w, qkv_b;
    torch::Tensor q_norm_w, k_norm_w;                          // qwen3 [d]
    torch::Tensor gate_w, up_w, down_w, gate_b, up_b, down_b;  // MLP (gpt_neox: up/down only)
    // Inference models: gate_w and up_w are the row blocks of one [2 ffn][h] (biases likewise),
    // one GEMM; undefined for trainable models and gpt_neox.
    torch::Tensor gate_up_w, gate_up_b;
  };

  Transformer(ModelConfig config, RuntimeOptions options);
  // Allocates every parameter (uninitialised) and fills named_ / expected shapes: inference
  // tensors, or with `trainable` ordinary ones (CreateTrainable sets requires_grad after init).
  void Allocate(bool trainable = false);
  void InitRandom(uint64_t seed, double init_scale);
  torch::Tensor Norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) const;
  torch::Tensor Rope(const torch::Tensor& x, const torch::Tensor& cos,
                     const torch::Tensor& sin) const;  // x [s][heads][d]
  // A segment of a batched forward after validation: its rows [offset, offset + s) of the packed
  // activations, and its layer mask (LayerMask).
  struct Segment {
    int64_t s = 0, offset = 0, start_slot = 0;
    torch::Tensor mask;
    KvCache* cache = nullptr;
  };
  // Q, K, V of the packed rows x [S][h] ([S][nq][d], [S][nkv][d], [S][nkv][d]) after the
  // q/k norms and RoPE.
  void ProjectQkv(const Layer& layer, const torch::Tensor& x, const torch::Tensor& cos,
                  const torch::Tensor& sin, torch::Tensor* q, torch::Tensor* k,
                  torch::Tensor* v) const;
  // cos/sin [S][1][rotary_dim] in the model dtype for float positions [S].
  void RopeTables(const torch::Tensor& positions, torch::Tensor* cos, torch::Tensor* sin) const;
  // The rest of a block once its attention output `a` (of Norm(x, ln1)) is known: residuals and
  // the MLP, sequential or parallel (GPT-NeoX) as the config says.
  torch::Tensor FinishBlock(const Layer& layer, const torch::Tensor& x,
                            const torch::Tensor& a) const;
  // Segments [first, first + count) of a batched forward, attended together: one segment, or
  // several whose caches are consecutive rows row0, row0 + 1, ... of one arena (KvCache::Batch).
  // A group of several runs one attention call per layer over those arena rows, each segment's
  // queries padded to s_max and its keys to t_max (masked), so a pass of b such sequences makes
  // one attention launch per layer, not b. Built once per forward (GroupSegments).
  struct Group {
    int64_t first = 0, count = 0;
    int64_t offset = 0, rows = 0;  // the packed rows [offset, offset + rows)
    const KvArena* arena = nullptr;
    int64_t row0 = 0, s_max = 0, t_max = 0;
    // Additive [count][s_max][t_max] (LayerMask's dtype): hides slots past each segment's end and
    // holds its LayerMask; padded query rows see their segment's slots (their output is dropped).
    // Undefined when every row sees every slot of its t_max.
    torch::Tensor mask;
    // [rows] int64 on the device: packed row -> row of the padded [count * s_max] queries;
    // undefined when every segment has s_max rows.
    torch::Tensor pad_index;
    // [rows] int64 on the device: packed row -> its slot in the arena's flattened
    // [arena rows * max_len] K/V.
    torch::Tensor write_index;
  };
  // Splits the validated segments into groups (in order); moves grouped segments' masks into
  // their group's.
  std::vector<Group> GroupSegments(std::vector<Segment>* segments) const;
  // Projections over the packed rows x [S][h]; attention per group.
  torch::Tensor Attention(const Layer& layer, int64_t index, const torch::Tensor& x,
                          const torch::Tensor& cos, const torch::Tensor& sin,
                          absl::Span<const Segment> segments, absl::Span<const Group> groups) const;
  // A group of several segments' attention: q [rows][nq][d], k and v [rows][nkv][d] after RoPE;
  // writes k and v into the arena and returns [rows][nq * d].
  torch::Tensor AttendGroup(int64_t index, const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, const Group& group) const;
  // One segment's attention: q [s][nq][d], k and v [s][nkv][d] after RoPE; writes k and v into
  // its cache and returns [s][nq * d].
  torch::Tensor AttendSegment(int64_t index, const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const Segment& segment) const;
  torch::Tensor Mlp(const Layer& layer, const torch::Tensor& x) const;
  // SDPA with native GQA (LibTorch >= 2.5 on CUDA) rather than the explicit bmm/softmax path.
  bool UseFusedAttention() const;
  // The additive attention mask every layer uses, [s][T], built once per forward from Forward's
  // `mask` (undefined = causal): float32 for the explicit path, the model dtype for SDPA.
  // Undefined when s == 1 and no mask was given (the token sees every slot).
  torch::Tensor LayerMask(const torch::Tensor& mask, int64_t s, int64_t start_slot) const;

  ModelConfig config_;
  RuntimeOptions options_;
  torch::Tensor embed_, final_w_, final_b_, lm_head_;
  std::vector<Layer> layers_;
  torch::Tensor inv_freq_;  // [rotary_dim / 2] float32 on device (scaling applied)
  std::vector<std::pair<std::string, torch::Tensor>> named_;
};

// Additive attention mask for one-pass verification of a draft tree over c cached tokens:
// [s][c + s] float32 on `device`, 0 where visible, -inf elsewhere. Columns [0, c) are visible to
// every row; column c + j is visible to row i iff ancestor_dense[i * s + j] != 0 (the planner's
// dense ancestor mask, planner::TreeOutputs::mask_dense).
torch::Tensor TreeAttentionMask(const std::vector<uint8_t>& ancestor_dense, int64_t s, int64_t c,
                                torch::Device device);

// The new-token block of TreeAttentionMask alone: [s][s] float32 on `device`, entry (i, j) 0 iff
// ancestor_dense[i * s + j] != 0, else -inf. Only the s * s mask bytes cross from the host;
// Forward makes the cached columns visible. (The decoder writes the same block into its
// preallocated StepBuffers instead of allocating one per step.)
torch::Tensor TreeMaskBlock(const std::vector<uint8_t>& ancestor_dense, int64_t s,
                            torch::Device device);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_TRANSFORMER_H_
