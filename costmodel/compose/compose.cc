#include "costmodel/compose/compose.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/profile/engines.h"
#include "costmodel/step/drafter_arch.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

absl::Status CheckGrid(const std::vector<int64_t>& grid, const char* flag, int64_t min) {
  if (grid.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": empty"));
  for (size_t i = 0; i < grid.size(); ++i) {
    if (grid[i] < min) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " ", grid[i], ": must be >= ", min));
    }
    if (i > 0 && grid[i] <= grid[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " ", grid[i], ": the grid must be strictly increasing"));
    }
  }
  return absl::OkStatus();
}

// Registry names a device string carries, most specific first.
struct DeviceRule {
  std::vector<const char*> all;  // every one must appear (lower case)
  const char* gpu;
};
const std::vector<DeviceRule>& DeviceRules() {
  static const std::vector<DeviceRule> rules = {
      {{"h100", "pcie"}, "h100-pcie"},
      {{"h100"}, "h100-sxm"},
      {{"h200"}, "h200"},
      {{"gb200"}, "b200"},
      {{"b200"}, "b200"},
      {{"a100", "40gb"}, "a100-40g"},
      {{"a100"}, "a100-80g"},
      {{"l40s"}, "l40s"},
      {{"rtx pro 6000"}, "rtx-pro-6000"},
      {{"a6000"}, "a6000"},
      {{"4090"}, "rtx4090"},
      {{"mi300x"}, "mi300x"},
      {{"nvidia l4"}, "l4"},
  };
  return rules;
}

// "<N>GB" in a device string, in bytes; 0 when absent.
double MemoryFromDevice(const std::string& device) {
  const std::string lower = absl::AsciiStrToLower(device);
  for (size_t at = lower.find("gb"); at != std::string::npos; at = lower.find("gb", at + 1)) {
    size_t start = at;
    while (start > 0 && absl::ascii_isdigit(static_cast<unsigned char>(lower[start - 1]))) --start;
    int64_t gb = 0;
    if (start < at && absl::SimpleAtoi(lower.substr(start, at - start), &gb) && gb > 0) {
      return static_cast<double>(gb) * 1e9;
    }
  }
  return 0;
}

}  // namespace

