// The decoder-only transformer: weights, RoPE, attention over the KV cache with a tree mask, the
// llama and gpt_neox blocks, and the causal and tree forwards. Over 500 lines because the two
// block families share the attention and cache code here; splitting them would duplicate it.
#include "runtime/transformer.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/hardware/model_spec.h"
#include "runtime/layer_ops.h"
#include "runtime/safetensors.h"
#include "util/check.h"
#include "util/enum_names.h"
#include "util/status_macros.h"

// SDPA with native GQA (enable_gqa) arrived in LibTorch 2.5.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define SPECPLAN_SDPA_GQA 1
#else
#define SPECPLAN_SDPA_GQA 0
#endif

namespace specplan::runtime {
namespace {

std::string ShapeString(at::IntArrayRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// HF rope init (default / linear / llama3) on rotary_dim channels.
torch::Tensor InverseFrequencies(const ModelConfig& c) {
  const int64_t dim = c.rotary_dim();
  std::vector<float> inv(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    double f = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(dim));
    const RopeScaling& r = c.rope_scaling;
    if (r.type == RopeScalingType::kLinear) {
      f /= r.factor;
    } else if (r.type == RopeScalingType::kLlama3) {
      const double old_len = static_cast<double>(r.original_max_position_embeddings);
      const double low_wavelen = old_len / r.low_freq_factor;
      const double high_wavelen = old_len / r.high_freq_factor;
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f = f / r.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * f / r.factor + smooth * f;
      }
    }
    inv[i] = static_cast<float>(f);
  }
  return torch::from_blob(inv.data(), {dim / 2}, torch::kFloat32).clone();
}

bool IgnoredCheckpointTensor(const std::string& name) {
  return absl::EndsWith(name, "rotary_emb.inv_freq") || absl::EndsWith(name, ".attention.bias") ||
         absl::EndsWith(name, ".attention.masked_bias");
}

}  // namespace

// The dtypes a run computes in, over the cost model's one table of dtype names
// (costmodel::ParseDType, DTypeName): fp32, bf16 and fp16 and their aliases; fp8 is a cost-model
// dtype the runtime does not compute in.
absl::StatusOr<torch::ScalarType> ParseDtype(const std::string& name) {
  SPECPLAN_ASSIGN_OR_RETURN(const costmodel::DType dtype, costmodel::ParseDType(name));
  switch (dtype) {
    case costmodel::DType::kFloat32:
      return torch::kFloat32;
    case costmodel::DType::kBFloat16:
      return torch::kBFloat16;
    case costmodel::DType::kFloat16:
      return torch::kFloat16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("dtype = \"", name, "\": the runtime computes in fp32, bf16 or fp16"));
  }
}

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (absl::StartsWith(name, "cuda")) {
    if (!torch::cuda::is_available()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device = \"", name, "\": CUDA is not available in this LibTorch build / machine"));
    }
    try {
      return torch::Device(name);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("device = \"", name, "\": ", e.what()));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device = \"", name, "\": expected cpu, cuda or cuda:N"));
}

const char* DtypeName(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32:
      return costmodel::DTypeName(costmodel::DType::kFloat32);
    case torch::kBFloat16:
      return costmodel::DTypeName(costmodel::DType::kBFloat16);
    case torch::kFloat16:
      return costmodel::DTypeName(costmodel::DType::kFloat16);
    default:
      return "other";
  }
}

Transformer::Transformer(ModelConfig config, RuntimeOptions options)
    : config_(std::move(config)), options_(options) {}

