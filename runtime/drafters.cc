#include "runtime/drafters.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::runtime {
DraftModelDrafter::DraftModelDrafter(const Transformer* model, int64_t max_len, int top_k,
                                     double temperature)
    : model_(model),
      cache_(model->NewCache(max_len)),
      top_k_(static_cast<int>(std::min<int64_t>(top_k, model->config().vocab_size))),
      temperature_(temperature),
      step_(model->options().device) {
  SPECPLAN_CHECK(top_k >= 1 && temperature > 0);
}

void DraftModelDrafter::Reset() {
  cache_.set_length(0);
  fed_.clear();
  fed_of_node_.clear();
}

absl::Status DraftModelDrafter::Sync(const std::vector<planner::TokenId>& committed) {
  const int64_t n = static_cast<int64_t>(committed.size());
  if (n < 1) return absl::InvalidArgumentError("committed: empty sequence");
  if (n > cache_.max_len()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "committed length ", n, " exceeds the draft cache (max_len = ", cache_.max_len(), ")"));
  }
  const int64_t len = cache_.length();
  SPECPLAN_CHECK(len <= n - 1, "draft cache ahead of the committed sequence (call Reset)");
  const int64_t m = n - len;  // committed[len ..], causally at slots len .. n - 1
  step_.Begin(m, 0);
  std::copy(committed.begin() + len, committed.end(), step_.tokens());
  for (int64_t i = 0; i < m; ++i) step_.positions()[i] = len + i;
  const double t0 = NowSeconds();
  const StepInputs in = step_.Upload();
  torch::Tensor logits = model_->Forward(in.tokens, in.positions, len, torch::Tensor(), &cache_);
  root_logits_ = logits[m - 1];
  const double dt = NowSeconds() - t0;
  counters_.seconds += dt;
  counters_.forwards += 1;
  counters_.fed_tokens += m;
  if (m == 1) last_step_s_ = dt;
  last_sync_tokens_ = m;
  last_sync_s_ = dt;
  cache_.set_length(n);
  root_slot_ = n - 1;
  next_slot_ = n;
  fed_.clear();
  fed_of_node_.assign(1, -1);
  return absl::OkStatus();
}

void DraftModelDrafter::FeedNodes(const planner::Tree& tree, const std::vector<int32_t>& nodes,
                                  torch::Tensor* logits) {
  c10::InferenceMode guard;
  const int64_t m = static_cast<int64_t>(nodes.size());
  const int64_t start = next_slot_;
  const int64_t T = start + m;
  if (static_cast<int64_t>(fed_of_node_.size()) < tree.size()) fed_of_node_.resize(tree.size(), -1);
  // Mask columns: the slots after the root, [base, T); the root and the committed prefix before
  // it are visible to every node.
  const int64_t base = root_slot_ + 1;
  const int64_t cols = T - base;
  step_.Begin(m, cols);
  planner::TokenId* toks = step_.tokens();
  int64_t* pos = step_.positions();
  float* md = step_.mask();
  std::fill(md, md + m * cols, -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < m; ++r) {
    const int32_t u = nodes[r];
    const int32_t parent_fed = fed_of_node_[tree.parents[u]];
    fed_.push_back({start + r, parent_fed, tree.tokens[u]});
    fed_of_node_[u] = static_cast<int32_t>(fed_.size()) - 1;
    toks[r] = tree.tokens[u];
    pos[r] = root_slot_ + tree.depths[u];
    float* row = md + r * cols;
    for (int32_t f = fed_of_node_[u]; f >= 0; f = fed_[f].parent) row[fed_[f].slot - base] = 0.0f;
  }
  next_slot_ = T;
  const double t0 = NowSeconds();
  const StepInputs in = step_.Upload();
  *logits = model_->Forward(in.tokens, in.positions, start, in.mask, &cache_);
  const double dt = NowSeconds() - t0;
  counters_.seconds += dt;
  counters_.forwards += 1;
  counters_.fed_tokens += m;
  if (m == 1) last_step_s_ = dt;
}