const std::vector<int64_t>& DefaultComposeBGrid() {
  static const std::vector<int64_t> g = {1,  2,  3,  4,  6,  8,   12,  16,
                                         24, 32, 48, 64, 96, 128, 192, 256};
  return g;
}
const std::vector<int64_t>& DefaultComposeSGrid() {
  static const std::vector<int64_t> g = {1,  2,  3,  4,  5,  6,  8,  10,  12,  16,
                                         20, 24, 32, 40, 48, 64, 96, 128, 192, 256};
  return g;
}
const std::vector<int64_t>& DefaultComposeCGrid() {
  static const std::vector<int64_t> g = {0, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  return g;
}

absl::StatusOr<GpuSpec> GpuForKernelTables(const EngineKernelTables& t) {
  const std::string device = absl::AsciiStrToLower(t.device);
  if (!device.empty()) {
    for (const DeviceRule& rule : DeviceRules()) {
      if (std::all_of(rule.all.begin(), rule.all.end(),
                      [&](const char* w) { return absl::StrContains(device, w); })) {
        return LookupGpu(rule.gpu);
      }
    }
  }
  const std::string folder = absl::StrReplaceAll(absl::AsciiStrToLower(t.gpu_folder), {{"_", "-"}});
  if (auto g = LookupGpu(folder); g.ok()) return g;
  if (auto g = LookupGpu(folder.substr(0, folder.find('-'))); g.ok()) return g;
  // Not in the registry: what the tables themselves show the GPU achieving.
  GpuSpec g;
  g.name = folder.empty() ? "unknown-gpu" : folder;
  g.description = absl::StrCat(t.device.empty() ? g.name : t.device,
                               " (achieved figures derived from its GEMM table)");
  g.peak_flops = t.gemm.peak_flops();
  g.mem_bw = t.gemm.stream_bandwidth();
  g.mem_bytes = MemoryFromDevice(t.device);
  if (g.mem_bw <= 0 || g.mem_bytes <= 0) {
    return absl::NotFoundError(absl::StrCat(
        "device '", t.device, "' (folder ", t.gpu_folder,
        ") is not in the GPU registry and its tables do not give a spec (",
        g.mem_bw <= 0 ? "no memory-bound GEMM of >= 256 MiB" : "no memory size in the device name",
        "): pass --gpu NAME or a JSON spec"));
  }
  return g;
}

std::string DefaultMoeDtype(const ModelSpec& model, DType table_dtype) {
  if (model.model_type == "gpt_oss") return "w4a16_mxfp4";
  switch (table_dtype) {
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat8:
      return "fp8";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat32:
      return "float32";
  }
  return "bfloat16";
}

namespace {

// Bytes of one expert weight element in a moe_dtype: MXFP4 is 4-bit values with one 8-bit scale
// per 32 (4.25 bits), fp8 one byte, the rest two.
double MoeWeightBytes(const std::string& dtype) {
  if (dtype == "w4a16_mxfp4") return 4.25 / 8;
  if (absl::StartsWith(dtype, "fp8")) return 1;
  if (dtype == "float32") return 4;
  return 2;
}

// Expert weight bytes one GPU streams and the expert FLOPs it computes for one MoE block over
// `tokens` tokens, under uniform routing: each GPU holds experts / moe_ep experts of width
// inter / moe_tp and a token picks topk of all experts.
std::pair<double, double> MoeWork(const MoeShape& s, double tokens) {
  const double E = static_cast<double>(s.experts), k = static_cast<double>(s.topk);
  const double distinct = E / static_cast<double>(s.moe_ep) * (1 - std::pow(1 - k / E, tokens));
  const double width = static_cast<double>(s.inter) / static_cast<double>(s.moe_tp);
  const double h = static_cast<double>(s.hidden);
  const double bytes = distinct * 3 * h * width * MoeWeightBytes(s.dtype);
  const double flops = 2 * 3 * tokens * k * h * width / static_cast<double>(s.moe_ep);
  return {bytes, flops};
}

double LogDistance(const MoeShape& a, const MoeShape& b) {
  double d = 0;
  for (const auto& [x, y] : {std::pair{a.hidden, b.hidden}, std::pair{a.inter, b.inter},
                             std::pair{a.topk, b.topk}, std::pair{a.experts, b.experts}}) {
    d += std::abs(std::log(static_cast<double>(x) / static_cast<double>(y)));
  }
  return d;
}

// The MoE block a model reads: the exact shape when held, else the nearest of the same dtype,
// shard and distribution.
absl::Status ResolveMoeBlock(const EngineKernelTables& tables, const ModelSpec& m,
                             const MoeCompose& o, MoeShape* want, MoeShape* ref) {
  if (!tables.moe.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        "--kernels ", tables.dir, ": no moe.csv; --model ", m.name,
        " is a mixture of experts, whose MoE block is priced from the engine's measured MoE "
        "table"));
  }
  if (o.ep < 1 || m.tp % o.ep != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--moe-ep ", o.ep, ": must divide --tp ", m.tp));
  }
  if (m.experts % o.ep != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--moe-ep ", o.ep, ": must divide the expert count ", m.experts));
  }
  *want = MoeShape{o.dtype.empty() ? DefaultMoeDtype(m, tables.dtype) : o.dtype,
                   m.hidden,
                   m.expert_ffn,
                   m.experts_active,
                   m.experts,
                   m.tp / o.ep,
                   o.ep,
                   o.distribution};
  const MoeTable& t = *tables.moe;
  if (t.Holds(*want)) {
    *ref = *want;
    return absl::OkStatus();
  }
  double best = std::numeric_limits<double>::infinity();
  std::set<std::string> held;  // what the table holds of this dtype (or at all)
  for (const MoeShape& s : t.Shapes()) {
    if (s.dtype != want->dtype) continue;
    held.insert(absl::StrCat("tp", s.moe_tp, " ep", s.moe_ep, " ", s.distribution));
    if (s.moe_tp != want->moe_tp || s.moe_ep != want->moe_ep ||
        s.distribution != want->distribution) {
      continue;
    }
    const double d = LogDistance(s, *want);
    if (d < best) {
      best = d;
      *ref = s;
    }
  }
  if (std::isfinite(best)) return absl::OkStatus();
  if (held.empty()) {
    std::set<std::string> dtypes;
    for (const MoeShape& s : t.Shapes()) dtypes.insert(s.dtype);
    return absl::NotFoundError(absl::StrCat(t.source(), ": no MoE block of moe_dtype ", want->dtype,
                                            " (held: ", absl::StrJoin(dtypes, ", "),
                                            "); pass --moe-dtype"));
  }
  return absl::NotFoundError(absl::StrCat(
      t.source(), ": no ", want->dtype, " MoE block at moe_tp_size ", want->moe_tp,
      ", moe_ep_size ", want->moe_ep, ", distribution ", want->distribution, " (held for ",
      want->dtype, ": ", absl::StrJoin(held, ", "), "); change --tp, --moe-ep or --routing"));
}

}  // namespace

absl::StatusOr<ComposedCost> ComposedCost::Create(const EngineKernelTables* tables, ModelSpec model,
                                                  GpuSpec gpu, bool unmeasured_terms,
                                                  const MoeCompose& moe) {
  if (model.dtype != tables->dtype) {
    return absl::InvalidArgumentError(absl::StrCat("--dtype ", DTypeName(model.dtype),
                                                   ": the kernel tables hold ",
                                                   DTypeName(tables->dtype), " timings only"));
  }
  if (const std::string why = TensorParallelProblem(model, gpu, model.tp); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--tp ", model.tp, ": ", why));
  }
  ComposedCost c(tables, std::move(model), std::move(gpu), unmeasured_terms);
  if (c.model_.is_moe()) {
    SPECPLAN_RETURN_IF_ERROR(ResolveMoeBlock(*tables, c.model_, moe, &c.moe_shape_, &c.moe_ref_));
  }
  c.heads_ = {c.model_.n_q / c.model_.tp, c.model_.kv_heads_per_gpu(), c.model_.head_dim};
  for (const AttentionTable* table : {&tables->generation, &tables->context}) {
    if (!table->Holds(c.heads_)) {
      std::vector<std::string> held;
      for (const AttentionHeads& h : table->HeadConfigs()) held.push_back(h.ToString());
      return absl::NotFoundError(absl::StrCat(table->source(),
                                              ": no rows for the model's heads per GPU, num_heads/"
                                              "num_key_value_heads/head_dim = ",
                                              c.heads_.ToString(), " (", c.model_.name, " at tp ",
                                              c.model_.tp, "); the table holds ",
                                              absl::StrJoin(held, ", ")));
    }
  }
  // The bandwidth unmeasured kernels stream at: the table's, capped at the GPU's DRAM peak (a
  // table whose large GEMMs beat the peak measured them from the L2 cache).
  c.bandwidth_ = tables->gemm.stream_bandwidth() > 0
                     ? std::min(tables->gemm.stream_bandwidth(), c.gpu_.mem_bw)
                     : c.gpu_.mem_bw;
  return c;
}

