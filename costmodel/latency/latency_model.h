// LatencyModel: the one interface every verification-latency predictor implements.
//   T_verify(s, c) = seconds for one target forward pass that verifies s new tokens
//   (s = draft nodes + 1 root) on top of c tokens already in the KV cache.
//   T_verify(batch) = seconds for one ragged pass over B such sequences
//   (costmodel/latency/batch_shape.h).
// The implementations, one header each:
//   roofline_latency.h    bare max(FLOPs/peak, bytes/bandwidth); BASTION (docs/references.md) App.
//   F linear_latency.h      a * R(s, c) + b, R = bare roofline; BASTION §2.4, H.4 "Static"
//   per_term_latency.h    compute, weight-streaming and KV/attention traffic each with its own
//                         efficiency
//   overlap_latency.h     separate efficiencies for GEMMs, attention scores, weights and KV
//                         traffic, joined by a smooth max whose exponent says how well they overlap
//   kernel_sum_latency.h  the pass as one stream of kernels whose times add up (GEMMs, decode and
//                         verify attention kernels, score FLOPs, elementwise traffic)
//   table_latency.h       measured grid over (s, c), bilinear inside, roofline-scaled outside
//   ema_latency.h         multiplicative bias on any base, updated online; BASTION H.4
//   grid_latency.h        T_verify(s) on a caller's or a measured grid of s, independent of c
// Under tensor parallelism (ModelSpec::tp > 1) every feature is per GPU, and the all-reduce time
// X = CommunicationSeconds (roofline.h) is added to every calibrated form unscaled (per_term,
// overlap, kernel_sum: + X; linear: a * R + b with R = the roofline, which includes X).
#ifndef SPECPLAN_COSTMODEL_LATENCY_MODEL_H_
#define SPECPLAN_COSTMODEL_LATENCY_MODEL_H_

#include <cstdint>
#include <string>

#include "costmodel/latency/batch_shape.h"

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
