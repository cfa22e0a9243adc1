#include "runtime/trace_recorder.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

constexpr int kMaxRecorderNodes = 4096;

}  // namespace

// Drives the recording drafter level by level (one forward per depth) and keeps the row of every
// node it expands. Node selection: see TraceRecorderOptions.
class RecordingTreePolicy final : public planner::LevelPolicyBase {
 public:
  explicit RecordingTreePolicy(const TraceRecorderOptions& options) : o_(options) {}
  std::string Name() const override {
    return absl::StrCat("trace_recorder(gamma=", o_.gamma, ", nodes=", o_.max_nodes, ")");
  }

  // The expanded nodes of the final tree, in expansion order (topological), with their rows.
  whatif::RecordedNodes Recorded() const {
    whatif::RecordedNodes r;
    r.k = k_;
    std::vector<int32_t> out_index(tree_.size(), -1);
    for (size_t i = 0; i < expanded_.size(); ++i) {
      const int32_t u = expanded_[i];
      out_index[u] = static_cast<int32_t>(i);
      const int32_t p = tree_.parents[u];
      SPECPLAN_CHECK(p < 0 || out_index[p] >= 0, "recorded node's parent not recorded");
      r.parents.push_back(p < 0 ? -1 : out_index[p]);
      r.tokens.push_back(tree_.tokens[u]);
    }
    r.dist_tokens = row_tokens_;
    r.dist_probs = row_probs_;
    return r;
  }

 private:
  void OnBegin(std::vector<int32_t>& pending) override {
    expanded_.clear();
    row_tokens_.clear();
    row_probs_.clear();
    k_ = 0;
    greedy_.assign(1, 1);
    fixed_.assign(1, o_.fixed_depth > 0 && o_.fixed_branch > 0 ? 1 : 0);
    pending.push_back(0);
  }

  void OnLevel(const planner::NodeDistributions& d, std::vector<int32_t>& next) override {
    k_ = d.k;
    const int32_t first_child = tree_.size();
    for (int r = 0; r < d.num_nodes(); ++r) {
      const int32_t u = d.nodes[r];
      expanded_.push_back(u);
      for (int j = 0; j < d.k; ++j) {
        row_tokens_.push_back(d.token(r, j));
        row_probs_.push_back(d.prob(r, j));
      }
      for (int j = 0; j < d.k; ++j) {
        const int32_t tok = d.token(r, j);
        if (tok < 0) break;  // trailing padding
        const int child = tree_.AddNode(u, tok, tree_.path_probs[u] * d.prob(r, j));
        CountDrafted(1);
        greedy_.push_back(greedy_[u] && j == 0 ? 1 : 0);
        fixed_.push_back(
            fixed_[u] && j < o_.fixed_branch && tree_.depths[child] < o_.fixed_depth ? 1 : 0);
      }
    }
    const int32_t end = tree_.size();
    if (first_child == end || tree_.depths[first_child] >= o_.gamma) return;  // leaves at gamma
    int budget = o_.max_nodes - static_cast<int>(expanded_.size());
    std::vector<int32_t> others;
    for (int32_t c = first_child; c < end && budget > 0; ++c) {
      if (greedy_[c] || fixed_[c]) {
        next.push_back(c);
        --budget;
      }
    }
    for (int32_t c = first_child; c < end; ++c) {
      if (!greedy_[c] && !fixed_[c]) others.push_back(c);
    }
    std::stable_sort(others.begin(), others.end(), [&](int32_t a, int32_t b) {
      return tree_.path_probs[a] > tree_.path_probs[b];
    });
    for (size_t i = 0; i < others.size() && budget > 0 && static_cast<int>(i) < o_.level_width;
         ++i) {
      next.push_back(others[i]);
      --budget;
    }
    std::sort(next.begin(), next.end());
  }

  TraceRecorderOptions o_;
  int32_t k_ = 0;
  std::vector<int32_t> expanded_;    // tree indices, expansion order
  std::vector<int32_t> row_tokens_;  // [expanded][k]
  std::vector<float> row_probs_;     // [expanded][k]
  std::vector<uint8_t> greedy_;      // [tree size] on the greedy (top-1) chain
  std::vector<uint8_t> fixed_;  // [tree size] in the top-fixed_branch tree, depth < fixed_depth
};