double ComposedCost::MoeScale(double tokens) const {
  if (!moe_scaled()) return 1;
  const auto [ref_bytes, ref_flops] = MoeWork(moe_ref_, tokens);
  const auto [bytes, flops] = MoeWork(moe_shape_, tokens);
  const double t_mem = ref_bytes / gpu_.mem_bw, t_flops = ref_flops / gpu_.peak_flops;
  const double f = t_mem / (t_mem + t_flops);
  return f * bytes / ref_bytes + (1 - f) * flops / ref_flops;
}

absl::StatusOr<AttentionLookup> ComposedCost::MoeBlock(double tokens) const {
  SPECPLAN_ASSIGN_OR_RETURN(AttentionLookup r, tables_->moe->Seconds(moe_ref_, tokens));
  r.seconds *= MoeScale(tokens);
  return r;
}

absl::StatusOr<AttentionLookup> ComposedCost::AllReduces(double tokens, bool* measured) const {
  AttentionLookup r;
  *measured = false;
  if (model_.tp == 1) return r;
  if (tables_->allreduce.has_value() && tables_->allreduce->Holds(model_.tp)) {
    SPECPLAN_ASSIGN_OR_RETURN(
        r, tables_->allreduce->Seconds(model_.tp, tokens * static_cast<double>(model_.hidden)));
    r.seconds *= 2 * static_cast<double>(model_.layers);
    *measured = true;
    return r;
  }
  r.seconds = CommunicationSeconds(model_, gpu_, tokens);
  return r;
}

double ComposedCost::ElementwiseSeconds(double bytes) const {
  return std::max(tables_->gemm.floor_s(), bytes / bandwidth_);
}

double ComposedCost::Elementwise(const std::string& op, int64_t m, double bytes) const {
  if (tables_->elementwise.has_value()) {
    if (const std::optional<double> t =
            tables_->elementwise->Seconds(op, m, ElementwiseWidth(model_, op))) {
      return *t;
    }
  }
  return ElementwiseSeconds(bytes);
}

absl::StatusOr<AttentionLookup> ComposedCost::Attention(int64_t b, int64_t s, int64_t c) const {
  const double bd = static_cast<double>(b), sd = static_cast<double>(s),
               cd = static_cast<double>(c);
  SPECPLAN_ASSIGN_OR_RETURN(AttentionLookup memory,
                            tables_->generation.Seconds(heads_, bd, cd + sd));
  if (s == 1) return memory;
  if (const auto& tree = tables_->tree;
      tree.has_value() && s >= tree->min_s() && s <= tree->max_s() && tree->Holds(heads_)) {
    return tree->Seconds(heads_, bd, s, cd + sd);
  }
  const double pairs = sd * cd + sd * (sd + 1) / 2;
  const double n_eq = (std::sqrt(8 * pairs + 1) - 1) / 2;
  SPECPLAN_ASSIGN_OR_RETURN(AttentionLookup compute, tables_->context.Seconds(heads_, bd, n_eq));
  AttentionLookup r = compute.seconds > memory.seconds ? compute : memory;
  r.extrapolated = memory.extrapolated || compute.extrapolated;
  if (r.extrapolated) r.why = memory.extrapolated ? memory.why : compute.why;
  return r;
}

absl::StatusOr<ComposedPass> ComposedCost::Pass(int64_t b, int64_t s, int64_t c) const {
  if (b < 1 || s < 1 || c < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pass b = ", b, ", s = ", s, ", c = ", c, ": need b, s >= 1 and c >= 0"));
  }
  const ModelSpec& M = model_;
  if (M.is_moe()) return MoePass(b, s, c);
  const int64_t tp = M.tp, m = b * s, h = M.hidden;
  const int64_t q_width = M.n_q * M.head_dim / tp, kv_width = M.kv_heads_per_gpu() * M.head_dim;
  const int64_t ffn = M.ffn / tp;
  const GemmTable& g = tables_->gemm;
  ComposedPass p;
  SPECPLAN_ASSIGN_OR_RETURN(const double qkv, g.Seconds(m, q_width + 2 * kv_width, h));
  SPECPLAN_ASSIGN_OR_RETURN(const double o, g.Seconds(m, h, q_width));
  SPECPLAN_ASSIGN_OR_RETURN(const double up, g.Seconds(m, (M.gated_mlp ? 2 : 1) * ffn, h));
  SPECPLAN_ASSIGN_OR_RETURN(const double down, g.Seconds(m, h, ffn));
  SPECPLAN_ASSIGN_OR_RETURN(const AttentionLookup attn, Attention(b, s, c));
  SPECPLAN_ASSIGN_OR_RETURN(p.lm_head_s, g.Seconds(m, M.vocab / tp, h));
  const double L = static_cast<double>(M.layers);
  p.gemm_s = L * (qkv + o + up + down);
  p.attention_s = L * attn.seconds;
  p.extrapolated = attn.extrapolated;
  p.why = attn.why;
  if (unmeasured_) {
    const double bp = M.bytes_per_element(), md = static_cast<double>(m);
    double add_norm = 0;
    double layer = AttentionElementwise(m, q_width, kv_width, &add_norm);
    layer += Elementwise("act_mul", m, (M.gated_mlp ? 3 : 2) * md * static_cast<double>(ffn) * bp);
    p.elementwise_s = L * layer +
                      Elementwise("embedding", m, 2 * md * static_cast<double>(h) * bp) +
                      add_norm;  // gather; final add + RMSNorm
  }
  SPECPLAN_RETURN_IF_ERROR(AddAllReduces(m, &p));
  return p;
}

