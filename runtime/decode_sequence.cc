#include "runtime/decode_sequence.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/measured_latency.h"
#include "runtime/strategies/heads.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::runtime {
DecodeSequence::DecodeSequence(const Transformer* target, std::unique_ptr<DraftStrategy> strategy,
                               const StrategyOptions& options, KvCache cache)
    : target_(target),
      options_(options),
      strategy_(std::move(strategy)),
      cache_(std::move(cache)),
      step_(target->options().device, options.max_tree_nodes + 1, options.max_tree_nodes + 1) {
  out_opt_.packed_mask = false;
  out_opt_.dense_mask = true;
  out_opt_.retrieve = false;
}

void DecodeSequence::Start(const std::vector<planner::TokenId>& prompt, int max_new_tokens,
                           uint64_t seed) {
  cache_.set_length(0);
  strategy_->Reset();
  rng_.seed(seed);
  committed_ = prompt;
  max_new_tokens_ = max_new_tokens;
  result_ = GenerationResult();
}

ForwardSegment DecodeSequence::PrefillSegment() {
  static_assert(std::is_same_v<planner::TokenId, int32_t>);
  const int64_t p = static_cast<int64_t>(committed_.size());
  // The ids are read in place on the CPU (the caller keeps the sequence alive over the pass).
  torch::Tensor t = torch::from_blob(committed_.data(), {p}, torch::kInt32);
  return ForwardSegment{t, torch::arange(0, p, torch::kInt64), 0, torch::Tensor(), &cache_};
}

void DecodeSequence::FinishPrefill(const torch::Tensor& last_row, const torch::Tensor& hidden_row) {
  cache_.set_length(static_cast<int64_t>(committed_.size()));
  hidden_ = hidden_row;
  committed_.push_back(SelectToken(last_row));
  result_.tokens.push_back(committed_.back());
}

planner::TokenId DecodeSequence::SelectToken(const torch::Tensor& logits_row) {
  const SamplingOptions& s = options_.sampling;
  if (s.greedy) return static_cast<planner::TokenId>(logits_row.argmax().item<int64_t>());
  torch::Tensor row = logits_row.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t V = row.size(0);
  probs_.resize(V);
  absl::Status st =
      planner::ApplySampling(absl::MakeConstSpan(row.data_ptr<float>(), V), s.temperature, s.top_k,
                             s.top_p, absl::MakeSpan(probs_), &order_);
  SPECPLAN_CHECK(st.ok(), "ApplySampling failed on model logits");
  std::discrete_distribution<int64_t> dist(probs_.begin(), probs_.begin() + V);
  return static_cast<planner::TokenId>(dist(rng_));  // < V <= planner::kMaxVocabSize
}

absl::Status DecodeSequence::Draft() {
  const double t0 = NowSeconds();
  SPECPLAN_RETURN_IF_ERROR(strategy_->BuildTree(state(), &tree_));
  draft_s_ = NowSeconds() - t0;
  return CheckTree();
}

absl::Status DecodeSequence::SetTree(const planner::Tree& tree, double draft_s) {
  tree_ = tree;
  draft_s_ = draft_s;
  return CheckTree();
}

absl::Status DecodeSequence::CheckTree() const {
  if (tree_.num_draft() > options_.max_tree_nodes) {
    return absl::InternalError(
        absl::StrCat("tree of ", tree_.num_draft(),
                     " draft nodes exceeds max_tree_nodes = ", options_.max_tree_nodes));
  }
  if (tree_.size() < 1 || tree_.tokens[0] != committed_.back()) {
    return absl::InternalError("draft tree: its root is not the pending token");
  }
  return absl::OkStatus();
}

ForwardSegment DecodeSequence::VerifySegment() {
  const int64_t c = cache_.length();
  const int64_t s = tree_.size();
  out_opt_.position_offset = c;
  planner::ComputeTreeOutputs(tree_, out_opt_, &outs_);
  // The step's inputs go into the preallocated buffers: tokens, positions c + depth and the
  // [s][s] ancestor block (Forward makes the c cached slots visible); s == 1 needs no mask.
  step_.Begin(s, s > 1 ? s : 0);
  std::copy(tree_.tokens.begin(), tree_.tokens.end(), step_.tokens());
  std::copy(outs_.positions.begin(), outs_.positions.end(), step_.positions());
  if (s > 1) {
    const float ninf = -std::numeric_limits<float>::infinity();
    float* m = step_.mask();
    for (int64_t i = 0; i < s * s; ++i) m[i] = outs_.mask_dense[i] ? 0.0f : ninf;
  }
  const StepInputs in = step_.Upload();
  return ForwardSegment{in.tokens, in.positions, c, in.mask, &cache_};
}

