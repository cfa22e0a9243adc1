#include "costmodel/latency/batch_shape.h"

#include <algorithm>

#include "util/check.h"

namespace specplan::costmodel {

void BatchShape::Add(int64_t s, int64_t c) {
  SPECPLAN_CHECK(s >= 1 && c >= 0);
  seqs_.push_back({s, c});
  const double sd = static_cast<double>(s), cd = static_cast<double>(c);
  totals_.tokens += sd;
  totals_.context += cd;
  totals_.score_pairs += sd * (cd + sd);
  max_s_ = std::max(max_s_, s);
  if (s > 1) {
    ++verify_sequences_;
    verify_context_ += cd;
  } else {
    decode_context_ += cd;
  }
}

void BatchShape::SetTokens(int i, int64_t s) {
  SPECPLAN_CHECK(i >= 0 && i < size() && s >= 1);
  SequenceShape& q = seqs_[static_cast<size_t>(i)];
  if (s == q.s) return;
  const double s0 = static_cast<double>(q.s), s1 = static_cast<double>(s);
  const double cd = static_cast<double>(q.c);
  totals_.tokens += s1 - s0;
  totals_.score_pairs += s1 * (cd + s1) - s0 * (cd + s0);
  if (q.s == 1) {  // the sequence moves from the decode rows to the verify rows
    ++verify_sequences_;
    decode_context_ -= cd;
    verify_context_ += cd;
  } else if (s == 1) {  // and back
    --verify_sequences_;
    verify_context_ -= cd;
    decode_context_ += cd;
  }
  q.s = s;
  max_s_ = std::max(max_s_, s);
}

}  // namespace specplan::costmodel
