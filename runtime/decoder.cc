#include "runtime/decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"
#include "planner/tree_outputs.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SpeculativeDecoder>> SpeculativeDecoder::Create(
    const Transformer* target, const Transformer* draft, const StrategyOptions& options,
    int64_t max_context) {
  SPECPLAN_CHECK(target != nullptr);
  if (StrategyNeedsDraft(options.strategy) && draft == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy ", StrategyName(options.strategy), ": needs a draft model"));
  }
  if (draft != nullptr && draft->config().vocab_size != target->config().vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft vocab_size = ", draft->config().vocab_size,
                     ": must equal the target's ", target->config().vocab_size));
  }
  if (max_context < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_context = ", max_context, ": must be >= 2"));
  }
  if (options.max_tree_nodes < 1 || options.max_tree_nodes >= planner::kMaxTreeNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_tree_nodes = ", options.max_tree_nodes, ": out of range"));
  }
  if (!options.sampling.greedy && !(options.sampling.temperature > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("temperature = ", options.sampling.temperature,
                                                   ": must be > 0 when sampling"));
  }
  std::unique_ptr<SpeculativeDecoder> d(new SpeculativeDecoder());
  d->target_ = target;
  d->options_ = options;
  d->max_context_ = max_context;
  const int64_t max_len = max_context + options.max_tree_nodes + 2;
  d->cache_ = target->NewCache(max_len);
  d->step_ =
      StepBuffers(target->options().device, options.max_tree_nodes + 1, options.max_tree_nodes + 1);
  planner::PlanBackend* backend = options.plan_backend;
  if (backend == nullptr) {
    d->owned_backend_ = std::make_unique<planner::InProcessPlanBackend>();
    d->owned_backend_->Reserve(std::min(options.bestfirst.n_max, options.max_tree_nodes));
    backend = d->owned_backend_.get();
  }
  StrategyContext ctx;
  ctx.target = target;
  ctx.draft = StrategyNeedsDraft(options.strategy) ? draft : nullptr;
  ctx.max_len = max_len;
  ctx.backend = backend;
  SPECPLAN_ASSIGN_OR_RETURN(d->strategy_, CreateDraftStrategy(options, ctx));
  return d;
}

int64_t SpeculativeDecoder::cache_bytes() const { return cache_.bytes(); }

planner::TokenId SpeculativeDecoder::SelectToken(const torch::Tensor& logits_row,
                                                 std::mt19937_64& rng) {
  const SamplingOptions& s = options_.sampling;
  if (s.greedy) return static_cast<planner::TokenId>(logits_row.argmax().item<int64_t>());
  torch::Tensor row = logits_row.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t V = row.size(0);
  probs_.resize(V);
  absl::Status st =
      planner::ApplySampling(absl::MakeConstSpan(row.data_ptr<float>(), V), s.temperature, s.top_k,
                             s.top_p, absl::MakeSpan(probs_), &order_);
  SPECPLAN_CHECK(st.ok(), "ApplySampling failed on model logits");
  std::discrete_distribution<int64_t> dist(probs_.begin(), probs_.end());
  return static_cast<planner::TokenId>(dist(rng));  // < V <= planner::kMaxVocabSize
}