absl::Status DecodeSequence::Accept(const SequenceLogits& rows, DecodeCounters* counters,
                                    int64_t pass) {
  const int64_t c = cache_.length();  // == committed_.size() - 1
  const int64_t s = tree_.size();
  const int64_t V = target_->config().vocab_size;
  if (options_.sampling.greedy) {
    SPECPLAN_CHECK(rows.argmax != nullptr);
    argmax_.assign(rows.argmax, rows.argmax + s);
    planner::AcceptGreedy(tree_, argmax_, &greedy_ws_, &accept_);
  } else {
    SPECPLAN_CHECK(rows.logits != nullptr);
    probs_.resize(static_cast<size_t>(s) * V);
    for (int64_t i = 0; i < s; ++i) {
      SPECPLAN_RETURN_IF_ERROR(planner::ApplySampling(
          absl::MakeConstSpan(rows.logits + i * V, V), options_.sampling.temperature,
          options_.sampling.top_k, options_.sampling.top_p,
          absl::MakeSpan(probs_.data() + i * V, V), &order_));
    }
    planner::AcceptSampling(tree_, static_cast<int>(V), probs_, {}, planner::DraftMode::kPointMass,
                            rng_, &sample_ws_, &accept_);
  }
  const int L = accept_.accepted_length;
  // The last accepted node's row predicted the bonus token, the next root.
  if (rows.hidden.defined()) hidden_ = rows.hidden[accept_.accepted_nodes.back()];

  // KV update: the accepted path root, n_1, ..., n_L into slots c .. c + L.
  if (options_.kv_update == KvUpdate::kGather) {
    src_.clear();
    for (int32_t node : accept_.accepted_nodes) src_.push_back(c + node);
    cache_.GatherSlots(src_, c);
  } else {
    path_.clear();
    for (int32_t node : accept_.accepted_nodes) path_.push_back(tree_.tokens[node]);
    target_->ForwardCausal(path_, c, &cache_);
    counters->target_forwards += 1;
  }
  cache_.set_length(c + L + 1);

  SPECPLAN_RETURN_IF_ERROR(strategy_->Observe(tree_, accept_));
  counters->acceptance.Add(planner::MakeStepAcceptance(tree_, accept_));
  counters->verified_tokens += s;
  result_.iterations += 1;
  result_.steps.push_back({c, tree_.tokens[0], L, draft_s_, pass});
  for (int k = 1; k <= L; ++k) {
    const planner::TokenId t = tree_.tokens[accept_.accepted_nodes[k]];
    committed_.push_back(t);
    result_.tokens.push_back(t);
  }
  committed_.push_back(accept_.bonus_token);
  result_.tokens.push_back(accept_.bonus_token);
  if (static_cast<int>(result_.tokens.size()) > max_new_tokens_) {
    // The excess is the target's own continuation; only max_new_tokens are reported.
    result_.tokens.resize(max_new_tokens_);
  }
  return absl::OkStatus();
}

bool DecodeSequence::done() const {
  return static_cast<int>(result_.tokens.size()) >= max_new_tokens_;
}

absl::Status ValidateDecoderOptions(const Transformer& target, const Transformer* draft,
                                    const StrategyOptions& options, int64_t max_context) {
  if (StrategyNeedsDraft(options.strategy) && draft == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy ", StrategyName(options.strategy), ": needs a draft model"));
  }
  if (StrategyNeedsHeads(options)) SPECPLAN_RETURN_IF_ERROR(CheckDraftHeads(options, target));
  if (draft != nullptr && draft->config().vocab_size != target.config().vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft vocab_size = ", draft->config().vocab_size,
                     ": must equal the target's ", target.config().vocab_size));
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
  return absl::OkStatus();
}

absl::StatusOr<StrategyContext> MakeStrategyContext(const Transformer* target,
                                                    const Transformer* draft,
                                                    const StrategyOptions& options,
                                                    int64_t max_context, int64_t max_verify_tokens,
                                                    StrategyContextStorage* storage) {
  StrategyContext ctx;
  ctx.target = target;
  ctx.draft = StrategyNeedsDraft(options.strategy) ? draft : nullptr;
  ctx.max_len = max_context + options.max_tree_nodes + 2;
  ctx.backend = options.plan_backend;
  if (ctx.backend == nullptr) {
    storage->backend = std::make_unique<planner::InProcessPlanBackend>();
    storage->backend->Reserve(std::min(options.bestfirst.n_max, options.max_tree_nodes));
    ctx.backend = storage->backend.get();
  }
  if (StrategyNeedsLatency(options)) {
    SPECPLAN_ASSIGN_OR_RETURN(
        ctx.latency,
        GivenOrMeasuredLatency(options.latency, *target, std::max<int64_t>(1, max_verify_tokens),
                               &storage->latency));
  }
  const bool gated = options.strategy == Strategy::kBestFirst ||
                     options.strategy == Strategy::kDynaTree ||
                     options.strategy == Strategy::kBatch;
  if (gated && ctx.draft != nullptr && options.gate.enabled && options.gate_draft_level_s < 0) {
    // s = 1 is the gate's first draft level; the rest prices a catch-up chunk (extrapolated
    // linearly above 64 tokens).
    SPECPLAN_ASSIGN_OR_RETURN(costmodel::GridLatency m,
                              MeasureVerifyLatency(*ctx.draft, {1, 8, 64}, 64, 3));
    storage->draft_latency = std::make_unique<costmodel::GridLatency>(std::move(m));
    ctx.draft_latency = storage->draft_latency.get();
  }
  return ctx;
}

