#include "costmodel/latency_models.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::costmodel {

PerTermFeatures ComputePerTermFeatures(const RooflineEstimate& e, const GpuSpec& gpu) {
  PerTermFeatures f;
  f.compute_s = e.terms.total_flops() / gpu.peak_flops;
  f.weights_s = e.terms.weight_bytes / gpu.mem_bw;
  f.kv_attention_s = (e.terms.kv_bytes + e.terms.activation_bytes) / gpu.mem_bw;
  f.comm_s = e.comm_s;
  return f;
}

double PerTermCoefficients::Predict(const PerTermFeatures& f) const {
  const double compute_branch = compute * f.compute_s + compute_overhead_s;
  const double memory_branch = weights * f.weights_s + kv_attention * f.kv_attention_s;
  return std::max(compute_branch, memory_branch) + f.comm_s;
}

double PerTermLatency::VerifySeconds(int64_t s, int64_t c) const {
  return coef_.Predict(ComputePerTermFeatures(roofline_.Estimate(s, c), roofline_.gpu()));
}

double PerTermLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  return coef_.Predict(ComputePerTermFeatures(roofline_.Estimate(batch.totals()), roofline_.gpu()));
}

OverlapFeatures ComputeOverlapFeatures(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                       int64_t c, int64_t tile) {
  return ComputeOverlapFeatures(model, gpu, SinglePass(s, c), tile);
}

OverlapFeatures ComputeOverlapFeatures(const ModelSpec& model, const GpuSpec& gpu,
                                       const PassTotals& pass, int64_t tile) {
  SPECPLAN_CHECK(tile >= 1);
  const RooflineTerms t = ComputeRooflineTerms(model, pass);
  const double S = pass.tokens;
  const double s_tiled = std::ceil(S / static_cast<double>(tile)) * static_cast<double>(tile);
  // Projection, MLP and LM-head FLOPs are linear in the pass's tokens; the tile pads the GEMM's
  // row count (one GEMM over all the sequences' tokens in a ragged batch).
  const double gemm_flops = (t.attn_proj_flops + t.ffn_flops + t.lm_head_flops) * s_tiled / S;
  OverlapFeatures f;
  f.gemm_s = gemm_flops / gpu.peak_flops;
  f.attention_s = t.attn_score_flops / gpu.peak_flops;
  f.weights_s = t.weight_bytes / gpu.mem_bw;
  f.kv_attention_s = (t.kv_bytes + t.activation_bytes) / gpu.mem_bw;
  f.comm_s = CommunicationSeconds(model, gpu, pass.tokens);
  return f;
}

double OverlapCoefficients::Predict(const OverlapFeatures& f) const {
  const double compute_branch = gemm * f.gemm_s + attention * f.attention_s;
  const double memory_branch = weights * f.weights_s + kv_attention * f.kv_attention_s;
  const double hi = std::max(compute_branch, memory_branch);
  if (hi <= 0) return overhead_s + f.comm_s;
  // Smooth max, scaled by the larger branch so large p cannot overflow.
  const double sum = std::pow(compute_branch / hi, p) + std::pow(memory_branch / hi, p);
  return overhead_s + hi * std::pow(sum, 1.0 / p) + f.comm_s;
}

double OverlapLatency::VerifySeconds(int64_t s, int64_t c) const {
  return coef_.Predict(
      ComputeOverlapFeatures(roofline_.model(), roofline_.gpu(), s, c, coef_.tile));
}

double OverlapLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  return coef_.Predict(
      ComputeOverlapFeatures(roofline_.model(), roofline_.gpu(), batch.totals(), coef_.tile));
}

