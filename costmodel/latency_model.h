// LatencyModel: the one interface every verification-latency predictor implements.
//   T_verify(s, c) = seconds for one target forward pass that verifies s new tokens
//   (s = draft nodes + 1 root) on top of c tokens already in the KV cache.
//   T_verify(batch) = seconds for one ragged pass over B such sequences (costmodel/batch_shape.h).
#ifndef SPECPLAN_COSTMODEL_LATENCY_MODEL_H_
#define SPECPLAN_COSTMODEL_LATENCY_MODEL_H_

#include <cstdint>
#include <string>

#include "costmodel/batch_shape.h"

namespace specplan::costmodel {

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;
  // Predicted seconds for one verification pass. Requires s >= 1, c >= 0. Thread-safe for
  // concurrent readers (implementations with online state document their own rules).
  virtual double VerifySeconds(int64_t s, int64_t c) const = 0;
  // Predicted seconds for one ragged pass over a non-empty batch. A single sequence gives exactly
  // VerifySeconds(s, c). The models built on the roofline price the batch's own terms (weights
  // once, the rest summed over the sequences). This default, for models that know only (s, c),
  // prices the equivalent single sequence: every token of the batch over the mean context,
  // VerifySeconds(S, round(Σ c_i / B)).
  virtual double VerifyBatchSeconds(const BatchShape& batch) const;
  // Short stable name: "roofline", "linear", "per_term", "table", "ema", "ema+linear", ...
  virtual std::string Kind() const = 0;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_LATENCY_MODEL_H_
