#include "planner/acceptance/acceptance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::planner {
namespace {

// CSR children lists of `tree`, each in increasing index order.
void BuildChildren(const Tree& tree, std::vector<int32_t>* begin, std::vector<int32_t>* children) {
  const int s = tree.size();
  begin->assign(s + 1, 0);
  for (int i = 1; i < s; ++i) ++(*begin)[tree.parents[i] + 1];
  for (int i = 0; i < s; ++i) (*begin)[i + 1] += (*begin)[i];
  children->resize(s > 0 ? s - 1 : 0);
  // begin[u + 1] is now the end of u's list. Fill each list back to front (largest index last),
  // decrementing begin[u + 1] down to the start of u's list, then shift the starts into place.
  for (int i = s - 1; i >= 1; --i) (*children)[--(*begin)[tree.parents[i] + 1]] = i;
  for (int u = 0; u < s; ++u) (*begin)[u] = (*begin)[u + 1];
  (*begin)[s] = s - 1;
}

// Samples an index from non-negative weights w[0..n) with total `sum` > 0.
int32_t SampleWeights(const std::vector<double>& w, double sum, double u) {
  const double target = u * sum;
  double cum = 0.0;
  int32_t last = -1;
  for (size_t v = 0; v < w.size(); ++v) {
    if (w[v] <= 0.0) continue;
    cum += w[v];
    last = static_cast<int32_t>(v);
    if (target < cum) return last;
  }
  return last;  // rounding: target landed at the very end
}

}  // namespace

// ---- Greedy ----

void AcceptGreedy(const Tree& tree, absl::Span<const TokenId> argmax, GreedyAcceptWorkspace* ws,
                  AcceptResult* out) {
  const int s = tree.size();
  SPECPLAN_CHECK(s >= 1 && static_cast<int>(argmax.size()) == s, "argmax must be [tree.size()]");
  SPECPLAN_CHECK(ws != nullptr && out != nullptr);
  ws->best_len.assign(s, 0);
  ws->best_child.assign(s, -1);
  // Children have larger indices than parents, so a reverse scan sees each subtree before its
  // root. `>=` lets the lower-index sibling win ties (it is visited later).
  for (int i = s - 1; i >= 1; --i) {
    const int32_t u = tree.parents[i];
    if (tree.tokens[i] != argmax[u]) continue;
    const int32_t len = 1 + ws->best_len[i];
    if (len >= ws->best_len[u]) {
      ws->best_len[u] = len;
      ws->best_child[u] = i;
    }
  }
  out->accepted_nodes.clear();
  int32_t node = 0;
  out->accepted_nodes.push_back(node);
  while (ws->best_child[node] >= 0) {
    node = ws->best_child[node];
    out->accepted_nodes.push_back(node);
  }
  out->accepted_length = static_cast<int32_t>(out->accepted_nodes.size()) - 1;
  out->bonus_token = argmax[node];
}

AcceptResult AcceptGreedy(const Tree& tree, absl::Span<const TokenId> argmax) {
  GreedyAcceptWorkspace ws;
  AcceptResult out;
  AcceptGreedy(tree, argmax, &ws, &out);
  return out;
}

absl::StatusOr<std::vector<int64_t>> BatchArgmaxRows(absl::Span<const Tree> trees,
                                                     std::optional<int64_t> draft_token_num,
                                                     int64_t argmax_size) {
  const int64_t slot = draft_token_num.value_or(0);
  if (draft_token_num && slot < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "draft_token_num = ", slot, ": must be >= 1 (unset: the trees' nodes back to back)"));
  }
  const size_t b = trees.size();
  std::vector<int64_t> rows(b + 1, 0);
  for (size_t i = 0; i < b; ++i) {
    const int64_t n = trees[i].size();
    if (slot > 0 && n > slot) {
      return absl::InvalidArgumentError(
          absl::StrCat("draft_token_num = ", slot, ": trees[", i, "] has ", n, " nodes"));
    }
    rows[i + 1] = rows[i] + (slot > 0 ? slot : n);
  }
  if (argmax_size != rows[b]) {
    return absl::InvalidArgumentError(
        absl::StrCat("argmax: ", argmax_size, " entries, expected ", rows[b],
                     slot > 0 ? absl::StrCat(" (B = ", b, " x draft_token_num = ", slot, ")")
                              : std::string(" (the trees' nodes back to back)")));
  }
  return rows;
}

