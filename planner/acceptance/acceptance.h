// Acceptance of a verified draft tree: which root-to-node path the target accepts, and the bonus
// token emitted after it. Works on any planner::Tree (single drafter or merged,
// planner/tree/merge.h).
//
// Conventions: node 0 is the root (the pending bonus token, already accepted). The verifier runs
// one pass over all s = tree.size() nodes; its output at node i is the target's prediction of the
// token that FOLLOWS node i's path (argmax for greedy, a distribution for sampling). A step emits
// the accepted draft tokens tokens[accepted_nodes[1..]] followed by bonus_token, i.e.
// accepted_length + 1 tokens.
#ifndef SPECPLAN_PLANNER_ACCEPTANCE_ACCEPTANCE_H_
#define SPECPLAN_PLANNER_ACCEPTANCE_ACCEPTANCE_H_

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/tree/tree.h"

namespace specplan::planner {

struct AcceptResult {
  std::vector<int32_t> accepted_nodes;  // [accepted_length + 1] node indices, root first
  int32_t accepted_length = 0;          // accepted draft tokens (root and bonus excluded)
  TokenId bonus_token = -1;             // token emitted after the last accepted node
};

// ---- Greedy (temperature 0) ----

struct GreedyAcceptWorkspace {
  std::vector<int32_t> best_len;    // [s] longest matching continuation below node i
  std::vector<int32_t> best_child;  // [s] its first node, -1 if none
};

// argmax: [s] the target's argmax token at each node. A child c of u "matches" when
// tokens[c] == argmax[u]. Accepts the longest root-to-node path whose every edge matches; among
// paths of equal length, the lexicographically smallest sequence of node indices (i.e. when
// siblings share a token, the first by index wins unless a later one leads to a longer match).
// bonus_token = argmax[last accepted node]. O(s); does not allocate once the buffers have grown.
// The tree must satisfy ValidateTree; argmax.size() must equal tree.size() (SPECPLAN_CHECK).
void AcceptGreedy(const Tree& tree, absl::Span<const TokenId> argmax, GreedyAcceptWorkspace* ws,
                  AcceptResult* out);
AcceptResult AcceptGreedy(const Tree& tree, absl::Span<const TokenId> argmax);

// ---- Greedy, a whole verified batch ----

// Where each request's node 0 is in a batch's argmax of `argmax_size` rows: [B + 1] row starts,
// the last being argmax_size. draft_token_num unset: the trees' nodes back to back (the ragged
// layout's order); D: D rows per request (SGLang's padded [B * D] slots, request b's node i at
// row b * D + i). INVALID_ARGUMENT "draft_token_num = D: must be >= 1 ...", "draft_token_num = D:
// trees[i] has n nodes" when a tree does not fit its slot, and "argmax: N entries, expected M
// (...)" when the rows do not add up.
absl::StatusOr<std::vector<int64_t>> BatchArgmaxRows(absl::Span<const Tree> trees,
                                                     std::optional<int64_t> draft_token_num,
                                                     int64_t argmax_size);

// AcceptGreedy for every request of a batch, flattened: request i's accepted nodes (root first)
// and its emitted tokens (the accepted drafts, then the bonus) are entries offsets[i] ..
// offsets[i + 1] - 1 of accepted_nodes and of emitted (a request emits accepted_length + 1
// tokens, so both share the offsets).
struct BatchAcceptResult {
  std::vector<int32_t> accepted_length;  // [B]
  std::vector<TokenId> bonus_token;      // [B]
  std::vector<int32_t> accepted_nodes;   // [offsets[B]] node indices
  std::vector<TokenId> emitted;          // [offsets[B]] tokens
  std::vector<int64_t> offsets;          // [B + 1]
};
// rows: BatchArgmaxRows' answer for these trees and argmax (SPECPLAN_CHECKed shapes).
void AcceptGreedyBatch(absl::Span<const Tree> trees, absl::Span<const TokenId> argmax,
                       absl::Span<const int64_t> rows, GreedyAcceptWorkspace* ws,
                       BatchAcceptResult* out);

// ---- Sampling (temperature > 0): multi-candidate recursive rejection sampling ----

// Turns one row of logits into the target's sampling distribution: softmax(logits / temperature),
// then keep the top_k most probable tokens (top_k <= 0 or >= vocab: all), then the smallest set of
// most probable tokens whose probability reaches top_p (top_p = 1: all; at least one token is
// kept), renormalised. Ties in probability are broken by the lower token id. temperature == 0
// gives a one-hot at the argmax (lowest id on ties). Logits may be -inf (masked), not NaN or +inf.
// Errors name the parameter: "temperature = -1: must be >= 0", "top_p = 0: must be in (0, 1]",
// "logits[3] = nan: must be finite or -inf", "logits: every entry is -inf".
// probs: [vocab] output, same size as logits. order: scratch, resized to vocab.
absl::Status ApplySampling(absl::Span<const float> logits, float temperature, int top_k,
                           float top_p, absl::Span<float> probs, std::vector<int32_t>* order);
absl::StatusOr<std::vector<float>> ApplySampling(absl::Span<const float> logits, float temperature,
                                                 int top_k, float top_p);

// How the children of a node were drafted, i.e. what draft_probs means.
enum class DraftMode {
  // No draft probabilities (deterministic drafts, top-k lists): each candidate is a point mass.
  // Child x is accepted with probability p(x); on rejection p(x) = 0 and p is renormalised.
  // Exact for any candidates chosen without looking at the target's random draws, so it is also
  // the mode for merged trees (planner/tree/merge.h), whose root children come from two drafters.
  kPointMass,
  // The children of node u are i.i.d. samples of q_u = draft_probs row u. Child x is accepted with
  // probability min(1, p(x) / q(x)); on rejection p <- normalize(max(0, p - q)).
  kWithReplacement,
  // The children of node u were drawn from q_u without replacement, in index order: as
  // kWithReplacement, and after each rejection q also drops the rejected token (renormalised).
  kWithoutReplacement,
};

struct SampleAcceptWorkspace {
  std::vector<double> p;             // [vocab] current (residual) target weights
  std::vector<double> q;             // [vocab] current draft weights
  std::vector<int32_t> child_begin;  // [s + 1] CSR children, each list in index order
  std::vector<int32_t> children;     // [s - 1]
};

// Uniform random numbers in [0, 1), supplied by the caller (reproducibility).
using Uniform01 = absl::FunctionRef<double()>;

// Walks from the root: at node u, tries u's children in index order against the target
// distribution p_u = target_probs row u (accept/reject as in DraftMode); an accepted child becomes
// the next node; if every child is rejected (or u is a leaf) the bonus token is sampled from the
// residual p. The emitted tokens are then distributed exactly as sampling from the target
// (SpecInfer multi-step speculative sampling / recursive rejection sampling), provided the
// children's tokens really were drawn as the DraftMode says.
//   target_probs: [s][vocab] non-negative weights, each row with a positive sum (normalised here)
//   draft_probs:  [s][vocab] row u = q_u that u's children were drawn from (row 0 included);
//                 ignored (may be empty) for kPointMass
// Children whose token has q_u = 0 cannot have been drawn from q_u and are skipped. If a residual
// is all zero (rounding when p == q), p is left unchanged. Shapes, token ids < vocab and
// draft_probs presence are SPECPLAN_CHECKed. Does not allocate once the buffers have grown.
void AcceptSampling(const Tree& tree, int vocab, absl::Span<const float> target_probs,
                    absl::Span<const float> draft_probs, DraftMode mode, Uniform01 uniform,
                    SampleAcceptWorkspace* ws, AcceptResult* out);
// Same, drawing uniforms from `rng` (53-bit doubles in [0, 1)).
void AcceptSampling(const Tree& tree, int vocab, absl::Span<const float> target_probs,
                    absl::Span<const float> draft_probs, DraftMode mode, std::mt19937_64& rng,
                    SampleAcceptWorkspace* ws, AcceptResult* out);

// ---- Statistics ----

// One verification step.
struct StepAcceptance {
  int32_t num_draft = 0;        // draft nodes proposed (tree.size() - 1)
  int32_t proposed_depth = 0;   // max depth in the tree: depths 1..proposed_depth were proposed
  int32_t accepted_length = 0;  // depths 1..accepted_length were accepted