absl::StatusOr<GenerationResult> SpeculativeDecoder::Generate(
    const std::vector<planner::TokenId>& prompt, int max_new_tokens) {
  const int64_t V = target_->config().vocab_size;
  if (prompt.empty()) return absl::InvalidArgumentError("prompt: empty");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= V) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt[", i, "] = ", prompt[i], ": must be in [0, ", V, ")"));
    }
  }
  if (max_new_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_new_tokens = ", max_new_tokens, ": must be >= 1"));
  }
  if (static_cast<int64_t>(prompt.size()) + max_new_tokens > max_context_) {
    return absl::InvalidArgumentError(absl::StrCat("prompt length ", prompt.size(), " + ",
                                                   max_new_tokens, " new tokens: exceeds ",
                                                   "max_context = ", max_context_));
  }
  c10::InferenceMode guard;
  std::mt19937_64 rng(options_.sampling.seed);
  GenerationResult result;
  const double t_start = Now();
  cache_.set_length(0);
  strategy_->Reset();

  // Prefill: the whole prompt; the first token becomes the pending root.
  torch::Tensor logits = target_->ForwardCausal(prompt, 0, &cache_);
  cache_.set_length(static_cast<int64_t>(prompt.size()));
  std::vector<planner::TokenId> committed = prompt;
  committed.push_back(SelectToken(logits[logits.size(0) - 1], rng));
  result.tokens.push_back(committed.back());
  result.ttft_s = Now() - t_start;
  counters_.prefill_s += result.ttft_s;
  counters_.target_forwards += 1;

  planner::TreeOutputOptions out_opt;
  out_opt.packed_mask = false;
  out_opt.dense_mask = true;
  out_opt.retrieve = false;
  planner::TreeOutputs outs;
  std::vector<planner::TokenId> argmax;
  std::vector<int64_t> src;
  while (static_cast<int>(result.tokens.size()) < max_new_tokens) {
    const int64_t c = cache_.length();  // == committed.size() - 1
    double t0 = Now();
    SPECPLAN_RETURN_IF_ERROR(strategy_->BuildTree(DecodeState{committed, c}, &tree_));
    if (tree_.num_draft() > options_.max_tree_nodes) {
      return absl::InternalError(
          absl::StrCat("tree of ", tree_.num_draft(),
                       " draft nodes exceeds max_tree_nodes = ", options_.max_tree_nodes));
    }
    double t1 = Now();
    counters_.draft_s += t1 - t0;

    // Verify the whole tree in one target pass.
    const int64_t s = tree_.size();
    out_opt.position_offset = c;
    planner::ComputeTreeOutputs(tree_, out_opt, &outs);
    // The step's inputs go into the preallocated buffers: tokens, positions c + depth and the
    // [s][s] ancestor block (Forward makes the c cached slots visible); s == 1 needs no mask.
    step_.Begin(s, s > 1 ? s : 0);
    std::copy(tree_.tokens.begin(), tree_.tokens.end(), step_.tokens());
    std::copy(outs.positions.begin(), outs.positions.end(), step_.positions());
    if (s > 1) {
      const float ninf = -std::numeric_limits<float>::infinity();
      float* m = step_.mask();
      for (int64_t i = 0; i < s * s; ++i) m[i] = outs.mask_dense[i] ? 0.0f : ninf;
    }
    const StepInputs in = step_.Upload();
    logits = target_->Forward(in.tokens, in.positions, c, in.mask, &cache_);
    // Greedy needs only the argmax row (computed on the device); sampling needs the full rows.
    torch::Tensor am, cpu_logits;
    if (options_.sampling.greedy) {
      am = logits.argmax(-1).to(torch::kCPU, torch::kInt32).contiguous();
    } else {
      cpu_logits = logits.to(torch::kCPU).contiguous();
    }
    double t2 = Now();
    counters_.verify_s += t2 - t1;
    counters_.target_forwards += 1;
    counters_.verified_tokens += s;

    if (options_.sampling.greedy) {
      argmax.assign(am.data_ptr<planner::TokenId>(), am.data_ptr<planner::TokenId>() + s);
      planner::AcceptGreedy(tree_, argmax, &greedy_ws_, &accept_);
    } else {
      probs_.resize(static_cast<size_t>(s) * V);
      const float* lp = cpu_logits.data_ptr<float>();
      for (int64_t i = 0; i < s; ++i) {
        SPECPLAN_RETURN_IF_ERROR(planner::ApplySampling(
            absl::MakeConstSpan(lp + i * V, V), options_.sampling.temperature,
            options_.sampling.top_k, options_.sampling.top_p,
            absl::MakeSpan(probs_.data() + i * V, V), &order_));
      }
      planner::AcceptSampling(tree_, static_cast<int>(V), probs_, {},
                              planner::DraftMode::kPointMass, rng, &sample_ws_, &accept_);
    }
    const int L = accept_.accepted_length;

    // KV update: the accepted path root, n_1, ..., n_L into slots c .. c + L.
    if (options_.kv_update == KvUpdate::kGather) {
      src.clear();
      for (int32_t node : accept_.accepted_nodes) src.push_back(c + node);
      cache_.GatherSlots(src, c);
    } else {
      path_.clear();
      for (int32_t node : accept_.accepted_nodes) path_.push_back(tree_.tokens[node]);
      target_->ForwardCausal(path_, c, &cache_);
      counters_.target_forwards += 1;
    }
    cache_.set_length(c + L + 1);

    SPECPLAN_RETURN_IF_ERROR(strategy_->Observe(tree_, accept_));
    counters_.acceptance.Add(planner::MakeStepAcceptance(tree_, accept_));
    result.iterations += 1;
    result.steps.push_back({c, tree_.tokens[0], L, t1 - t0});
    for (int k = 1; k <= L; ++k) {
      const planner::TokenId t = tree_.tokens[accept_.accepted_nodes[k]];
      committed.push_back(t);
      result.tokens.push_back(t);
    }
    committed.push_back(accept_.bonus_token);
    result.tokens.push_back(accept_.bonus_token);
    counters_.update_s += Now() - t2;
  }
  if (static_cast<int>(result.tokens.size()) > max_new_tokens) {
    // The excess is the target's own continuation; only max_new_tokens are reported.
    result.tokens.resize(max_new_tokens);
  }
  result.total_s = Now() - t_start;
  counters_.total_s += result.total_s;
  counters_.prompts += 1;
  counters_.new_tokens += max_new_tokens;
  return result;
}

}  // namespace specplan::runtime