void AcceptGreedyBatch(absl::Span<const Tree> trees, absl::Span<const TokenId> argmax,
                       absl::Span<const int64_t> rows, GreedyAcceptWorkspace* ws,
                       BatchAcceptResult* out) {
  const size_t b = trees.size();
  SPECPLAN_CHECK(rows.size() == b + 1 && rows[b] == static_cast<int64_t>(argmax.size()),
                 "rows must be BatchArgmaxRows(trees, ., argmax.size())");
  SPECPLAN_CHECK(ws != nullptr && out != nullptr);
  out->accepted_length.resize(b);
  out->bonus_token.resize(b);
  out->accepted_nodes.clear();
  out->emitted.clear();
  out->offsets.assign(b + 1, 0);
  AcceptResult r;
  for (size_t i = 0; i < b; ++i) {
    const Tree& t = trees[i];
    SPECPLAN_CHECK(rows[i] + t.size() <= rows[i + 1], "a tree overflows its argmax rows");
    AcceptGreedy(t, argmax.subspan(static_cast<size_t>(rows[i]), static_cast<size_t>(t.size())), ws,
                 &r);
    out->accepted_length[i] = r.accepted_length;
    out->bonus_token[i] = r.bonus_token;
    out->accepted_nodes.insert(out->accepted_nodes.end(), r.accepted_nodes.begin(),
                               r.accepted_nodes.end());
    for (size_t k = 1; k < r.accepted_nodes.size(); ++k) {
      out->emitted.push_back(t.tokens[r.accepted_nodes[k]]);
    }
    out->emitted.push_back(r.bonus_token);
    out->offsets[i + 1] = static_cast<int64_t>(out->accepted_nodes.size());
  }
}

// ---- Sampling ----

absl::Status ApplySampling(absl::Span<const float> logits, float temperature, int top_k,
                           float top_p, absl::Span<float> probs, std::vector<int32_t>* order) {
  const size_t vocab = logits.size();
  SPECPLAN_CHECK(probs.size() == vocab, "probs must have the size of logits");
  SPECPLAN_CHECK(order != nullptr);
  if (vocab == 0) return absl::InvalidArgumentError("logits: empty");
  if (!(temperature >= 0.0f) || std::isinf(temperature)) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature = ", temperature, ": must be finite and >= 0"));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("top_p = ", top_p, ": must be in (0, 1]"));
  }
  float max_logit = -std::numeric_limits<float>::infinity();
  size_t argmax = 0;
  for (size_t v = 0; v < vocab; ++v) {
    const float l = logits[v];
    if (std::isnan(l) || l == std::numeric_limits<float>::infinity()) {
      return absl::InvalidArgumentError(
          absl::StrCat("logits[", v, "] = ", l, ": must be finite or -inf"));
    }
    if (l > max_logit) {
      max_logit = l;
      argmax = v;
    }
  }
  if (max_logit == -std::numeric_limits<float>::infinity()) {
    return absl::InvalidArgumentError("logits: every entry is -inf");
  }
  if (temperature == 0.0f) {
    std::fill(probs.begin(), probs.end(), 0.0f);
    probs[argmax] = 1.0f;
    return absl::OkStatus();
  }
  double sum = 0.0;
  for (size_t v = 0; v < vocab; ++v) {
    const double e = std::exp((static_cast<double>(logits[v]) - max_logit) / temperature);
    probs[v] = static_cast<float>(e);
    sum += e;
  }
  const bool use_top_k = top_k > 0 && static_cast<size_t>(top_k) < vocab;
  const bool use_top_p = top_p < 1.0f;
  if (use_top_k || use_top_p) {
    order->resize(vocab);
    std::iota(order->begin(), order->end(), 0);
    const size_t k = use_top_k ? static_cast<size_t>(top_k) : vocab;
    auto more_probable = [&probs](int32_t x, int32_t y) {
      return probs[x] > probs[y] || (probs[x] == probs[y] && x < y);
    };
    std::partial_sort(order->begin(), order->begin() + k, order->end(), more_probable);
    double kept_mass = 0.0;
    for (size_t j = 0; j < k; ++j) kept_mass += probs[(*order)[j]];
    size_t keep = k;
    if (use_top_p) {
      // Smallest prefix whose mass (relative to the top-k mass) reaches top_p; at least one.
      const double threshold = static_cast<double>(top_p) * kept_mass;
      double cum = 0.0;
      keep = 0;
      while (keep < k) {
        cum += probs[(*order)[keep]];
        ++keep;
        if (cum >= threshold) break;
      }
    }
    sum = 0.0;
    for (size_t j = 0; j < keep; ++j) sum += probs[(*order)[j]];
    for (size_t j = keep; j < vocab; ++j) probs[(*order)[j]] = 0.0f;
  }
  const double inv = 1.0 / sum;
  for (size_t v = 0; v < vocab; ++v) probs[v] = static_cast<float>(probs[v] * inv);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> ApplySampling(absl::Span<const float> logits, float temperature,
                                                 int top_k, float top_p) {
  std::vector<float> probs(logits.size());
  std::vector<int32_t> order;
  SPECPLAN_RETURN_IF_ERROR(
      ApplySampling(logits, temperature, top_k, top_p, absl::MakeSpan(probs), &order));
  return probs;
}