void Transformer::Allocate(bool trainable) {
  std::optional<c10::InferenceMode> guard;
  if (!trainable) guard.emplace();
  const auto opts = torch::TensorOptions().dtype(options_.dtype).device(options_.device);
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, d = c.head_dim, f = c.intermediate_size, V = c.vocab_size;
  auto add = [&](const std::string& name, torch::Tensor* t, std::vector<int64_t> shape) {
    *t = torch::empty(shape, opts);
    named_.emplace_back(name, *t);
  };
  // Inference models: the named tensors `parts` become consecutive row blocks of one new tensor
  // *fused (one GEMM for all of them); named_ keeps the blocks, so loading and init fill it.
  auto fuse = [&](torch::Tensor* fused, std::initializer_list<torch::Tensor*> parts) {
    if (trainable) return;
    int64_t rows = 0;
    for (torch::Tensor* p : parts) rows += p->size(0);
    std::vector<int64_t> shape = (*parts.begin())->sizes().vec();
    shape[0] = rows;
    *fused = torch::empty(shape, opts);
    int64_t at = 0;
    for (torch::Tensor* p : parts) {
      torch::Tensor block = fused->narrow(0, at, p->size(0));
      for (auto& [name, t] : named_) {
        if (t.is_same(*p)) t = block;
      }
      at += p->size(0);
      *p = block;
    }
  };
  const bool neox = c.family == ArchFamily::kGptNeox;
  const std::string base = neox ? "gpt_neox." : "model.";
  add(base + (neox ? "embed_in.weight" : "embed_tokens.weight"), &embed_, {V, h});
  layers_.resize(static_cast<size_t>(c.num_layers));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    Layer& L = layers_[i];
    const std::string p = absl::StrCat(base, "layers.", i, ".");
    add(p + "input_layernorm.weight", &L.ln1_w, {h});
    if (neox) add(p + "input_layernorm.bias", &L.ln1_b, {h});
    add(p + "post_attention_layernorm.weight", &L.ln2_w, {h});
    if (neox) add(p + "post_attention_layernorm.bias", &L.ln2_b, {h});
    if (neox) {
      add(p + "attention.query_key_value.weight", &L.qkv_w, {3 * h, h});
      if (c.attention_bias) add(p + "attention.query_key_value.bias", &L.qkv_b, {3 * h});
      add(p + "attention.dense.weight", &L.o_w, {h, c.q_width()});
      if (c.attention_out_bias) add(p + "attention.dense.bias", &L.o_b, {h});
      add(p + "mlp.dense_h_to_4h.weight", &L.up_w, {f, h});
      if (c.mlp_bias) add(p + "mlp.dense_h_to_4h.bias", &L.up_b, {f});
      add(p + "mlp.dense_4h_to_h.weight", &L.down_w, {h, f});
      if (c.mlp_bias) add(p + "mlp.dense_4h_to_h.bias", &L.down_b, {h});
    } else {
      add(p + "self_attn.q_proj.weight", &L.q_w, {c.q_width(), h});
      if (c.attention_bias) add(p + "self_attn.q_proj.bias", &L.q_b, {c.q_width()});
      add(p + "self_attn.k_proj.weight", &L.k_w, {c.kv_width(), h});
      if (c.attention_bias) add(p + "self_attn.k_proj.bias", &L.k_b, {c.kv_width()});
      add(p + "self_attn.v_proj.weight", &L.v_w, {c.kv_width(), h});
      if (c.attention_bias) add(p + "self_attn.v_proj.bias", &L.v_b, {c.kv_width()});
      fuse(&L.qkv_w, {&L.q_w, &L.k_w, &L.v_w});
      if (c.attention_bias) fuse(&L.qkv_b, {&L.q_b, &L.k_b, &L.v_b});
      add(p + "self_attn.o_proj.weight", &L.o_w, {h, c.q_width()});
      if (c.attention_out_bias) add(p + "self_attn.o_proj.bias", &L.o_b, {h});
      if (c.qk_norm) {
        add(p + "self_attn.q_norm.weight", &L.q_norm_w, {d});
        add(p + "self_attn.k_norm.weight", &L.k_norm_w, {d});
      }
      add(p + "mlp.gate_proj.weight", &L.gate_w, {f, h});
      if (c.mlp_bias) add(p + "mlp.gate_proj.bias", &L.gate_b, {f});
      add(p + "mlp.up_proj.weight", &L.up_w, {f, h});
      if (c.mlp_bias) add(p + "mlp.up_proj.bias", &L.up_b, {f});
      fuse(&L.gate_up_w, {&L.gate_w, &L.up_w});
      if (c.mlp_bias) fuse(&L.gate_up_b, {&L.gate_b, &L.up_b});
      add(p + "mlp.down_proj.weight", &L.down_w, {h, f});
      if (c.mlp_bias) add(p + "mlp.down_proj.bias", &L.down_b, {h});
    }
  }
  add(base + (neox ? "final_layer_norm.weight" : "norm.weight"), &final_w_, {h});
  if (neox) add(base + "final_layer_norm.bias", &final_b_, {h});
  if (c.tie_word_embeddings) {
    lm_head_ = embed_;
  } else {
    add(neox ? "embed_out.weight" : "lm_head.weight", &lm_head_, {V, h});
  }
  inv_freq_ = InverseFrequencies(c).to(options_.device);
}