absl::StatusOr<std::unique_ptr<DecodeSequence>> NewDecodeSequence(const StrategyOptions& options,
                                                                  const StrategyContext& ctx,
                                                                  KvCache cache) {
  SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<DraftStrategy> strategy,
                            CreateDraftStrategy(options, ctx));
  if (cache.num_layers() == 0) cache = ctx.target->NewCache(ctx.max_len);
  SPECPLAN_CHECK(cache.max_len() == ctx.max_len);
  return std::make_unique<DecodeSequence>(ctx.target, std::move(strategy), options,
                                          std::move(cache));
}

absl::Status ValidatePrompt(const std::vector<planner::TokenId>& prompt, int64_t vocab,
                            int max_new_tokens, int64_t max_context) {
  if (prompt.empty()) return absl::InvalidArgumentError("prompt: empty");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt[", i, "] = ", prompt[i], ": must be in [0, ", vocab, ")"));
    }
  }
  if (max_new_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_new_tokens = ", max_new_tokens, ": must be >= 1"));
  }
  if (static_cast<int64_t>(prompt.size()) + max_new_tokens > max_context) {
    return absl::InvalidArgumentError(absl::StrCat("prompt length ", prompt.size(), " + ",
                                                   max_new_tokens, " new tokens: exceeds ",
                                                   "max_context = ", max_context));
  }
  return absl::OkStatus();
}

namespace {

// One ragged target forward over every sequence's `segment` (its prefill or its tree), with the
// hidden rows in *hidden when any sequence needs them. *segments keeps the segments (their
// lengths give each sequence's rows).
torch::Tensor ForwardSegments(const Transformer& target,
                              absl::Span<DecodeSequence* const> sequences,
                              ForwardSegment (DecodeSequence::*segment)(),
                              std::vector<ForwardSegment>* segments, torch::Tensor* hidden) {
  segments->reserve(sequences.size());
  bool hidden_wanted = false;
  for (DecodeSequence* q : sequences) {
    segments->push_back((q->*segment)());
    hidden_wanted = hidden_wanted || q->needs_hidden();
  }
  return target.ForwardBatch(*segments, hidden_wanted ? hidden : nullptr);
}

}  // namespace

void PrefillTogether(const Transformer& target, absl::Span<DecodeSequence* const> sequences) {
  c10::InferenceMode guard;
  std::vector<ForwardSegment> segments;
  torch::Tensor hidden;
  const torch::Tensor logits =
      ForwardSegments(target, sequences, &DecodeSequence::PrefillSegment, &segments, &hidden);
  int64_t offset = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    offset += segments[i].tokens.size(0);
    sequences[i]->FinishPrefill(
        logits[offset - 1], sequences[i]->needs_hidden() ? hidden[offset - 1] : torch::Tensor());
  }
}

absl::StatusOr<VerifyTimes> VerifyTogether(const Transformer& target,
                                           absl::Span<DecodeSequence* const> sequences, bool greedy,
                                           DecodeCounters* counters, int64_t pass) {
  c10::InferenceMode guard;
  VerifyTimes times;
  const double t0 = NowSeconds();
  std::vector<ForwardSegment> segments;
  torch::Tensor hidden;
  const torch::Tensor logits =
      ForwardSegments(target, sequences, &DecodeSequence::VerifySegment, &segments, &hidden);
  // Greedy needs only the argmax rows (computed on the device); sampling needs the full rows.
  torch::Tensor am, cpu_logits;
  if (greedy) {
    am = logits.argmax(-1).to(torch::kCPU, torch::kInt32).contiguous();
  } else {
    cpu_logits = logits.to(torch::kCPU).contiguous();
  }
  const double t1 = NowSeconds();
  times.verify_s = t1 - t0;
  counters->target_forwards += 1;
  const int64_t V = logits.size(1);
  int64_t offset = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    SequenceLogits rows;
    if (greedy) {
      rows.argmax = am.data_ptr<planner::TokenId>() + offset;
    } else {
      rows.logits = cpu_logits.data_ptr<float>() + offset * V;
    }
    const int64_t s = segments[i].tokens.size(0);
    if (sequences[i]->needs_hidden()) rows.hidden = hidden.narrow(0, offset, s);
    offset += s;
    SPECPLAN_RETURN_IF_ERROR(sequences[i]->Accept(rows, counters, pass));
  }
  times.update_s = NowSeconds() - t1;
  return times;
}

}  // namespace specplan::runtime
