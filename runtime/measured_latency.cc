#include "runtime/measured_latency.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::runtime {

MeasuredLatency::MeasuredLatency(std::vector<int64_t> s_grid, std::vector<double> seconds)
    : s_grid_(std::move(s_grid)), seconds_(std::move(seconds)) {
  SPECPLAN_CHECK(!s_grid_.empty() && s_grid_.size() == seconds_.size());
}

double MeasuredLatency::VerifySeconds(int64_t s, int64_t /*c*/) const {
  if (s <= s_grid_.front() || s_grid_.size() == 1) return seconds_.front();
  size_t i = 1;
  while (i + 1 < s_grid_.size() && s_grid_[i] < s) ++i;
  const double x0 = static_cast<double>(s_grid_[i - 1]), x1 = static_cast<double>(s_grid_[i]);
  const double t = (static_cast<double>(s) - x0) / (x1 - x0);
  return std::max(seconds_[i - 1] + t * (seconds_[i] - seconds_[i - 1]), 1e-9);
}

absl::StatusOr<MeasuredLatency> MeasureVerifyLatency(const Transformer& model,
                                                     const std::vector<int64_t>& s_grid, int64_t c,
                                                     int reps) {
  if (s_grid.empty()) return absl::InvalidArgumentError("s_grid: empty");
  for (size_t i = 0; i < s_grid.size(); ++i) {
    if (s_grid[i] < 1 || (i > 0 && s_grid[i] <= s_grid[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("s_grid[", i, "] = ", s_grid[i], ": must be >= 1 and increasing"));
    }
  }
  if (c < 0 || reps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("c = ", c, ", reps = ", reps, ": invalid"));
  }
  KvCache cache = model.NewCache(c + s_grid.back());
  std::vector<double> seconds;
  c10::InferenceMode guard;
  const int64_t V = model.config().vocab_size;
  for (int64_t s : s_grid) {
    torch::Tensor tokens = torch::arange(s, torch::kInt64).remainder(V);
    torch::Tensor positions = torch::arange(c, c + s, torch::kInt64);
    torch::Tensor mask = torch::zeros({s, c + s});  // timing does not depend on mask values
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      torch::Tensor logits = model.Forward(tokens, positions, c, mask, &cache);
      (void)logits.argmax(-1).to(torch::kCPU);  // synchronise
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) t.push_back(dt);
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    seconds.push_back(t[t.size() / 2]);
  }
  return MeasuredLatency(s_grid, seconds);
}

}  // namespace specplan::runtime