double ComposedCost::AttentionElementwise(int64_t m, int64_t q_width, int64_t kv_width,
                                          double* add_norm_s) const {
  const ModelSpec& M = model_;
  const double bp = M.bytes_per_element(), md = static_cast<double>(m);
  const double hd = static_cast<double>(M.hidden), qk = static_cast<double>(q_width + kv_width);
  *add_norm_s = Elementwise("add_norm", m, 4 * md * hd * bp);  // add + RMSNorm
  double layer = 2 * *add_norm_s;
  if (ElementwiseWidth(M, "qk_norm") > 0) layer += Elementwise("qk_norm", m, 2 * md * qk * bp);
  layer += Elementwise("rope", m, 2 * md * qk * bp);  // RoPE on q, k
  layer += Elementwise("kv_store", m, 2 * 2 * md * static_cast<double>(kv_width) * bp);
  return layer;
}

absl::Status ComposedCost::AddAllReduces(int64_t m, ComposedPass* p) const {
  if (model_.tp <= 1) return absl::OkStatus();
  bool measured = false;
  SPECPLAN_ASSIGN_OR_RETURN(const AttentionLookup comm,
                            AllReduces(static_cast<double>(m), &measured));
  p->comm_s = comm.seconds;
  if (comm.extrapolated && !p->extrapolated) {
    p->extrapolated = true;
    p->why = comm.why;
  }
  return absl::OkStatus();
}

absl::StatusOr<ComposedPass> ComposedCost::MoePass(int64_t b, int64_t s, int64_t c) const {
  const ModelSpec& M = model_;
  const int64_t tp = M.tp, m = b * s, h = M.hidden;
  const int64_t q_width = M.n_q * M.head_dim / tp, kv_width = M.kv_heads_per_gpu() * M.head_dim;
  const int64_t shared = M.shared_expert_ffn / tp, dense = M.dense_ffn / tp;
  const GemmTable& g = tables_->gemm;
  ComposedPass p;
  SPECPLAN_ASSIGN_OR_RETURN(const double qkv, g.Seconds(m, q_width + 2 * kv_width, h));
  SPECPLAN_ASSIGN_OR_RETURN(const double o, g.Seconds(m, h, q_width));
  SPECPLAN_ASSIGN_OR_RETURN(const double router, g.Seconds(m, M.experts, h));
  double shared_s = 0, dense_s = 0;
  if (shared > 0) {
    SPECPLAN_ASSIGN_OR_RETURN(const double up, g.Seconds(m, 2 * shared, h));
    SPECPLAN_ASSIGN_OR_RETURN(const double down, g.Seconds(m, h, shared));
    shared_s = up + down;
  }
  if (M.dense_layers > 0) {
    SPECPLAN_ASSIGN_OR_RETURN(const double up, g.Seconds(m, 2 * dense, h));
    SPECPLAN_ASSIGN_OR_RETURN(const double down, g.Seconds(m, h, dense));
    dense_s = up + down;
  }
  SPECPLAN_ASSIGN_OR_RETURN(const AttentionLookup attn, Attention(b, s, c));
  SPECPLAN_ASSIGN_OR_RETURN(const AttentionLookup block, MoeBlock(static_cast<double>(m)));
  SPECPLAN_ASSIGN_OR_RETURN(p.lm_head_s, g.Seconds(m, M.vocab / tp, h));
  const double L = static_cast<double>(M.layers), Ld = static_cast<double>(M.dense_layers);
  const double Lm = L - Ld;
  p.gemm_s = L * (qkv + o) + Lm * (router + shared_s) + Ld * dense_s;
  p.attention_s = L * attn.seconds;
  p.moe_s = Lm * block.seconds;
  p.extrapolated = attn.extrapolated || block.extrapolated;
  p.why = attn.extrapolated ? attn.why : block.why;
  if (unmeasured_) {
    const double bp = M.bytes_per_element(), md = static_cast<double>(m);
    const double hd = static_cast<double>(h);
    double add_norm = 0;
    const double layer = AttentionElementwise(m, q_width, kv_width, &add_norm);
    // The routed experts' SiLU-mul is inside the measured block; the shared experts' and the
    // dense layers' are not.
    const double shared_act =
        shared > 0 ? Elementwise("act_mul", m, 3 * md * static_cast<double>(shared) * bp) : 0;
    const double dense_act =
        dense > 0 ? Elementwise("act_mul", m, 3 * md * static_cast<double>(dense) * bp) : 0;
    p.elementwise_s = L * layer + Lm * shared_act + Ld * dense_act +
                      Elementwise("embedding", m, 2 * md * hd * bp)  // gather
                      + add_norm;                                    // final add + RMSNorm
  }
  SPECPLAN_RETURN_IF_ERROR(AddAllReduces(m, &p));
  return p;
}