KernelSumFeatures ComputeKernelSumFeatures(const ModelSpec& model, const GpuSpec& gpu,
                                           const PassTotals& pass, int64_t tile) {
  SPECPLAN_CHECK(tile >= 1);
  const RooflineTerms t = ComputeRooflineTerms(model, pass);
  const double L = model.layers, bp = model.bytes_per_element();
  // Per GPU under tensor parallelism (as in ComputeRooflineTerms).
  const double h_kv = static_cast<double>(model.kv_heads_per_gpu()) * model.head_dim;
  const double n_q = static_cast<double>(model.n_q) / static_cast<double>(model.tp);
  const double cache_read = bp * L * 2 * pass.context * h_kv;
  const double scores = bp * L * 2 * n_q * pass.score_pairs;
  const double S = pass.tokens;
  const double s_tiled = std::ceil(S / static_cast<double>(tile)) * static_cast<double>(tile);
  KernelSumFeatures f;
  f.s = static_cast<int64_t>(S);
  f.waves = 1;
  f.gemm_s = (t.attn_proj_flops + t.ffn_flops + t.lm_head_flops) * s_tiled / S / gpu.peak_flops;
  f.weights_s = t.weight_bytes / gpu.mem_bw;
  f.kv_s = cache_read / gpu.mem_bw;
  f.attention_s = t.attn_score_flops / gpu.peak_flops;
  f.elementwise_s =
      std::max(0.0, t.kv_bytes + t.activation_bytes - cache_read - scores) / gpu.mem_bw;
  f.comm_s = CommunicationSeconds(model, gpu, pass.tokens);
  return f;
}

KernelSumFeatures ComputeKernelSumFeatures(const ModelSpec& model, const GpuSpec& gpu, int64_t s,
                                           int64_t c, int64_t tile, int64_t attention_tile,
                                           int64_t b) {
  SPECPLAN_CHECK(attention_tile >= 1 && b >= 1);
  KernelSumFeatures f = ComputeKernelSumFeatures(
      model, gpu,
      UniformPass(static_cast<double>(b), static_cast<double>(s), static_cast<double>(c)), tile);
  f.s = s;
  f.waves = (s + attention_tile - 1) / attention_tile;
  return f;
}

double KernelSumCoefficients::PassSeconds(const KernelSumFeatures& f) const {
  const double a = gemm * f.gemm_s, b = weights * f.weights_s;
  const double hi = std::max(a, b);
  double gemms = 0;
  if (hi > 0) gemms = hi * std::pow(std::pow(a / hi, p) + std::pow(b / hi, p), 1.0 / p);
  return overhead_s + gemms + attention * f.attention_s + elementwise * f.elementwise_s + f.comm_s;
}

double KernelSumCoefficients::Predict(const KernelSumFeatures& f) const {
  const double attn = f.s == 1 ? decode * f.kv_s
                               : verify_overhead_s + verify * static_cast<double>(f.waves) * f.kv_s;
  return PassSeconds(f) + attn;
}

double KernelSumLatency::VerifySeconds(int64_t s, int64_t c) const {
  return coef_.Predict(ComputeKernelSumFeatures(roofline_.model(), roofline_.gpu(), s, c,
                                                coef_.tile, coef_.attention_tile));
}

double KernelSumLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  if (batch.size() == 1) return VerifySeconds(batch[0].s, batch[0].c);
  const ModelSpec& m = roofline_.model();
  const KernelSumFeatures f =
      ComputeKernelSumFeatures(m, roofline_.gpu(), batch.totals(), coef_.tile);
  // Seconds to read one cached token's K and V in every layer.
  const double kv_per_token = m.bytes_per_element() * m.layers * 2 *
                              static_cast<double>(m.kv_heads_per_gpu()) * m.head_dim /
                              roofline_.gpu().mem_bw;
  double attn = coef_.decode * batch.decode_context() * kv_per_token;
  if (batch.verify_sequences() > 0) {
    // One verify kernel per layer covers every s > 1 row; each sequence reads its cache once per
    // wave of attention_tile query tokens.
    double wave_context = batch.verify_context();
    if (batch.max_s() > coef_.attention_tile) {
      wave_context = 0;
      for (const SequenceShape& q : batch.sequences()) {
        if (q.s > 1) {
          wave_context +=
              static_cast<double>((q.s + coef_.attention_tile - 1) / coef_.attention_tile) *
              static_cast<double>(q.c);
        }
      }
    }
    attn += coef_.verify_overhead_s + coef_.verify * wave_context * kv_per_token;
  }
  return coef_.PassSeconds(f) + attn;
}

