// `calibrate --kernels` (the default mode): times LibTorch's own kernels on this machine's device
// at the shapes a target model (and the drafters composed beside it) needs, writes them as kernel
// tables in data/kernels/'s layout, and composes the profile from them with the same composer
// that composes the engine-grade profiles (costmodel/compose/compose.h). A calibrated profile and a
// shipped one differ only in whose measurements they read.
//
// Tables, in <kernels dir>/<gpu folder>/specplan-libtorch<version>/ (gpu folder: the registry
// name with '_' for '-', e.g. cpu, h100_sxm), latencies in ms of one call, median of the repeats:
//   gemm.csv                  kernel_source,m,n,k,latency_ms,min_ms,max_ms,repeats
//                             at::linear of [m x k] by [n x k]^T: QKV, O, gate/up, down and LM head
//                             at the fused widths engines run, and the drafters' extra widths
//   generation_attention.csv  kernel_source,batch_size,kv_len,num_heads,num_key_value_heads,
//                             head_dim,latency_ms,min_ms,max_ms,repeats: one query over kv_len keys
//   context_attention.csv     kernel_source,batch_size,isl,...: isl new tokens, causal, no cache
//   tree_attention.csv        kernel_source,batch_size,s,kv_len,...: s new tokens under a random
//                             tree mask over kv_len = c + s keys (the c cached ones all visible)
//   elementwise.csv           kernel_source,op,m,width,latency_ms,min_ms,max_ms,repeats: the
//                             memory-bound kernels of a layer over m tokens, timed as the runtime
//                             computes them (runtime/layer_ops.h: RMSNorm, rotary, activation;
//                             the residual add, the KV-cache copy, the embedding gather), op and
//                             width as costmodel::ElementwiseTable names them
//   SOURCE.txt                device, dtype, LibTorch version, timer, repeats, and the tables done
// The trailing min_ms, max_ms and repeats columns record the spread; the composer reads the
// columns aiconfigurator's tables have and ignores the rest.
//
// Attention runs the runtime's plain path (QK^T by matmul over the GQA-folded query rows, an
// additive mask, softmax in fp32, PV) unless LibTorch has at::scaled_dot_product_attention with
// native GQA (>= 2.5), which then runs with the mask (kernel_source says which).
//
// The elementwise table times LibTorch's composition of each op (an RMSNorm is several kernels),
// which is what specplan's runtime runs; an engine's fused kernels cost less on a GPU. Ops at
// widths the table lacks (a drafter's other widths) are priced from the GEMM table's launch floor
// and bandwidth, as for the engine tables.
#ifndef SPECPLAN_PROFILER_KERNEL_BENCH_H_
#define SPECPLAN_PROFILER_KERNEL_BENCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/model_spec.h"
#include "profiler/calibration.h"

namespace specplan::profiler {

// One GEMM width pair and what reads it ("qkv", "lm_head", "eagle3.qkv", ...).
struct GemmShape {
  int64_t n = 0, k = 0;
  std::string what;
};

// The points to time. Every list is sorted and distinct.
struct KernelGrid {
  std::vector<GemmShape> gemm_shapes;  // distinct (n, k)
  std::vector<int64_t> gemm_m;         // tokens of the pass
  std::vector<costmodel::AttentionHeads> heads;
  std::vector<int64_t> batch;   // attention batch sizes
  std::vector<int64_t> kv_len;  // generation
  std::vector<int64_t> isl;     // context
  std::vector<int64_t> tree_s;  // s > 1
  std::vector<int64_t> tree_c;  // cached tokens (kv_len = c + s)
  // Elementwise ops (costmodel::ElementwiseTable::OpNames; qk_norm only for qwen3-style models)
  // and their widths, timed at every gemm m.
  std::vector<std::pair<std::string, int64_t>> elementwise;
  int64_t gemm_points() const;  // |shapes| x |m|
  int64_t generation_points() const;
  int64_t context_points() const;
  int64_t tree_points() const;
  int64_t elementwise_points() const;  // |elementwise| x |m|
  int64_t points() const;
};

// The profile's output grids the kernel grid is derived from.
struct ProfileGrids {
  std::vector<int64_t> b, s, c;  // b starts at 1; s >= 1; c >= 0
};
// Defaults for kernels mode: CPU b 1,2,4,8,16, s and c as DefaultSGrid/DefaultCGrid(false);
// CUDA b 1 .. 64, s 1 .. 256, c 0 .. 4096.
ProfileGrids DefaultKernelProfileGrids(bool cuda);

// The grid for `target` (and the drafters `drafters`, costmodel/step/drafter_arch.h names) over
// the profile grids, thinned `coarsen` times (each thinning keeps every other point of each
// axis, and always the first and last).
//   gemm m:  1, 2, 3, 4, 6, 8, 12, ... (2^k and 3 2^(k-1)) and every b s, up to max b x max s
//   batch:   the b grid;  kv_len: c + 1 for each c, and max c + max s
//   isl:     the s grid and powers of two up to the isl whose causal block scores as many pairs as
//            max s tokens over max c (the composer's bound for s outside the tree table)
//   tree:    s > 1 of the s grid, c of the c grid
//   elementwise: the target's ops at its widths, over the gemm m
absl::StatusOr<KernelGrid> KernelGridFor(const costmodel::ModelSpec& target,
                                         const std::vector<std::string>& drafters,
                                         const ProfileGrids& grids, int coarsen);

// The most memory one point of the grid holds at once (bytes), and which point.
struct GridMemory {
  double bytes = 0;
  std::string where;  // "tree_attention b=16 s=32 kv_len=288 heads=4/2/16"
};
GridMemory LargestPoint(const KernelGrid& grid, costmodel::DType dtype, bool fused_attention);

// One timed point: milliseconds of one call.
struct KernelTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int repeats = 0;
};

// CSV writers (the layout above). Rows in grid order.
struct GemmRow {
  int64_t m, n, k;
  KernelTiming t;
};
struct AttentionRow {
  int64_t b, s, x;  // x = kv_len (generation, tree) or isl (context); s = 1 except tree
  costmodel::AttentionHeads heads;
  KernelTiming t;
};
struct ElementwiseRow {
  std::string op;
  int64_t m, width;
  KernelTiming t;
};
std::string GemmCsv(const std::string& kernel_source, const std::vector<GemmRow>& rows);
std::string ElementwiseCsv(const std::string& kernel_source,
                           const std::vector<ElementwiseRow>& rows);
// table: "generation" | "context" | "tree".
std::string AttentionCsv(const std::string& table, const std::string& kernel_source,
                         const std::vector<AttentionRow>& rows);

// Runs kernels mode: checks every input (gpu, device, model, dtype, grids, memory) before any
// timing, times the five tables, writing each atomically as it completes, then composes and
// saves the profile (atomically). Errors, nothing timed: bad options (naming the flag), a
// device/--gpu mismatch without --force (FAILED_PRECONDITION), an unknown model
// (INVALID_ARGUMENT), a grid whose largest point does not fit the device's memory
// (RESOURCE_EXHAUSTED naming the point, the bytes and the memory). Interrupted (options.cancel
// returns true, e.g. after SIGINT): CANCELLED naming the tables finished; no profile is written.
absl::StatusOr<CalibrationResult> RunKernelCalibration(const CalibrateOptions& options);

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_KERNEL_BENCH_H_