  bool proposed(int depth) const { return depth >= 1 && depth <= proposed_depth; }
  bool accepted(int depth) const { return depth >= 1 && depth <= accepted_length; }
};

// Builds the step record of `result` on `tree`.
StepAcceptance MakeStepAcceptance(const Tree& tree, const AcceptResult& result);

// Running aggregates over steps (e.g. fed to DynaTree's history adaptation). Vectors are indexed by
// depth and grow to the deepest proposed depth (index 0, the root, is unused and stays 0).
struct AcceptanceStats {
  int64_t steps = 0;
  int64_t drafted_tokens = 0;              // sum of num_draft
  int64_t accepted_tokens = 0;             // sum of accepted_length (bonus tokens excluded)
  std::vector<int64_t> proposed_at_depth;  // [D+1] steps in which depth d was proposed
  std::vector<int64_t> accepted_at_depth;  // [D+1] steps in which depth d was accepted
  // [D+1] steps in which depth d was proposed and depth d - 1 was accepted (the root counts as
  // accepted), i.e. in which depth d was actually reached by verification.
  std::vector<int64_t> reached_at_depth;

  void Add(const StepAcceptance& step);
  void Reset();

  // Mean accepted draft tokens per step (0 with no steps). Tokens per step = this + 1.
  double MeanAcceptedLength() const;
  // accepted_at_depth[d] / proposed_at_depth[d]: how often depth d was accepted when proposed.
  double AcceptanceRate(int depth) const;
  // accepted_at_depth[d] / reached_at_depth[d]: P(accept depth d | depth d - 1 accepted, d
  // proposed).
  double ConditionalAcceptanceRate(int depth) const;
  // accepted_tokens / drafted_tokens.
  double AcceptedFraction() const;
};

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_ACCEPTANCE_ACCEPTANCE_H_
