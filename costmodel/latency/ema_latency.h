// EmaCorrectedLatency: a multiplicative bias on any base model, updated online from observed
// passes (EMA, EMA+Calib); BASTION (docs/references.md) H.4.
#ifndef SPECPLAN_COSTMODEL_EMA_LATENCY_H_
#define SPECPLAN_COSTMODEL_EMA_LATENCY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "costmodel/latency/latency_model.h"

namespace specplan::costmodel {

// Online residual correction, BASTION (docs/references.md) H.4: bias <- (1 - alpha) bias + alpha *
// obs / base(s, c); predicts bias * base(s, c). Over the bare roofline this is "EMA"; over a
// calibrated model it is "EMA+Calib". Observe() may run concurrently with VerifySeconds() (the bias
// is atomic).
//
// The clamp: each observed ratio obs / base(s, c) is clamped to [kMinBias, kMaxBias] = [0.1, 10]
// before it is folded in, so the bias, a convex combination of such ratios and its start, stays
// in that range whatever is observed (a measured pass 10x off a model's prediction is not a
// correction but a wrong profile or a bad report; docs/reliability.md).
class EmaCorrectedLatency : public LatencyModel {
 public:
  static constexpr double kMinBias = 0.1;
  static constexpr double kMaxBias = 10.0;

  EmaCorrectedLatency(std::shared_ptr<const LatencyModel> base, double alpha,
                      double initial_bias = 1);
  double VerifySeconds(int64_t s, int64_t c) const override {
    return bias_.load(std::memory_order_relaxed) * base_->VerifySeconds(s, c);
  }
  double VerifyBatchSeconds(const BatchShape& batch) const override {
    return bias_.load(std::memory_order_relaxed) * base_->VerifyBatchSeconds(batch);
  }
  std::string Kind() const override;  // "ema" over roofline, else "ema+<base kind>"
  // Folds in one observed pass (its ratio to the base clamped to [kMinBias, kMaxBias]); ignores
  // non-finite or non-positive observations (returns false).
  bool Observe(int64_t s, int64_t c, double observed_s);
  double bias() const { return bias_.load(std::memory_order_relaxed); }
  double alpha() const { return alpha_; }
  int64_t observations() const { return observations_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const LatencyModel> base_;
  double alpha_;
  std::atomic<double> bias_;
  std::atomic<int64_t> observations_{0};
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_EMA_LATENCY_H_
