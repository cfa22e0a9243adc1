// The checks a profile's fitted coefficients must pass, shared by the fit (which drops a model that
// fails them) and the loader (which rejects the file).
#ifndef SPECPLAN_COSTMODEL_PROFILE_VALIDATE_H_
#define SPECPLAN_COSTMODEL_PROFILE_VALIDATE_H_

#include "absl/status/status.h"
#include "costmodel/latency/kernel_sum_latency.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/overlap_latency.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"

namespace specplan::costmodel {

// Checks fitted coefficients as the loader does; errors name the field and value
// ("models.linear.a = 0: must be > 0"). A linear model may have a negative intercept b_s, so it
// is also checked against the roofline it scales: the roofline grows with s and c, so
// a * R(1, 0) + b_s is its smallest prediction and must be > 0.
absl::Status ValidateLinear(const LinearCoefficients& c, const RooflineLatency& roofline);
absl::Status ValidatePerTerm(const PerTermCoefficients& c);
absl::Status ValidateOverlap(const OverlapCoefficients& c);
absl::Status ValidateKernelSum(const KernelSumCoefficients& c);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_PROFILE_VALIDATE_H_
