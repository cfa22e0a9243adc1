// `calibrate --kernels`: the grid, the timing loop, the table writers and the composition.

#include "profiler/kernel_bench.h"

#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "costmodel/compose/compose.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "costmodel/step/drafter_arch.h"
#include "runtime/layer_ops.h"
#include "util/atomic_file.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/shipped_dir.h"
#include "util/status_macros.h"

namespace specplan::profiler {
namespace {

namespace fs = std::filesystem;
using costmodel::AttentionHeads;
using costmodel::DType;
using costmodel::ModelSpec;

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
constexpr bool kFusedAttention = true;  // at::scaled_dot_product_attention with enable_gqa
#else
constexpr bool kFusedAttention = false;
#endif

std::vector<int64_t> Distinct(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Every other point, keeping the first and the last.
std::vector<int64_t> Thin(const std::vector<int64_t>& v) {
  if (v.size() <= 2) return v;
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); i += 2) out.push_back(v[i]);
  if (out.back() != v.back()) out.push_back(v.back());
  return out;
}

void AddLayerShapes(const ModelSpec& m, const std::string& prefix, std::vector<GemmShape>* out) {
  const int64_t h = m.hidden, q = m.n_q * m.head_dim / m.tp, kv = m.kv_heads_per_gpu() * m.head_dim;
  const int64_t ffn = m.ffn / m.tp;
  out->push_back({q + 2 * kv, h, prefix + "qkv"});
  out->push_back({h, q, prefix + "o"});
  out->push_back({(m.gated_mlp ? 2 : 1) * ffn, h, prefix + (m.gated_mlp ? "gate_up" : "up")});
  out->push_back({h, ffn, prefix + "down"});
  out->push_back({m.vocab / m.tp, h, prefix + "lm_head"});
}

AttentionHeads HeadsOf(const ModelSpec& m) {
  return {m.n_q / m.tp, m.kv_heads_per_gpu(), m.head_dim};
}

double ElementBytes(DType d) {
  switch (d) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat8:
      return 1;
    default:
      return 2;
  }
}

torch::ScalarType TorchType(DType d) {
  switch (d) {
    case DType::kFloat32:
      return torch::kFloat32;
    case DType::kFloat16:
      return torch::kFloat16;
    default:
      return torch::kBFloat16;
  }
}

