// Per-kernel timings an inference engine's kernels took on one GPU, in the layout of
// ai-dynamo/aiconfigurator's tables exported to CSV (data/kernels/README.md): one folder per
// (GPU, engine version), e.g. h100_sxm/sglang-0.5.14/, holding
//   gemm.csv                  kernel_source,m,n,k,latency_ms
//                             one dense [m x k] x [k x n] GEMM, m = tokens of the whole pass
//   context_attention.csv     kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,
//                             latency_ms: causal attention of batch_size sequences of isl new
//                             tokens each, no cached prefix, one layer
//   generation_attention.csv  kernel_source,batch_size,kv_len,num_heads,num_key_value_heads,
//                             head_dim,latency_ms: one query token per sequence over kv_len keys
//   tree_attention.csv        (optional; written by `calibrate --kernels`, no public table holds
//                             it) kernel_source,batch_size,s,kv_len,num_heads,num_key_value_heads,
//                             head_dim,latency_ms: s new tokens per sequence under a tree mask
//                             over kv_len keys (the c cached ones plus the s new ones, kv_len =
//                             c + s), one layer
//   elementwise.csv           (optional; written by `calibrate --kernels`) kernel_source,op,m,
//                             width,latency_ms: the memory-bound kernels between the GEMMs and
//                             attention, one call over m tokens (ElementwiseTable below)
//   moe.csv                   (optional) kernel_source,moe_dtype,num_tokens,hidden_size,
//                             inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,
//                             latency_ms: one whole MoE block of one layer (routing, grouped
//                             expert GEMMs, combine) over num_tokens tokens, on one GPU holding a
//                             moe_tp_size x moe_ep_size shard (MoeTable below)
//   allreduce.csv             (optional) kernel_source,dtype,num_gpus,message_size,latency_ms:
//                             the engine's custom all-reduce of message_size elements over
//                             num_gpus GPUs (AllReduceTable below)
//   SOURCE.txt                (optional) which source files and rows, "device <name>" and
//                             "dtype <fp32|bf16|...>" (absent: bf16)
// The tables are read as measured, except that a shape measured more than once keeps the mean of
// its times (repeats()), and that along the token axis (m for GEMMs, isl or kv_len
// for attention) each series is made non-decreasing by isotonic regression (more tokens never
// cost less; the dips are measurement noise; max_change() says how much a point moved). Lookups
// interpolate between measured points (linear in each axis: kernel time is close to affine in
// tokens, widths and cache length) and report when they had to go past the largest measured point
// (AttentionLookup::extrapolated).
#ifndef SPECPLAN_COSTMODEL_KERNEL_TABLES_H_
#define SPECPLAN_COSTMODEL_KERNEL_TABLES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/hardware/model_spec.h"

namespace specplan::costmodel {

// GEMM latencies by (m, n, k). Seconds(m, n, k):
//   - (n, k) on the measured widths: linear in m between the measured m of that (n, k); below
//     the smallest measured m, the smallest m's time; above the largest, the pass split into
//     row blocks of the largest m (a GEMM is separable in m);
//   - n or k between measured widths: bilinear between the four surrounding (n, k) pairs;
//   - n or k above the largest measured width: split into blocks of that width (separable in n;
//     in k the partial products add, and the reduction is not priced).
class GemmTable {
 public:
  // `source` names the file in errors ("<source>:<line>: ...").
  static absl::StatusOr<GemmTable> Parse(const std::string& csv_text, const std::string& source);

  // Seconds of one GEMM; m, n, k >= 1. NOT_FOUND naming the (n, k) pair when a pair needed for
  // the interpolation was not measured.
  absl::StatusOr<double> Seconds(int64_t m, int64_t n, int64_t k) const;

  // Every measured shape with its time as the table reads it (repeats averaged, isotonic in m),
  // ordered by (n, k, m).
  struct Point {
    int64_t m = 0, n = 0, k = 0;
    double seconds = 0;
  };
  std::vector<Point> Points() const;

  // The smallest measured latency (seconds): what a launch-bound kernel costs on this GPU in
  // this engine.
  double floor_s() const { return floor_s_; }
  // The best achieved DRAM bandwidth (bytes/s) among memory-bound rows (m <= 16) whose weight
  // matrix (n x k x 2 bytes) is at least 256 MiB, so it cannot sit in the L2 cache; 0 when the
  // table has no such row.
  double stream_bandwidth() const { return stream_bw_; }
  // The best achieved FLOP/s of any row.
  double peak_flops() const { return peak_flops_; }
  size_t rows() const { return rows_; }
  const std::vector<std::string>& kernel_sources() const { return kernel_sources_; }
  // The largest relative change the isotonic fit along m made to a point (0.05 = 5 %).
  double max_change() const { return max_change_; }
  // Rows that repeated a shape measured before (averaged into it).
  size_t repeats() const { return repeats_; }