void AcceptSampling(const Tree& tree, int vocab, absl::Span<const float> target_probs,
                    absl::Span<const float> draft_probs, DraftMode mode, Uniform01 uniform,
                    SampleAcceptWorkspace* ws, AcceptResult* out) {
  const int s = tree.size();
  SPECPLAN_CHECK(s >= 1 && vocab > 0);
  SPECPLAN_CHECK(ws != nullptr && out != nullptr);
  const size_t row = static_cast<size_t>(vocab);
  SPECPLAN_CHECK(target_probs.size() == static_cast<size_t>(s) * row,
                 "target_probs must be [tree.size()][vocab]");
  const bool point_mass = mode == DraftMode::kPointMass;
  SPECPLAN_CHECK(point_mass || draft_probs.size() == static_cast<size_t>(s) * row,
                 "draft_probs must be [tree.size()][vocab]");
  BuildChildren(tree, &ws->child_begin, &ws->children);
  std::vector<double>& p = ws->p;
  std::vector<double>& q = ws->q;
  p.resize(row);
  if (!point_mass) q.resize(row);

  out->accepted_nodes.clear();
  int32_t node = 0;
  out->accepted_nodes.push_back(node);
  while (true) {
    double psum = 0.0;
    for (size_t v = 0; v < row; ++v) {
      p[v] = target_probs[node * row + v];
      psum += p[v];
    }
    SPECPLAN_CHECK(psum > 0.0, "target_probs rows must have a positive sum");
    double qsum = 0.0;
    if (!point_mass) {
      for (size_t v = 0; v < row; ++v) {
        q[v] = draft_probs[node * row + v];
        qsum += q[v];
      }
    }
    int32_t next = -1;
    for (int32_t k = ws->child_begin[node]; k < ws->child_begin[node + 1]; ++k) {
      const int32_t child = ws->children[k];
      const int32_t x = tree.tokens[child];
      SPECPLAN_CHECK(x >= 0 && x < vocab, "tree token id >= vocab");
      if (point_mass) {
        // Accept with probability p(x) (normalised).
        if (uniform() * psum < p[x]) {
          next = child;
          break;
        }
        psum -= p[x];
        p[x] = 0.0;
        if (psum <= 0.0) {  // only rounding can get here; resum what is left
          psum = 0.0;
          for (double w : p) psum += w;
        }
        continue;
      }
      if (q[x] <= 0.0 || qsum <= 0.0) continue;  // cannot have been drawn from q
      // Accept with probability min(1, (p(x)/psum) / (q(x)/qsum)).
      if (uniform() * q[x] * psum < p[x] * qsum) {
        next = child;
        break;
      }
      // Residual: p <- normalize(max(0, p/psum - q/qsum)); kept as unnormalised weights.
      double rsum = 0.0;
      for (size_t v = 0; v < row; ++v) rsum += std::max(0.0, p[v] / psum - q[v] / qsum);
      if (rsum > 0.0) {
        for (size_t v = 0; v < row; ++v) p[v] = std::max(0.0, p[v] / psum - q[v] / qsum);
        psum = rsum;
      }
      if (mode == DraftMode::kWithoutReplacement) {
        qsum -= q[x];
        q[x] = 0.0;
      }
    }
    if (next < 0) {
      out->bonus_token = SampleWeights(p, psum, uniform());
      break;
    }
    out->accepted_nodes.push_back(next);
    node = next;
  }
  out->accepted_length = static_cast<int32_t>(out->accepted_nodes.size()) - 1;
}