// Bytes one attention point holds: q, k, v, out, and on the plain path the fp32 scores three
// times (scores, masked, softmax) plus the probabilities in the model dtype.
double AttentionBytes(const AttentionHeads& h, int64_t b, int64_t s, int64_t kv, double eb,
                      bool fused) {
  const double bd = static_cast<double>(b), sd = static_cast<double>(s),
               kd = static_cast<double>(kv);
  const double qo = 2 * bd * sd * static_cast<double>(h.num_heads * h.head_dim) * eb;
  const double cache = 2 * bd * kd * static_cast<double>(h.num_kv_heads * h.head_dim) * eb;
  const double scores = bd * static_cast<double>(h.num_heads) * sd * kd;
  const double mask = sd * kd * 4;
  return qo + cache + mask + (fused ? 0 : scores * (3 * 4 + eb));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Memory the grid may use: MemAvailable on the CPU, 90 % of the GPU's memory on CUDA.
double MemoryLimit(bool cuda, const costmodel::GpuSpec& gpu) {
  if (cuda) return 0.9 * gpu.mem_bytes;
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;  // unknown: not checked
}

std::string FormatSeconds(double s) {
  if (s < 60) return absl::StrFormat("%.0f s", s);
  return absl::StrFormat("%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
}

// Progress over all points: a redrawn bar on a terminal, else a line per 10 %.
class Progress {
 public:
  Progress(const CalibrateOptions& o, double estimated_s)
      : out_(o.progress), bar_(o.progress_bar), estimated_s_(estimated_s) {}
  void Say(const std::string& line) {
    if (out_ == nullptr) return;
    if (bar_ && drawn_) *out_ << "\r\033[K";
    *out_ << "calibrate: " << line << std::endl;
    drawn_ = false;
  }
  // `done_estimate_s`: the estimated seconds of the points done so far.
  void Update(const std::string& table, int64_t done, int64_t total, double done_estimate_s) {
    if (out_ == nullptr) return;
    const double elapsed = clock_.Seconds();
    const double left = done_estimate_s > 0
                            ? elapsed * (estimated_s_ - done_estimate_s) / done_estimate_s
                            : estimated_s_;
    const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1;
    if (bar_) {
      const int width = 30, full = static_cast<int>(frac * width);
      *out_ << "\r\033[K[" << std::string(full, '#') << std::string(width - full, '.') << "] "
            << absl::StrFormat("%3.0f%% %s %d/%d, %s left", 100 * frac, table, done, total,
                               FormatSeconds(std::max(0.0, left)))
            << std::flush;
      drawn_ = true;
    } else if (done == total || frac >= next_line_) {
      *out_ << absl::StrFormat("calibrate: %s %d/%d (%.0f %%), about %s left\n", table, done, total,
                               100 * frac, FormatSeconds(std::max(0.0, left)));
      while (next_line_ <= frac) next_line_ += 0.1;
    }
  }
  void StartTable() { next_line_ = 0.1; }
  double elapsed() const { return clock_.Seconds(); }

 private:
  struct Clock {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double Seconds() const {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } clock_;
  std::ostream* out_;
  bool bar_;
  bool drawn_ = false;
  double estimated_s_;
  double next_line_ = 0.1;
};

// Times one kernel: warm-up calls, then `repeats` samples of n calls each (n chosen so a sample
// lasts at least min_sample_s), one call's time per sample; median, min and max.
class KernelTimer {
 public:
  KernelTimer(PassTimer* timer, int warmup, int repeats, double min_sample_s,
              std::function<bool()> cancel)
      : timer_(timer),
        warmup_(warmup),
        repeats_(repeats),
        min_sample_s_(min_sample_s),
        cancel_(std::move(cancel)) {}

  absl::StatusOr<KernelTiming> Time(const std::function<void()>& call) {
    for (int i = 0; i < warmup_; ++i) call();
    SPECPLAN_ASSIGN_OR_RETURN(const PassTiming one, timer_->Time(call));
    const int64_t n = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(min_sample_s_ / std::max(one.seconds, 1e-9))), 1, 10000);
    std::vector<double> ms;
    for (int r = 0; r < repeats_; ++r) {
      if (cancel_ && cancel_()) return absl::CancelledError("interrupted");
      SPECPLAN_ASSIGN_OR_RETURN(const PassTiming t, timer_->Time([&] {
        for (int64_t i = 0; i < n; ++i) call();
      }));
      ms.push_back(1e3 * t.seconds / static_cast<double>(n));
    }
    KernelTiming k;
    k.median_ms = Median(ms);
    k.min_ms = *std::min_element(ms.begin(), ms.end());
    k.max_ms = *std::max_element(ms.begin(), ms.end());
    k.repeats = repeats_;
    return k;
  }

 private:
  PassTimer* timer_;
  int warmup_, repeats_;
  double min_sample_s_;
  std::function<bool()> cancel_;
};

// The attention kernels, as the runtime runs them on its plain path (or fused SDPA).
class AttentionBench {
 public:
  AttentionBench(torch::TensorOptions opts, uint64_t seed) : opts_(opts), rng_(seed) {}

  // b sequences, s new tokens each over kv keys; mask: "none" | "causal" | "tree".
  std::function<void()> Make(const AttentionHeads& h, int64_t b, int64_t s, int64_t kv,
                             const std::string& mask_kind) {
    const int64_t nq = h.num_heads, nkv = h.num_kv_heads, d = h.head_dim, g = nq / nkv;
    q_ = torch::randn({b * s, nq * d}, opts_);
    k_ = torch::randn({b, nkv, kv, d}, opts_);
    v_ = torch::randn({b, nkv, kv, d}, opts_);
    const auto mopts =
        opts_.dtype(kFusedAttention ? opts_.dtype().toScalarType() : torch::kFloat32);
    mask_ = torch::Tensor();
    if (mask_kind == "causal") {
      mask_ = torch::zeros({s, kv}, mopts)
                  .masked_fill_(torch::ones({s, kv}, mopts.dtype(torch::kBool)).triu_(kv - s + 1),
                                -std::numeric_limits<float>::infinity());
    } else if (mask_kind == "tree") {
      mask_ = TreeMask(s, kv, mopts);
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const torch::Tensor q = q_, k = k_, v = v_, mask = mask_;
    return [=]() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
      (void)g;
      (void)scale;
      const torch::Tensor q4 = q.view({b, s, nq, d}).permute({0, 2, 1, 3});
      torch::Tensor out =
          mask.defined() ? at::scaled_dot_product_attention(q4, k, v, mask, 0.0, false, {}, true)
                         : at::scaled_dot_product_attention(q4, k, v, {}, 0.0, false, {}, true);
      out = out.permute({0, 2, 1, 3}).reshape({b * s, nq * d});
#else
      // Query head j g + r reads kv head j: fold the g query heads of a kv head into its rows.
      torch::Tensor qg =
          q.view({b, s, nkv, g, d}).permute({0, 2, 3, 1, 4}).reshape({b, nkv, g * s, d});
      torch::Tensor scores = torch::matmul(qg, k.transpose(-2, -1)).view({b, nkv, g, s, kv});
      scores = scores.to(torch::kFloat32) * scale;
      if (mask.defined()) scores = scores + mask;
      torch::Tensor p = torch::softmax(scores, -1).to(v.scalar_type()).view({b, nkv, g * s, kv});
      torch::Tensor out = torch::matmul(p, v)
                              .view({b, nkv, g, s, d})
                              .permute({0, 3, 1, 2, 4})
                              .reshape({b * s, nq * d});
#endif
    };
  }

 private:
  // Row i sees the kv - s cached keys, itself and its ancestors in a random tree (parents[i] < i).
  torch::Tensor TreeMask(int64_t s, int64_t kv, torch::TensorOptions mopts) {
    std::vector<int64_t> parent(s, -1);
    for (int64_t i = 1; i < s; ++i) {
      parent[i] = std::uniform_int_distribution<int64_t>(0, i - 1)(rng_);
    }
    torch::Tensor m = torch::full({s, kv}, -std::numeric_limits<float>::infinity(),
                                  torch::TensorOptions().dtype(torch::kFloat32));
    auto a = m.accessor<float, 2>();
    const int64_t c = kv - s;
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < c; ++j) a[i][j] = 0;
      for (int64_t j = i; j >= 0; j = parent[j]) a[i][c + j] = 0;
    }
    return m.to(mopts);
  }

  torch::TensorOptions opts_;
  std::mt19937_64 rng_;
  torch::Tensor q_, k_, v_, mask_;
};

