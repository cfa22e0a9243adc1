// RooflineLatency: the bare roofline max(FLOPs/peak, bytes/bandwidth) as a LatencyModel; BASTION
// (docs/references.md) App. F. Every calibrated model scales or re-weighs its terms; the fitted
// forms derive from CalibratedLatency (below).
#ifndef SPECPLAN_COSTMODEL_ROOFLINE_LATENCY_H_
#define SPECPLAN_COSTMODEL_ROOFLINE_LATENCY_H_

#include <cstdint>
#include <string>
#include <utility>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/latency/roofline.h"

namespace specplan::costmodel {

class RooflineLatency : public LatencyModel {
 public:
  RooflineLatency(ModelSpec model, GpuSpec gpu) : model_(std::move(model)), gpu_(std::move(gpu)) {}
  double VerifySeconds(int64_t s, int64_t c) const override { return Estimate(s, c).seconds; }
  double VerifyBatchSeconds(const BatchShape& batch) const override {
    return Estimate(batch.totals()).seconds;
  }
  std::string Kind() const override { return "roofline"; }
  RooflineEstimate Estimate(int64_t s, int64_t c) const {
    return EstimateRoofline(model_, gpu_, s, c);
  }
  RooflineEstimate Estimate(const PassTotals& pass) const {
    return EstimateRoofline(model_, gpu_, pass);
  }
  const ModelSpec& model() const { return model_; }
  const GpuSpec& gpu() const { return gpu_; }

 private:
  ModelSpec model_;
  GpuSpec gpu_;
};

// What every fitted form over the roofline holds: the roofline, whose model and GPU its features
// are read from, and its fitted coefficients. linear_latency.h, per_term_latency.h,
// overlap_latency.h and kernel_sum_latency.h derive from it; each keeps its own Kind() and its own
// pricing of a pass.
template <typename Coefficients>
class CalibratedLatency : public LatencyModel {
 public:
  CalibratedLatency(RooflineLatency roofline, Coefficients coef)
      : roofline_(std::move(roofline)), coef_(coef) {}
  const Coefficients& coefficients() const { return coef_; }

 protected:
  RooflineLatency roofline_;
  Coefficients coef_;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_ROOFLINE_LATENCY_H_
