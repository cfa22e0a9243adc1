// Engine-grade verification costs: T(b, s, c) composed from an engine's per-kernel timings
// (costmodel/compose/kernel_tables.h), written as a normal profile whose table has a batch axis.
//
// One pass of b sequences, each verifying s tokens over c cached tokens, with m = b * s tokens
// in the GEMMs, on one GPU of a tp-way tensor-parallel group (widths and heads divided by tp):
//   T = embedding + L * [QKV GEMM (m, (n_q + 2 n_kv) d / tp, h) + O GEMM (m, h, n_q d / tp)
//                        + gate/up GEMM (m, 2 ffn / tp, h) + down GEMM (m, h, ffn / tp)
//                        + attention(b, s, c) + elementwise(m)]
//       + final norm + LM head GEMM (m, V / tp, h) + all-reduces (tp > 1)
// QKV and gate/up are one GEMM each, as SGLang, vLLM and TensorRT-LLM run them.
//
// Attention of one layer (the tables time it per layer for a uniform batch):
//   s = 1:  the generation table at (b, kv_len = c + 1), exactly.
//   s > 1 (tree verification: s new tokens over c cached ones under a tree mask; neither table
//          times it):  max(memory, compute) with
//          memory  = the generation table at (b, kv_len = c + s): the kernel streams the same
//                    cache once, for every query row of a KV head together, as a decode does;
//          compute = the context table at (b, isl = n_eq), where n_eq (n_eq + 1) / 2 =
//                    s c + s (s + 1) / 2: the causal prefill that scores as many (query, key)
//                    pairs as the verification does (s rows over c cached keys plus a causal
//                    block of s). The tree mask scores no more pairs than the causal block, so
//                    this is an upper bound of the masked kernel's work.
//   Both terms grow with s and with c, so attention does too; at c = 0, n_eq = s and the compute
//   term is the context table's own row.
//   s > 1 with a tree_attention.csv (calibrate --kernels writes one) that holds the model's heads
//          and s inside its measured s range: that table at (b, s, kv_len = c + s), measured
//          under a tree mask; outside its s range, or without the table, the bound above.
//
// The elementwise kernels (norms, q/k norms, RoPE, SiLU-mul, residual adds, the KV-cache write,
// embedding gather, final norm) come from the folder's elementwise.csv where it measured the op at
// the model's width (ElementwiseTable; `calibrate --kernels` writes one); the rest, and every one
// in folders without it (aiconfigurator's), are priced as memory-bound kernels: each costs
// max(floor, bytes / bandwidth), where floor = the smallest GEMM time in the table (a
// launch-bound kernel on that GPU in that engine) and bandwidth = the best DRAM bandwidth the
// table's memory-bound GEMMs achieve (GemmTable::stream_bandwidth), capped at the GPU's peak. Per
// layer: two fused add + RMSNorm kernels (4 m h bytes-of-element each), q/k RMSNorm for qwen3-style
// models, RoPE on q and k, the KV-cache store, and SiLU-mul (3 m ffn / tp elements; GELU: 2).
//
// Mixture-of-experts targets (ModelSpec::is_moe), from the folder's moe.csv and allreduce.csv:
//   T = embedding + L x [QKV + O GEMMs + attention (as above)]
//       + (L - L_d) x [router GEMM (m, E, h) + MoE block(m) + shared-expert GEMMs
//                      (m, 2 h_sh / tp, h) and (m, h, h_sh / tp)]
//       + L_d x [dense gate/up (m, 2 h_d / tp, h) + down (m, h, h_d / tp)]   (first_k_dense)
//       + elementwise + final norm + LM head + all-reduces
//   MoE block(m) = moe.csv at num_tokens = m for the shape (hidden, expert width, top-k, experts),
//   the expert shard (moe_tp_size = tp / moe_ep, moe_ep_size = moe_ep), moe_dtype and routing
//   distribution (MoeCompose below), linear in tokens between measured counts. The block holds
//   the routing, the grouped expert GEMMs, their activation and the combine: the routed experts'
//   activation is not priced again. The router GEMM is replicated on every GPU.
//   A shape the table does not hold is priced from the nearest measured shape of the same
//   moe_dtype, shard and distribution (distance: the sum of |log ratio| of hidden, expert width,
//   top-k and experts), scaled at each token count by
//     f x bytes(target) / bytes(ref) + (1 - f) x flops(target) / flops(ref),
//   bytes = expected distinct experts per GPU x 3 h h_e / moe_tp x bytes per weight (uniform
//   routing), flops = 2 x 3 m k h h_e / (moe_tp moe_ep), and f = the reference shape's
//   memory-bound share, bytes / DRAM peak over (bytes / DRAM peak + flops / FLOP peak), on the
//   GPU; the profile's provenance and notes name the reference shape and the rule.
//   All-reduces at tp > 1 (dense and MoE): two per layer of [m x h] elements, from allreduce.csv
//   (its CUDA-graph variant) when it holds tp GPUs, else the roofline's ring all-reduce.
// Sampling and the host's scheduling are priced by the step model (costmodel/step/step_model.h).
// ComposeOptions::unmeasured_terms = false leaves them out (GEMM + attention + LM head only, as
// aiconfigurator sums a forward).
#ifndef SPECPLAN_COSTMODEL_COMPOSE_H_
#define SPECPLAN_COSTMODEL_COMPOSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/profile.h"