absl::Status TraceRecorderOptions::Validate() const {
  auto bad = [](const char* field, int v, const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", v, ": ", rule));
  };
  if (gamma < 1 || gamma > planner::kMaxMarginalsGamma) {
    return bad("gamma", gamma, absl::StrCat("must be in [1, ", planner::kMaxMarginalsGamma, "]"));
  }
  if (top_k < 1 || top_k > planner::kMaxMarginalsK) {
    return bad("top_k", top_k, absl::StrCat("must be in [1, ", planner::kMaxMarginalsK, "]"));
  }
  if (max_nodes < 1 || max_nodes > kMaxRecorderNodes) {
    return bad("max_nodes", max_nodes, absl::StrCat("must be in [1, ", kMaxRecorderNodes, "]"));
  }
  if (static_cast<int64_t>(max_nodes) * top_k + 1 > planner::kMaxTreeNodes) {
    return bad("max_nodes", max_nodes,
               absl::StrCat("max_nodes * top_k + 1 must be <= ", planner::kMaxTreeNodes));
  }
  if (level_width < 1) return bad("level_width", level_width, "must be >= 1");
  if (fixed_depth < 0 || fixed_depth > gamma) {
    return bad("fixed_depth", fixed_depth, absl::StrCat("must be in [0, gamma = ", gamma, "]"));
  }
  if (fixed_branch < 0 || fixed_branch > top_k) {
    return bad("fixed_branch", fixed_branch, absl::StrCat("must be in [0, top_k = ", top_k, "]"));
  }
  if (continuation_len < 0 || continuation_len > whatif::kMaxContinuation) {
    return bad("continuation_len", continuation_len,
               absl::StrCat("must be in [0, ", whatif::kMaxContinuation, "]"));
  }
  return absl::OkStatus();
}

TraceRecorder::~TraceRecorder() = default;

absl::StatusOr<std::unique_ptr<TraceRecorder>> TraceRecorder::Create(
    const Transformer* draft, const SamplingOptions& sampling, int64_t max_context,
    const TraceRecorderOptions& options) {
  SPECPLAN_CHECK(draft != nullptr);
  if (!sampling.greedy) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sampling (temperature = ", sampling.temperature,
        "): traces can only be recorded from greedy decoding (the output must be the target's "
        "greedy continuation)"));
  }
  SPECPLAN_RETURN_IF_ERROR(options.Validate());
  if (max_context < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_context = ", max_context, ": must be >= 2"));
  }
  std::unique_ptr<TraceRecorder> r(new TraceRecorder());
  r->draft_ = draft;
  r->options_ = options;
  if (r->options_.continuation_len == 0) r->options_.continuation_len = options.gamma + 1;
  const int64_t max_len = max_context + options.max_nodes + options.gamma + 2;
  // The marginals come from the draft model's chain, or from the heads.
  if (options.heads == nullptr) {
    r->chain_drafter_ = std::make_unique<DraftModelDrafter>(draft, max_len, options.top_k);
  } else {
    r->heads_drafter_ = std::make_unique<HeadsDrafter>(options.heads, options.top_k);
  }
  r->tree_drafter_ = std::make_unique<DraftModelDrafter>(draft, max_len, options.top_k);
  r->tree_policy_ = std::make_unique<RecordingTreePolicy>(r->options_);
  return r;
}

