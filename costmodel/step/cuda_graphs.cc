#include "costmodel/step/cuda_graphs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace specplan::costmodel {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// SGLang's cuda_graph_max_bs at tp < 4 from the GPU's memory (server_args.py
// _handle_gpu_memory_settings); 160 when the memory is unknown.
int64_t SglangDefaultMaxBs(double gpu_mem_bytes) {
  if (!(gpu_mem_bytes > 0)) return 160;
  const double gib = gpu_mem_bytes / kGiB;
  if (gib < 20) return 8;
  if (gib < 35) return 24;
  if (gib < 60) return 32;
  if (gib < 160) return 256;
  return 512;
}

// v rounded up to a multiple of q (vLLM's adjust_cudagraph_sizes_for_spec_decode).
int64_t RoundUp(int64_t v, int64_t q) { return (v + q - 1) / q * q; }

void AddRange(int64_t from, int64_t to_inclusive, int64_t step, std::vector<int64_t>* out) {
  for (int64_t v = from; v <= to_inclusive; v += step) out->push_back(v);
}

std::vector<int64_t> SglangSizes(const CudaGraphs& g) {
  if (!g.sizes.empty()) return g.sizes;
  const int64_t max_bs = g.max_size > 0 ? g.max_size : SglangDefaultMaxBs(g.gpu_mem_bytes);
  std::vector<int64_t> s;
  if (g.speculative) {
    AddRange(1, 8, 1, &s);
    AddRange(10, 32, 2, &s);
    AddRange(40, 64, 4, &s);
    AddRange(72, 256, 8, &s);
    AddRange(272, max_bs, 16, &s);
  } else {
    s = {1, 2, 4, 8, 12};
    AddRange(16, 256, 8, &s);
    AddRange(272, 511, 16, &s);
    AddRange(512, max_bs, 32, &s);
  }
  s.erase(std::remove_if(s.begin(), s.end(), [&](int64_t v) { return v > max_bs; }), s.end());
  if (s.empty() || s.back() != max_bs) s.push_back(max_bs);
  return s;
}

}  // namespace

bool DefaultCudaGraphs(const std::string& engine, double gpu_mem_bytes, CudaGraphs* out) {
  CudaGraphs g;
  g.gpu_mem_bytes = gpu_mem_bytes;
  if (engine == "sglang") {
    g.ladder = GraphLadder::kSglangBatch;
  } else if (engine == "vllm" || engine.empty()) {
    g.ladder = GraphLadder::kVllmTokens;
  } else {
    return false;
  }
  *out = std::move(g);
  return true;
}

absl::Status ValidateCudaGraphs(const CudaGraphs& g, absl::string_view sizes_field,
                                absl::string_view max_field) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  for (size_t i = 0; i < g.sizes.size(); ++i) {
    if (g.sizes[i] < 1 || g.sizes[i] > (int64_t{1} << 20)) {
      return bad(
          absl::StrCat(sizes_field, "[", i, "] = ", g.sizes[i], ": must be in [1, 1048576]"));
    }
    if (i > 0 && g.sizes[i] <= g.sizes[i - 1]) {
      return bad(absl::StrCat(sizes_field, "[", i, "] = ", g.sizes[i],
                              ": must be above the size before it (", g.sizes[i - 1], ")"));
    }
  }
  if (g.max_size < 0 || g.max_size > (int64_t{1} << 20)) {
    return bad(absl::StrCat(max_field, " = ", g.max_size,
                            ": must be in [0, 1048576] (0 = the engine's default)"));
  }
  if (g.max_num_seqs < 1) {
    return bad(absl::StrCat("cuda_graphs.max_num_seqs = ", g.max_num_seqs, ": must be >= 1"));
  }
  if (g.max_num_batched_tokens < 1) {
    return bad(absl::StrCat("cuda_graphs.max_num_batched_tokens = ", g.max_num_batched_tokens,
                            ": must be >= 1"));
  }
  if (!(g.eager_launch_s >= 0 && g.eager_launch_s <= 1e-3)) {
    return bad(absl::StrCat("cuda_graphs.eager_launch_s = ", g.eager_launch_s,
                            ": must be in [0, 0.001] seconds"));
  }
  if (g.launches_per_layer < 0 || g.launches_per_layer > 1000) {
    return bad(absl::StrCat("cuda_graphs.launches_per_layer = ", g.launches_per_layer,
                            ": must be in [0, 1000]"));
  }
  return absl::OkStatus();
}