void SoftmaxTopK(const torch::Tensor& logits, double temperature, int k,
                 std::vector<planner::TokenId>* tokens, std::vector<float>* probs) {
  c10::InferenceMode guard;
  const torch::Tensor rows = logits.dim() == 1 ? logits.unsqueeze(0) : logits;
  torch::Tensor p = torch::softmax(rows.to(torch::kCPU, torch::kFloat64) / temperature, -1);
  auto [vals, idx] = p.topk(k);
  vals = vals.contiguous();
  idx = idx.contiguous();
  const double* v = vals.data_ptr<double>();
  const int64_t* ix = idx.data_ptr<int64_t>();
  const int64_t n = vals.numel();
  tokens->resize(static_cast<size_t>(n));
  probs->resize(static_cast<size_t>(n));
  // Shrunk a little so that a row's float sum stays <= 1 (planner::ValidateMarginals).
  for (int64_t i = 0; i < n; ++i) {
    (*tokens)[i] = static_cast<planner::TokenId>(ix[i]);
    (*probs)[i] = static_cast<float>(v[i] * (1.0 - 1e-6));
  }
}

void DraftModelDrafter::FillRow(const torch::Tensor& logits_row, planner::NodeDistributions* d,
                                int row) {
  SoftmaxTopK(logits_row, temperature_, top_k_, &row_tokens_, &row_probs_);
  for (int j = 0; j < top_k_; ++j) d->Set(row, j, row_tokens_[j], row_probs_[j]);
}

void DraftModelDrafter::MeasureLevels(double t0, int levels) {
  const double total = NowSeconds() - t0;
  if (last_sync_tokens_ == 1) {
    last_level_s_ = total / levels;
  } else if (levels > 1) {
    last_level_s_ = (total - last_sync_s_) / (levels - 1);
  } else {
    last_level_s_ = 0;
  }
}

absl::StatusOr<const planner::Tree*> DraftModelDrafter::DraftTree(
    planner::TreePolicy& policy, const std::vector<planner::TokenId>& committed) {
  const double t0 = NowSeconds();
  SPECPLAN_RETURN_IF_ERROR(Sync(committed));
  int levels = 0;
  policy.Begin(committed.back());
  std::vector<int32_t> pending, to_feed;
  std::vector<int> row_of;  // pending row -> row in the fed logits, -1 = root
  torch::Tensor logits;
  while (!policy.PendingExpansions().empty()) {
    pending = policy.PendingExpansions();
    const planner::Tree& tree = policy.tree();
    to_feed.clear();
    row_of.assign(pending.size(), -1);
    for (size_t r = 0; r < pending.size(); ++r) {
      if (pending[r] == 0) continue;
      row_of[r] = static_cast<int>(to_feed.size());
      to_feed.push_back(pending[r]);
    }
    if (!to_feed.empty()) {
      if (next_slot_ + static_cast<int64_t>(to_feed.size()) > cache_.max_len()) {
        return absl::ResourceExhaustedError(absl::StrCat("draft cache full: ", next_slot_, " + ",
                                                         to_feed.size(),
                                                         " > max_len = ", cache_.max_len()));
      }
      FeedNodes(tree, to_feed, &logits);
    }
    dists_.nodes = pending;
    dists_.ResizeRows(top_k_);
    for (size_t r = 0; r < pending.size(); ++r) {
      FillRow(row_of[r] < 0 ? root_logits_ : logits[row_of[r]], &dists_, static_cast<int>(r));
    }
    SPECPLAN_RETURN_IF_ERROR(policy.Provide(dists_));
    ++levels;
  }
  if (levels > 0) MeasureLevels(t0, levels);
  return &policy.tree();
}

absl::Status DraftModelDrafter::DraftChain(const std::vector<planner::TokenId>& committed,
                                           int gamma, planner::Marginals* out) {
  if (gamma < 1 || gamma > planner::kMaxMarginalsGamma) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma = ", gamma, ": must be in [1, ", planner::kMaxMarginalsGamma, "]"));
  }
  const double t0 = NowSeconds();
  SPECPLAN_RETURN_IF_ERROR(Sync(committed));
  if (root_slot_ + gamma >= cache_.max_len()) {
    return absl::ResourceExhaustedError("draft cache full for the chain");
  }
  out->root_token = committed.back();
  out->gamma = gamma;
  out->k = top_k_;
  out->tokens.assign(static_cast<size_t>(gamma) * top_k_, 0);
  out->probs.assign(static_cast<size_t>(gamma) * top_k_, 0.0f);
  dists_.nodes.assign(1, 0);
  dists_.ResizeRows(top_k_);
  torch::Tensor row = root_logits_;
  for (int d = 0; d < gamma; ++d) {
    FillRow(row, &dists_, 0);
    for (int j = 0; j < top_k_; ++j) {
      out->tokens[static_cast<size_t>(d) * top_k_ + j] = dists_.token(0, j);
      out->probs[static_cast<size_t>(d) * top_k_ + j] = dists_.prob(0, j);
    }
    if (d + 1 == gamma) break;
    // Feed the greedy token: the chain occupies consecutive slots, so causal attention is exact.
    const planner::TokenId tok = dists_.token(0, 0);
    const int64_t slot = root_slot_ + 1 + d;
    fed_.push_back({slot, static_cast<int32_t>(fed_.size()) - 1, tok});
    step_.Begin(1, 0);
    step_.tokens()[0] = tok;
    step_.positions()[0] = slot;
    const double t0 = NowSeconds();
    const StepInputs in = step_.Upload();
    row = model_->Forward(in.tokens, in.positions, slot, torch::Tensor(), &cache_)[0];
    last_step_s_ = NowSeconds() - t0;
    counters_.seconds += last_step_s_;
    counters_.forwards += 1;
    counters_.fed_tokens += 1;
    next_slot_ = slot + 1;
  }
  MeasureLevels(t0, gamma);
  return absl::OkStatus();
}