 private:
  absl::StatusOr<double> AtPair(int64_t m, int64_t n, int64_t k) const;  // (n, k) measured
  absl::StatusOr<double> OnGrid(int64_t m, int64_t n, int64_t k) const;  // n, k <= largest

  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, double>>> by_nk_;
  std::vector<int64_t> n_grid_, k_grid_;
  double floor_s_ = 0, stream_bw_ = 0, peak_flops_ = 0, max_change_ = 0;
  size_t repeats_ = 0;
  size_t rows_ = 0;
  std::vector<std::string> kernel_sources_;
};

// Attention heads of one layer on one GPU (tensor-parallel shards hold fewer heads).
struct AttentionHeads {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  bool operator<(const AttentionHeads& o) const;
  std::string ToString() const;  // "32/8/128" (heads / kv heads / head_dim)
};

struct AttentionLookup {
  double seconds = 0;
  bool extrapolated = false;  // past the largest measured length or batch size
  std::string why;            // when extrapolated: which table, which point, which bound
};

// Attention latencies by (heads, batch_size, length), length = kv_len (generation) or isl
// (context). Seconds(heads, b, x): for each measured batch size around b, linear in x between
// that batch size's measured lengths (below the smallest, the smallest's time; above the
// largest, the line through the last two points, marked extrapolated); then linear in b
// between the two batch sizes (above the largest measured b: proportional to b, marked
// extrapolated; below the smallest: the smallest's time).
class AttentionTable {
 public:
  // `length_column` is "kv_len" or "isl".
  static absl::StatusOr<AttentionTable> Parse(const std::string& csv_text,
                                              const std::string& source,
                                              const std::string& length_column);
  bool Holds(const AttentionHeads& heads) const { return by_heads_.count(heads) != 0; }
  std::vector<AttentionHeads> HeadConfigs() const;
  // NOT_FOUND naming the head configuration when the table does not hold it. b >= 1, x >= 1.
  absl::StatusOr<AttentionLookup> Seconds(const AttentionHeads& heads, double b, double x) const;
  // Every measured (heads, batch size, length) with its time as the table reads it (repeats
  // averaged, isotonic in the length), ordered by heads, batch size and length.
  struct MeasuredPoint {
    AttentionHeads heads;
    int64_t b = 0, x = 0;
    double seconds = 0;
  };
  std::vector<MeasuredPoint> Points() const;
  const std::string& length_column() const { return length_column_; }
  const std::string& source() const { return source_; }
  const std::vector<std::string>& kernel_sources() const { return kernel_sources_; }
  // The largest relative change the isotonic fit along the length made to a point.
  double max_change() const { return max_change_; }
  // Rows that repeated a shape measured before (averaged into it).
  size_t repeats() const { return repeats_; }

 private:
  friend class TreeAttentionTable;
  struct Point {
    AttentionHeads heads;
    int64_t b = 0, x = 0;
    double seconds = 0;
  };
  static AttentionTable Build(const std::string& source, const std::string& length_column,
                              const std::vector<Point>& points,
                              std::vector<std::string> kernel_sources);
  AttentionLookup AtBatch(const std::vector<std::pair<int64_t, double>>& points, double x,
                          int64_t b) const;
  std::string source_, length_column_;
  // heads -> batch size -> (length, seconds) ascending
  std::map<AttentionHeads, std::map<int64_t, std::vector<std::pair<int64_t, double>>>> by_heads_;
  std::vector<std::string> kernel_sources_;
  double max_change_ = 0;
  size_t repeats_ = 0;
};

// Tree-verification attention by (heads, batch_size, s, kv_len): one AttentionTable along kv_len
// per measured s. Seconds(heads, b, s, kv_len) with s inside [min_s(), max_s()]: each measured s
// around s read as AttentionTable::Seconds(heads, b, kv_len), then linear in s between the two.
class TreeAttentionTable {
 public:
  static absl::StatusOr<TreeAttentionTable> Parse(const std::string& csv_text,
                                                  const std::string& source);
  // Every measured s holds these heads.
  bool Holds(const AttentionHeads& heads) const;
  int64_t min_s() const { return by_s_.begin()->first; }
  int64_t max_s() const { return by_s_.rbegin()->first; }
  // NOT_FOUND when the heads are not held; OUT_OF_RANGE when s is outside [min_s, max_s].
  absl::StatusOr<AttentionLookup> Seconds(const AttentionHeads& heads, double b, int64_t s,
                                          double kv_len) const;
  const std::string& source() const { return source_; }
  const std::vector<std::string>& kernel_sources() const { return kernel_sources_; }
  double max_change() const;  // over the per-s tables
  size_t repeats() const;