absl::StatusOr<ComposedPass> ComposedDrafterPass(const ComposedCost& layers, const DrafterArch& a,
                                                 int64_t b, int64_t s, int64_t c) {
  SPECPLAN_ASSIGN_OR_RETURN(ComposedPass p, layers.Pass(b, s, c));
  const ModelSpec& M = layers.model();
  const int64_t m = b * s, h = M.hidden, tp = M.tp;
  const GemmTable& g = layers.tables().gemm;
  if (a.qkv_in > 0 && a.qkv_in != h) {  // the first layer's QKV reads a wider input (eagle3: 2h)
    const int64_t qkv_n = (M.n_q * M.head_dim) / tp + 2 * M.kv_heads_per_gpu() * M.head_dim;
    SPECPLAN_ASSIGN_OR_RETURN(const double plain, g.Seconds(m, qkv_n, h));
    SPECPLAN_ASSIGN_OR_RETURN(const double wide, g.Seconds(m, qkv_n, a.qkv_in));
    p.gemm_s += wide - plain;
  }
  if (a.fc_in > 0 && (a.fc_every_forward || s > 1)) {
    SPECPLAN_ASSIGN_OR_RETURN(const double fc, g.Seconds(m, h, a.fc_in));
    p.gemm_s += fc;
  }
  return p;
}

const std::vector<int64_t>& DrafterComposeBGrid() {
  static const std::vector<int64_t> g = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  return g;
}
const std::vector<int64_t>& DrafterComposeSGrid() {
  static const std::vector<int64_t> g = {1, 2, 3, 4, 5, 6, 8, 12, 16, 32};
  return g;
}

absl::StatusOr<DrafterProfile> ComposeDrafterTable(const EngineKernelTables& tables,
                                                   const DrafterArch& arch, const GpuSpec& gpu,
                                                   const ComposeOptions& o, int64_t* extrapolated) {
  if (!arch.has_network()) {
    return absl::InvalidArgumentError(
        absl::StrCat("drafter = '", arch.name, "': has no network to compose (host time only)"));
  }
  auto layers = ComposedCost::Create(&tables, arch.layers, gpu, o.unmeasured_terms);
  if (!layers.ok()) {
    return absl::Status(layers.status().code(),
                        absl::StrCat("drafter = '", arch.name, "': ", layers.status().message()));
  }
  const std::vector<int64_t>& bg = DrafterComposeBGrid();
  const std::vector<int64_t>& sg = DrafterComposeSGrid();
  const std::vector<int64_t>& cg = o.c_grid.empty() ? DefaultComposeCGrid() : o.c_grid;
  DrafterProfile d;
  d.arch = arch;
  d.table.s_grid = sg;
  d.table.c_grid = cg;
  d.table.b_grid.assign(bg.begin() + 1, bg.end());
  for (size_t bi = 0; bi < bg.size(); ++bi) {
    std::vector<std::vector<double>> layer(cg.size(), std::vector<double>(sg.size()));
    for (size_t ci = 0; ci < cg.size(); ++ci) {
      for (size_t si = 0; si < sg.size(); ++si) {
        auto p = ComposedDrafterPass(*layers, arch, bg[bi], sg[si], cg[ci]);
        if (!p.ok()) {
          return absl::Status(p.status().code(),
                              absl::StrCat("drafter = '", arch.name, "': ", p.status().message()));
        }
        if (p->extrapolated && extrapolated != nullptr) ++*extrapolated;
        layer[ci][si] = p->total_s();
      }
    }
    if (bi == 0) {
      d.table.seconds = std::move(layer);
    } else {
      d.table.batch_seconds.push_back(std::move(layer));
    }
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateLatencyTable(d.table));
  return d;
}

