#include "runtime/decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "planner/tree_ops.h"
#include "planner/tree_outputs.h"
#include "runtime/measured_latency.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr struct {
  Strategy s;
  const char* name;
} kStrategyNames[] = {
    {Strategy::kAr, "ar"},
    {Strategy::kLinear, "linear"},
    {Strategy::kFixed, "fixed"},
    {Strategy::kDynaTree, "dynatree"},
    {Strategy::kBestFirst, "bestfirst"},
    {Strategy::kLookup, "lookup"},
    {Strategy::kMerged, "merged"},
};

// A fixed-budget best-first plan without a cost (BestFirstPlanner::PlanFixed) through `backend`.
absl::Status PlanFixed(planner::PlanBackend* backend, const planner::Marginals& marginals,
                       int budget, planner::BestFirstPlan* plan) {
  planner::BestFirstOptions options;
  options.mode = planner::BudgetMode::kFixed;
  options.n_max = budget;
  return backend->PlanBestFirst(marginals, options, nullptr, plan);
}

}  // namespace

absl::StatusOr<Strategy> ParseStrategy(const std::string& name) {
  for (const auto& e : kStrategyNames) {
    if (name == e.name) return e.s;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("strategy = \"", name,
                   "\": expected ar, linear, fixed, dynatree, bestfirst, lookup, merged"));
}

const char* StrategyName(Strategy s) {
  for (const auto& e : kStrategyNames) {
    if (s == e.s) return e.name;
  }
  return "?";
}

bool StrategyNeedsDraft(Strategy s) { return s != Strategy::kAr && s != Strategy::kLookup; }

StrategyOptions StrategyOptions::Defaults(Strategy strategy) {
  StrategyOptions o;
  o.strategy = strategy;
  o.linear.k = 6;
  o.fixed.depth = 4;
  o.fixed.branch = 2;
  o.fixed.tau = 0.0;
  o.fixed.max_nodes = 30;
  o.dynatree.n_max = 32;
  o.dynatree.d_max = 6;
  o.dynatree.d0 = 4;
  o.bestfirst.mode = planner::BudgetMode::kController;
  o.bestfirst.n_max = 32;
  o.merge.dedup = true;
  o.merge.n_max = 48;
  o.max_tree_nodes = 64;
  return o;
}

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
  d->draft_ = StrategyNeedsDraft(options.strategy) ? draft : nullptr;
  d->options_ = options;
  d->max_context_ = max_context;
  const int64_t max_len = max_context + options.max_tree_nodes + 2;
  d->cache_ = target->NewCache(max_len);
  if (d->draft_ != nullptr) {
    d->drafter_ = std::make_unique<DraftModelDrafter>(
        d->draft_, max_len + 2 * options.max_tree_nodes, options.draft_top_k);
  }
  auto cap = [&](int32_t n) { return std::min<int32_t>(n, options.max_tree_nodes); };
  d->backend_ = options.plan_backend;
  if (d->backend_ == nullptr) {
    d->owned_backend_ = std::make_unique<planner::InProcessPlanBackend>();
    d->owned_backend_->Reserve(std::min(options.bestfirst.n_max, options.max_tree_nodes));
    d->backend_ = d->owned_backend_.get();
  }
  switch (options.strategy) {
    case Strategy::kLinear: {
      planner::LinearChainOptions o = options.linear;
      o.k = cap(o.k);
      SPECPLAN_ASSIGN_OR_RETURN(d->policy_, planner::LinearChainPolicy::Create(o));
      break;
    }
    case Strategy::kFixed: {
      planner::FixedTreeOptions o = options.fixed;
      o.max_nodes = cap(o.max_nodes);
      SPECPLAN_ASSIGN_OR_RETURN(d->policy_, planner::FixedTreePolicy::Create(o));
      break;
    }
    case Strategy::kDynaTree:
    case Strategy::kMerged: {
      planner::DynaTreeOptions o = options.dynatree;
      o.n_max = cap(o.n_max);
      SPECPLAN_ASSIGN_OR_RETURN(d->policy_, planner::DynaTreePolicy::Create(o));
      break;
    }
    case Strategy::kBestFirst: {
      if (options.bestfirst.n_max > options.max_tree_nodes) {
        d->options_.bestfirst.n_max = options.max_tree_nodes;
      }
      d->latency_ = options.latency;
      if (d->latency_ == nullptr) {
        std::vector<int64_t> grid;
        for (int64_t s = 1; s <= options.max_tree_nodes + 1; s *= 2) grid.push_back(s);
        if (grid.back() != options.max_tree_nodes + 1) grid.push_back(options.max_tree_nodes + 1);
        SPECPLAN_ASSIGN_OR_RETURN(costmodel::GridLatency m,
                                  MeasureVerifyLatency(*target, grid, 64, 3));
        d->owned_latency_ = std::make_unique<costmodel::GridLatency>(std::move(m));
        d->latency_ = d->owned_latency_.get();
      }
      break;
    }
    default:
      break;
  }
  if (options.strategy == Strategy::kMerged && options.merge.n_max > options.max_tree_nodes) {
    d->options_.merge.n_max = options.max_tree_nodes;
  }
  if (options.strategy == Strategy::kMerged && options.merge.n_max < 0) {
    d->options_.merge.n_max = options.max_tree_nodes;
  }
  return d;
}