// The elementwise ops of a layer of `m` (the target), as the runtime computes them
// (runtime/layer_ops.h and the Transformer's residual add, cache copy and embedding gather), over
// m tokens. Tensors are made for the largest m once; each call reads its first m rows.
class ElementwiseBench {
 public:
  ElementwiseBench(const ModelSpec& m, torch::TensorOptions opts, int64_t m_max)
      : gated_(m.gated_mlp), d_(m.head_dim) {
    const int64_t nq = m.n_q, nkv = m.n_kv;
    x_ = torch::randn({m_max, m.hidden}, opts);
    a_ = torch::randn({m_max, m.hidden}, opts);
    norm_w_ = torch::randn({m.hidden}, opts);
    norm_b_ = torch::randn({m.hidden}, opts);
    head_w_ = torch::randn({d_}, opts);
    q_ = torch::randn({m_max, nq, d_}, opts);
    k_ = torch::randn({m_max, nkv, d_}, opts);
    v_ = torch::randn({m_max, nkv, d_}, opts);
    cos_ = torch::randn({m_max, 1, d_}, opts);
    sin_ = torch::randn({m_max, 1, d_}, opts);
    kc_ = torch::zeros({m_max, nkv, d_}, opts);
    vc_ = torch::zeros({m_max, nkv, d_}, opts);
    gate_ = torch::randn({m_max, m.ffn}, opts);
    up_ = torch::randn({m_max, m.ffn}, opts);
    // The gather's cost is the m rows it copies; a vocabulary past 32768 rows only adds memory.
    embed_ = torch::randn({std::min<int64_t>(m.vocab, 32768), m.hidden}, opts);
    ids_ = torch::randint(embed_.size(0), {m_max},
                          torch::TensorOptions().dtype(torch::kInt64).device(opts.device()));
  }

  // op: costmodel::ElementwiseTable::OpNames.
  std::function<void()> Make(const std::string& op, int64_t m) {
    const auto rows = [m](const torch::Tensor& t) { return t.narrow(0, 0, m); };
    const torch::Tensor x = rows(x_), a = rows(a_), q = rows(q_), k = rows(k_), v = rows(v_),
                        cos = rows(cos_), sin = rows(sin_), kc = rows(kc_), vc = rows(vc_),
                        gate = rows(gate_), up = rows(up_), ids = rows(ids_);
    const torch::Tensor w = norm_w_, b = norm_b_, hw = head_w_, embed = embed_;
    const int64_t d = d_;
    constexpr double kEps = 1e-6;
    if (op == "add_norm") {
      if (gated_) return [=] { runtime::RmsNorm(x + a, w, kEps); };
      return [=] { torch::layer_norm(x + a, {x.size(-1)}, w, b, kEps); };
    }
    if (op == "qk_norm") {
      return [=] {
        runtime::RmsNorm(q, hw, kEps);
        runtime::RmsNorm(k, hw, kEps);
      };
    }
    if (op == "rope") {
      return [=] {
        runtime::ApplyRotary(q, cos, sin, d);
        runtime::ApplyRotary(k, cos, sin, d);
      };
    }
    if (op == "kv_store") {
      return [=] {
        kc.copy_(k);
        vc.copy_(v);
      };
    }
    if (op == "act_mul") {
      if (gated_) return [=] { runtime::GatedActivation(runtime::Activation::kSilu, gate, up); };
      return [=] { runtime::Activate(runtime::Activation::kGelu, gate); };
    }
    SPECPLAN_CHECK(op == "embedding", "unknown elementwise op");
    return [=] { torch::embedding(embed, ids); };
  }

 private:
  bool gated_;
  int64_t d_;
  torch::Tensor x_, a_, norm_w_, norm_b_, head_w_, q_, k_, v_, cos_, sin_, kc_, vc_, gate_, up_,
      embed_, ids_;
};

// Estimated seconds of timing one point: the calls it makes at an estimated time per call.
struct CostModel {
  double floor_s = 1e-6;  // one small call
  double flops = 1e11;    // achieved by the largest GEMM
  double min_sample_s = 2e-4;
  int calls_per_point = 10;  // warm-up + 1 + repeats samples
  double Point(double flop) const {
    const double call = std::max(floor_s, flop / flops);
    return static_cast<double>(calls_per_point) * std::max(call, min_sample_s) + 2 * call;
  }
};

double GemmFlops(int64_t m, const GemmShape& s) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}
double AttentionFlops(const AttentionHeads& h, int64_t b, int64_t s, int64_t kv) {
  return 4.0 * static_cast<double>(b * h.num_heads * s * kv * h.head_dim);
}