 private:
  std::string source_;
  std::map<int64_t, AttentionTable> by_s_;  // s -> the table along kv_len
  std::vector<std::string> kernel_sources_;
};

// The memory-bound kernels of a layer by (op, width), along m tokens. The ops, with the width
// each is timed at (per GPU):
//   add_norm   residual add + the layer's norm over [m, hidden]            width = hidden
//   qk_norm    q and k RMSNorm per head (qwen3-style models)              width = (q + kv heads) d
//   rope       rotary embedding of q and k                                width = (q + kv heads) d
//   kv_store   k and v written into the KV cache                          width = 2 kv heads d
//   act_mul    the MLP's activation (times up for gated MLPs) over [m, ffn] width = ffn
//   embedding  gather of m rows of the embedding matrix                   width = hidden
// Seconds(op, m, width) on a measured (op, width): linear in m between the measured m; below the
// smallest, the smallest's time; above the largest, the line through the last two points. Series
// are read as their isotonic fit along m, as the other tables.
class ElementwiseTable {
 public:
  // The op names above, in that order.
  static const std::vector<std::string>& OpNames();
  // Errors name the file, line and the bad field (an unknown op lists the known ones).
  static absl::StatusOr<ElementwiseTable> Parse(const std::string& csv_text,
                                                const std::string& source);
  // Seconds of one call; nullopt when (op, width) was not measured. m >= 1.
  std::optional<double> Seconds(const std::string& op, int64_t m, int64_t width) const;
  const std::string& source() const { return source_; }
  const std::vector<std::string>& kernel_sources() const { return kernel_sources_; }
  double max_change() const { return max_change_; }

 private:
  std::string source_;
  std::map<std::pair<std::string, int64_t>, std::vector<std::pair<int64_t, double>>> by_op_;
  std::vector<std::string> kernel_sources_;
  double max_change_ = 0;
};

// One measured MoE block configuration: moe.csv's columns other than num_tokens and latency.
struct MoeShape {
  std::string dtype;    // moe_dtype as the table writes it: bfloat16, fp8, fp8_block, w4a16_mxfp4
  int64_t hidden = 0;   // hidden_size
  int64_t inter = 0;    // inter_size: one routed expert's intermediate width (whole, not per GPU)
  int64_t topk = 0;     // experts per token
  int64_t experts = 0;  // num_experts (routed)
  int64_t moe_tp = 1;   // moe_tp_size: each expert's width split over this many GPUs
  int64_t moe_ep = 1;   // moe_ep_size: the experts split over this many GPUs
  std::string distribution;  // balanced, power_law_1.01, power_law_1.2 (how tokens were routed)
  bool operator<(const MoeShape& o) const;
  bool operator==(const MoeShape& o) const { return !(*this < o) && !(o < *this); }
  // "bfloat16 2048/768 128x8 tp1 ep1 balanced"
  std::string ToString() const;
};

// MoE block latencies by shape, along num_tokens (tokens of the whole pass). Each shape's series
// is sorted by num_tokens (the source files list them in any order), a token count measured
// more than once keeps the mean of its times (repeats()) unless the times disagree by more than
// kMoeRepeatTolerance (then Parse refuses the row: two measurements of one point that far apart
// cannot both be interpolated through), and the series is read as its isotonic fit along
// num_tokens as the other tables. Seconds(shape, tokens): linear between the measured token
// counts; below the smallest, the smallest's time; above the largest, the line through the last
// two points (extrapolated).
class MoeTable {
 public:
  // The largest ratio between two times of one (shape, num_tokens) that Parse averages; the
  // public tables' repeats (a100_sxm/sglang-0.5.10) agree within 1.6x.
  static constexpr double kMoeRepeatTolerance = 2.0;
  // Errors name the file, line and field: a missing column, a latency that is not a finite
  // number > 0, a size that is not an integer >= 1, or a conflicting repeat of a token count.
  static absl::StatusOr<MoeTable> Parse(const std::string& csv_text, const std::string& source);
  // A table of the given series (seconds, any order; repeats averaged, isotonic), for tests and
  // the leave-one-out check.
  static MoeTable FromSeries(const std::string& source,
                             std::map<MoeShape, std::vector<std::pair<int64_t, double>>> series);
  bool Holds(const MoeShape& shape) const { return by_shape_.count(shape) != 0; }
  std::vector<MoeShape> Shapes() const;
  // The series of a held shape as the table reads it: (num_tokens, seconds) ascending.
  const std::vector<std::pair<int64_t, double>>& Series(const MoeShape& shape) const;
  // NOT_FOUND naming the shape when it is not held. tokens >= 1.
  absl::StatusOr<AttentionLookup> Seconds(const MoeShape& shape, double tokens) const;
  // The kernel_source of a held shape's rows ("" when the file has no such column).
  std::string KernelSource(const MoeShape& shape) const;
  const std::string& source() const { return source_; }
  const std::vector<std::string>& kernel_sources() const { return kernel_sources_; }
  double max_change() const { return max_change_; }
  size_t repeats() const { return repeats_; }

