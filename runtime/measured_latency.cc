#include "runtime/measured_latency.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace specplan::runtime {

absl::StatusOr<costmodel::GridLatency> MeasureVerifyLatency(const Transformer& model,
                                                            const std::vector<int64_t>& s_grid,
                                                            int64_t c, int reps) {
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
    // As the decoder's verification: int32 ids, positions and an [s][s] mask block already on the
    // model's device (timing does not depend on the mask values).
    const torch::Device dev = model.options().device;
    torch::Tensor tokens = torch::arange(s, torch::kInt32).remainder(V).to(dev);
    torch::Tensor positions = torch::arange(c, c + s, torch::kInt64).to(dev);
    torch::Tensor mask = torch::zeros({s, s}, torch::TensorOptions().device(dev));
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
  return costmodel::GridLatency(s_grid, seconds, costmodel::GridSource::kMeasured);
}

absl::StatusOr<costmodel::GridLatency> MeasureVerifyLatencyUpTo(const Transformer& model,
                                                                int64_t max_s) {
  if (max_s < 1)
    return absl::InvalidArgumentError(absl::StrCat("max_s = ", max_s, ": must be >= 1"));
  std::vector<int64_t> grid;
  for (int64_t n = 1; n <= max_s; n *= 2) grid.push_back(n);
  if (grid.back() != max_s) grid.push_back(max_s);
  return MeasureVerifyLatency(model, grid, 64, 3);
}

absl::StatusOr<double> MeasureSingleTokenSeconds(const Transformer& model) {
  absl::StatusOr<costmodel::GridLatency> m = MeasureVerifyLatencyUpTo(model, 1);
  if (!m.ok()) return m.status();
  return m->VerifySeconds(1, 64);
}

absl::StatusOr<const costmodel::LatencyModel*> GivenOrMeasuredLatency(
    const costmodel::LatencyModel* given, const Transformer& model, int64_t max_s,
    std::unique_ptr<costmodel::LatencyModel>* owned) {
  if (given != nullptr) return given;
  absl::StatusOr<costmodel::GridLatency> m = MeasureVerifyLatencyUpTo(model, max_s);
  if (!m.ok()) return m.status();
  *owned = std::make_unique<costmodel::GridLatency>(*std::move(m));
  return owned->get();
}

}  // namespace specplan::runtime