GraphBuckets::GraphBuckets(const CudaGraphs& g) : g_(g) {
  if (g.ladder == GraphLadder::kSglangBatch) {
    base_ = SglangSizes(g);
    return;
  }
  if (!g.sizes.empty()) {
    for (int64_t v : g.sizes)
      if (v <= g.max_num_batched_tokens) base_.push_back(v);
    return;
  }
  // The default ladder up to the largest maximum any query length can have; Max(q) cuts it.
  const int64_t top =
      std::min<int64_t>(g.max_size > 0 ? g.max_size : 512, g.max_num_batched_tokens);
  for (int64_t v : {1, 2, 4})
    if (v <= top) base_.push_back(v);
  AddRange(8, std::min<int64_t>(top, 255), 8, &base_);
  AddRange(256, top, 16, &base_);
}

// The given maximum, else min(max_num_seqs x q x 2, 512); capped by max_num_batched_tokens; with
// sizes given, their largest.
int64_t GraphBuckets::Max(int64_t q) const {
  if (!g_.sizes.empty()) return base_.empty() ? 0 : base_.back();
  const int64_t m = g_.max_size > 0 ? g_.max_size : std::min<int64_t>(g_.max_num_seqs * q * 2, 512);
  return std::min(m, g_.max_num_batched_tokens);
}

// adjust_cudagraph_sizes_for_spec_decode: each size rounded up to a multiple of q, those above
// the maximum dropped; [q] when none is left and q fits. Rounding is monotone, so the smallest
// rounded size >= tokens comes from the first base size above ceil(tokens / q) x q - q.
GraphPass GraphBuckets::VllmSmallest(int64_t tokens, int64_t q) const {
  const int64_t cap = Max(q);
  if (base_.empty() || RoundUp(base_.front(), q) > cap) {  // nothing left after rounding
    return q <= cap && tokens <= q ? GraphPass{q, true} : GraphPass{tokens, false};
  }
  const auto it = std::lower_bound(base_.begin(), base_.end(), RoundUp(tokens, q) - q + 1);
  if (it == base_.end() || RoundUp(*it, q) > cap) return {tokens, false};
  return {RoundUp(*it, q), true};
}

std::vector<int64_t> GraphBuckets::CapturedSizes(int64_t q) const {
  if (!g_.enabled) return {};
  if (g_.ladder == GraphLadder::kSglangBatch) return base_;
  q = std::max<int64_t>(q, 1);
  std::vector<int64_t> out;
  const int64_t cap = Max(q);
  for (int64_t v : base_) {
    const int64_t r = RoundUp(v, q);
    if (r <= cap && (out.empty() || out.back() != r)) out.push_back(r);
  }
  if (out.empty() && q <= cap) out.push_back(q);
  return out;
}

GraphPass GraphBuckets::PadDecodeBatch(int64_t b, int64_t q) const {
  if (!g_.enabled) return {b, false};
  q = std::max<int64_t>(q, 1);
  if (g_.ladder == GraphLadder::kSglangBatch) {
    const auto it = std::lower_bound(base_.begin(), base_.end(), b);
    return it == base_.end() ? GraphPass{b, false} : GraphPass{*it, true};
  }
  const GraphPass t = VllmSmallest(b * q, q);
  return t.graphed ? GraphPass{t.padded / q, true} : GraphPass{b, false};
}

GraphPass GraphBuckets::PadRaggedPass(int64_t tokens, int64_t q) const {
  if (!g_.enabled || g_.ladder == GraphLadder::kSglangBatch) return {tokens, false};
  // Piecewise graphs stay at the raw sizes, up to the server's maximum.
  const auto it = std::lower_bound(base_.begin(), base_.end(), tokens);
  if (it == base_.end() || *it > Max(std::max<int64_t>(q, 1))) return {tokens, false};
  return {*it, true};
}

double GraphBuckets::EagerLaunchSeconds(int64_t layers) const {
  return static_cast<double>(layers) * g_.launches_per_layer * g_.eager_launch_s;
}

const char* GraphLadderName(GraphLadder l) {
  return l == GraphLadder::kSglangBatch ? "sglang" : "vllm";
}

}  // namespace specplan::costmodel
