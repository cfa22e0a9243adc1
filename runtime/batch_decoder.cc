#include "runtime/batch_decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::runtime {
absl::StatusOr<std::unique_ptr<BatchDecoder>> BatchDecoder::Create(const Transformer* target,
                                                                   const Transformer* draft,
                                                                   const StrategyOptions& options,
                                                                   int max_batch,
                                                                   int64_t max_context) {
  SPECPLAN_CHECK(target != nullptr);
  SPECPLAN_RETURN_IF_ERROR(ValidateDecoderOptions(*target, draft, options, max_context));
  if (max_batch < 1 || max_batch > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch = ", max_batch, ": must be in [1, 4096]"));
  }
  std::unique_ptr<BatchDecoder> d(new BatchDecoder());
  d->target_ = target;
  d->options_ = options;
  d->max_context_ = max_context;
  // One context for every slot, with one T_verify model (a batch pass is priced by its total
  // tokens, so it is measured up to max_batch trees).
  SPECPLAN_ASSIGN_OR_RETURN(
      const StrategyContext ctx,
      MakeStrategyContext(target, draft, options, max_context,
                          int64_t{max_batch} * (options.max_tree_nodes + 1), &d->storage_));
  d->latency_ = ctx.latency;
  d->draft_latency_ = ctx.draft_latency;
  // The slots' target caches are consecutive rows of one arena, so a pass over slots in order
  // attends for all of them in one call per layer (Transformer::ForwardBatch).
  std::vector<KvCache> caches = KvCache::Batch(target->config(), max_batch, ctx.max_len,
                                               target->options().dtype, target->options().device);
  for (int i = 0; i < max_batch; ++i) {
    SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<DecodeSequence> q,
                              NewDecodeSequence(d->options_, ctx, std::move(caches[i])));
    d->slots_.push_back(std::move(q));
  }
  if (options.strategy == Strategy::kBatch) {
    d->batch_planner_ = std::make_unique<BatchStepPlanner>(d->options_, d->latency_, ctx.backend);
    if (options.gate.enabled) {  // the slots' GatedChainStrategy::Create validated options.gate
      d->batch_gate_.emplace(options.gate);
      SPECPLAN_RETURN_IF_ERROR(SeedDraftLevel(d->options_, ctx, &*d->batch_gate_));
      for (auto& q : d->slots_)
        static_cast<BatchStrategy&>(q->strategy()).ShareGate(&*d->batch_gate_);
    }
  }
  return d;
}

int64_t BatchDecoder::cache_bytes() const {
  int64_t b = 0;
  for (const auto& q : slots_) b += q->cache().bytes();
  return b;
}

std::optional<DrafterCounters> BatchDecoder::drafter_counters() const {
  if (slots_[0]->strategy().drafter_counters() == nullptr) return std::nullopt;
  DrafterCounters sum;
  for (const auto& q : slots_) {
    const DrafterCounters& c = *q->strategy().drafter_counters();
    sum.forwards += c.forwards;
    sum.fed_tokens += c.fed_tokens;
    sum.reused_rows += c.reused_rows;
    sum.seconds += c.seconds;
  }
  return sum;
}

std::optional<planner::PolicyStats> BatchDecoder::policy_stats() const {
  if (slots_[0]->strategy().policy_stats() == nullptr) return std::nullopt;
  planner::PolicyStats sum;
  for (const auto& q : slots_) {
    const planner::PolicyStats& p = *q->strategy().policy_stats();
    sum.steps += p.steps;
    sum.forwards += p.forwards;
    sum.expansions += p.expansions;
    sum.drafted_nodes += p.drafted_nodes;
    sum.tree_nodes += p.tree_nodes;
    sum.observed_steps += p.observed_steps;
    sum.accepted += p.accepted;
  }
  return sum;
}