int64_t SpeculativeDecoder::cache_bytes() const { return cache_.bytes(); }

int64_t SpeculativeDecoder::SelectToken(const torch::Tensor& logits_row, std::mt19937_64& rng) {
  const SamplingOptions& s = options_.sampling;
  if (s.greedy) return logits_row.argmax().item<int64_t>();
  torch::Tensor row = logits_row.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t V = row.size(0);
  probs_.resize(V);
  absl::Status st =
      planner::ApplySampling(absl::MakeConstSpan(row.data_ptr<float>(), V), s.temperature, s.top_k,
                             s.top_p, absl::MakeSpan(probs_), &order_);
  SPECPLAN_CHECK(st.ok(), "ApplySampling failed on model logits");
  std::discrete_distribution<int64_t> dist(probs_.begin(), probs_.end());
  return dist(rng);
}

absl::Status SpeculativeDecoder::BuildTree(const std::vector<int64_t>& committed, int64_t c) {
  const int32_t root = static_cast<int32_t>(committed.back());
  policy_tree_depth_ = -1;
  switch (options_.strategy) {
    case Strategy::kAr:
      tree_.ResetRoot(root);
      return absl::OkStatus();
    case Strategy::kLinear:
    case Strategy::kFixed:
    case Strategy::kDynaTree:
    case Strategy::kMerged: {
      SPECPLAN_ASSIGN_OR_RETURN(const planner::Tree* t, drafter_->DraftTree(*policy_, committed));
      policy_tree_depth_ = 0;
      for (int32_t dd : t->depths) policy_tree_depth_ = std::max(policy_tree_depth_, dd);
      if (options_.strategy != Strategy::kMerged) {
        tree_ = *t;
        return absl::OkStatus();
      }
      if (NgramMarginals(committed, target_->config().vocab_size, options_.ngram, &marginals_)) {
        SPECPLAN_RETURN_IF_ERROR(PlanFixed(backend_, marginals_, options_.lookup_budget, &plan_));
        ngram_tree_ = plan_.tree;
        planner::DropZeroProbabilityNodes(&ngram_tree_);
      } else {
        ngram_tree_.ResetRoot(root);
      }
      SPECPLAN_RETURN_IF_ERROR(backend_->Merge(*t, ngram_tree_, options_.merge, &merged_));
      tree_ = merged_.tree;
      return absl::OkStatus();
    }
    case Strategy::kBestFirst: {
      SPECPLAN_RETURN_IF_ERROR(
          drafter_->DraftChain(committed, options_.bestfirst_gamma, &marginals_));
      costmodel::DrafterCost dc;
      dc.cls = costmodel::DrafterClass::kAutoregressive;
      dc.gamma = options_.bestfirst_gamma;
      dc.t_net_s = drafter_->last_step_seconds();
      const planner::PlanCost cost{latency_, dc, 0.0, c};
      SPECPLAN_RETURN_IF_ERROR(
          backend_->PlanBestFirst(marginals_, options_.bestfirst, &cost, &plan_));
      tree_ = plan_.tree;
      return absl::OkStatus();
    }
    case Strategy::kLookup: {
      if (NgramMarginals(committed, target_->config().vocab_size, options_.ngram, &marginals_)) {
        SPECPLAN_RETURN_IF_ERROR(PlanFixed(
            backend_, marginals_, std::min(options_.lookup_budget, options_.max_tree_nodes),
            &plan_));
        tree_ = plan_.tree;
        planner::DropZeroProbabilityNodes(&tree_);
      } else {
        tree_.ResetRoot(root);
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown strategy");
}

absl::StatusOr<GenerationResult> SpeculativeDecoder::Generate(const std::vector<int64_t>& prompt,
                                                              int max_new_tokens) {
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
  if (drafter_) drafter_->Reset();

  // Prefill: the whole prompt; the first token becomes the pending root.
  torch::Tensor logits = target_->ForwardCausal(prompt, 0, &cache_);
  cache_.set_length(static_cast<int64_t>(prompt.size()));
  std::vector<int64_t> committed = prompt;
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
  std::vector<int32_t> argmax;
  std::vector<int64_t> accepted_tokens, src;
  while (static_cast<int>(result.tokens.size()) < max_new_tokens) {
    const int64_t c = cache_.length();  // == committed.size() - 1
    double t0 = Now();
    SPECPLAN_RETURN_IF_ERROR(BuildTree(committed, c));
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
    std::vector<int64_t> toks(tree_.tokens.begin(), tree_.tokens.end());
    torch::Tensor mask;
    if (s > 1) mask = TreeAttentionMask(outs.mask_dense, s, c, target_->options().device);
    logits = target_->Forward(torch::tensor(toks, torch::kInt64),
                              torch::tensor(outs.positions, torch::kInt64), c, mask, &cache_);
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
      argmax.assign(am.data_ptr<int32_t>(), am.data_ptr<int32_t>() + s);
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
      std::vector<int64_t> path;
      for (int32_t node : accept_.accepted_nodes) path.push_back(tree_.tokens[node]);
      target_->ForwardCausal(path, c, &cache_);
      counters_.target_forwards += 1;
    }
    cache_.set_length(c + L + 1);

    accepted_tokens.clear();
    for (int k = 1; k <= L; ++k) accepted_tokens.push_back(tree_.tokens[accept_.accepted_nodes[k]]);
    if (drafter_) drafter_->Commit(accepted_tokens);
    if (policy_ && policy_tree_depth_ >= 0) {
      int la = L;
      if (options_.strategy == Strategy::kMerged) {
        la = 0;
        for (int k = 1; k <= L; ++k) {
          if (static_cast<uint8_t>(merged_.source[accept_.accepted_nodes[k]]) &
              static_cast<uint8_t>(planner::MergeSource::kA)) {
            ++la;
          }
        }
      }
      SPECPLAN_RETURN_IF_ERROR(policy_->ObserveAcceptance(std::min(la, policy_tree_depth_)));
    }
    counters_.acceptance.Add(planner::MakeStepAcceptance(tree_, accept_));
    counters_.iterations += 1;
    counters_.drafted += tree_.num_draft();
    counters_.accepted += L;
    result.iterations += 1;
    result.steps.push_back({c, static_cast<int32_t>(tree_.tokens[0]), L, t1 - t0});
    for (int64_t t : accepted_tokens) {
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