void Transformer::InitRandom(uint64_t seed, double init_scale) {
  c10::InferenceMode guard;
  const bool on_device = !options_.device.is_cpu();
  at::Generator gen;
  if (on_device) {
    gen = at::globalContext().defaultGenerator(options_.device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  } else {
    gen = at::detail::createCPUGenerator(seed);
  }
  const auto draw_options = torch::TensorOptions()
                                .dtype(torch::kFloat32)
                                .device(on_device ? options_.device : torch::kCPU);
  for (auto& [name, t] : named_) {
    torch::Tensor r = at::randn(t.sizes(), gen, draw_options);
    if (absl::StrContains(name, "layernorm.weight") || absl::StrContains(name, "norm.weight")) {
      r = 1.0 + 0.1 * r;
    } else if (absl::EndsWith(name, ".bias")) {
      r = 0.1 * r;
    } else if (absl::StrContains(name, "embed_tokens") || absl::StrContains(name, "embed_in")) {
      // N(0, 1) embeddings
    } else if (absl::StrContains(name, "lm_head") || absl::StrContains(name, "embed_out")) {
      // Logits with std ~6: peaked next-token distributions like a trained LM's.
      r = r * (6.0 / std::sqrt(static_cast<double>(t.size(1))));
    } else {
      r = r * (init_scale / std::sqrt(static_cast<double>(t.size(1))));
    }
    t.copy_(r);
  }
}

static absl::Status CheckOptions(const RuntimeOptions& options) {
  if (options.dtype != torch::kFloat32 && options.dtype != torch::kBFloat16 &&
      options.dtype != torch::kFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype = ", c10::toString(options.dtype), ": expected fp32, bf16 or fp16"));
  }
#if TORCH_VERSION_MAJOR < 2
  if (options.dtype == torch::kFloat16 && options.device.is_cpu()) {
    return absl::InvalidArgumentError(
        "dtype = fp16: LibTorch 1.x has no fp16 matmul on CPU (use fp32 or bf16, or cuda)");
  }
#endif
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::CreateRandom(
    const ModelConfig& config, uint64_t seed, const RuntimeOptions& options, double init_scale) {
  SPECPLAN_RETURN_IF_ERROR(ValidateModelConfig(config));
  SPECPLAN_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<Transformer> m(new Transformer(config, options));
  m->Allocate();
  m->InitRandom(seed, init_scale);
  return m;
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::CreateTrainable(
    const ModelConfig& config, uint64_t seed, const RuntimeOptions& options, double init_scale) {
  SPECPLAN_RETURN_IF_ERROR(ValidateModelConfig(config));
  SPECPLAN_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<Transformer> m(new Transformer(config, options));
  m->Allocate(/*trainable=*/true);
  m->InitRandom(seed, init_scale);
  for (auto& [name, t] : m->named_) t.requires_grad_(true);
  return m;
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::CreateFromSource(
    const ModelConfig& config, const TensorSource& source, const RuntimeOptions& options) {
  SPECPLAN_RETURN_IF_ERROR(ValidateModelConfig(config));
  SPECPLAN_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<Transformer> m(new Transformer(config, options));
  m->Allocate();
  std::set<std::string> expected;
  c10::InferenceMode guard;
  for (auto& [name, t] : m->named_) {
    expected.insert(name);
    if (!source.Has(name)) {
      return absl::NotFoundError(
          absl::StrCat(name, ": missing from the checkpoint (", source.Describe(), ")"));
    }
    SPECPLAN_ASSIGN_OR_RETURN(torch::Tensor src, source.Get(name));
    if (src.sizes() != t.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": shape ", ShapeString(src.sizes()),
                                                     ", expected ", ShapeString(t.sizes())));
    }
    t.copy_(src);
  }
  for (const std::string& name : source.Names()) {
    if (expected.count(name) || IgnoredCheckpointTensor(name)) continue;
    if (config.tie_word_embeddings && (name == "lm_head.weight" || name == "embed_out.weight")) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(name, ": unexpected tensor for model_type ",
                                                   config.model_type, " with ", config.num_layers,
                                                   " layers (", source.Describe(), ")"));
  }
  return m;
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::CopyTo(
    const RuntimeOptions& options) const {
  SPECPLAN_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<Transformer> m(new Transformer(config_, options));
  m->Allocate();
  c10::InferenceMode guard;
  SPECPLAN_CHECK(m->named_.size() == named_.size());
  for (size_t i = 0; i < named_.size(); ++i) m->named_[i].second.copy_(named_[i].second);
  return m;
}

std::unique_ptr<Transformer> Transformer::Truncated(int64_t num_layers) const {
  SPECPLAN_CHECK(num_layers >= 1 && num_layers <= config_.num_layers);
  ModelConfig c = config_;
  c.num_layers = num_layers;
  c.name = absl::StrCat(config_.name, "[:", num_layers, "]");
  std::unique_ptr<Transformer> m(new Transformer(c, options_));
  m->embed_ = embed_;
  m->final_w_ = final_w_;
  m->final_b_ = final_b_;
  m->lm_head_ = lm_head_;
  m->inv_freq_ = inv_freq_;
  m->layers_.assign(layers_.begin(), layers_.begin() + num_layers);
  const std::string stop = absl::StrCat("layers.", num_layers, ".");
  for (const auto& [name, t] : named_) {
    // keep parameters of layers < num_layers and the non-layer ones
    const size_t pos = name.find("layers.");
    if (pos != std::string::npos) {
      const int64_t idx = std::stoll(name.substr(pos + 7));
      if (idx >= num_layers) continue;
    }
    m->named_.emplace_back(name, t);
  }
  return m;
}

int64_t Transformer::ParameterBytes() const {
  int64_t b = 0;
  for (const auto& [name, t] : named_) b += t.numel() * t.element_size();
  return b;
}

torch::Tensor Transformer::Norm(const torch::Tensor& x, const torch::Tensor& w,
                                const torch::Tensor& b) const {
  if (config_.family == ArchFamily::kGptNeox) {
    return torch::layer_norm(x, {x.size(-1)}, w, b, config_.norm_eps);
  }
  return RmsNorm(x, w, config_.norm_eps);
}

torch::Tensor Transformer::Rope(const torch::Tensor& x, const torch::Tensor& cos,
                                const torch::Tensor& sin) const {
  return ApplyRotary(x, cos, sin, config_.rotary_dim());
}

void Transformer::ProjectQkv(const Layer& L, const torch::Tensor& x, const torch::Tensor& cos,
                             const torch::Tensor& sin, torch::Tensor* q, torch::Tensor* k,
                             torch::Tensor* v) const {
  const ModelConfig& c = config_;
  const int64_t S = x.size(0), d = c.head_dim, nq = c.num_heads, nkv = c.num_kv_heads;
  if (c.family == ArchFamily::kGptNeox) {
    torch::Tensor qkv = torch::linear(x, L.qkv_w, L.qkv_b).view({S, nq, 3 * d});
    *q = qkv.narrow(-1, 0, d);
    *k = qkv.narrow(-1, d, d);
    *v = qkv.narrow(-1, 2 * d, d);
  } else {
    if (L.qkv_w.defined()) {  // one GEMM; q, k and v are column blocks of its output
      const int64_t qw = nq * d, kvw = nkv * d;
      torch::Tensor qkv = torch::linear(x, L.qkv_w, L.qkv_b);
      *q = qkv.narrow(1, 0, qw).view({S, nq, d});
      *k = qkv.narrow(1, qw, kvw).view({S, nkv, d});
      *v = qkv.narrow(1, qw + kvw, kvw).view({S, nkv, d});
    } else {
      *q = torch::linear(x, L.q_w, L.q_b).view({S, nq, d});
      *k = torch::linear(x, L.k_w, L.k_b).view({S, nkv, d});
      *v = torch::linear(x, L.v_w, L.v_b).view({S, nkv, d});
    }
    if (c.qk_norm) {
      *q = Norm(*q, L.q_norm_w, {});
      *k = Norm(*k, L.k_norm_w, {});
    }
  }
  *q = Rope(*q, cos, sin);
  *k = Rope(*k, cos, sin);
}

torch::Tensor Transformer::Attention(const Layer& L, int64_t index, const torch::Tensor& x,
                                     const torch::Tensor& cos, const torch::Tensor& sin,
                                     absl::Span<const Segment> segments,
                                     absl::Span<const Group> groups) const {
  torch::Tensor q, k, v;
  ProjectQkv(L, x, cos, sin, &q, &k, &v);
  auto attend = [&](const Group& g) {  // the group's packed rows, as views
    const torch::Tensor gq = q.narrow(0, g.offset, g.rows);
    const torch::Tensor gk = k.narrow(0, g.offset, g.rows);
    const torch::Tensor gv = v.narrow(0, g.offset, g.rows);
    return g.count == 1 ? AttendSegment(index, gq, gk, gv, segments[g.first])
                        : AttendGroup(index, gq, gk, gv, g);
  };
  torch::Tensor out;
  if (groups.size() == 1) {
    out = attend(groups[0]);
  } else {
    std::vector<torch::Tensor> outs;
    outs.reserve(groups.size());
    for (const Group& g : groups) outs.push_back(attend(g));
    out = torch::cat(outs, 0);
  }
  return torch::linear(out, L.o_w, L.o_b);
}

std::vector<Transformer::Group> Transformer::GroupSegments(std::vector<Segment>* segments) const {
  std::vector<Segment>& segs = *segments;
  std::vector<const KvCache*> caches;
  caches.reserve(segs.size());
  for (const Segment& sg : segs) caches.push_back(sg.cache);
  std::vector<Group> groups;
  size_t i = 0;
  for (const int64_t run : ArenaRuns(caches)) {
    const KvArena* arena = segs[i].cache->arena();
    const size_t end = i + static_cast<size_t>(run);
    Group g;
    g.first = static_cast<int64_t>(i);
    g.count = static_cast<int64_t>(end - i);
    g.offset = segs[i].offset;
    for (size_t j = i; j < end; ++j) {
      g.rows += segs[j].s;
      g.s_max = std::max(g.s_max, segs[j].s);
      g.t_max = std::max(g.t_max, segs[j].start_slot + segs[j].s);
    }
    if (g.count > 1) {
      g.arena = arena;
      g.row0 = segs[i].cache->arena_row();
      bool ragged = false, masked = false, same_start = true, all_masks = true;
      for (size_t j = i; j < end; ++j) {
        const Segment& sg = segs[j];
        ragged = ragged || sg.s != g.s_max;
        masked = masked || sg.mask.defined() || sg.start_slot + sg.s != g.t_max;
        same_start = same_start && sg.start_slot == segs[i].start_slot;
        all_masks = all_masks && sg.mask.defined();
      }
      const torch::Device dev = options_.device;
      const auto longs = torch::TensorOptions().dtype(torch::kInt64).device(dev);
      if (!ragged && same_start) {
        // Every segment s tokens from the same slot (calibrate's cells, a batch of decode steps
        // over equal contexts): the slots from device arange, with no copy from the host, so
        // that a CUDA graph can capture the pass.
        g.write_index =
            ((torch::arange(g.count, longs) + g.row0) * arena->max_len + segs[i].start_slot)
                .unsqueeze(1)
                .add(torch::arange(g.s_max, longs))
                .reshape({-1});
      } else {
        // Ragged trees or contexts: index lists built here and copied to the device (eager
        // passes; a capturing stream cannot copy from pageable host memory).
        std::vector<int64_t> pad, write;
        pad.reserve(g.rows);
        write.reserve(g.rows);
        for (size_t j = i; j < end; ++j) {
          const Segment& sg = segs[j];
          const int64_t b = static_cast<int64_t>(j - i);
          for (int64_t r = 0; r < sg.s; ++r) {
            pad.push_back(b * g.s_max + r);
            write.push_back(sg.cache->arena_row() * arena->max_len + sg.start_slot + r);
          }
        }
        if (ragged) g.pad_index = torch::tensor(pad, torch::kInt64).to(dev);
        g.write_index = torch::tensor(write, torch::kInt64).to(dev);
      }
      if (!ragged && same_start && all_masks) {  // equal [s][T] masks: one stack
        std::vector<torch::Tensor> masks;
        masks.reserve(g.count);
        for (size_t j = i; j < end; ++j) masks.push_back(std::move(segs[j].mask));
        g.mask = torch::stack(masks);
      } else if (masked || ragged) {
        const auto opts = torch::TensorOptions()
                              .dtype(UseFusedAttention() ? options_.dtype : torch::kFloat32)
                              .device(dev);
        g.mask = torch::zeros({g.count, g.s_max, g.t_max}, opts);
        for (size_t j = i; j < end; ++j) {
          Segment& sg = segs[j];
          const int64_t T = sg.start_slot + sg.s;
          torch::Tensor row = g.mask.select(0, static_cast<int64_t>(j - i));
          if (T < g.t_max) {
            row.narrow(1, T, g.t_max - T).fill_(-std::numeric_limits<float>::infinity());
          }
          if (sg.mask.defined()) row.narrow(0, 0, sg.s).narrow(1, 0, T).copy_(sg.mask);
          sg.mask = torch::Tensor();
        }
      }
    }
    groups.push_back(std::move(g));
    i = end;
  }
  return groups;
}

torch::Tensor Transformer::AttendGroup(int64_t index, const torch::Tensor& q,
                                       const torch::Tensor& k, const torch::Tensor& v,
                                       const Group& gr) const {
  const ModelConfig& c = config_;
  const int64_t d = c.head_dim, nq = c.num_heads, nkv = c.num_kv_heads, g = nq / nkv;
  const int64_t b = gr.count, sm = gr.s_max, T = gr.t_max;
  const KvArena& a = *gr.arena;
  a.k[index].view({a.rows * a.max_len, nkv, d}).index_copy_(0, gr.write_index, k);
  a.v[index].view({a.rows * a.max_len, nkv, d}).index_copy_(0, gr.write_index, v);
  // The group's arena rows up to T, [b][T][nkv][d]: strided views, K/V are not copied here.
  const torch::Tensor rows_k = a.k[index].narrow(0, gr.row0, b).narrow(1, 0, T);
  const torch::Tensor rows_v = a.v[index].narrow(0, gr.row0, b).narrow(1, 0, T);
  torch::Tensor qp =
      gr.pad_index.defined()
          ? torch::zeros({b * sm, nq, d}, q.options()).index_copy_(0, gr.pad_index, q)
          : q;
  qp = qp.reshape({b, sm, nq, d});
  torch::Tensor out;  // [b * sm][nq * d]
  if (UseFusedAttention()) {
#if SPECPLAN_SDPA_GQA
    // One SDPA call for the whole group, native GQA, the mask broadcast over heads.
    const torch::Tensor q4 = qp.permute({0, 2, 1, 3});        // [b][nq][sm][d]
    const torch::Tensor keys = rows_k.permute({0, 2, 1, 3});  // [b][nkv][T][d]
    const torch::Tensor values = rows_v.permute({0, 2, 1, 3});
    out = gr.mask.defined()
              ? at::scaled_dot_product_attention(q4, keys, values, gr.mask.unsqueeze(1), 0.0, false,
                                                 {}, true)
              : at::scaled_dot_product_attention(q4, keys, values, {}, 0.0, false, {}, true);
    out = out.permute({0, 2, 1, 3}).reshape({b * sm, nq * d});
#endif
  } else {
    // As AttendSegment's explicit path, with the group's sequences as a batch dimension, one
    // bmm per kv head: a head's keys over the group's arena rows are one uniform batch stride,
    // so bmm reads them in place (a 4-D matmul over sequences and heads would copy them).
    const torch::Tensor qg =
        qp.view({b, sm, nkv, g, d}).permute({0, 2, 3, 1, 4}).reshape({b, nkv, g * sm, d});
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    std::vector<torch::Tensor> heads;
    heads.reserve(nkv);
    for (int64_t j = 0; j < nkv; ++j) {
      torch::Tensor scores = torch::bmm(qg.select(1, j), rows_k.select(2, j).transpose(1, 2))
                                 .view({b, g, sm, T})
                                 .to(torch::kFloat32) *
                             scale;
      if (gr.mask.defined()) scores = scores + gr.mask.view({b, 1, sm, T});
      const torch::Tensor p =
          torch::softmax(scores, -1).to(rows_v.scalar_type()).view({b, g * sm, T});
      heads.push_back(torch::bmm(p, rows_v.select(2, j)));  // [b][g * sm][d]
    }
    out = torch::stack(heads, 1)
              .view({b, nkv, g, sm, d})
              .permute({0, 3, 1, 2, 4})
              .reshape({b * sm, nq * d});
  }
  return gr.pad_index.defined() ? out.index_select(0, gr.pad_index) : out;
}

torch::Tensor Transformer::AttendSegment(int64_t index, const torch::Tensor& q,
                                         const torch::Tensor& k, const torch::Tensor& v,
                                         const Segment& seg) const {
  const ModelConfig& c = config_;
  const int64_t s = seg.s, d = c.head_dim, nq = c.num_heads, nkv = c.num_kv_heads;
  const int64_t g = nq / nkv;
  const torch::Tensor& mask = seg.mask;
  torch::Tensor& kc = seg.cache->k(index);
  torch::Tensor& vc = seg.cache->v(index);
  kc.narrow(0, seg.start_slot, s).copy_(k);
  vc.narrow(0, seg.start_slot, s).copy_(v);
  const int64_t T = seg.start_slot + s;
  torch::Tensor keys = kc.narrow(0, 0, T).permute({1, 0, 2});    // [nkv][T][d]
  torch::Tensor values = vc.narrow(0, 0, T).permute({1, 0, 2});  // [nkv][T][d]
  torch::Tensor out;
  if (UseFusedAttention()) {
#if SPECPLAN_SDPA_GQA
    // SDPA with native GQA (query head h reads kv head h / g, as HF's repeat_kv) over strided
    // views of the cache: K/V are never copied. mask: [s][T] in the model dtype, or undefined when
    // every row sees every slot (a single decode token), so SDPA may pick FlashAttention.
    const torch::Tensor q4 = q.permute({1, 0, 2}).unsqueeze(0);            // [1][nq][s][d]
    const torch::Tensor k4 = keys.unsqueeze(0), v4 = values.unsqueeze(0);  // [1][nkv][T][d]
    out = mask.defined() ? at::scaled_dot_product_attention(q4, k4, v4, mask, 0.0, false, {}, true)
                         : at::scaled_dot_product_attention(q4, k4, v4, {}, 0.0, false, {}, true);
    out = out.squeeze(0).permute({1, 0, 2}).reshape({s, nq * d});
#endif
  } else {
    // Query head j * g + r uses kv head j (HF repeat_kv): fold the g query heads of each kv head
    // into its rows, so K/V are read once per kv head and never copied.
    // mask: [s][T] additive float32, or undefined when s == 1 (the token sees every slot).
    torch::Tensor qg = q.view({s, nkv, g, d}).permute({1, 2, 0, 3}).reshape({nkv, g * s, d});
    torch::Tensor scores = torch::bmm(qg, keys.transpose(1, 2)).view({nkv, g, s, T});
    scores = scores.to(torch::kFloat32) * (1.0 / std::sqrt(static_cast<double>(d)));
    if (mask.defined()) scores = scores + mask;
    torch::Tensor p = torch::softmax(scores, -1).to(values.scalar_type()).view({nkv, g * s, T});
    out = torch::bmm(p, values).view({nkv, g, s, d}).permute({2, 0, 1, 3}).reshape({s, nq * d});
  }
  return out;
}

torch::Tensor Transformer::Mlp(const Layer& L, const torch::Tensor& x) const {
  if (config_.family == ArchFamily::kGptNeox) {
    return torch::linear(Activate(config_.hidden_act, torch::linear(x, L.up_w, L.up_b)), L.down_w,
                         L.down_b);
  }
  if (L.gate_up_w.defined()) {  // one GEMM; gate and up are column blocks of its output
    const int64_t f = config_.intermediate_size;
    torch::Tensor gu = torch::linear(x, L.gate_up_w, L.gate_up_b);
    return torch::linear(
        GatedActivation(config_.hidden_act, gu.narrow(-1, 0, f), gu.narrow(-1, f, f)), L.down_w,
        L.down_b);
  }
  return torch::linear(GatedActivation(config_.hidden_act, torch::linear(x, L.gate_w, L.gate_b),
                                       torch::linear(x, L.up_w, L.up_b)),
                       L.down_w, L.down_b);
}

bool Transformer::UseFusedAttention() const {
#if SPECPLAN_SDPA_GQA
  return options_.device.is_cuda();
#else
  return false;
#endif
}

torch::Tensor Transformer::LayerMask(const torch::Tensor& mask, int64_t s,
                                     int64_t start_slot) const {
  const int64_t T = start_slot + s;
  const bool fused = UseFusedAttention();
  const auto opts = torch::TensorOptions()
                        .dtype(fused ? options_.dtype : torch::kFloat32)
                        .device(options_.device);
  if (mask.defined() && mask.size(1) == T) return mask.to(opts);
  if (mask.defined()) {  // [s][k] block over the last k slots: every earlier slot is visible
    const int64_t k = mask.size(1);
    torch::Tensor full = torch::zeros({s, T}, opts);
    full.narrow(1, T - k, k).copy_(mask);
    return full;
  }
  if (s == 1) return torch::Tensor();  // a single token sees every slot
  // Causal: row i sees slots <= start_slot + i.
  return torch::zeros({s, T}, opts)
      .masked_fill_(torch::ones({s, T}, opts.dtype(torch::kBool)).triu_(start_slot + 1),
                    -std::numeric_limits<float>::infinity());
}

torch::Tensor Transformer::Forward(const torch::Tensor& tokens, const torch::Tensor& positions,
                                   int64_t start_slot, const torch::Tensor& mask,
                                   KvCache* cache) const {
  const ForwardSegment segment{tokens, positions, start_slot, mask, cache};
  return ForwardBatch(absl::MakeConstSpan(&segment, 1));
}

torch::Tensor Transformer::ForwardBatch(absl::Span<const ForwardSegment> segments,
                                        torch::Tensor* hidden) const {
  c10::InferenceMode guard;
  SPECPLAN_CHECK(!segments.empty());
  const torch::Device dev = options_.device;
  std::vector<Segment> segs;
  segs.reserve(segments.size());
  std::vector<torch::Tensor> toks, poss;
  int64_t offset = 0;
  for (const ForwardSegment& f : segments) {
    const int64_t s = f.tokens.size(0);
    SPECPLAN_CHECK(f.cache != nullptr && f.cache->num_layers() == config_.num_layers);
    SPECPLAN_CHECK(s >= 1 && f.positions.size(0) == s);
    SPECPLAN_CHECK(f.start_slot >= 0 && f.start_slot + s <= f.cache->max_len());
    SPECPLAN_CHECK(f.tokens.scalar_type() == torch::kInt32 ||
                   f.tokens.scalar_type() == torch::kInt64);
    if (f.mask.defined()) {
      SPECPLAN_CHECK(f.mask.dim() == 2 && f.mask.size(0) == s && f.mask.size(1) >= s &&
                     f.mask.size(1) <= f.start_slot + s);
    }
    segs.push_back({s, offset, f.start_slot, LayerMask(f.mask, s, f.start_slot), f.cache});
    offset += s;
    // The embedding takes int32 or int64 ids; one segment's are used as they are (no copy when
    // already on the device), several are packed as int64.
    toks.push_back(segments.size() == 1 ? f.tokens.to(dev) : f.tokens.to(dev, torch::kInt64));
    poss.push_back(f.positions.to(dev, torch::kFloat32));
  }
  const torch::Tensor tok = toks.size() == 1 ? toks[0] : torch::cat(toks, 0);
  const torch::Tensor pos = poss.size() == 1 ? poss[0] : torch::cat(poss, 0);
  torch::Tensor cos, sin;
  RopeTables(pos, &cos, &sin);

  const std::vector<Group> groups = GroupSegments(&segs);

  torch::Tensor x = torch::embedding(embed_, tok);  // [S][h]
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    x = FinishBlock(
        L, x,
        Attention(L, static_cast<int64_t>(i), Norm(x, L.ln1_w, L.ln1_b), cos, sin, segs, groups));
  }
  x = Norm(x, final_w_, final_b_);
  if (hidden != nullptr) *hidden = x;
  return torch::linear(x, lm_head_).to(torch::kFloat32);
}

void Transformer::RopeTables(const torch::Tensor& positions, torch::Tensor* cos,
                             torch::Tensor* sin) const {
  // HF casts them to the activation dtype.
  torch::Tensor freqs = torch::outer(positions, inv_freq_);
  torch::Tensor emb = torch::cat({freqs, freqs}, -1).unsqueeze(1);
  *cos = emb.cos().to(options_.dtype);
  *sin = emb.sin().to(options_.dtype);
}

torch::Tensor Transformer::FinishBlock(const Layer& L, const torch::Tensor& x,
                                       const torch::Tensor& a) const {
  if (config_.family == ArchFamily::kGptNeox && config_.use_parallel_residual) {
    return x + a + Mlp(L, Norm(x, L.ln2_w, L.ln2_b));
  }
  torch::Tensor y = x + a;
  return y + Mlp(L, Norm(y, L.ln2_w, L.ln2_b));
}

torch::Tensor Transformer::TrainForward(const torch::Tensor& tokens, torch::Tensor* hidden) const {
  SPECPLAN_CHECK(tokens.dim() == 2 && tokens.size(0) >= 1 && tokens.size(1) >= 1);
  const ModelConfig& c = config_;
  const int64_t B = tokens.size(0), T = tokens.size(1), S = B * T;
  const int64_t d = c.head_dim, nq = c.num_heads, nkv = c.num_kv_heads, g = nq / nkv;
  const torch::Device dev = options_.device;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  torch::Tensor cos, sin;
  RopeTables(torch::arange(T, f32).repeat({B}), &cos, &sin);
  // Causal mask [T][T]: query t sees keys <= t.
  const torch::Tensor causal =
      torch::zeros({T, T}, f32)
          .masked_fill_(torch::ones({T, T}, f32.dtype(torch::kBool)).triu_(1),
                        -std::numeric_limits<float>::infinity());
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));

  torch::Tensor x = torch::embedding(embed_, tokens.reshape({S}).to(dev, torch::kInt64));
  for (const Layer& L : layers_) {
    torch::Tensor q, k, v;
    ProjectQkv(L, Norm(x, L.ln1_w, L.ln1_b), cos, sin, &q, &k, &v);
    // [B][heads][T][d]; query head j * g + r reads kv head j (HF repeat_kv).
    q = q.reshape({B, T, nq, d}).permute({0, 2, 1, 3});
    k = k.reshape({B, T, nkv, d}).permute({0, 2, 1, 3}).repeat_interleave(g, 1);
    v = v.reshape({B, T, nkv, d}).permute({0, 2, 1, 3}).repeat_interleave(g, 1);
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)).to(torch::kFloat32) * scale;
    torch::Tensor p = torch::softmax(scores + causal, -1).to(v.scalar_type());
    torch::Tensor out = torch::matmul(p, v).permute({0, 2, 1, 3}).reshape({S, nq * d});
    x = FinishBlock(L, x, torch::linear(out, L.o_w, L.o_b));
  }
  x = Norm(x, final_w_, final_b_);
  if (hidden != nullptr) *hidden = x.view({B, T, c.hidden_size});
  return torch::linear(x, lm_head_).to(torch::kFloat32).view({B, T, c.vocab_size});
}

