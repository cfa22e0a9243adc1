// LinearCalibratedLatency: a * R(s, c) + b, R = the bare roofline; BASTION (docs/references.md)
// §2.4, H.4 "Static". Under tensor parallelism R includes the all-reduces.
#ifndef SPECPLAN_COSTMODEL_LINEAR_LATENCY_H_
#define SPECPLAN_COSTMODEL_LINEAR_LATENCY_H_

#include <cstdint>
#include <string>

#include "costmodel/latency/roofline_latency.h"

namespace specplan::costmodel {

// T = a * R(s, c) + b.
struct LinearCoefficients {
  double a = 1.0;    // dimensionless slope on the bare roofline
  double b_s = 0.0;  // seconds, fixed overhead
};

class LinearCalibratedLatency : public CalibratedLatency<LinearCoefficients> {
 public:
  using CalibratedLatency::CalibratedLatency;
  double VerifySeconds(int64_t s, int64_t c) const override {
    return coef_.a * roofline_.VerifySeconds(s, c) + coef_.b_s;
  }
  double VerifyBatchSeconds(const BatchShape& batch) const override {
    return coef_.a * roofline_.VerifyBatchSeconds(batch) + coef_.b_s;
  }
  std::string Kind() const override { return "linear"; }
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_LINEAR_LATENCY_H_