double EstimateSeconds(const KernelGrid& g, const CostModel& cm) {
  double t = 0;
  for (const GemmShape& s : g.gemm_shapes) {
    for (int64_t m : g.gemm_m) t += cm.Point(GemmFlops(m, s));
  }
  for (const AttentionHeads& h : g.heads) {
    for (int64_t b : g.batch) {
      for (int64_t kv : g.kv_len) t += cm.Point(AttentionFlops(h, b, 1, kv));
      for (int64_t isl : g.isl) t += cm.Point(AttentionFlops(h, b, isl, isl) / 2);
      for (int64_t s : g.tree_s) {
        for (int64_t c : g.tree_c) t += cm.Point(AttentionFlops(h, b, s, c + s));
      }
    }
  }
  t += static_cast<double>(g.elementwise_points()) * cm.Point(0);  // launch-bound calls
  return t;
}

std::string GpuFolder(const std::string& gpu) { return absl::StrReplaceAll(gpu, {{"-", "_"}}); }

std::string TimingColumns(const KernelTiming& t) {
  return absl::StrFormat("%.6g,%.6g,%.6g,%d", t.median_ms, t.min_ms, t.max_ms, t.repeats);
}

}  // namespace

int64_t KernelGrid::gemm_points() const {
  return static_cast<int64_t>(gemm_shapes.size() * gemm_m.size());
}
int64_t KernelGrid::generation_points() const {
  return static_cast<int64_t>(heads.size() * batch.size() * kv_len.size());
}
int64_t KernelGrid::context_points() const {
  return static_cast<int64_t>(heads.size() * batch.size() * isl.size());
}
int64_t KernelGrid::tree_points() const {
  return static_cast<int64_t>(heads.size() * batch.size() * tree_s.size() * tree_c.size());
}
int64_t KernelGrid::elementwise_points() const {
  return static_cast<int64_t>(elementwise.size() * gemm_m.size());
}
int64_t KernelGrid::points() const {
  return gemm_points() + generation_points() + context_points() + tree_points() +
         elementwise_points();
}

ProfileGrids DefaultKernelProfileGrids(bool cuda) {
  ProfileGrids g;
  g.b = cuda ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64} : std::vector<int64_t>{1, 2, 4, 8, 16};
  g.s = DefaultSGrid(cuda);
  g.c = DefaultCGrid(cuda);
  return g;
}

absl::StatusOr<KernelGrid> KernelGridFor(const ModelSpec& target,
                                         const std::vector<std::string>& drafters,
                                         const ProfileGrids& grids, int coarsen) {
  if (grids.b.empty() || grids.s.empty() || grids.c.empty()) {
    return absl::InvalidArgumentError("kernel grid: the b, s and c grids must not be empty");
  }
  KernelGrid g;
  std::vector<GemmShape> shapes;
  std::set<AttentionHeads> heads = {HeadsOf(target)};
  AddLayerShapes(target, "", &shapes);
  for (const std::string& name : drafters) {
    SPECPLAN_ASSIGN_OR_RETURN(const costmodel::DrafterArch a,
                              costmodel::DrafterArchFor(name, target));
    if (!a.has_network()) continue;
    const ModelSpec& L = a.layers;
    AddLayerShapes(L, name + ".", &shapes);
    heads.insert(HeadsOf(L));
    const int64_t qkv_n = L.n_q * L.head_dim / L.tp + 2 * L.kv_heads_per_gpu() * L.head_dim;
    if (a.qkv_in > 0 && a.qkv_in != L.hidden) shapes.push_back({qkv_n, a.qkv_in, name + ".qkv_in"});
    if (a.fc_in > 0) shapes.push_back({L.hidden, a.fc_in, name + ".fc"});
  }
  // Distinct (n, k), the first reader's name kept, others appended.
  std::map<std::pair<int64_t, int64_t>, std::string> by_nk;
  for (const GemmShape& s : shapes) {
    auto [it, fresh] = by_nk.emplace(std::pair{s.n, s.k}, s.what);
    if (!fresh) it->second += "+" + s.what;
  }
  for (const auto& [nk, what] : by_nk) g.gemm_shapes.push_back({nk.first, nk.second, what});
  g.heads.assign(heads.begin(), heads.end());
  // The target's elementwise ops at the widths the composer reads them.
  for (const std::string& op : costmodel::ElementwiseTable::OpNames()) {
    if (const int64_t width = costmodel::ElementwiseWidth(target, op); width > 0) {
      g.elementwise.push_back({op, width});
    }
  }

  const int64_t b_max = grids.b.back(), s_max = grids.s.back(), c_max = grids.c.back();
  const int64_t m_max = b_max * s_max;
  std::vector<int64_t> m;
  for (int64_t p = 1; p <= m_max; p *= 2) {
    m.push_back(p);
    if (p >= 2 && p + p / 2 <= m_max) m.push_back(p + p / 2);
  }
  for (int64_t b : grids.b) {
    for (int64_t s : grids.s) m.push_back(b * s);
  }
  g.gemm_m = Distinct(m);
  g.batch = Distinct(grids.b);
  std::vector<int64_t> kv;
  for (int64_t c : grids.c) kv.push_back(c + 1);
  kv.push_back(c_max + s_max);
  g.kv_len = Distinct(kv);
  // The isl whose causal block scores as many pairs as s_max tokens over c_max.
  const double pairs = static_cast<double>(s_max) * static_cast<double>(c_max) +
                       static_cast<double>(s_max * (s_max + 1)) / 2;
  const int64_t isl_max = static_cast<int64_t>(std::ceil((std::sqrt(8 * pairs + 1) - 1) / 2));
  std::vector<int64_t> isl(grids.s.begin(), grids.s.end());
  for (int64_t p = 1; p < isl_max; p *= 2) isl.push_back(p);
  isl.push_back(isl_max);
  g.isl = Distinct(isl);
  for (int64_t s : grids.s) {
    if (s > 1) g.tree_s.push_back(s);
  }
  g.tree_c = Distinct(grids.c);
  for (int i = 0; i < coarsen; ++i) {
    g.gemm_m = Thin(g.gemm_m);
    g.batch = Thin(g.batch);
    g.kv_len = Thin(g.kv_len);
    g.isl = Thin(g.isl);
    g.tree_s = Thin(g.tree_s);
    g.tree_c = Thin(g.tree_c);
  }
  return g;
}

