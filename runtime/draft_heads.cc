#include "runtime/draft_heads.h"

#include <torch/torch.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/safetensors.h"
#include "util/atomic_file.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

constexpr int64_t kMaxHeads = 64;

absl::Status InRange(const std::string& name, const char* field, int64_t v, int64_t lo,
                     int64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": ", field, " = ", v, ": must be in [", lo, ", ", hi, "]"));
}

std::string ShapeText(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

}  // namespace

absl::StatusOr<DraftHeadsConfig> ParseDraftHeadsConfig(const nlohmann::json& j,
                                                       const std::string& name) {
  DraftHeadsConfig c;
  struct Field {
    const char* key;
    int64_t* out;
    bool required;
  };
  for (const Field& f :
       {Field{"num_heads", &c.num_heads, true}, Field{"hidden_size", &c.hidden_size, true},
        Field{"vocab_size", &c.vocab_size, true}, Field{"causal_state", &c.causal_state, false},
        Field{"causal_rank", &c.causal_rank, false}}) {
    if (!f.required && j.is_object() && !j.contains(f.key)) continue;
    absl::StatusOr<int64_t> v = json_util::GetInt(j, f.key);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(name, ": ", v.status().message()));
    *f.out = *v;
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateDraftHeadsConfig(c, name));
  return c;
}

absl::Status ValidateDraftHeadsConfig(const DraftHeadsConfig& c, const std::string& name) {
  SPECPLAN_RETURN_IF_ERROR(InRange(name, "num_heads", c.num_heads, 1, kMaxHeads));
  SPECPLAN_RETURN_IF_ERROR(InRange(name, "hidden_size", c.hidden_size, 1, 1 << 16));
  SPECPLAN_RETURN_IF_ERROR(InRange(name, "vocab_size", c.vocab_size, 2, 1 << 24));
  SPECPLAN_RETURN_IF_ERROR(InRange(name, "causal_state", c.causal_state, 0, 1 << 16));
  if (c.causal_state > 0) {
    SPECPLAN_RETURN_IF_ERROR(InRange(name, "causal_rank", c.causal_rank, 1, 1 << 16));
  }
  return absl::OkStatus();
}

nlohmann::json DraftHeadsConfigJson(const DraftHeadsConfig& c) {
  nlohmann::json j;
  j["num_heads"] = c.num_heads;
  j["hidden_size"] = c.hidden_size;
  j["vocab_size"] = c.vocab_size;
  j["causal_state"] = c.causal_state;
  if (c.causal_state > 0) j["causal_rank"] = c.causal_rank;
  return j;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> DraftHeads::Shapes() const {
  const int64_t h = config_.hidden_size, s = config_.causal_state, r = config_.causal_rank,
                V = config_.vocab_size;
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (int64_t k = 0; k < config_.num_heads; ++k) {
    out.push_back({absl::StrCat("parallel.", k, ".weight"), {h, h}});
    out.push_back({absl::StrCat("parallel.", k, ".bias"), {h}});
  }
  if (s > 0) {
    out.push_back({"causal.gru.weight_ih", {3 * s, h}});
    out.push_back({"causal.gru.weight_hh", {3 * s, s}});
    out.push_back({"causal.gru.bias_ih", {3 * s}});
    out.push_back({"causal.gru.bias_hh", {3 * s}});
    out.push_back({"causal.down.weight", {r, h + s}});
    out.push_back({"causal.down.bias", {r}});
    out.push_back({"causal.up.weight", {V, r}});
  }
  return out;
}

void DraftHeads::Index() {
  w_.clear();
  b_.clear();
  for (int64_t k = 0; k < config_.num_heads; ++k) {
    w_.push_back(parallel_[2 * k].second);
    b_.push_back(parallel_[2 * k + 1].second);
  }
  if (has_causal()) {
    gru_wih_ = causal_[0].second;
    gru_whh_ = causal_[1].second;
    gru_bih_ = causal_[2].second;
    gru_bhh_ = causal_[3].second;
    down_w_ = causal_[4].second;
    down_b_ = causal_[5].second;
    up_w_ = causal_[6].second;
  }
}

namespace {

absl::Status CheckFitsTarget(const DraftHeadsConfig& c, const Transformer& target,
                             const std::string& name) {
  if (c.hidden_size != target.config().hidden_size || c.vocab_size != target.config().vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": hidden_size = ", c.hidden_size, ", vocab_size = ", c.vocab_size,
        ": the target has ", target.config().hidden_size, " and ", target.config().vocab_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DraftHeads>> DraftHeads::CreateRandom(const DraftHeadsConfig& config,
                                                                     const Transformer& target,
                                                                     uint64_t seed,
                                                                     bool trainable) {
  SPECPLAN_RETURN_IF_ERROR(ValidateDraftHeadsConfig(config, "draft heads"));
  SPECPLAN_RETURN_IF_ERROR(CheckFitsTarget(config, target, "draft heads"));
  std::unique_ptr<DraftHeads> d(new DraftHeads(config, target));
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::TensorOptions to =
      torch::TensorOptions().dtype(target.options().dtype).device(target.options().device);
  const double gru_bound = config.causal_state > 0 ? 1.0 / std::sqrt(config.causal_state) : 0;
  for (const auto& [name, shape] : d->Shapes()) {
    torch::Tensor t;
    if (name.rfind("parallel.", 0) == 0 || name == "causal.up.weight" ||
        name == "causal.down.bias") {
      t = torch::zeros(shape, f32);
    } else if (name == "causal.down.weight") {
      t = at::randn(shape, gen, f32) * 0.02;
    } else {  // GRU
      t = (at::rand(shape, gen, f32) * 2 - 1) * gru_bound;
    }
    t = t.to(to).contiguous();
    if (trainable) t.requires_grad_(true);
    (name.rfind("parallel.", 0) == 0 ? d->parallel_ : d->causal_).push_back({name, t});
  }
  d->Index();
  return d;
}

absl::StatusOr<std::unique_ptr<DraftHeads>> DraftHeads::Load(const std::string& dir,
                                                             const Transformer& target) {
  const std::string config_path = dir + "/config.json";
  SPECPLAN_ASSIGN_OR_RETURN(nlohmann::json j, json_util::ReadJsonFile(config_path));
  SPECPLAN_ASSIGN_OR_RETURN(DraftHeadsConfig config, ParseDraftHeadsConfig(j, config_path));
  SPECPLAN_RETURN_IF_ERROR(CheckFitsTarget(config, target, config_path));
  std::unique_ptr<DraftHeads> d(new DraftHeads(config, target));
  const torch::TensorOptions to =
      torch::TensorOptions().dtype(target.options().dtype).device(target.options().device);
  for (const char* part : {"parallel", "causal"}) {
    const bool parallel = std::string(part) == "parallel";
    if (!parallel && !d->has_causal()) break;
    const std::string path = absl::StrCat(dir, "/", part, ".safetensors");
    SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(path));
    size_t expected = 0;
    for (const auto& [name, shape] : d->Shapes()) {
      if ((name.rfind("parallel.", 0) == 0) != parallel) continue;
      ++expected;
      absl::StatusOr<torch::Tensor> t = file->Get(name);
      if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", name, ": missing"));
      if (t->sizes().vec() != shape) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": ", name, ": shape ",
                                                       ShapeText(t->sizes().vec()), ", expected ",
                                                       ShapeText(shape)));
      }
      (parallel ? d->parallel_ : d->causal_).push_back({name, t->to(to).contiguous()});
    }
    if (file->Names().size() != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", file->Names().size(), " tensors, expected ", expected));
    }
  }
  d->Index();
  return d;
}

