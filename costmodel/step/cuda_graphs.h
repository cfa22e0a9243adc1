// CUDA-graph buckets: engines capture their decode and verification passes as CUDA graphs at a
// ladder of sizes, pad a pass up to the smallest captured size that holds it, and run a pass
// above the largest one without graphs (eagerly). The verify pass's cost is therefore a
// staircase in the batch, and above the ladder it pays the host's kernel launches.
//
// The ladders, each the engine's own default (and each overridable as the engine names it):
//   vLLM (GraphLadder::kVllmTokens; vllm/config/vllm.py VllmConfig._set_cudagraph_sizes and
//        vllm/config/compilation.py adjust_cudagraph_sizes_for_spec_decode) captures token
//        counts: 1, 2, 4, then every 8 up to 248, then every 16 from 256 up to
//        max_cudagraph_capture_size, which defaults to min(max_num_seqs x (1 + K) x 2, 512) and is
//        capped by max_num_batched_tokens. With K speculative tokens each size is rounded up to a
//        multiple of 1 + K (a uniform decode batch holds 1 + K tokens per request), sizes above
//        the maximum dropped, for the full decode graphs; a mixed prefill-and-decode pass of
//        `tokens` runs the piecewise graph of the smallest raw size >= tokens.
//   SGLang (GraphLadder::kSglangBatch; python/sglang/srt/server_args.py
//        _generate_cuda_graph_batch_sizes, _handle_gpu_memory_settings) captures decode batch
//        sizes: with speculation 1..8, every 2 to 32, every 4 to 64, every 8 to 256, every 16 up
//        to cuda_graph_max_bs; without, 1, 2, 4, 8, 12, every 8 from 16 to 256, every 16 to 496,
//        every 32 from 512 up to cuda_graph_max_bs; cuda_graph_max_bs itself is appended. Its
//        default from the GPU's memory at tp < 4: 8 below 20 GiB, 24 below 35 GiB, 32 below
//        60 GiB, 256 from 60 GiB (H100, A100 80 GB, H200), 512 from 160 GiB. A decode batch of b
//        requests runs the smallest captured size >= b; other passes (extend, prefill) run
//        without decode graphs.
//
// Padding: the padded rows are dummy requests with no cached context (both engines fill their
// sequence lengths with 0 or 1), so a pass of b x (s, c) padded to b' is priced as
//   T(b, s, c) + T(b', s, 0) - T(b, s, 0)
// (the GEMMs at the padded rows, no attention over a context for them); a ragged vLLM pass of
// `tokens` padded to `tokens'` adds T(1 x (tokens', 0)) - T(1 x (tokens, 0)).
//
// The eager fallback (a pass above the largest size, or graphs turned off): the host launches
// every kernel, and the GPU runs them as they come, so the pass takes
//   max(T_graph, layers x launches_per_layer x eager_launch_s).
// Defaults and their provenance: eager_launch_s = 10 us of host time per launched op, measured on
// an H100 host for eager LibTorch (profiler/cuda_graph.h: a 36-layer forward of about 2,000 ops
// spent 21-40 ms eager against 10.7 ms of kernels) and in line with the engines' own eager
// dispatch in aiconfigurator's tables (data/kernels/h100_sxm/vllm-0.24.0/allreduce.csv: the
// custom all-reduce takes 20.6 us eager, two launches, against 4.3 us replayed from a graph, for
// messages up to 64K elements). launches_per_layer = 10, counted in vLLM's decoder layer for
// Llama and Qwen3 (two fused add + RMSNorm, the QKV GEMM, rotary (with Qwen3's q/k norms), the
// KV-cache write, attention, the O GEMM, the gate/up GEMM, SiLU x mul, the down GEMM). Both are
// flags: the fallback is the least certain term here, and on a fast GPU with a large model the
// GPU's time is above the launches' at the batch sizes that leave the ladder, so the term changes
// nothing there (docs/online.md shows where it does).
#ifndef SPECPLAN_COSTMODEL_STEP_CUDA_GRAPHS_H_
#define SPECPLAN_COSTMODEL_STEP_CUDA_GRAPHS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace specplan::costmodel {