GridMemory LargestPoint(const KernelGrid& g, DType dtype, bool fused) {
  const double eb = ElementBytes(dtype);
  GridMemory r;
  auto consider = [&](double bytes, const std::string& where) {
    if (bytes > r.bytes) r = {bytes, where};
  };
  if (!g.gemm_m.empty()) {
    const int64_t m = g.gemm_m.back();
    for (const GemmShape& s : g.gemm_shapes) {
      const double b = eb * static_cast<double>(m * s.k + s.n * s.k + m * s.n);
      consider(b, absl::StrCat("gemm m=", m, " n=", s.n, " k=", s.k, " (", s.what, ")"));
    }
  }
  if (g.batch.empty()) return r;
  const int64_t b = g.batch.back();
  for (const AttentionHeads& h : g.heads) {
    const std::string hs = h.ToString();
    if (!g.kv_len.empty()) {
      consider(
          AttentionBytes(h, b, 1, g.kv_len.back(), eb, fused),
          absl::StrCat("generation_attention b=", b, " kv_len=", g.kv_len.back(), " heads=", hs));
    }
    if (!g.isl.empty()) {
      consider(AttentionBytes(h, b, g.isl.back(), g.isl.back(), eb, fused),
               absl::StrCat("context_attention b=", b, " isl=", g.isl.back(), " heads=", hs));
    }
    if (!g.tree_s.empty() && !g.tree_c.empty()) {
      const int64_t s = g.tree_s.back(), kv = g.tree_c.back() + s;
      consider(AttentionBytes(h, b, s, kv, eb, fused),
               absl::StrCat("tree_attention b=", b, " s=", s, " kv_len=", kv, " heads=", hs));
    }
  }
  return r;
}

std::string ElementwiseCsv(const std::string& kernel_source,
                           const std::vector<ElementwiseRow>& rows) {
  std::string csv = "kernel_source,op,m,width,latency_ms,min_ms,max_ms,repeats\n";
  for (const ElementwiseRow& r : rows) {
    absl::StrAppend(&csv, kernel_source, ",", r.op, ",", r.m, ",", r.width, ",", TimingColumns(r.t),
                    "\n");
  }
  return csv;
}

std::string GemmCsv(const std::string& kernel_source, const std::vector<GemmRow>& rows) {
  std::string out = "kernel_source,m,n,k,latency_ms,min_ms,max_ms,repeats\n";
  for (const GemmRow& r : rows) {
    absl::StrAppend(&out, kernel_source, ",", r.m, ",", r.n, ",", r.k, ",", TimingColumns(r.t),
                    "\n");
  }
  return out;
}

std::string AttentionCsv(const std::string& table, const std::string& kernel_source,
                         const std::vector<AttentionRow>& rows) {
  const bool tree = table == "tree";
  const std::string x = table == "context" ? "isl" : "kv_len";
  std::string out = absl::StrCat("kernel_source,batch_size,", tree ? "s," : "", x,
                                 ",num_heads,num_key_value_heads,head_dim,latency_ms,min_ms,"
                                 "max_ms,repeats\n");
  for (const AttentionRow& r : rows) {
    absl::StrAppend(&out, kernel_source, ",", r.b, ",", tree ? absl::StrCat(r.s, ",") : "", r.x,
                    ",", r.heads.num_heads, ",", r.heads.num_kv_heads, ",", r.heads.head_dim, ",",
                    TimingColumns(r.t), "\n");
  }
  return out;
}

