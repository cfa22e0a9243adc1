// BatchShape: the shape of one ragged verification pass over B sequences, where sequence i
// verifies s_i new tokens on top of c_i cached tokens (BASTION (docs/references.md) App. F applied
// per sequence).
//
// Every roofline term of a pass is linear in three sums over the sequences — the tokens S = Σ s_i,
// the cached context Σ c_i and the score pairs Σ s_i (c_i + s_i) — except the weights, which are
// streamed once per pass (for an MoE target: the experts that all S tokens route to). BatchShape
// keeps those sums, and the few that the kernel_sum model's attention split needs, up to date as
// sequences are added or grown, so a planner that grows one sequence at a time re-prices a pass in
// O(1). A single sequence (B = 1) is the (s, c) pass every latency model has always priced.
#ifndef SPECPLAN_COSTMODEL_BATCH_SHAPE_H_
#define SPECPLAN_COSTMODEL_BATCH_SHAPE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace specplan::costmodel {

struct SequenceShape {
  int64_t s = 1;  // new tokens verified (draft nodes + 1)
  int64_t c = 0;  // tokens already in the KV cache
};

// Sums the roofline reads (see above). Doubles, so that large batches cannot overflow.
struct PassTotals {
  double tokens = 0;       // S = Σ s_i
  double context = 0;      // Σ c_i
  double score_pairs = 0;  // Σ s_i (c_i + s_i): query-key pairs of attention
};

// The sums of the single-sequence pass (s, c).
inline PassTotals SinglePass(int64_t s, int64_t c) {
  const double sd = static_cast<double>(s), cd = static_cast<double>(c);
  return {sd, cd, sd * (cd + sd)};
}

// The sums of a uniform pass: b sequences, each verifying s tokens over c cached tokens. Doubles,
// so that a mean sequence (s and c averaged over a batch) has sums too. b = 1 is SinglePass.
inline PassTotals UniformPass(double b, double s, double c) {
  return {b * s, b * c, b * s * (c + s)};
}

class BatchShape {
 public:
  BatchShape() = default;
  // The single-sequence pass (s, c).
  BatchShape(int64_t s, int64_t c) { Add(s, c); }
  explicit BatchShape(const std::vector<SequenceShape>& sequences) {
    Reserve(sequences.size());
    for (const SequenceShape& q : sequences) Add(q.s, q.c);
  }

  void Reserve(size_t n) { seqs_.reserve(n); }
  void Clear() {
    seqs_.clear();
    totals_ = PassTotals{};
    max_s_ = 0;
    verify_sequences_ = 0;
    decode_context_ = verify_context_ = 0;
  }

  // Appends a sequence. Requires s >= 1, c >= 0 (checked).
  void Add(int64_t s, int64_t c);
  // s_i += ds for sequence i (the result must be >= 1; checked).
  void Grow(int i, int64_t ds = 1) { SetTokens(i, seqs_[static_cast<size_t>(i)].s + ds); }
  // s_i = s for sequence i (s >= 1; checked). max_s() never decreases: it is the largest s any
  // sequence has had since it was added.
  void SetTokens(int i, int64_t s);

  int size() const { return static_cast<int>(seqs_.size()); }
  bool empty() const { return seqs_.empty(); }
  const SequenceShape& operator[](int i) const { return seqs_[static_cast<size_t>(i)]; }
  const std::vector<SequenceShape>& sequences() const { return seqs_; }

  const PassTotals& totals() const { return totals_; }
  int64_t max_s() const { return max_s_; }  // an upper bound on every s_i (see SetTokens)
  // The split of the attention work between decode rows (s_i = 1) and verify rows (s_i > 1).
  int64_t verify_sequences() const { return verify_sequences_; }  // #{i : s_i > 1}
  double decode_context() const { return decode_context_; }       // Σ c_i over s_i = 1
  double verify_context() const { return verify_context_; }       // Σ c_i over s_i > 1

 private:
  std::vector<SequenceShape> seqs_;
  PassTotals totals_;
  int64_t max_s_ = 0;
  int64_t verify_sequences_ = 0;
  double decode_context_ = 0;
  double verify_context_ = 0;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_BATCH_SHAPE_H_