 private:
  std::string source_;
  std::map<MoeShape, std::vector<std::pair<int64_t, double>>> by_shape_;
  std::map<MoeShape, std::string> kernel_of_;
  std::vector<std::string> kernel_sources_;
  double max_change_ = 0;
  size_t repeats_ = 0;
};

// The engine's custom all-reduce by number of GPUs, along message_size (elements; a
// [tokens x hidden] tensor has tokens * hidden). Where a kernel_source's name contains "graph"
// (SGLang's and vLLM's CUDA-graph variants beside their eager ones), only those rows are read:
// the composer assumes CUDA-graph replay. Seconds(gpus, elements) on a measured GPU count:
// linear between measured sizes; below the smallest, the smallest's time; above the largest, the
// line through the last two points (extrapolated). Series are isotonic along the size.
class AllReduceTable {
 public:
  static absl::StatusOr<AllReduceTable> Parse(const std::string& csv_text,
                                              const std::string& source);
  bool Holds(int64_t gpus) const { return by_gpus_.count(gpus) != 0; }
  std::vector<int64_t> GpuCounts() const;
  // NOT_FOUND naming the GPU count (and the held ones) when it was not measured.
  absl::StatusOr<AttentionLookup> Seconds(int64_t gpus, double elements) const;
  const std::string& source() const { return source_; }
  // The kernel sources of the rows read (the graph variants where there are any).
  const std::vector<std::string>& kernel_sources() const { return kernel_sources_; }

 private:
  std::string source_;
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> by_gpus_;
  std::vector<std::string> kernel_sources_;
};

// The width (per GPU, as above) at which `model`'s op is timed by `calibrate --kernels` and read
// by the composer; 0 when the model has no such op (qk_norm outside qwen3-style models).
int64_t ElementwiseWidth(const ModelSpec& model, const std::string& op);

// One engine folder, e.g. .../h100_sxm/sglang-0.5.14.
struct EngineKernelTables {
  std::string dir;
  std::string gpu_folder;      // the parent folder's name, e.g. "h100_sxm"
  std::string engine;          // from the folder name: "sglang", "vllm", "trtllm" ("" if unknown)
  std::string engine_version;  // "0.5.14"
  std::string device;          // "NVIDIA H100 80GB HBM3" from SOURCE.txt ("" when absent)
  std::string source;          // repository and commit of the data ("" when not recorded)
  std::string licence;         // licence of the data ("" when not recorded)
  DType dtype = DType::kBFloat16;  // "dtype NAME" in SOURCE.txt; bf16 when absent
  GemmTable gemm;
  AttentionTable context;
  AttentionTable generation;
  std::optional<TreeAttentionTable> tree;       // tree_attention.csv when present
  std::optional<ElementwiseTable> elementwise;  // elementwise.csv when present
  std::optional<MoeTable> moe;                  // moe.csv when present
  std::optional<AllReduceTable> allreduce;      // allreduce.csv when present
};

// Reads the three tables of `dir` (every one required; errors name the file, line and column),
// tree_attention.csv, elementwise.csv, moe.csv, allreduce.csv and SOURCE.txt when present, and the
// data's source and licence from the first README.md or NOTICE found in dir, its parent or its
// grandparent (a line "Source: `owner/repo`, commit <sha>" and a licence named as "(<Name> License
// <version>", as data/kernels/README.md has them).
absl::StatusOr<EngineKernelTables> LoadEngineKernelTables(const std::string& dir);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_KERNEL_TABLES_H_