namespace {

// The engine the profile names (the option, else the folder's; they must agree) after checking
// the options' tp and grids.
absl::StatusOr<std::string> ComposeEngine(const EngineKernelTables& tables,
                                          const ComposeOptions& o) {
  // Engine: the option, else the folder's; either way a known engine, and they must agree.
  std::string engine = o.engine;
  if (engine.empty()) {
    auto parsed = ParseEngine(tables.engine);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--kernels ", tables.dir, ": the folder name does not start with an engine (",
          parsed.status().message(), "); pass --engine"));
    }
    engine = *parsed;
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(engine, ParseEngine(engine));
    auto folder = ParseEngine(tables.engine);
    if (folder.ok() && *folder != engine) {
      return absl::InvalidArgumentError(absl::StrCat("--engine ", o.engine, ": --kernels ",
                                                     tables.dir, " holds ", *folder,
                                                     " kernel timings"));
    }
  }
  if (engine == kRuntimeEngine && tables.engine != kRuntimeEngine) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--engine ", engine,
        ": specplan's own profiles are composed from the tables calibrate --kernels writes "
        "(a specplan-* folder) or measured by calibrate --mode runtime"));
  }
  if (o.tp < 1) return absl::InvalidArgumentError(absl::StrCat("--tp ", o.tp, ": must be >= 1"));
  const std::vector<int64_t>& bg = o.b_grid.empty() ? DefaultComposeBGrid() : o.b_grid;
  const std::vector<int64_t>& sg = o.s_grid.empty() ? DefaultComposeSGrid() : o.s_grid;
  const std::vector<int64_t>& cg = o.c_grid.empty() ? DefaultComposeCGrid() : o.c_grid;
  SPECPLAN_RETURN_IF_ERROR(CheckGrid(bg, "--b-grid", 1));
  SPECPLAN_RETURN_IF_ERROR(CheckGrid(sg, "--s-grid", 1));
  SPECPLAN_RETURN_IF_ERROR(CheckGrid(cg, "--c-grid", 0));
  if (bg.front() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--b-grid ", bg.front(), ": must start at 1 (the single-sequence layer)"));
  }
  return engine;
}

}  // namespace

absl::StatusOr<Profile> ComposeProfile(const EngineKernelTables& tables, const std::string& model,
                                       const ComposeOptions& o) {
  SPECPLAN_RETURN_IF_ERROR(ComposeEngine(tables, o).status());
  SPECPLAN_ASSIGN_OR_RETURN(ModelSpec spec, ResolveModel(model));
  return ComposeProfile(tables, std::move(spec), o);
}