absl::Status BatchDecoder::DraftAll(const std::vector<DecodeSequence*>& active) {
  if (batch_planner_ == nullptr) {
    for (DecodeSequence* q : active) {
      SPECPLAN_RETURN_IF_ERROR(q->Draft());
      counters_.decode.draft_s += q->draft_seconds();
    }
    return absl::OkStatus();
  }
  // Strategy batch: the gate for the whole batch, every lattice, then one plan for the batch.
  const double t0 = NowSeconds();
  contexts_.clear();
  for (DecodeSequence* q : active) contexts_.push_back(q->c());
  const int gamma = static_cast<BatchStrategy&>(active[0]->strategy()).gamma();
  int depth = gamma;
  if (batch_gate_) {
    // What a probe would cost now: every sequence's catch-up and levels, and the pass verifying
    // 1 + round(w d) tokens per sequence instead of 1 (ProbeSeconds, summed over the batch).
    const int probe_depth = std::min(gamma, batch_gate_->options().probe_depth);
    const double level_s = options_.gate_draft_level_s >= 0 ? options_.gate_draft_level_s
                                                            : batch_gate_->draft_level_s();
    double probe_s = 0;
    probe_shape_.Clear();
    root_shape_.Clear();
    const int64_t s =
        1 + static_cast<int64_t>(std::llround(batch_gate_->estimator().width() * probe_depth));
    for (DecodeSequence* q : active) {
      const auto& member = static_cast<const BatchStrategy&>(q->strategy());
      probe_s += ProbeSeconds(*latency_, draft_latency_, q->c(), member.CatchUpTokens(q->state()),
                              probe_depth, level_s, /*width=*/0);
      probe_shape_.Add(s, q->c());
      root_shape_.Add(1, q->c());
    }
    probe_s += std::max(0.0, latency_->VerifyBatchSeconds(probe_shape_) -
                                 latency_->VerifyBatchSeconds(root_shape_));
    batch_gate_->ObserveProbeSeconds(probe_s);
    const planner::GateDecision g =
        batch_gate_->DecideBatch(*latency_, contexts_, 1, gamma, options_.gate_draft_level_s);
    depth = g.depth;
    if (depth == 0) {  // a plain decoding step for every sequence: no draft model runs
      for (DecodeSequence* q : active) {
        static_cast<BatchStrategy&>(q->strategy()).SkipDraft();
        root_only_.ResetRoot(q->state().committed.back());
        SPECPLAN_RETURN_IF_ERROR(q->SetTree(root_only_, 0.0));
      }
      return absl::OkStatus();
    }
  }
  std::vector<const planner::Marginals*> marginals;
  costmodel::DrafterCost drafter;
  double step_s = 0;
  for (DecodeSequence* q : active) {
    auto& member = static_cast<BatchStrategy&>(q->strategy());
    SPECPLAN_RETURN_IF_ERROR(member.DraftMarginals(q->state(), depth));
    if (batch_gate_) batch_gate_->ObserveDraftLevel(member.last_level_seconds());
    marginals.push_back(&member.marginals());
    drafter = member.drafter_cost();
    step_s += drafter.t_net_s;
  }
  drafter.t_net_s = step_s / static_cast<double>(active.size());  // one sequence's mean
  if (batch_gate_) {
    batch_planner_->set_acceptance_scale(batch_gate_->estimator().surrogate_scale());
  }
  SPECPLAN_RETURN_IF_ERROR(batch_planner_->Plan(marginals, contexts_, drafter, &plan_));
  const double share = (NowSeconds() - t0) / static_cast<double>(active.size());
  for (size_t i = 0; i < active.size(); ++i) {
    SPECPLAN_RETURN_IF_ERROR(active[i]->SetTree(plan_.trees[i], share));
  }
  counters_.decode.draft_s += share * static_cast<double>(active.size());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<GenerationResult>> BatchDecoder::Run(
    const std::vector<std::vector<planner::TokenId>>& prompts, int max_new_tokens,
    const std::function<void(int, int)>& progress,
    const std::function<void(const BatchStepLog&)>& on_step) {
  const int64_t V = target_->config().vocab_size;
  for (size_t i = 0; i < prompts.size(); ++i) {
    absl::Status st = ValidatePrompt(prompts[i], V, max_new_tokens, max_context_);
    if (!st.ok())
      return absl::InvalidArgumentError(absl::StrCat("prompts[", i, "]: ", st.message()));
  }
  c10::InferenceMode guard;
  const int total = static_cast<int>(prompts.size());
  std::vector<GenerationResult> results(prompts.size());
  std::vector<int> prompt_of(slots_.size(), -1);  // -1: the slot is free
  std::vector<double> joined(slots_.size(), 0.0);
  const double t_run = NowSeconds();
  int next = 0, finished = 0;
  BatchStepLog log;
  std::vector<DecodeSequence*> active, newcomers;

  // A sequence that is done leaves: its result is stored and its slot freed.
  auto retire = [&](size_t slot) {
    DecodeSequence& q = *slots_[slot];
    GenerationResult& r = q.result();
    r.total_s = NowSeconds() - joined[slot];
    results[static_cast<size_t>(prompt_of[slot])] = std::move(r);
    prompt_of[slot] = -1;
    counters_.decode.prompts += 1;
    counters_.decode.new_tokens += max_new_tokens;
    ++finished;
    if (progress) progress(finished, total);
  };

  while (finished < total) {
    // Arrivals: waiting prompts take the free slots, in order, and are prefilled in one pass.
    newcomers.clear();
    std::vector<size_t> newcomer_slots;
    for (size_t s = 0; s < slots_.size() && next < total; ++s) {
      if (prompt_of[s] != -1) continue;
      prompt_of[s] = next;
      joined[s] = NowSeconds();
      slots_[s]->Start(prompts[static_cast<size_t>(next)], max_new_tokens,
                       options_.sampling.seed + static_cast<uint64_t>(next));
      newcomers.push_back(slots_[s].get());
      newcomer_slots.push_back(s);
      ++next;
    }
    if (!newcomers.empty()) {
      const double t0 = NowSeconds();
      PrefillTogether(*target_, newcomers);
      const double t1 = NowSeconds();
      counters_.decode.prefill_s += t1 - t0;
      counters_.decode.target_forwards += 1;
      for (size_t k = 0; k < newcomers.size(); ++k) {
        newcomers[k]->result().ttft_s = t1 - joined[newcomer_slots[k]];
        if (newcomers[k]->done()) retire(newcomer_slots[k]);  // max_new_tokens == 1
      }
    }
    active.clear();
    log.prompts.clear();
    log.c.clear();
    log.n.clear();
    std::vector<size_t> active_slots;
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (prompt_of[s] == -1) continue;
      active.push_back(slots_[s].get());
      active_slots.push_back(s);
    }
    if (active.empty()) continue;

    SPECPLAN_RETURN_IF_ERROR(DraftAll(active));
    for (size_t k = 0; k < active.size(); ++k) {
      const int n = active[k]->tree().num_draft();
      counters_.undrafted_steps += n == 0 ? 1 : 0;
      log.prompts.push_back(prompt_of[active_slots[k]]);
      log.c.push_back(active[k]->c());
      log.n.push_back(n);
    }
    SPECPLAN_ASSIGN_OR_RETURN(
        VerifyTimes t, VerifyTogether(*target_, active, options_.sampling.greedy, &counters_.decode,
                                      counters_.passes));
    counters_.decode.verify_s += t.verify_s;
    counters_.decode.update_s += t.update_s;
    counters_.passes += 1;
    if (on_step) on_step(log);
    for (size_t k = 0; k < active.size(); ++k) {
      if (active[k]->done()) retire(active_slots[k]);
    }
  }
  counters_.decode.total_s += NowSeconds() - t_run;
  return results;
}

}  // namespace specplan::runtime