absl::Status ValidateLatencyTable(const LatencyTable& t) {
  auto check_grid = [](const std::vector<int64_t>& g, const char* name,
                       int64_t min_value) -> absl::Status {
    if (g.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": empty grid"));
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] < min_value) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "[", i, "] = ", g[i], ": must be >= ", min_value));
      }
      if (i > 0 && g[i] <= g[i - 1]) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "[", i, "] = ", g[i], ": grid must be strictly increasing"));
      }
    }
    return absl::OkStatus();
  };
  if (auto st = check_grid(t.s_grid, "s", 1); !st.ok()) return st;
  if (auto st = check_grid(t.c_grid, "c", 0); !st.ok()) return st;
  // One [c][s] layer on the grids (s_grid, c_grid), named `name` in errors.
  auto check_layer = [](const std::vector<std::vector<double>>& layer,
                        const std::vector<int64_t>& s_grid, const std::vector<int64_t>& c_grid,
                        const std::string& name) -> absl::Status {
    if (layer.size() != c_grid.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": ", layer.size(), " rows, expected one per c (", c_grid.size(), ")"));
    }
    for (size_t ci = 0; ci < layer.size(); ++ci) {
      if (layer[ci].size() != s_grid.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, "[", ci, "]: ", layer[ci].size(),
                                                       " entries, expected one per s (",
                                                       s_grid.size(), ")"));
      }
      for (size_t si = 0; si < s_grid.size(); ++si) {
        const double v = layer[ci][si];
        if (!std::isfinite(v) || v <= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(name, "[", ci, "][", si, "] = ", v, ": must be finite and > 0"));
        }
      }
    }
    return absl::OkStatus();
  };
  if (auto st = check_layer(t.seconds, t.s_grid, t.c_grid, "seconds"); !st.ok()) return st;
  if (t.b_grid.empty() && t.batch_seconds.empty()) {
    if (!t.batch_s_grid.empty() || !t.batch_c_grid.empty()) {
      return absl::InvalidArgumentError("batch_s and batch_c: only with batch layers (b)");
    }
    return absl::OkStatus();
  }
  if (auto st = check_grid(t.b_grid, "b", 2); !st.ok()) return st;
  if (!t.batch_s_grid.empty()) {
    if (auto st = check_grid(t.batch_s_grid, "batch_s", 1); !st.ok()) return st;
  }
  if (!t.batch_c_grid.empty()) {
    if (auto st = check_grid(t.batch_c_grid, "batch_c", 0); !st.ok()) return st;
  }
  if (t.batch_seconds.size() != t.b_grid.size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch_seconds: ", t.batch_seconds.size(),
                                                   " layers, expected one per b (", t.b_grid.size(),
                                                   ")"));
  }
  for (size_t bi = 0; bi < t.batch_seconds.size(); ++bi) {
    if (auto st = check_layer(t.batch_seconds[bi], t.layer_s_grid(1), t.layer_c_grid(1),
                              absl::StrCat("batch_seconds[", bi, "]"));
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

namespace {
// Index i and weight w such that x lies between grid[i] and grid[i + 1] (w = 0 at grid[i]).
// Requires grid.front() <= x <= grid.back().
void Bracket(const std::vector<int64_t>& grid, double x, size_t* i, double* w) {
  if (grid.size() == 1) {
    *i = 0;
    *w = 0;
    return;
  }
  size_t hi = std::upper_bound(grid.begin(), grid.end(), x,
                               [](double v, int64_t g) { return v < static_cast<double>(g); }) -
              grid.begin();
  hi = std::clamp<size_t>(hi, 1, grid.size() - 1);
  *i = hi - 1;
  *w = (x - grid[*i]) / static_cast<double>(grid[hi] - grid[*i]);
}
}  // namespace

double TableLatency::Interpolate(const std::vector<std::vector<double>>& T,
                                 const std::vector<int64_t>& s_grid,
                                 const std::vector<int64_t>& c_grid, double s, double c) {
  size_t si, ci;
  double ws, wc;
  Bracket(s_grid, s, &si, &ws);
  Bracket(c_grid, c, &ci, &wc);
  const size_t si1 = std::min(si + 1, s_grid.size() - 1);
  const size_t ci1 = std::min(ci + 1, c_grid.size() - 1);
  const double lo = (1 - ws) * T[ci][si] + ws * T[ci][si1];
  const double hi = (1 - ws) * T[ci1][si] + ws * T[ci1][si1];
  return (1 - wc) * lo + wc * hi;
}

double TableLatency::VerifySeconds(int64_t s, int64_t c) const {
  const int64_t sc = std::clamp(s, table_.s_grid.front(), table_.s_grid.back());
  const int64_t cc = std::clamp(c, table_.c_grid.front(), table_.c_grid.back());
  const double inside = Interpolate(table_.seconds, table_.s_grid, table_.c_grid,
                                    static_cast<double>(sc), static_cast<double>(cc));
  if (sc == s && cc == c) return inside;
  return inside * roofline_.VerifySeconds(s, c) / roofline_.VerifySeconds(sc, cc);
}

double TableLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  if (batch.size() == 1) return VerifySeconds(batch[0].s, batch[0].c);
  const PassTotals& t = batch.totals();
  const double n = static_cast<double>(batch.size());
  if (table_.b_grid.empty()) {
    // Measured one sequence at a time: price the equivalent single sequence (all S tokens over
    // the mean context), then scale by how the roofline prices the real batch against it.
    const int64_t s_eq = static_cast<int64_t>(t.tokens);
    const int64_t c_eq = std::llround(t.context / n);
    return VerifySeconds(s_eq, c_eq) * roofline_.VerifyBatchSeconds(batch) /
           roofline_.VerifySeconds(s_eq, c_eq);
  }
  // The mean sequence, read from the two layers around B (b = 1 is `seconds`), each clamped to
  // its own grid and taken relative to the roofline of the uniform batch it read; the roofline of
  // the real batch carries the rest (see the header).
  const double s_mean = t.tokens / n, c_mean = t.context / n;
  const double b_eq = std::min(n, static_cast<double>(table_.b_grid.back()));
  auto relative = [&](size_t k) {  // layer k's reading over its uniform batch's roofline
    const std::vector<int64_t>& sg = table_.layer_s_grid(k);
    const std::vector<int64_t>& cg = table_.layer_c_grid(k);
    const double s_cl =
        std::clamp(s_mean, static_cast<double>(sg.front()), static_cast<double>(sg.back()));
    const double c_cl =
        std::clamp(c_mean, static_cast<double>(cg.front()), static_cast<double>(cg.back()));
    const auto& layer = k == 0 ? table_.seconds : table_.batch_seconds[k - 1];
    return Interpolate(layer, sg, cg, s_cl, c_cl) /
           roofline_.Estimate(UniformPass(b_eq, s_cl, c_cl)).seconds;
  };
  size_t k = 0;
  while (k < table_.b_grid.size() && static_cast<double>(table_.b_grid[k]) < b_eq) ++k;
  // Layers k (b_grid[k - 1], or 1 when k = 0) and k + 1 bracket b_eq; k + 1 is exact at b_eq.
  const double b_lo = k == 0 ? 1.0 : static_cast<double>(table_.b_grid[k - 1]);
  const double b_hi = static_cast<double>(table_.b_grid[k]);
  const double w = (b_eq - b_lo) / (b_hi - b_lo);
  return ((1 - w) * relative(k) + w * relative(k + 1)) * roofline_.VerifyBatchSeconds(batch);
}

EmaCorrectedLatency::EmaCorrectedLatency(std::shared_ptr<const LatencyModel> base, double alpha,
                                         double initial_bias)
    : base_(std::move(base)), alpha_(alpha), bias_(initial_bias) {
  SPECPLAN_CHECK(base_ != nullptr);
  SPECPLAN_CHECK(alpha > 0 && alpha <= 1, "alpha must be in (0, 1]");
  SPECPLAN_CHECK(initial_bias > 0);
}

std::string EmaCorrectedLatency::Kind() const {
  const std::string base = base_->Kind();
  return base == "roofline" ? "ema" : absl::StrCat("ema+", base);
}

bool EmaCorrectedLatency::Observe(int64_t s, int64_t c, double observed_s) {
  if (!std::isfinite(observed_s) || observed_s <= 0 || s < 1 || c < 0) return false;
  const double ratio = observed_s / base_->VerifySeconds(s, c);
  if (!std::isfinite(ratio)) return false;
  double old = bias_.load(std::memory_order_relaxed);
  while (!bias_.compare_exchange_weak(old, (1 - alpha_) * old + alpha_ * ratio,
                                      std::memory_order_relaxed)) {
  }
  observations_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace specplan::costmodel