torch::Tensor Transformer::ForwardCausal(absl::Span<const planner::TokenId> tokens, int64_t start,
                                         KvCache* cache, torch::Tensor* hidden) const {
  c10::InferenceMode guard;
  const int64_t s = static_cast<int64_t>(tokens.size());
  static_assert(std::is_same_v<planner::TokenId, int32_t>);
  torch::Tensor t =
      torch::from_blob(const_cast<planner::TokenId*>(tokens.data()), {s}, torch::kInt32);
  const ForwardSegment segment{t, torch::arange(start, start + s, torch::kInt64), start,
                               torch::Tensor(), cache};
  return ForwardBatch(absl::MakeConstSpan(&segment, 1), hidden);
}

torch::Tensor TreeAttentionMask(const std::vector<uint8_t>& ancestor_dense, int64_t s, int64_t c,
                                torch::Device device) {
  SPECPLAN_CHECK(static_cast<int64_t>(ancestor_dense.size()) == s * s);
  c10::InferenceMode guard;
  torch::Tensor m = torch::zeros({s, c + s}, torch::kFloat32);
  float* data = m.data_ptr<float>();
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < s; ++i) {
    float* row = data + i * (c + s) + c;
    for (int64_t j = 0; j < s; ++j) {
      if (!ancestor_dense[i * s + j]) row[j] = ninf;
    }
  }
  return m.to(device);
}

torch::Tensor TreeMaskBlock(const std::vector<uint8_t>& ancestor_dense, int64_t s,
                            torch::Device device) {
  SPECPLAN_CHECK(static_cast<int64_t>(ancestor_dense.size()) == s * s);
  c10::InferenceMode guard;
  torch::Tensor visible =
      torch::from_blob(const_cast<uint8_t*>(ancestor_dense.data()), {s, s}, torch::kUInt8)
          .to(device, torch::kBool);  // a copy: the result does not alias ancestor_dense
  return torch::zeros({s, s}, torch::TensorOptions().dtype(torch::kFloat32).device(device))
      .masked_fill_(visible.logical_not(), -std::numeric_limits<float>::infinity());
}

}  // namespace specplan::runtime