enum class GraphLadder { kVllmTokens, kSglangBatch };

struct CudaGraphs {
  GraphLadder ladder = GraphLadder::kVllmTokens;
  // false: every pass runs eagerly (vLLM --enforce-eager, SGLang --disable-cuda-graph).
  bool enabled = true;
  // The captured sizes as given (vLLM cudagraph_capture_sizes in tokens, SGLang cuda_graph_bs in
  // requests), ascending; empty = the engine's default ladder up to max_size.
  std::vector<int64_t> sizes;
  // vLLM max_cudagraph_capture_size (0 = its default from max_num_seqs), SGLang cuda_graph_max_bs
  // (0 = its default from the GPU's memory).
  int64_t max_size = 0;
  int64_t max_num_seqs = 1024;            // vLLM: the default maximum's input
  int64_t max_num_batched_tokens = 8192;  // vLLM: caps the maximum
  bool speculative = true;                // SGLang: the speculative ladder
  double gpu_mem_bytes = 0;               // SGLang: cuda_graph_max_bs's default; 0 = unknown (160)
  double eager_launch_s = 10e-6;          // host seconds per launched op without graphs
  int launches_per_layer = 10;
};

// The engine's defaults: SGLang's ladder for "sglang", vLLM's for "vllm" and "" (the bare
// roofline); false for another engine (trtllm, specplan: their graphs are not modelled, passes
// are priced at their exact size).
bool DefaultCudaGraphs(const std::string& engine, double gpu_mem_bytes, CudaGraphs* out);

// Each size >= 1 and ascending, max_size >= 0, the vLLM limits >= 1, eager_launch_s in [0, 1e-3]
// seconds, launches_per_layer in [0, 1000]; INVALID_ARGUMENT naming the field and value
// ("cuda_graphs.sizes[2] = 0: must be in [1, 1048576]"); sizes and max_size go by the names a
// caller gives them (its request's own fields).
absl::Status ValidateCudaGraphs(const CudaGraphs& g,
                                absl::string_view sizes_field = "cuda_graphs.sizes",
                                absl::string_view max_field = "cuda_graphs.max_size");

// How a pass runs: graphed at `padded` (requests for a uniform decode batch, tokens for a ragged
// vLLM pass), or eagerly (padded = the pass's own size).
struct GraphPass {
  int64_t padded = 0;
  bool graphed = false;
};

// A ladder resolved once, answering without allocating (a step is priced on the planners' hot
// path).
class GraphBuckets {
 public:
  explicit GraphBuckets(const CudaGraphs& g);
  // The captured sizes a server with query length q (1 + K; 1 for plain decoding) holds, in the
  // ladder's unit (vLLM: tokens, multiples of q; SGLang: requests).
  std::vector<int64_t> CapturedSizes(int64_t q) const;
  // A uniform decode batch of b requests of q tokens each: padded in requests.
  GraphPass PadDecodeBatch(int64_t b, int64_t q) const;
  // A ragged pass of `tokens` (mixed prefill and decode) on a server of query length q: vLLM pads
  // its tokens to the raw ladder (piecewise graphs, not rounded to q) up to the server's maximum;
  // SGLang runs it without decode graphs.
  GraphPass PadRaggedPass(int64_t tokens, int64_t q) const;
  // Host seconds to launch one forward of `layers` layers eagerly.
  double EagerLaunchSeconds(int64_t layers) const;
  const CudaGraphs& config() const { return g_; }

 private:
  int64_t Max(int64_t q) const;  // vLLM: the largest captured token count for query length q
  // vLLM: the smallest captured size >= tokens for query length q.
  GraphPass VllmSmallest(int64_t tokens, int64_t q) const;
  CudaGraphs g_;
  std::vector<int64_t> base_;  // vLLM: the ladder before rounding; SGLang: the batch sizes
};

const char* GraphLadderName(GraphLadder l);  // "vllm", "sglang"

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_STEP_CUDA_GRAPHS_H_
