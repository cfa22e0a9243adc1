#include "costmodel/compose/compose.h"

#include <algorithm>
#include <cmath>
#include <ctime>

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

absl::StatusOr<ComposedCost> ComposedCost::Create(const EngineKernelTables* tables, ModelSpec model,
                                                  GpuSpec gpu, bool unmeasured_terms) {
  if (model.is_moe()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model ", model.name,
                     ": a mixture-of-experts model; the kernel tables hold dense "
                     "GEMMs only (no grouped expert GEMMs)"));
  }
  if (model.dtype != tables->dtype) {
    return absl::InvalidArgumentError(absl::StrCat("--dtype ", DTypeName(model.dtype),
                                                   ": the kernel tables hold ",
                                                   DTypeName(tables->dtype), " timings only"));
  }
  if (const std::string why = TensorParallelProblem(model, gpu, model.tp); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--tp ", model.tp, ": ", why));
  }
  ComposedCost c(tables, std::move(model), std::move(gpu), unmeasured_terms);
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
    const double hd = static_cast<double>(h), qk = static_cast<double>(q_width + kv_width);
    const double add_norm = Elementwise("add_norm", m, 4 * md * hd * bp);  // add + RMSNorm
    double layer = 2 * add_norm;
    if (ElementwiseWidth(M, "qk_norm") > 0) layer += Elementwise("qk_norm", m, 2 * md * qk * bp);
    layer += Elementwise("rope", m, 2 * md * qk * bp);  // RoPE on q, k
    layer += Elementwise("kv_store", m, 2 * 2 * md * static_cast<double>(kv_width) * bp);
    layer += Elementwise("act_mul", m, (M.gated_mlp ? 3 : 2) * md * static_cast<double>(ffn) * bp);
    p.elementwise_s = L * layer + Elementwise("embedding", m, 2 * md * hd * bp)  // gather
                      + add_norm;  // final add + RMSNorm
  }
  if (tp > 1) p.comm_s = CommunicationSeconds(M, gpu_, static_cast<double>(m));
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
  SPECPLAN_ASSIGN_OR_RETURN(const ComposedCost measured_only,
                            ComposedCost::Create(&tables, spec, gpu, /*unmeasured_terms=*/false));
  SPECPLAN_ASSIGN_OR_RETURN(const ComposedCost with_all,
                            ComposedCost::Create(&tables, spec, gpu, /*unmeasured_terms=*/true));
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
  prof.created_utc = UtcTimestamp();
  prof.default_model = "table";
  prof.table = std::move(table);
  const std::string source = tables.source.empty() ? "source not recorded" : tables.source;
  prof.provenance =
      absl::StrCat("composed from ", engine, " ", tables.engine_version, " kernel timings on ",
                   tables.device.empty() ? gpu.name : tables.device, " (", source, ", ",
                   tables.gpu_folder, "/", engine, "-", tables.engine_version, ")");
  if (!tables.licence.empty()) {
    prof.notes.push_back(absl::StrCat("kernel data: ", source, ", licensed under the ",
                                      tables.licence, "; keep this attribution"));
  }
  prof.notes.push_back(
      "T(b, s, c) = embedding + L x (QKV, O, gate/up, down GEMMs at m = b s + attention + "
      "unmeasured terms) + final norm + LM head GEMM; QKV and gate/up fused as the engines run "
      "them");
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
  if (spec.tp > 1) {
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
