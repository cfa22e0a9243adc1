#include "train/lm_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::train {

using planner::TokenId;

WindowSampler::WindowSampler(absl::Span<const TokenId> tokens, int64_t span, uint64_t seed)
    : rng_(seed), dist_(0, static_cast<int64_t>(tokens.size()) - span - 1) {}

std::vector<int64_t> WindowSampler::Draw(int64_t n) {
  std::vector<int64_t> starts(static_cast<size_t>(n));
  for (int64_t& s : starts) s = dist_(rng_);
  return starts;
}

absl::Status CheckTokens(absl::Span<const TokenId> tokens, const char* name, int64_t seq_len,
                         int64_t vocab) {
  if (static_cast<int64_t>(tokens.size()) < seq_len + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", tokens.size(), " tokens, fewer than seq_len + 1 = ", seq_len + 1));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat(name, "[", i, "] = ", tokens[i],
                                                     ": outside the vocabulary [0, ", vocab, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSplits(absl::Span<const TokenId> train, absl::Span<const TokenId> heldout,
                         int64_t seq_len, int64_t vocab) {
  if (auto st = CheckTokens(train, "train", seq_len, vocab); !st.ok()) return st;
  return CheckTokens(heldout, "heldout", seq_len, vocab);
}

torch::Tensor Windows(absl::Span<const TokenId> tokens, const std::vector<int64_t>& starts,
                      int64_t seq_len) {
  torch::Tensor w = torch::empty({static_cast<int64_t>(starts.size()), seq_len + 1}, torch::kInt64);
  int64_t* out = w.data_ptr<int64_t>();
  for (size_t b = 0; b < starts.size(); ++b) {
    for (int64_t t = 0; t <= seq_len; ++t) *out++ = tokens[starts[b] + t];
  }
  return w;
}

namespace {

// Mean cross-entropy of the model's predictions for windows [n][T + 1].
torch::Tensor WindowLoss(const runtime::Transformer& model, const torch::Tensor& windows) {
  const int64_t T = windows.size(1) - 1;
  const torch::Device dev = model.options().device;
  torch::Tensor inputs = windows.narrow(1, 0, T).to(dev);
  torch::Tensor targets = windows.narrow(1, 1, T).reshape({-1}).to(dev);
  torch::Tensor logits = model.TrainForward(inputs);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets);
}

}  // namespace

absl::Status ValidateLmTrainOptions(const LmTrainOptions& o) {
  auto at_least = [](const char* name, int64_t v, int64_t min) -> absl::Status {
    if (v >= min) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(name, " = ", v, ": must be >= ", min));
  };
  if (auto st = at_least("steps", o.steps, 1); !st.ok()) return st;
  if (auto st = at_least("batch", o.batch, 1); !st.ok()) return st;
  if (auto st = at_least("seq_len", o.seq_len, 1); !st.ok()) return st;
  if (auto st = at_least("warmup", o.warmup, 0); !st.ok()) return st;
  if (auto st = at_least("eval_every", o.eval_every, 0); !st.ok()) return st;
  if (!(o.lr > 0 && std::isfinite(o.lr))) {
    return absl::InvalidArgumentError(absl::StrCat("lr = ", o.lr, ": must be finite and > 0"));
  }
  if (!(o.min_lr_fraction >= 0 && o.min_lr_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_lr_fraction = ", o.min_lr_fraction, ": must be in [0, 1]"));
  }
  if (!(o.weight_decay >= 0 && std::isfinite(o.weight_decay))) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight_decay = ", o.weight_decay, ": must be finite and >= 0"));
  }
  if (!(o.clip_norm > 0 && std::isfinite(o.clip_norm))) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip_norm = ", o.clip_norm, ": must be finite and > 0"));
  }
  return absl::OkStatus();
}

void InitForTraining(runtime::Transformer* model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const double residual_std =
      0.02 / std::sqrt(2.0 * static_cast<double>(model->config().num_layers));
  for (const auto& [name, t] : model->NamedParameters()) {
    torch::Tensor r;
    if (absl::EndsWith(name, ".bias")) {
      r = torch::zeros(t.sizes());
    } else if (absl::StrContains(name, "norm")) {
      r = torch::ones(t.sizes());
    } else {
      const bool residual = absl::StrContains(name, "o_proj") ||
                            absl::StrContains(name, "down_proj") ||
                            absl::EndsWith(name, "attention.dense.weight") ||
                            absl::StrContains(name, "dense_4h_to_h");
      r = at::randn(t.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32)) *
          (residual ? residual_std : 0.02);
    }
    t.copy_(r.to(t.device(), t.scalar_type()));
  }
}