namespace specplan::costmodel {

// Seconds of one pass, by part.
struct ComposedPass {
  double gemm_s = 0;         // the L layers' four GEMMs
  double attention_s = 0;    // the L layers' attention
  double lm_head_s = 0;      // the LM head GEMM
  double elementwise_s = 0;  // norms, RoPE, activation, adds, KV write, embedding, final norm
  double comm_s = 0;         // all-reduces at tp > 1 (allreduce.csv, else the roofline's)
  double moe_s = 0;          // the MoE layers' MoE blocks (moe.csv); 0 for a dense model
  bool extrapolated = false;
  std::string why;  // the first lookup past the measured grid, when extrapolated
  // GEMM, attention and MoE tables.
  double measured_s() const { return gemm_s + attention_s + lm_head_s + moe_s; }
  double total_s() const { return measured_s() + elementwise_s + comm_s; }
};

// How a MoE target's MoE block is read from moe.csv.
struct MoeCompose {
  // moe.csv's moe_dtype; "" = the model's own expert format: w4a16_mxfp4 for gpt_oss (its
  // released MXFP4 experts), else the tables' dtype ("bfloat16" for bf16, "fp8" for fp8).
  std::string dtype;
  // GPUs the experts are split over (moe_ep_size) within the tp group; each expert's width is split
  // over tp / moe_ep (moe_tp_size). 1 = the engines' default tensor-parallel experts.
  int64_t ep = 1;
  // moe.csv's distribution. Default balanced: the measurement that assumes nothing about the
  // deployment's traffic, and the one with the most distinct experts per token count, so the MoE
  // tax it prices is an upper bound of the skewed ones (power_law_1.01, power_law_1.2).
  std::string distribution = "balanced";
};
// The moe_dtype MoeCompose::dtype = "" resolves to for `model` with tables of `table_dtype`.
std::string DefaultMoeDtype(const ModelSpec& model, DType table_dtype);

struct ComposeOptions {
  std::string engine;              // "" = from the folder name ("sglang-0.5.14" -> "sglang")
  int64_t tp = 1;                  // tensor parallelism
  DType dtype = DType::kBFloat16;  // must be the tables' dtype (EngineKernelTables::dtype)
  std::string gpu;                 // registry name or JSON spec path; "" = from the tables' device
  bool unmeasured_terms = true;
  bool allow_extrapolation = true;  // false: a grid cell past the measured tables is an error
  // Output grids (strictly increasing; empty = the defaults below).
  std::vector<int64_t> b_grid;  // >= 1, starting at 1
  std::vector<int64_t> s_grid;  // >= 1
  std::vector<int64_t> c_grid;  // >= 0
  // Drafter architectures to compose beside the target (costmodel/step/drafter_arch.h names);
  // empty = DefaultComposedDrafters(target); {"none"} = none.
  std::vector<std::string> drafters;
  MoeCompose moe;  // MoE targets only
};
const std::vector<int64_t>& DefaultComposeBGrid();  // 1 .. 256
const std::vector<int64_t>& DefaultComposeSGrid();  // 1 .. 256
const std::vector<int64_t>& DefaultComposeCGrid();  // 0 .. 32768

// The GPU the tables were measured on: the registry entry whose name the device string carries
// ("NVIDIA H100 80GB HBM3" -> h100-sxm, "NVIDIA A100-SXM4-80GB" -> a100-80g, "NVIDIA L40S" ->
// l40s, ...), else the registry name of the folder ("h200_sxm" -> h200), else a spec derived from
// the GEMM table (its best achieved FLOP/s and DRAM bandwidth; memory size from "<N>GB" in the
// device string), named after the folder. NOT_FOUND when none of these works.
absl::StatusOr<GpuSpec> GpuForKernelTables(const EngineKernelTables& tables);

class ComposedCost {
 public:
  // Checks that tp splits the model, dtype is the tables', and both attention tables hold its
  // per-GPU heads; for a MoE model, that the folder has a moe.csv holding the block's moe_dtype,
  // shard and distribution (the exact shape, or a nearest one to scale); errors name the field
  // and value.
  static absl::StatusOr<ComposedCost> Create(const EngineKernelTables* tables, ModelSpec model,
                                             GpuSpec gpu, bool unmeasured_terms,
                                             const MoeCompose& moe = {});
  // b, s >= 1, c >= 0.
  absl::StatusOr<ComposedPass> Pass(int64_t b, int64_t s, int64_t c) const;
  // One layer's attention (seconds) and whether it left the measured grid.
  absl::StatusOr<AttentionLookup> Attention(int64_t b, int64_t s, int64_t c) const;
  // The price of one memory-bound kernel that moves `bytes`: max(launch floor, bytes / bandwidth).
  double ElementwiseSeconds(double bytes) const;
  // One elementwise kernel `op` (ElementwiseTable::OpNames) over m tokens: the elementwise
  // table's time where it holds (op, ElementwiseWidth(model, op)), else ElementwiseSeconds(bytes).
  double Elementwise(const std::string& op, int64_t m, double bytes) const;
  // Bytes/s the unmeasured kernels stream at: GemmTable::stream_bandwidth capped at the GPU's
  // DRAM peak (the GPU's peak when the table has no memory-bound row to read it from).
  double bandwidth() const { return bandwidth_; }
  const ModelSpec& model() const { return model_; }
  const GpuSpec& gpu() const { return gpu_; }
  const EngineKernelTables& tables() const { return *tables_; }
  // MoE models: the shape the model needs and the measured one its block is read from (the
  // same when the table holds it), and one MoE block of one layer at `tokens`.
  const MoeShape& moe_shape() const { return moe_shape_; }
  const MoeShape& moe_reference() const { return moe_ref_; }
  bool moe_scaled() const { return !(moe_shape_ == moe_ref_); }
  absl::StatusOr<AttentionLookup> MoeBlock(double tokens) const;
  // The scale MoeBlock applies to the reference shape's time at `tokens` (1 when not scaled).
  double MoeScale(double tokens) const;
  // Two all-reduces per layer of [tokens x hidden] at tp > 1 (0 at tp = 1); `measured` says
  // whether allreduce.csv priced them.
  absl::StatusOr<AttentionLookup> AllReduces(double tokens, bool* measured) const;