absl::StatusOr<CalibrationResult> RunKernelCalibration(const CalibrateOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  // Every input is checked before anything is timed.
  if (o.gpu.empty()) return absl::InvalidArgumentError("--gpu: required");
  absl::StatusOr<costmodel::GpuSpec> gpu = costmodel::ResolveGpu(o.gpu);
  if (!gpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu ", o.gpu, ": ", std::string(gpu.status().message())));
  }
  if (!o.from_samples.empty()) {
    return absl::InvalidArgumentError(
        "--from-samples: fits samples measured elsewhere; it is not a --kernels run");
  }
  if (!o.samples_out.empty()) {
    return absl::InvalidArgumentError(
        "--samples-out: only with --mode runtime (--kernels writes kernel tables, see "
        "--kernels-dir)");
  }
  if (o.holdout != 0) {
    return absl::InvalidArgumentError("--holdout: only with --mode runtime (nothing is fitted)");
  }
  if (o.tp != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tp ", o.tp, ": calibrate times one local device"));
  }
  if (o.budget_s < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--budget-s ", o.budget_s, ": must be >= 0"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(const RunDevice run, ResolveRunDevice(o, *gpu));
  const bool cuda = run.info.cuda;
  const std::string dtype_name = o.dtype.empty() ? (cuda ? "bf16" : "fp32") : o.dtype;
  absl::StatusOr<DType> dtype = costmodel::ParseDType(dtype_name);
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype ", dtype_name, ": ", std::string(dtype.status().message())));
  }
  if (*dtype == DType::kFloat8 || (*dtype == DType::kFloat16 && !cuda)) {
    return absl::InvalidArgumentError(absl::StrCat("--dtype ", dtype_name, ": not timed on ",
                                                   cuda ? "CUDA" : "the CPU", " (fp32 or bf16",
                                                   cuda ? ", fp16" : "", ")"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedTarget target, ResolveTarget(o.model, o.config, *dtype));
  ModelSpec spec = target.spec;
  if (spec.is_moe()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model ", o.model,
        ": a mixture-of-experts model; --kernels times dense GEMMs only (no grouped expert "
        "GEMMs); use --mode runtime or --from-samples"));
  }
  ProfileGrids grids = DefaultKernelProfileGrids(cuda);
  if (!o.b_grid.empty()) grids.b = o.b_grid;
  if (!o.s_grid.empty()) grids.s = o.s_grid;
  if (!o.c_grid.empty()) grids.c = o.c_grid;
  if (grids.b.front() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--b-grid ", grids.b.front(), ": must include 1 (the single-sequence layer)"));
  }
  const std::string calib_dir = o.calib_dir.empty() ? costmodel::DefaultCalibDir() : o.calib_dir;
  const std::string out_path =
      !o.out.empty() ? o.out
                     : costmodel::BundledProfilePath(calib_dir, gpu->name, spec.name, *dtype, 1);
  if (fs::is_directory(out_path)) {
    return absl::InvalidArgumentError(absl::StrCat("--out ", out_path, ": is a directory"));
  }
  SPECPLAN_RETURN_IF_ERROR(CheckNotShipped(o.out.empty() ? "no --out: default path" : "--out",
                                           out_path, ShippedCalibDirs(calib_dir), o.force));
  const std::string libtorch = TORCH_VERSION;
  const std::string root =
      !o.kernels_dir.empty()
          ? o.kernels_dir
          : (fs::path(out_path).parent_path() / "kernels").lexically_normal().string();
  const fs::path folder =
      fs::path(root) / GpuFolder(gpu->name) / absl::StrCat("specplan-libtorch", libtorch);
  const std::vector<std::string> drafters = costmodel::DefaultComposedDrafters(spec);
  SPECPLAN_ASSIGN_OR_RETURN(KernelGrid grid, KernelGridFor(spec, drafters, grids, 0));
  const double limit = MemoryLimit(cuda, *gpu);
  if (const GridMemory big = LargestPoint(grid, *dtype, kFusedAttention && cuda);
      limit > 0 && big.bytes > limit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the grid does not fit in memory: %s needs %.2f GiB, the %s has %.2f GiB %s; lower "
        "--b-grid, --s-grid or --c-grid",
        big.where, big.bytes / (1 << 30), cuda ? "GPU" : "host", limit / (1 << 30),
        cuda ? "(90 % of its memory)" : "available"));
  }

  // Timer and tensors.
  std::vector<std::string> notes;
  TimerRequest request;
  request.cuda = cuda;
  request.device_index = run.info.index;
  request.choice = o.timer;
  if (cuda) request.host_sync = [] { torch::cuda::synchronize(); };
  SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PassTimer> timer, MakePassTimer(request, &notes));
  const int repeats = o.repeats > 0 ? o.repeats : (cuda ? 20 : 7);
  const double min_sample_s = 2e-4;
  torch::NoGradGuard no_grad;
  const auto opts = torch::TensorOptions().dtype(TorchType(*dtype)).device(run.device);
  KernelTimer kt(timer.get(), o.warmup, repeats, min_sample_s, o.cancel);
  Progress progress(o, 0);
  for (const std::string& n : notes) progress.Say(n);
  progress.Say(absl::StrFormat("device %s, %s, timer %s, LibTorch %s, %d repeats (median)",
                               run.info.name, dtype_name, timer->Name(), libtorch, repeats));

  // Pilot: the smallest and the largest GEMM, for the time estimate.
  CostModel cm;
  cm.min_sample_s = min_sample_s;
  cm.calls_per_point = o.warmup + 1 + repeats;
  {
    KernelTimer pilot(timer.get(), 1, 3, min_sample_s, o.cancel);
    const GemmShape& wide = *std::max_element(
        grid.gemm_shapes.begin(), grid.gemm_shapes.end(),
        [](const GemmShape& a, const GemmShape& b) { return a.n * a.k < b.n * b.k; });
    const int64_t m = grid.gemm_m.back();
    torch::Tensor x = torch::randn({m, wide.k}, opts), w = torch::randn({wide.n, wide.k}, opts);
    SPECPLAN_ASSIGN_OR_RETURN(const KernelTiming big, pilot.Time([&] { at::linear(x, w); }));
    torch::Tensor x1 = torch::randn({1, 16}, opts), w1 = torch::randn({16, 16}, opts);
    SPECPLAN_ASSIGN_OR_RETURN(const KernelTiming small, pilot.Time([&] { at::linear(x1, w1); }));
    cm.flops = GemmFlops(m, wide) / (big.median_ms * 1e-3);
    cm.floor_s = small.median_ms * 1e-3;
  }
  int coarsen = 0;
  double estimate = EstimateSeconds(grid, cm);
  if (o.budget_s > 0) {
    while (estimate > o.budget_s && coarsen < 6) {
      SPECPLAN_ASSIGN_OR_RETURN(KernelGrid coarser,
                                KernelGridFor(spec, drafters, grids, ++coarsen));
      if (coarser.points() == grid.points()) {  // nothing left to thin
        --coarsen;
        break;
      }
      grid = std::move(coarser);
      estimate = EstimateSeconds(grid, cm);
    }
    if (coarsen > 0) {
      progress.Say(absl::StrFormat(
          "--budget-s %.0f: grid thinned %d time(s) to %d points (estimated %s)%s", o.budget_s,
          coarsen, grid.points(), FormatSeconds(estimate),
          estimate > o.budget_s ? "; this is the coarsest grid, still over the budget" : ""));
    }
  }
  progress = Progress(o, estimate);
  progress.Say(absl::StrFormat("%d kernel points, estimated %s; tables into %s", grid.points(),
                               FormatSeconds(estimate), folder.string()));

  // Timing, one table at a time; each written (atomically) as soon as it is complete.
  CalibrationResult result;
  result.kernels_dir = folder.string();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("--kernels-dir ", folder.string(), ": ", ec.message()));
  }
  const std::string gemm_source = "torch_linear";
  const std::string attention_source = kFusedAttention ? "torch_sdpa" : "torch_matmul_softmax";
  double done_estimate = 0;
  auto source_txt = [&]() {
    std::string t = absl::StrCat("device ", run.info.name, "\n", "dtype ", dtype_name, "\n",
                                 "libtorch ", libtorch, "\n", "timer ", timer->Name(), "\n");
    absl::StrAppend(&t,
                    absl::StrFormat("timing: %d warm-up calls, then the median of %d samples, "
                                    "each >= %.1f ms of back-to-back calls divided by the calls; "
                                    "min_ms and max_ms are the extreme samples\n",
                                    o.warmup, repeats, min_sample_s * 1e3),
                    "measured by: calibrate --kernels --gpu ", gpu->name, " --model ", spec.name,
                    "\n", "tables: ", absl::StrJoin(result.tables, ", "), "\n");
    return t;
  };
  auto finish_table = [&](const std::string& file, const std::string& csv) -> absl::Status {
    SPECPLAN_RETURN_IF_ERROR(WriteFileAtomically((folder / file).string(), csv));
    result.tables.push_back(file);
    SPECPLAN_RETURN_IF_ERROR(WriteFileAtomically((folder / "SOURCE.txt").string(), source_txt()));
    progress.Say(
        absl::StrFormat("wrote %s (%.1f s so far)", (folder / file).string(), progress.elapsed()));
    return absl::OkStatus();
  };
  auto interrupted = [&](const absl::Status& st) {
    if (st.code() != absl::StatusCode::kCancelled) return st;
    return absl::CancelledError(
        absl::StrCat("interrupted; no profile written. Tables finished: ",
                     result.tables.empty() ? "none" : absl::StrJoin(result.tables, ", "), " in ",
                     folder.string()));
  };

  {  // GEMMs
    progress.Say(absl::StrFormat("gemm: %d widths x %d m = %d points (m %d .. %d)",
                                 grid.gemm_shapes.size(), grid.gemm_m.size(), grid.gemm_points(),
                                 grid.gemm_m.front(), grid.gemm_m.back()));
    progress.StartTable();
    std::vector<GemmRow> rows;
    for (const GemmShape& s : grid.gemm_shapes) {
      torch::Tensor w = torch::randn({s.n, s.k}, opts);
      for (int64_t m : grid.gemm_m) {
        torch::Tensor x = torch::randn({m, s.k}, opts);
        auto t = kt.Time([&] { at::linear(x, w); });
        if (!t.ok()) return interrupted(t.status());
        rows.push_back({m, s.n, s.k, *t});
        done_estimate += cm.Point(GemmFlops(m, s));
        progress.Update("gemm", static_cast<int64_t>(rows.size()), grid.gemm_points(),
                        done_estimate);
      }
    }
    SPECPLAN_RETURN_IF_ERROR(finish_table("gemm.csv", GemmCsv(gemm_source, rows)));
  }
  AttentionBench ab(opts, o.seed);
  auto attention_table = [&](const std::string& table, const std::string& file,
                             int64_t total) -> absl::Status {
    progress.StartTable();
    std::vector<AttentionRow> rows;
    auto time_one = [&](const AttentionHeads& h, int64_t b, int64_t s, int64_t kv,
                        const std::string& mask, int64_t x) -> absl::Status {
      auto t = kt.Time(ab.Make(h, b, s, kv, mask));
      if (!t.ok()) return interrupted(t.status());
      rows.push_back({b, s, x, h, *t});
      done_estimate += cm.Point(AttentionFlops(h, b, s, kv) / (mask == "causal" ? 2 : 1));
      progress.Update(table, static_cast<int64_t>(rows.size()), total, done_estimate);
      return absl::OkStatus();
    };
    for (const AttentionHeads& h : grid.heads) {
      for (int64_t b : grid.batch) {
        if (table == "generation") {
          for (int64_t kv : grid.kv_len)
            SPECPLAN_RETURN_IF_ERROR(time_one(h, b, 1, kv, "none", kv));
        } else if (table == "context") {
          for (int64_t isl : grid.isl) {
            SPECPLAN_RETURN_IF_ERROR(time_one(h, b, isl, isl, "causal", isl));
          }
        } else {
          for (int64_t s : grid.tree_s) {
            for (int64_t c : grid.tree_c) {
              SPECPLAN_RETURN_IF_ERROR(time_one(h, b, s, c + s, "tree", c + s));
            }
          }
        }
      }
    }
    return finish_table(file, AttentionCsv(table, attention_source, rows));
  };
  progress.Say(absl::StrFormat("generation attention: %d heads x %d b x %d kv_len = %d points",
                               grid.heads.size(), grid.batch.size(), grid.kv_len.size(),
                               grid.generation_points()));
  SPECPLAN_RETURN_IF_ERROR(
      attention_table("generation", "generation_attention.csv", grid.generation_points()));
  progress.Say(absl::StrFormat("context attention: %d heads x %d b x %d isl = %d points",
                               grid.heads.size(), grid.batch.size(), grid.isl.size(),
                               grid.context_points()));
  SPECPLAN_RETURN_IF_ERROR(
      attention_table("context", "context_attention.csv", grid.context_points()));
  progress.Say(absl::StrFormat("tree attention: %d heads x %d b x %d s x %d c = %d points",
                               grid.heads.size(), grid.batch.size(), grid.tree_s.size(),
                               grid.tree_c.size(), grid.tree_points()));
  SPECPLAN_RETURN_IF_ERROR(attention_table("tree", "tree_attention.csv", grid.tree_points()));
  {  // Elementwise ops, as the runtime computes them.
    progress.Say(absl::StrFormat("elementwise: %d ops x %d m = %d points", grid.elementwise.size(),
                                 grid.gemm_m.size(), grid.elementwise_points()));
    progress.StartTable();
    ElementwiseBench eb(spec, opts, grid.gemm_m.back());
    std::vector<ElementwiseRow> rows;
    for (const auto& [op, width] : grid.elementwise) {
      for (int64_t m : grid.gemm_m) {
        auto t = kt.Time(eb.Make(op, m));
        if (!t.ok()) return interrupted(t.status());
        rows.push_back({op, m, width, *t});
        done_estimate += cm.Point(0);
        progress.Update("elementwise", static_cast<int64_t>(rows.size()), grid.elementwise_points(),
                        done_estimate);
      }
    }
    SPECPLAN_RETURN_IF_ERROR(
        finish_table("elementwise.csv", ElementwiseCsv("specplan_runtime_ops", rows)));
  }
  const double timing_s = progress.elapsed();

  // Compose, reading the tables back exactly as the engine tables are read.
  SPECPLAN_ASSIGN_OR_RETURN(const costmodel::EngineKernelTables tables,
                            costmodel::LoadEngineKernelTables(folder.string()));
  costmodel::ComposeOptions co;
  co.tp = 1;
  co.dtype = *dtype;
  co.gpu = gpu->name;
  co.b_grid = grids.b;
  co.s_grid = grids.s;
  co.c_grid = grids.c;
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::Profile p, costmodel::ComposeProfile(tables, spec, co));
  p.model = spec.name;
  p.device_name = run.info.name;
  p.timer = timer->Name();
  for (auto& [k, v] : SoftwareVersions(cuda)) p.software[k] = v;
  if (!cuda) p.software["torch_threads"] = absl::StrCat(at::get_num_threads());
  p.software["composer"] = "calibrate --kernels (costmodel::ComposeProfile)";
  p.software["calibrate"] =
      absl::StrFormat("mode=kernels repeats=%d warmup=%d seed=%d device=%s points=%d coarsen=%d",
                      repeats, o.warmup, o.seed, cuda ? "cuda" : "cpu", grid.points(), coarsen);
  p.provenance =
      absl::StrCat("measured here: LibTorch ", libtorch,
                   " kernels timed by calibrate --kernels on ", run.info.name, " (", timer->Name(),
                   "), composed by the engine-grade composer from ", folder.string());
  p.notes.push_back(absl::StrFormat(
      "kernel tables: %s (%d points, %.1f s of timing); engine 'specplan' = LibTorch's kernels, "
      "the ones specplan's runtime runs",
      folder.string(), grid.points(), timing_s));
  p.created_utc = UtcTimestamp();
  SPECPLAN_RETURN_IF_ERROR(costmodel::SaveProfile(p, out_path));
  result.profile = std::move(p);
  result.profile_path = out_path;
  result.notes = notes;
  progress.Say(absl::StrFormat(
      "done in %.1f s wall (%.1f s timing %d points); profile %s",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(), timing_s,
      grid.points(), out_path));
  return result;
}

}  // namespace specplan::profiler