absl::Status TraceRecorder::Record(int64_t prompt_index,
                                   const std::vector<planner::TokenId>& prompt,
                                   const GenerationResult& result) {
  if (prompt_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt_index = ", prompt_index, ": must be >= 0"));
  }
  if (prompt.empty()) return absl::InvalidArgumentError("prompt: empty");
  const int64_t P = static_cast<int64_t>(prompt.size());
  const std::vector<planner::TokenId>& out = result.tokens;
  const int64_t n_out = static_cast<int64_t>(out.size());
  // Check the step log against the output first, so a bad result records nothing.
  for (size_t i = 0; i < result.steps.size(); ++i) {
    const IterationLog& s = result.steps[i];
    const int64_t r = s.c - P;  // index of the root in the output
    const std::string at = absl::StrCat("steps[", i, "]");
    if (r < 0 || r + 1 >= n_out) {
      return absl::InvalidArgumentError(absl::StrCat(at, ".c = ", s.c, ": the root must be at ",
                                                     "output index c - prompt length in [0, ",
                                                     n_out - 1, ")"));
    }
    if (s.accepted < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ".accepted = ", s.accepted, ": < 0"));
    }
    const int64_t expect_c = i == 0 ? P : result.steps[i - 1].c + result.steps[i - 1].accepted + 1;
    if (s.c != expect_c) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".c = ", s.c, ": expected ", expect_c, " (previous step + emitted)"));
    }
    if (out[r] != s.root) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".root = ", s.root, ": output token at c - prompt length is ", out[r]));
    }
  }

  c10::InferenceMode guard;
  if (chain_drafter_) chain_drafter_->Reset();
  tree_drafter_->Reset();
  std::vector<planner::TokenId> committed = prompt;
  std::vector<planner::TokenId> accepted;
  planner::Marginals marginals;
  const int64_t V = draft_->config().vocab_size;
  // With heads: the target's final-norm hidden rows over prompt + output, one causal pass.
  torch::Tensor hidden;
  if (heads_drafter_) {
    const Transformer& target = options_.heads->target();
    std::vector<planner::TokenId> all = prompt;
    all.insert(all.end(), out.begin(), out.end());
    KvCache cache = target.NewCache(static_cast<int64_t>(all.size()));
    target.ForwardCausal(all, 0, &cache, &hidden);
  }
  const int heads_gamma =
      heads_drafter_
          ? static_cast<int>(std::min<int64_t>(options_.gamma, options_.heads->num_heads()))
          : 0;
  for (const IterationLog& s : result.steps) {
    const int64_t r = s.c - P;
    while (static_cast<int64_t>(committed.size()) < P + r + 1) {
      committed.push_back(out[committed.size() - P]);
    }
    whatif::TraceStep step;
    step.prompt = prompt_index;
    step.c = s.c;
    step.root = s.root;
    step.pass = s.pass;
    const double t0 = NowSeconds();
    if (heads_drafter_) {  // the row of the token before the root (position c - 1)
      SPECPLAN_RETURN_IF_ERROR(
          heads_drafter_->DraftMarginals(hidden[s.c - 1], s.root, heads_gamma, &marginals));
    } else {
      SPECPLAN_RETURN_IF_ERROR(chain_drafter_->DraftChain(committed, options_.gamma, &marginals));
    }
    step.draft_s = NowSeconds() - t0;
    step.marginals = marginals;
    SPECPLAN_RETURN_IF_ERROR(tree_drafter_->DraftTree(*tree_policy_, committed).status());
    step.nodes = tree_policy_->Recorded();
    const int64_t end = std::min<int64_t>(n_out, r + 1 + options_.continuation_len);
    step.continuation.assign(out.begin() + r + 1, out.begin() + end);
    whatif::TraceHeader h;
    h.vocab = V;
    if (absl::Status st = whatif::ValidateTraceStep(step, h); !st.ok()) {
      return absl::InternalError(absl::StrCat("recorded step ", steps_.size(), " (prompt ",
                                              prompt_index, ", c = ", s.c,
                                              ") is invalid: ", std::string(st.message())));
    }
    steps_.push_back(std::move(step));
    accepted.assign(out.begin() + r + 1,
                    out.begin() + std::min<int64_t>(n_out, r + 1 + s.accepted));
    if (chain_drafter_) chain_drafter_->Commit(accepted);
    tree_drafter_->Commit(accepted);
  }
  return absl::OkStatus();
}

whatif::Trace TraceRecorder::MakeTrace(whatif::TraceHeader header) const {
  if (header.vocab == 0) header.vocab = draft_->config().vocab_size;
  whatif::Trace t;
  t.header = std::move(header);
  t.steps = steps_;
  return t;
}

}  // namespace specplan::runtime