void AcceptSampling(const Tree& tree, int vocab, absl::Span<const float> target_probs,
                    absl::Span<const float> draft_probs, DraftMode mode, std::mt19937_64& rng,
                    SampleAcceptWorkspace* ws, AcceptResult* out) {
  auto uniform = [&rng]() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  AcceptSampling(tree, vocab, target_probs, draft_probs, mode, Uniform01(uniform), ws, out);
}

// ---- Statistics ----

StepAcceptance MakeStepAcceptance(const Tree& tree, const AcceptResult& result) {
  StepAcceptance step;
  step.num_draft = tree.num_draft();
  int32_t max_depth = 0;
  if (!tree.depths.empty()) {
    for (int32_t d : tree.depths) max_depth = std::max(max_depth, d);
  } else {
    // Depth of each node from parents without extra storage: walk up (trees are shallow).
    for (int i = 1; i < tree.size(); ++i) {
      int32_t d = 0;
      for (int u = i; u > 0; u = tree.parents[u]) ++d;
      max_depth = std::max(max_depth, d);
    }
  }
  step.proposed_depth = max_depth;
  step.accepted_length = result.accepted_length;
  return step;
}

void AcceptanceStats::Add(const StepAcceptance& step) {
  ++steps;
  drafted_tokens += step.num_draft;
  accepted_tokens += step.accepted_length;
  const size_t need = static_cast<size_t>(step.proposed_depth) + 1;
  if (proposed_at_depth.size() < need) {
    proposed_at_depth.resize(need, 0);
    accepted_at_depth.resize(need, 0);
    reached_at_depth.resize(need, 0);
  }
  for (int d = 1; d <= step.proposed_depth; ++d) {
    ++proposed_at_depth[d];
    if (step.accepted(d - 1) || d == 1) ++reached_at_depth[d];
    if (step.accepted(d)) ++accepted_at_depth[d];
  }
}

void AcceptanceStats::Reset() {
  steps = drafted_tokens = accepted_tokens = 0;
  proposed_at_depth.clear();
  accepted_at_depth.clear();
  reached_at_depth.clear();
}

double AcceptanceStats::MeanAcceptedLength() const {
  return steps == 0 ? 0.0 : static_cast<double>(accepted_tokens) / static_cast<double>(steps);
}

double AcceptanceStats::AcceptanceRate(int depth) const {
  if (depth < 1 || static_cast<size_t>(depth) >= proposed_at_depth.size()) return 0.0;
  const int64_t den = proposed_at_depth[depth];
  return den == 0 ? 0.0 : static_cast<double>(accepted_at_depth[depth]) / den;
}

double AcceptanceStats::ConditionalAcceptanceRate(int depth) const {
  if (depth < 1 || static_cast<size_t>(depth) >= reached_at_depth.size()) return 0.0;
  const int64_t den = reached_at_depth[depth];
  return den == 0 ? 0.0 : static_cast<double>(accepted_at_depth[depth]) / den;
}

double AcceptanceStats::AcceptedFraction() const {
  return drafted_tokens == 0 ? 0.0 : static_cast<double>(accepted_tokens) / drafted_tokens;
}

}  // namespace specplan::planner
