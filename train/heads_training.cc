#include "train/heads_training.h"

#include <torch/torch.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace specplan::train {
namespace {

using planner::TokenId;

// Per-depth cross-entropies (and argmax hits) of the heads on windows [n][T + gamma + 1].
struct DepthTerms {
  std::vector<torch::Tensor> base, final;  // [gamma] scalar mean CE
  std::vector<double> base_hits, final_hits;
};

DepthTerms Terms(const runtime::DraftHeads& heads, const torch::Tensor& windows, int64_t T,
                 bool count_hits) {
  const runtime::Transformer& target = heads.target();
  const int64_t gamma = heads.num_heads();
  const torch::Device dev = target.options().device;
  const torch::Tensor w = windows.to(dev);
  torch::Tensor hidden;
  {
    torch::NoGradGuard frozen;  // the target does not train
    target.TrainForward(w.narrow(1, 0, T), &hidden);
    hidden = hidden.reshape({-1, hidden.size(-1)}).detach();
  }
  const torch::Tensor states = heads.HeadStates(hidden);  // [N][gamma][h]
  DepthTerms out;
  torch::Tensor causal;
  for (int64_t k = 1; k <= gamma; ++k) {
    // Row t's depth-k target is x_{t+1+k}; the causal path so far is x_{t+1} .. x_{t+k}.
    const torch::Tensor target_k = w.narrow(1, k + 1, T).reshape({-1});
    const torch::Tensor state_k = states.select(1, k - 1);
    const torch::Tensor base = heads.Logits(state_k);
    out.base.push_back(torch::nn::functional::cross_entropy(base, target_k));
    torch::Tensor final_logits = base;
    if (heads.has_causal()) {
      causal = heads.CausalStep(causal, w.narrow(1, k, T).reshape({-1}));
      final_logits = base + heads.Correction(state_k, causal);
      out.final.push_back(torch::nn::functional::cross_entropy(final_logits, target_k));
    } else {
      out.final.push_back(out.base.back());
    }
    if (count_hits) {
      out.base_hits.push_back(base.argmax(-1).eq(target_k).sum().item<double>());
      out.final_hits.push_back(final_logits.argmax(-1).eq(target_k).sum().item<double>());
    }
  }
  return out;
}

torch::Tensor Objective(const DepthTerms& t, double lambda) {
  const double gamma = static_cast<double>(t.base.size());
  torch::Tensor sum;
  double wsum = 0;
  for (size_t i = 0; i < t.base.size(); ++i) {
    const double w = std::exp(-static_cast<double>(i + 1) / gamma);
    torch::Tensor term = t.base[i] * (lambda * w) + t.final[i] * ((1 - lambda) * w);
    sum = sum.defined() ? sum + term : term;
    wsum += w;
  }
  return sum / wsum;
}

absl::Status CheckOptions(const HeadsTrainOptions& o) {
  if (!(o.lambda_end >= 0 && o.lambda_end <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lambda_end = ", o.lambda_end, ": must be in [0, 1]"));
  }
  return ValidateLmTrainOptions(o.lm);
}

}  // namespace

absl::StatusOr<HeadsEval> EvaluateDraftHeads(const runtime::DraftHeads& heads,
                                             absl::Span<const TokenId> tokens, int64_t seq_len,
                                             int64_t batch, double lambda_end) {
  if (seq_len < 1 || batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("seq_len = ", seq_len, ", batch = ", batch, ": both must be >= 1"));
  }
  const int64_t span = seq_len + heads.num_heads();
  if (auto st = CheckTokens(tokens, "heldout", span, heads.config().vocab_size); !st.ok()) {
    return st;
  }
  torch::NoGradGuard no_grad;
  const int64_t gamma = heads.num_heads();
  const int64_t windows = static_cast<int64_t>(tokens.size() - 1) / span;
  HeadsEval e;
  e.base_loss.assign(gamma, 0);
  e.final_loss.assign(gamma, 0);
  e.base_top1.assign(gamma, 0);
  e.final_top1.assign(gamma, 0);
  for (int64_t first = 0; first < windows; first += batch) {
    std::vector<int64_t> starts;
    for (int64_t w = first; w < std::min(windows, first + batch); ++w) starts.push_back(w * span);
    const double n = static_cast<double>(starts.size() * seq_len);
    const DepthTerms t = Terms(heads, Windows(tokens, starts, span), seq_len, true);
    e.objective += n * Objective(t, lambda_end).item<double>();
    for (int64_t k = 0; k < gamma; ++k) {
      e.base_loss[k] += n * t.base[k].item<double>();
      e.final_loss[k] += n * t.final[k].item<double>();
      e.base_top1[k] += t.base_hits[k];
      e.final_top1[k] += t.final_hits[k];
    }
    e.positions += static_cast<int64_t>(n);
  }
  const double total = static_cast<double>(e.positions);
  e.objective /= total;
  for (int64_t k = 0; k < gamma; ++k) {
    e.base_loss[k] /= total;
    e.final_loss[k] /= total;
    e.base_top1[k] /= total;
    e.final_top1[k] /= total;
  }
  return e;
}

absl::StatusOr<LmTrainResult> TrainDraftHeads(runtime::DraftHeads* heads,
                                              absl::Span<const TokenId> train,
                                              absl::Span<const TokenId> heldout,
                                              const HeadsTrainOptions& o) {
  if (auto st = CheckOptions(o); !st.ok()) return st;
  const int64_t span = o.lm.seq_len + heads->num_heads();
  const int64_t vocab = heads->config().vocab_size;
  if (auto st = CheckSplits(train, heldout, span, vocab); !st.ok()) return st;
  std::vector<torch::Tensor> params;
  for (const auto* group : {&heads->parallel_parameters(), &heads->causal_parameters()}) {
    SPECPLAN_RETURN_IF_ERROR(
        AppendTrainable(*group, "CreateRandom with trainable = true", &params));
  }
  WindowSampler sampler(train, span, o.lm.seed);
  const double steps = static_cast<double>(o.lm.steps);
  return RunTrainingLoop(
      params, o.lm,
      [&](int64_t step) {
        const double progress = steps > 1 ? static_cast<double>(step - 1) / (steps - 1) : 1.0;
        const double lambda = 1.0 - (1.0 - o.lambda_end) * progress;
        return Objective(
            Terms(*heads, Windows(train, sampler.Draw(o.lm.batch), span), o.lm.seq_len, false),
            lambda);
      },
      [&]() -> absl::StatusOr<double> {
        absl::StatusOr<HeadsEval> e =
            EvaluateDraftHeads(*heads, heldout, o.lm.seq_len, o.lm.batch, o.lambda_end);
        if (!e.ok()) return e.status();
        return e->objective;
      });
}

}  // namespace specplan::train