absl::Status DraftHeads::Save(const std::string& dir, torch::ScalarType dtype,
                              const std::map<std::string, std::string>& metadata) const {
  auto cast = [dtype](const Named& in) {
    Named out;
    for (const auto& [name, t] : in) out.push_back({name, t.detach().to(torch::kCPU, dtype)});
    return out;
  };
  SPECPLAN_RETURN_IF_ERROR(
      WriteSafetensors(dir + "/parallel.safetensors", cast(parallel_), metadata));
  if (has_causal()) {
    SPECPLAN_RETURN_IF_ERROR(
        WriteSafetensors(dir + "/causal.safetensors", cast(causal_), metadata));
  }
  return WriteFileAtomically(dir + "/config.json", DraftHeadsConfigJson(config_).dump(1) + "\n");
}

int64_t DraftHeads::NumParameters() const {
  int64_t n = 0;
  for (const Named* g : {&parallel_, &causal_}) {
    for (const auto& [name, t] : *g) n += t.numel();
  }
  return n;
}

torch::Tensor DraftHeads::HeadStates(const torch::Tensor& hidden) const {
  std::vector<torch::Tensor> rows;
  rows.reserve(w_.size());
  for (size_t k = 0; k < w_.size(); ++k) {
    rows.push_back(hidden + torch::silu(torch::linear(hidden, w_[k], b_[k])));
  }
  return torch::stack(rows, -2);
}

torch::Tensor DraftHeads::Logits(const torch::Tensor& states) const {
  return torch::linear(states, target_->lm_head()).to(torch::kFloat32);
}

torch::Tensor DraftHeads::CausalStep(const torch::Tensor& state,
                                     const torch::Tensor& tokens) const {
  const torch::Tensor x = torch::embedding(target_->embedding(), tokens);
  const torch::Tensor h =
      state.defined() ? state : torch::zeros({x.size(0), config_.causal_state}, x.options());
  return torch::gru_cell(x, h, gru_wih_, gru_whh_, gru_bih_, gru_bhh_);
}

torch::Tensor DraftHeads::Correction(const torch::Tensor& head_state,
                                     const torch::Tensor& state) const {
  const torch::Tensor z =
      torch::silu(torch::linear(torch::cat({head_state, state}, -1), down_w_, down_b_));
  return torch::linear(z, up_w_).to(torch::kFloat32);
}

}  // namespace specplan::runtime