 private:
  absl::StatusOr<ComposedPass> MoePass(int64_t b, int64_t s, int64_t c) const;
  // The elementwise kernels every layer runs over m tokens whatever its FFN (two add + RMSNorm,
  // q/k norm, RoPE, KV store), seconds, and one add + RMSNorm (*add_norm_s, for the final one).
  double AttentionElementwise(int64_t m, int64_t q_width, int64_t kv_width,
                              double* add_norm_s) const;
  // p's comm_s from AllReduces at m tokens when tp > 1, its extrapolation noted on p.
  absl::Status AddAllReduces(int64_t m, ComposedPass* p) const;
  ComposedCost(const EngineKernelTables* tables, ModelSpec model, GpuSpec gpu, bool unmeasured)
      : tables_(tables), model_(std::move(model)), gpu_(std::move(gpu)), unmeasured_(unmeasured) {}
  const EngineKernelTables* tables_;
  ModelSpec model_;
  GpuSpec gpu_;
  bool unmeasured_;
  AttentionHeads heads_;
  double bandwidth_ = 0;
  MoeShape moe_shape_, moe_ref_;
};

// Composes the profile of `model` (registry name or HF config.json path) on the tables' GPU,
// with the drafters of options.drafters (ComposeDrafterTable) under Profile::drafters:
// default_model "table" over the options' grids (b = 1 is the table's single-sequence layer),
// engine and engine_version from the options or the folder, provenance naming the data's source,
// commit, engine, version and GPU, and notes stating the attention model, how the unmeasured
// terms are priced and what they add at (b, s, c) = (1, 1, 1024), the licence of the data and
// how many cells were extrapolated. Errors name the flag or field and value; nothing is written.
// One drafter forward (costmodel/step/drafter_arch.h) priced from the same tables. `layers` is
// the ComposedCost of arch.layers (the drafter's decoder layers, hidden width and LM head); the
// forward is layers.Pass(b, s, c) with its first QKV GEMM reading arch.qkv_in instead of the
// hidden width, plus the fc GEMM (m, hidden, fc_in) where the forward runs it: every forward for
// eagle and mtp, the extend forward (s > 1, over tokens the target verified) for eagle3.
absl::StatusOr<ComposedPass> ComposedDrafterPass(const ComposedCost& layers,
                                                 const DrafterArch& arch, int64_t b, int64_t s,
                                                 int64_t c);

// The drafter grids: b = 1, 2, 4, .. 2048 (trees draft b x topk beams), s = 1 .. 32 (extend
// forwards cover K + 1 verified tokens; block drafters draft gamma), c = the target's.
const std::vector<int64_t>& DrafterComposeBGrid();
const std::vector<int64_t>& DrafterComposeSGrid();

// `arch`'s forward table on the tables' GPU (cells as ComposedDrafterPass) over the drafter
// grids and the options' c grid. Cells past the measured tables are counted in *extrapolated.
absl::StatusOr<DrafterProfile> ComposeDrafterTable(const EngineKernelTables& tables,
                                                   const DrafterArch& arch, const GpuSpec& gpu,
                                                   const ComposeOptions& options,
                                                   int64_t* extrapolated);

absl::StatusOr<Profile> ComposeProfile(const EngineKernelTables& tables, const std::string& model,
                                       const ComposeOptions& options);
// The same for a model already resolved (a runtime built-in such as "tiny", which the registry
// does not hold); spec.dtype and spec.tp are taken from the options as above.
absl::StatusOr<Profile> ComposeProfile(const EngineKernelTables& tables, ModelSpec spec,
                                       const ComposeOptions& options);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_COMPOSE_H_