absl::StatusOr<double> HeldoutLoss(const runtime::Transformer& model,
                                   absl::Span<const TokenId> tokens, int64_t seq_len,
                                   int64_t batch) {
  if (seq_len < 1 || batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("seq_len = ", seq_len, ", batch = ", batch, ": both must be >= 1"));
  }
  if (auto st = CheckTokens(tokens, "heldout", seq_len, model.config().vocab_size); !st.ok()) {
    return st;
  }
  torch::NoGradGuard no_grad;
  const int64_t windows = static_cast<int64_t>(tokens.size() - 1) / seq_len;
  double sum = 0;
  for (int64_t first = 0; first < windows; first += batch) {
    std::vector<int64_t> starts;
    for (int64_t w = first; w < std::min(windows, first + batch); ++w)
      starts.push_back(w * seq_len);
    const double n = static_cast<double>(starts.size());
    sum += n * WindowLoss(model, Windows(tokens, starts, seq_len)).item<double>();
  }
  return sum / static_cast<double>(windows);
}

absl::StatusOr<LmTrainResult> RunTrainingLoop(
    const std::vector<torch::Tensor>& params, const LmTrainOptions& o,
    const std::function<torch::Tensor(int64_t step)>& batch_loss,
    const std::function<absl::StatusOr<double>()>& heldout) {
  if (auto st = ValidateLmTrainOptions(o); !st.ok()) return st;
  torch::optim::AdamW optimizer(
      params, torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay));
  LmTrainResult result;
  result.losses.reserve(static_cast<size_t>(o.steps));
  const double t0 = NowSeconds();
  for (int64_t step = 1; step <= o.steps; ++step) {
    // Warm-up: lr * step / warmup; then cosine from lr down to lr * min_lr_fraction.
    double lr = o.lr;
    if (step <= o.warmup) {
      lr = o.lr * static_cast<double>(step) / static_cast<double>(o.warmup);
    } else if (o.steps > o.warmup) {
      const double progress =
          static_cast<double>(step - o.warmup) / static_cast<double>(o.steps - o.warmup);
      const double cosine = 0.5 * (1 + std::cos(M_PI * progress));
      lr = o.lr * (o.min_lr_fraction + (1 - o.min_lr_fraction) * cosine);
    }
    for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
    optimizer.zero_grad();
    torch::Tensor loss = batch_loss(step);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, o.clip_norm);
    optimizer.step();
    LmTrainStep info;
    info.step = step;
    info.loss = loss.item<double>();
    info.lr = lr;
    if (!std::isfinite(info.loss)) {
      return absl::InternalError(
          absl::StrCat("step ", step, ": loss = ", info.loss, " (lower lr = ", o.lr, "?)"));
    }
    result.losses.push_back(info.loss);
    if ((o.eval_every > 0 && step % o.eval_every == 0) || step == o.steps) {
      absl::StatusOr<double> h = heldout();
      if (!h.ok()) return h.status();
      info.heldout_loss = *h;
      if (step == o.steps) result.heldout_loss = *h;
    }
    info.elapsed_seconds = NowSeconds() - t0;
    if (o.on_step) o.on_step(info);
  }
  result.seconds = NowSeconds() - t0;
  return result;
}

absl::Status AppendTrainable(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                             const char* remedy, std::vector<torch::Tensor>* params) {
  for (const auto& [name, t] : named) {
    if (!t.requires_grad()) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, ": does not take gradients (", remedy, ")"));
    }
    params->push_back(t);
  }
  return absl::OkStatus();
}

absl::StatusOr<LmTrainResult> TrainLanguageModel(runtime::Transformer* model,
                                                 absl::Span<const TokenId> train,
                                                 absl::Span<const TokenId> heldout,
                                                 const LmTrainOptions& o) {
  if (auto st = ValidateLmTrainOptions(o); !st.ok()) return st;
  const int64_t vocab = model->config().vocab_size;
  if (auto st = CheckSplits(train, heldout, o.seq_len, vocab); !st.ok()) return st;
  std::vector<torch::Tensor> params;
  SPECPLAN_RETURN_IF_ERROR(
      AppendTrainable(model->NamedParameters(), "build the model with CreateTrainable", &params));
  WindowSampler sampler(train, o.seq_len, o.seed);
  return RunTrainingLoop(
      params, o,
      [&](int64_t) { return WindowLoss(*model, Windows(train, sampler.Draw(o.batch), o.seq_len)); },
      [&] { return HeldoutLoss(*model, heldout, o.seq_len, o.batch); });
}

}  // namespace specplan::train
