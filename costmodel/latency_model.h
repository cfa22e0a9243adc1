// LatencyModel: the one interface every verification-latency predictor implements.
//   T_verify(s, c) = seconds for one target forward pass that verifies s new tokens
//   (s = draft nodes + 1 root) on top of c tokens already in the KV cache.
#ifndef SPECPLAN_COSTMODEL_LATENCY_MODEL_H_
#define SPECPLAN_COSTMODEL_LATENCY_MODEL_H_

#include <cstdint>
#include <string>

namespace specplan::costmodel {

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;
  // Predicted seconds for one verification pass. Requires s >= 1, c >= 0. Thread-safe for
  // concurrent readers (implementations with online state document their own rules).
  virtual double VerifySeconds(int64_t s, int64_t c) const = 0;
  // Short stable name: "roofline", "linear", "per_term", "table", "ema", "ema+linear", ...
  virtual std::string Kind() const = 0;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_LATENCY_MODEL_H_
