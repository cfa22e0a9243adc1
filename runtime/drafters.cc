#include "runtime/drafters.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

DraftModelDrafter::DraftModelDrafter(const Transformer* model, int64_t max_len, int top_k,
                                     double temperature)
    : model_(model),
      cache_(model->NewCache(max_len)),
      top_k_(static_cast<int>(std::min<int64_t>(top_k, model->config().vocab_size))),
      temperature_(temperature) {
  SPECPLAN_CHECK(top_k >= 1 && temperature > 0);
}

void DraftModelDrafter::Reset() {
  cache_.set_length(0);
  fed_.clear();
  fed_of_node_.clear();
}

absl::Status DraftModelDrafter::Sync(const std::vector<int64_t>& committed) {
  const int64_t n = static_cast<int64_t>(committed.size());
  if (n < 1) return absl::InvalidArgumentError("committed: empty sequence");
  if (n > cache_.max_len()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "committed length ", n, " exceeds the draft cache (max_len = ", cache_.max_len(), ")"));
  }
  const int64_t len = cache_.length();
  SPECPLAN_CHECK(len <= n - 1, "draft cache ahead of the committed sequence (call Reset)");
  std::vector<int64_t> feed(committed.begin() + len, committed.end());
  const double t0 = Now();
  torch::Tensor logits = model_->ForwardCausal(feed, len, &cache_);
  root_logits_ = logits[logits.size(0) - 1];
  const double dt = Now() - t0;
  counters_.seconds += dt;
  counters_.forwards += 1;
  counters_.fed_tokens += static_cast<int64_t>(feed.size());
  if (feed.size() == 1) last_step_s_ = dt;
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
  std::vector<int64_t> toks(m), pos(m);
  torch::Tensor mask = torch::full({m, T}, -std::numeric_limits<float>::infinity());
  float* md = mask.data_ptr<float>();
  for (int64_t r = 0; r < m; ++r) {
    const int32_t u = nodes[r];
    const int32_t parent_fed = fed_of_node_[tree.parents[u]];
    fed_.push_back({start + r, parent_fed, tree.tokens[u]});
    fed_of_node_[u] = static_cast<int32_t>(fed_.size()) - 1;
    toks[r] = tree.tokens[u];
    pos[r] = root_slot_ + tree.depths[u];
    float* row = md + r * T;
    std::fill(row, row + root_slot_ + 1, 0.0f);
    for (int32_t f = fed_of_node_[u]; f >= 0; f = fed_[f].parent) row[fed_[f].slot] = 0.0f;
  }
  next_slot_ = T;
  const double t0 = Now();
  *logits = model_->Forward(torch::tensor(toks, torch::kInt64), torch::tensor(pos, torch::kInt64),
                            start, mask, &cache_);
  const double dt = Now() - t0;
  counters_.seconds += dt;
  counters_.forwards += 1;
  counters_.fed_tokens += m;
  if (m == 1) last_step_s_ = dt;
}

void DraftModelDrafter::FillRow(const torch::Tensor& logits_row, planner::NodeDistributions* d,
                                int row) {
  c10::InferenceMode guard;
  torch::Tensor p = torch::softmax(logits_row.to(torch::kCPU, torch::kFloat64) / temperature_, -1);
  auto [vals, idx] = p.topk(top_k_);
  const double* v = vals.data_ptr<double>();
  const int64_t* ix = idx.data_ptr<int64_t>();
  for (int j = 0; j < top_k_; ++j) {
    d->Set(row, j, static_cast<int32_t>(ix[j]), static_cast<float>(v[j] * (1.0 - 1e-6)));
  }
}

absl::StatusOr<const planner::Tree*> DraftModelDrafter::DraftTree(
    planner::TreePolicy& policy, const std::vector<int64_t>& committed) {
  SPECPLAN_RETURN_IF_ERROR(Sync(committed));
  policy.Begin(static_cast<int32_t>(committed.back()));
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
  }
  return &policy.tree();
}

absl::Status DraftModelDrafter::DraftChain(const std::vector<int64_t>& committed, int gamma,
                                           planner::Marginals* out) {
  if (gamma < 1 || gamma > planner::kMaxMarginalsGamma) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma = ", gamma, ": must be in [1, ", planner::kMaxMarginalsGamma, "]"));
  }
  SPECPLAN_RETURN_IF_ERROR(Sync(committed));
  if (root_slot_ + gamma >= cache_.max_len()) {
    return absl::ResourceExhaustedError("draft cache full for the chain");
  }
  out->root_token = static_cast<int32_t>(committed.back());
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
    const int64_t tok = dists_.token(0, 0);
    const int64_t slot = root_slot_ + 1 + d;
    fed_.push_back({slot, static_cast<int32_t>(fed_.size()) - 1, tok});
    const double t0 = Now();
    row = model_->ForwardCausal({tok}, slot, &cache_)[0];
    last_step_s_ = Now() - t0;
    counters_.seconds += last_step_s_;
    counters_.forwards += 1;
    counters_.fed_tokens += 1;
    next_slot_ = slot + 1;
  }
  return absl::OkStatus();
}

void DraftModelDrafter::Commit(const std::vector<int64_t>& accepted_tokens) {
  std::vector<int64_t> src;
  int32_t cur = -1;
  for (int64_t tok : accepted_tokens) {
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

bool NgramMarginals(const std::vector<int64_t>& context, int64_t vocab, const NgramOptions& o,
                    planner::Marginals* out) {
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
    std::vector<std::vector<std::pair<double, int64_t>>> rows;
    for (int d = 0; d < o.gamma; ++d) {
      std::map<int64_t, int> counts;
      for (int64_t j : ends) {
        if (j + 1 + d < n) ++counts[context[j + 1 + d]];
      }
      if (counts.empty()) break;
      std::vector<std::pair<double, int64_t>> row;
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
    out->root_token = static_cast<int32_t>(context.back());
    out->gamma = gamma;
    out->k = k;
    out->tokens.assign(static_cast<size_t>(gamma) * k, 0);
    out->probs.assign(static_cast<size_t>(gamma) * k, 0.0f);
    for (int d = 0; d < gamma; ++d) {
      std::set<int64_t> used;
      for (const auto& e : rows[d]) used.insert(e.second);
      int64_t filler = 0;
      for (int r = 0; r < k; ++r) {
        int64_t tok;
        float p = 0.0f;
        if (r < static_cast<int>(rows[d].size())) {
          tok = rows[d][r].second;
          p = static_cast<float>(rows[d][r].first * (1.0 - 1e-6));
        } else {
          while (used.count(filler)) ++filler;
          tok = filler++;
        }
        SPECPLAN_CHECK(tok < vocab || r < static_cast<int>(rows[d].size()));
        out->tokens[static_cast<size_t>(d) * k + r] = static_cast<int32_t>(tok);
        out->probs[static_cast<size_t>(d) * k + r] = p;
      }
    }
    return true;
  }
  return false;
}

}  // namespace specplan::runtime
