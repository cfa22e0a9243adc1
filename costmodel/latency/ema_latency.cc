#include "costmodel/latency/ema_latency.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::costmodel {

EmaCorrectedLatency::EmaCorrectedLatency(std::shared_ptr<const LatencyModel> base, double alpha,
                                         double initial_bias)
    : base_(std::move(base)), alpha_(alpha), bias_(initial_bias) {
  SPECPLAN_CHECK(base_ != nullptr);
  SPECPLAN_CHECK(alpha > 0 && alpha <= 1, "alpha must be in (0, 1]");
  SPECPLAN_CHECK(initial_bias >= kMinBias && initial_bias <= kMaxBias,
                 "initial_bias must be in [0.1, 10]");
}

std::string EmaCorrectedLatency::Kind() const {
  const std::string base = base_->Kind();
  return base == "roofline" ? "ema" : absl::StrCat("ema+", base);
}

bool EmaCorrectedLatency::Observe(int64_t s, int64_t c, double observed_s) {
  if (!std::isfinite(observed_s) || observed_s <= 0 || s < 1 || c < 0) return false;
  const double raw = observed_s / base_->VerifySeconds(s, c);
  if (!std::isfinite(raw)) return false;
  const double ratio = std::clamp(raw, kMinBias, kMaxBias);
  double old = bias_.load(std::memory_order_relaxed);
  while (!bias_.compare_exchange_weak(old, (1 - alpha_) * old + alpha_ * ratio,
                                      std::memory_order_relaxed)) {
  }
  observations_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace specplan::costmodel