void DraftModelDrafter::Commit(const std::vector<planner::TokenId>& accepted_tokens) {
  std::vector<int64_t> src;
  int32_t cur = -1;
  for (planner::TokenId tok : accepted_tokens) {
    int32_t found = -1;
    for (size_t f = 0; f < fed_.size(); ++f) {
      if (fed_[f].parent == cur && fed_[f].token == tok) {
        found = static_cast<int32_t>(f);
        break;
      }
    }
    if (found < 0) break;
    src.push_back(fed_[found].slot);
    cur = found;
  }
  cache_.GatherSlots(src, root_slot_ + 1);
  cache_.set_length(root_slot_ + 1 + static_cast<int64_t>(src.size()));
  counters_.reused_rows += static_cast<int64_t>(src.size());
  fed_.clear();
}

bool NgramMarginals(const std::vector<planner::TokenId>& context, int64_t vocab,
                    const NgramOptions& o, planner::Marginals* out) {
  const int64_t n = static_cast<int64_t>(context.size());
  for (int len = std::min<int64_t>(o.max_ngram, n - 1); len >= o.min_ngram && len >= 1; --len) {
    // Matches: positions j (end of an earlier occurrence of the suffix), most recent first.
    std::vector<int64_t> ends;
    for (int64_t j = n - 2; j >= len - 1 && static_cast<int>(ends.size()) < o.max_matches; --j) {
      bool eq = true;
      for (int i = 0; i < len && eq; ++i) eq = context[j - i] == context[n - 1 - i];
      if (eq) ends.push_back(j);
    }
    if (ends.empty()) continue;
    const double w = 1.0 / static_cast<double>(ends.size());
    int gamma = 0;
    std::vector<std::vector<std::pair<double, planner::TokenId>>> rows;
    for (int d = 0; d < o.gamma; ++d) {
      std::map<planner::TokenId, int> counts;
      for (int64_t j : ends) {
        if (j + 1 + d < n) ++counts[context[j + 1 + d]];
      }
      if (counts.empty()) break;
      std::vector<std::pair<double, planner::TokenId>> row;
      for (auto& [tok, cnt] : counts) row.push_back({cnt * w, tok});
      std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      });
      if (static_cast<int>(row.size()) > o.k) row.resize(o.k);
      rows.push_back(std::move(row));
      ++gamma;
    }
    if (gamma == 0) continue;
    int k = 1;
    for (const auto& r : rows) k = std::max(k, static_cast<int>(r.size()));
    out->root_token = context.back();
    out->gamma = gamma;
    out->k = k;
    out->tokens.assign(static_cast<size_t>(gamma) * k, 0);
    out->probs.assign(static_cast<size_t>(gamma) * k, 0.0f);
    for (int d = 0; d < gamma; ++d) {
      std::set<planner::TokenId> used;
      for (const auto& e : rows[d]) used.insert(e.second);
      planner::TokenId filler = 0;
      for (int r = 0; r < k; ++r) {
        planner::TokenId tok;
        float p = 0.0f;
        if (r < static_cast<int>(rows[d].size())) {
          tok = rows[d][r].second;
          p = static_cast<float>(rows[d][r].first * (1.0 - 1e-6));
        } else {
          while (used.count(filler)) ++filler;
          tok = filler++;
        }
        SPECPLAN_CHECK(tok < vocab || r < static_cast<int>(rows[d].size()));
        out->tokens[static_cast<size_t>(d) * k + r] = tok;
        out->probs[static_cast<size_t>(d) * k + r] = p;
      }
    }
    return true;
  }
  return false;
}

}  // namespace specplan::runtime