absl::StatusOr<Profile> ComposeProfile(const EngineKernelTables& tables, ModelSpec spec,
                                       const ComposeOptions& o) {
  SPECPLAN_ASSIGN_OR_RETURN(const std::string engine, ComposeEngine(tables, o));
  const std::vector<int64_t>& bg = o.b_grid.empty() ? DefaultComposeBGrid() : o.b_grid;
  const std::vector<int64_t>& sg = o.s_grid.empty() ? DefaultComposeSGrid() : o.s_grid;
  const std::vector<int64_t>& cg = o.c_grid.empty() ? DefaultComposeCGrid() : o.c_grid;
  spec.dtype = o.dtype;
  spec.tp = o.tp;
  GpuSpec gpu;
  if (o.gpu.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(gpu, GpuForKernelTables(tables));
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(gpu, ResolveGpu(o.gpu));
  }
  // Both forms: the table is priced by the one the options ask for, the notes compare the two.
  SPECPLAN_ASSIGN_OR_RETURN(
      const ComposedCost measured_only,
      ComposedCost::Create(&tables, spec, gpu, /*unmeasured_terms=*/false, o.moe));
  SPECPLAN_ASSIGN_OR_RETURN(
      const ComposedCost with_all,
      ComposedCost::Create(&tables, spec, gpu, /*unmeasured_terms=*/true, o.moe));
  const ComposedCost& cost = o.unmeasured_terms ? with_all : measured_only;

  LatencyTable table;
  table.s_grid = sg;
  table.c_grid = cg;
  table.b_grid.assign(bg.begin() + 1, bg.end());
  int64_t extrapolated = 0, cells = 0;
  std::string first_why;
  for (size_t bi = 0; bi < bg.size(); ++bi) {
    std::vector<std::vector<double>> layer(cg.size(), std::vector<double>(sg.size()));
    for (size_t ci = 0; ci < cg.size(); ++ci) {
      for (size_t si = 0; si < sg.size(); ++si) {
        SPECPLAN_ASSIGN_OR_RETURN(const ComposedPass p, cost.Pass(bg[bi], sg[si], cg[ci]));
        ++cells;
        if (p.extrapolated) {
          if (!o.allow_extrapolation) {
            return absl::OutOfRangeError(absl::StrCat(
                "cell b = ", bg[bi], ", s = ", sg[si], ", c = ", cg[ci],
                " is outside the measured tables (", p.why,
                "); narrow --b-grid / --s-grid / --c-grid, or leave out --no-extrapolate"));
          }
          if (first_why.empty()) first_why = p.why;
          ++extrapolated;
        }
        layer[ci][si] = p.total_s();
      }
    }
    if (bi == 0) {
      table.seconds = std::move(layer);
    } else {
      table.batch_seconds.push_back(std::move(layer));
    }
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateLatencyTable(table));

  Profile prof = ProfileFor(spec, gpu);
  prof.device_name = tables.device;
  prof.timer = "external";
  prof.engine = engine;
  prof.engine_version = tables.engine_version;
  prof.software = {
      {"engine", absl::StrCat(engine, " ", tables.engine_version)},
      {"gemm_kernels", absl::StrJoin(tables.gemm.kernel_sources(), ", ")},
      {"generation_attention_kernels", absl::StrJoin(tables.generation.kernel_sources(), ", ")},
      {"context_attention_kernels", absl::StrJoin(tables.context.kernel_sources(), ", ")},
      {"composer", "specplan profiles compose"}};
  if (tables.tree.has_value()) {
    prof.software["tree_attention_kernels"] = absl::StrJoin(tables.tree->kernel_sources(), ", ");
  }
  bool allreduce_measured = false;
  if (spec.tp > 1) {
    SPECPLAN_RETURN_IF_ERROR(cost.AllReduces(1, &allreduce_measured).status());
    if (allreduce_measured) {
      prof.software["allreduce_kernels"] = absl::StrJoin(tables.allreduce->kernel_sources(), ", ");
    }
  }
  if (spec.is_moe()) prof.software["moe_kernels"] = tables.moe->KernelSource(cost.moe_reference());
  prof.created_utc = UtcTimestamp();
  prof.default_model = "table";
  prof.table = std::move(table);
  const std::string source = tables.source.empty() ? "source not recorded" : tables.source;
  prof.provenance =
      absl::StrCat("composed from ", engine, " ", tables.engine_version, " kernel timings on ",
                   tables.device.empty() ? gpu.name : tables.device, " (", source, ", ",
                   tables.gpu_folder, "/", engine, "-", tables.engine_version, ")");
  if (spec.is_moe()) {
    const MoeShape& want = cost.moe_shape();
    const MoeShape& ref = cost.moe_reference();
    absl::StrAppend(&prof.provenance, "; MoE block from moe.csv (", ref.ToString(), ")");
    if (cost.moe_scaled()) {
      absl::StrAppend(&prof.provenance, ", scaled to the model's ", want.ToString(),
                      " by expert weight bytes and FLOPs (the table does not hold that shape)");
    }
  }
  if (!tables.licence.empty()) {
    prof.notes.push_back(absl::StrCat("kernel data: ", source, ", licensed under the ",
                                      tables.licence, "; keep this attribution"));
  }
  if (spec.is_moe()) {
    const MoeShape& want = cost.moe_shape();
    const MoeShape& ref = cost.moe_reference();
    prof.notes.push_back(absl::StrCat(
        "T(b, s, c) = embedding + L x (QKV, O GEMMs + attention + unmeasured terms) + ",
        spec.layers - spec.dense_layers,
        " MoE layers x (router GEMM (m, experts, h) + the MoE block of moe.csv at num_tokens = m",
        spec.shared_expert_ffn > 0 ? " + shared-expert gate/up and down GEMMs" : "", ")",
        spec.dense_layers > 0
            ? absl::StrCat(" + ", spec.dense_layers,
                           " dense layers (first_k_dense_replace) x gate/up, down GEMMs")
            : "",
        " + final norm + LM head GEMM; the block holds routing, grouped expert GEMMs, their "
        "activation and the combine"));
    prof.notes.push_back(absl::StrCat(
        "MoE block: ", tables.moe->source(), " ", ref.ToString(), " (kernel ",
        tables.moe->KernelSource(ref),
        "), linear in num_tokens between measured counts; expert "
        "shard moe_tp_size = tp / moe_ep = ",
        want.moe_tp, ", moe_ep_size = ", want.moe_ep, "; routing distribution ", want.distribution,
        want.distribution == "balanced"
            ? " (the default: it assumes nothing about the traffic and touches the most distinct "
              "experts per token count, so its MoE tax bounds the skewed measurements'; "
              "--routing power_law_1.01 or power_law_1.2 reads those)"
            : " (--routing)"));
    if (cost.moe_scaled()) {
      prof.notes.push_back(absl::StrFormat(
          "MoE shape not in the table: the model needs %s; priced from the nearest measured "
          "shape %s (smallest sum of |log ratio| of hidden, expert width, top-k and experts), "
          "scaled at each token count by f x bytes ratio + (1 - f) x FLOPs ratio of the expert "
          "work (uniform routing; f = the reference's memory-bound share on the %s): x%.3f at "
          "1 token, x%.3f at 64, x%.3f at 4096",
          want.ToString(), ref.ToString(), gpu.name, cost.MoeScale(1), cost.MoeScale(64),
          cost.MoeScale(4096)));
    }
  } else {
    prof.notes.push_back(
        "T(b, s, c) = embedding + L x (QKV, O, gate/up, down GEMMs at m = b s + attention + "
        "unmeasured terms) + final norm + LM head GEMM; QKV and gate/up fused as the engines run "
        "them");
  }
  const AttentionHeads heads{spec.n_q / spec.tp, spec.kv_heads_per_gpu(), spec.head_dim};
  if (tables.tree.has_value() && tables.tree->Holds(heads)) {
    prof.notes.push_back(absl::StrCat(
        "attention at s = 1: the generation table at kv_len = c + 1; at s = ", tables.tree->min_s(),
        " .. ", tables.tree->max_s(),
        ": the tree-attention table (measured under a tree mask) at kv_len = c + s; at other s > "
        "1: max(generation table at kv_len = c + s, context table at the isl that scores as many "
        "(query, key) pairs as s tokens over c cached ones plus a causal block)"));
  } else {
    prof.notes.push_back(
        "attention at s = 1: the generation table at kv_len = c + 1; at s > 1 (tree verification, "
        "in neither table): max(generation table at kv_len = c + s, context table at the isl that "
        "scores as many (query, key) pairs as s tokens over c cached ones plus a causal block)");
  }
  // What the unmeasured terms add at one reference shape.
  SPECPLAN_ASSIGN_OR_RETURN(const ComposedPass bare, measured_only.Pass(1, 1, 1024));
  SPECPLAN_ASSIGN_OR_RETURN(const ComposedPass full, with_all.Pass(1, 1, 1024));
  const std::string priced = absl::StrFormat(
      "priced as memory-bound kernels, max(%.2f us launch floor, bytes / %.0f GB/s), both from "
      "the GEMM table",
      tables.gemm.floor_s() * 1e6, with_all.bandwidth() / 1e9);
  prof.notes.push_back(absl::StrFormat(
      "%s (norms, q/k norms, RoPE, SiLU-mul, residual adds, KV-cache write, embedding, final "
      "norm) %s; at b = 1, s = 1, c = 1024 they add %.3f ms to %.3f ms of GEMM + attention + LM "
      "head (+%.1f %%)%s",
      tables.elementwise.has_value() ? "elementwise terms" : "unmeasured terms",
      tables.elementwise.has_value()
          ? absl::StrCat("from ", tables.elementwise->source(),
                         " where it measured the op at the model's width, the rest ", priced)
          : priced,
      full.elementwise_s * 1e3, bare.measured_s() * 1e3,
      100 * full.elementwise_s / bare.measured_s(),
      o.unmeasured_terms ? "" : "; this profile leaves them out"));
  // A decode below the weight-streaming floor means the GEMM table read weights from the cache.
  const double floor_s = EstimateRoofline(spec, gpu, 1, 0).terms.total_bytes() / gpu.mem_bw;
  if (full.total_s() < floor_s) {
    prof.notes.push_back(absl::StrFormat(
        "caution: T(1, 1, 1024) = %.3f ms is below the weight-streaming floor of %.3f ms (model "
        "bytes / the %s's %.0f GB/s): this GEMM table's times for large weights beat the DRAM "
        "peak, so they were likely measured with weights resident in the L2 cache",
        full.total_s() * 1e3, floor_s * 1e3, gpu.name, gpu.mem_bw / 1e9));
  }
  if (spec.tp > 1 && allreduce_measured) {
    prof.notes.push_back(
        absl::StrCat("all-reduces at tp > 1: two per layer of [m x hidden] elements from ",
                     tables.allreduce->source(), " (", spec.tp, " GPUs, ",
                     absl::StrJoin(tables.allreduce->kernel_sources(), ", "),
                     "), linear in message_size between measured sizes"));
  } else if (spec.tp > 1) {
    prof.notes.push_back(
        "all-reduces at tp > 1: priced by the roofline's ring all-reduce over the GPU's link "
        "(not in the tables)");
  }
  prof.notes.push_back(absl::StrCat(
      extrapolated, " of ", cells, " cells read a table past its largest measured point",
      extrapolated > 0 ? absl::StrCat(" (first: ", first_why,
                                      "); attention there follows the line through the last two "
                                      "measured lengths, or grows in proportion to b")
                       : ""));
  prof.notes.push_back(absl::StrFormat(
      "each table series is read as its isotonic (non-decreasing) fit along tokens, since more "
      "tokens never cost less: it moved a GEMM time by up to %.1f %%, a generation-attention "
      "time by up to %.1f %%, a context-attention time by up to %.1f %% from the measured value",
      100 * tables.gemm.max_change(), 100 * tables.generation.max_change(),
      100 * tables.context.max_change()));
  if (spec.is_moe()) {
    prof.notes.push_back(absl::StrFormat(
        "the MoE table's series are read the same way (sorted by num_tokens, repeats averaged, "
        "isotonic): it moved an MoE block time by up to %.1f %% somewhere in the table",
        100 * tables.moe->max_change()));
  }
  if (const size_t repeats =
          tables.gemm.repeats() + tables.context.repeats() + tables.generation.repeats();
      repeats > 0) {
    prof.notes.push_back(absl::StrCat(repeats,
                                      " table rows repeated a shape measured before; each "
                                      "shape's repeats were averaged"));
  }
  // The drafters, composed from the same tables.
  std::vector<std::string> drafter_names =
      o.drafters.empty() ? DefaultComposedDrafters(spec) : o.drafters;
  if (drafter_names.size() == 1 && drafter_names[0] == "none") drafter_names.clear();
  int64_t drafter_extrapolated = 0;
  for (const std::string& name : drafter_names) {
    SPECPLAN_ASSIGN_OR_RETURN(const DrafterArch arch, DrafterArchFor(name, spec));
    if (!arch.has_network()) continue;  // ngram, suffix: nothing to compose
    SPECPLAN_ASSIGN_OR_RETURN(prof.drafters[name],
                              ComposeDrafterTable(tables, arch, gpu, o, &drafter_extrapolated));
  }
  if (!prof.drafters.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, d] : prof.drafters) names.push_back(name);
    prof.notes.push_back(absl::StrCat(
        "drafters composed from the same tables: ", absl::StrJoin(names, ", "),
        " (one forward of b sequences x s tokens over c; costmodel/step/drafter_arch.h gives each "
        "one's shapes); ",
        drafter_extrapolated, " drafter cells read a table past its largest measured point"));
  }
  prof.notes.push_back(
      "not in the table: sampling, the host's scheduling and launch gaps between kernels "
      "(CUDA-graph replay is assumed); the step model (costmodel/step/step_model.h) adds them");
  return prof;
}

}  // namespace specplan::costmodel
