#include "runtime/step_buffers.h"

#include <torch/torch.h>

#include <algorithm>
#include <type_traits>

#include "util/check.h"

namespace specplan::runtime {

static_assert(std::is_same_v<planner::TokenId, int32_t>, "StepBuffers stores tokens as kInt32");

StepBuffers::StepBuffers(torch::Device device, int64_t rows, int64_t mask_cols)
    : device_(device), staged_(!device.is_cpu()) {
  Allocate(std::max<int64_t>(rows, 1), std::max<int64_t>(rows * mask_cols, 1));
}

void StepBuffers::Allocate(int64_t rows, int64_t mask_elems) {
  c10::InferenceMode guard;
  const auto dev = torch::TensorOptions().device(device_);
  tokens_ = torch::empty({rows}, dev.dtype(torch::kInt32));
  positions_ = torch::empty({rows}, dev.dtype(torch::kInt64));
  mask_ = torch::empty({mask_elems}, dev.dtype(torch::kFloat32));
  if (staged_) {
    const auto pinned = torch::TensorOptions().device(torch::kCPU).pinned_memory(true);
    host_tokens_ = torch::empty({rows}, pinned.dtype(torch::kInt32));
    host_positions_ = torch::empty({rows}, pinned.dtype(torch::kInt64));
    host_mask_ = torch::empty({mask_elems}, pinned.dtype(torch::kFloat32));
  } else {
    host_tokens_ = tokens_;
    host_positions_ = positions_;
    host_mask_ = mask_;
  }
  tokens_ptr_ = host_tokens_.data_ptr<int32_t>();
  positions_ptr_ = host_positions_.data_ptr<int64_t>();
  mask_ptr_ = host_mask_.data_ptr<float>();
  row_cap_ = rows;
  mask_cap_ = mask_elems;
}

void StepBuffers::Begin(int64_t s, int64_t cols) {
  SPECPLAN_CHECK(s >= 1 && cols >= 0);
  if (s > row_cap_ || s * cols > mask_cap_) {
    Allocate(std::max(s, 2 * row_cap_), std::max(s * cols, 2 * mask_cap_));
  }
  s_ = s;
  cols_ = cols;
}

StepInputs StepBuffers::Upload() {
  c10::InferenceMode guard;
  SPECPLAN_CHECK(s_ >= 1, "StepBuffers::Upload before Begin");
  StepInputs in;
  in.tokens = tokens_.narrow(0, 0, s_);
  in.positions = positions_.narrow(0, 0, s_);
  if (cols_ > 0) in.mask = mask_.narrow(0, 0, s_ * cols_).view({s_, cols_});
  if (staged_) {
    in.tokens.copy_(host_tokens_.narrow(0, 0, s_), /*non_blocking=*/true);
    in.positions.copy_(host_positions_.narrow(0, 0, s_), /*non_blocking=*/true);
    if (cols_ > 0) {
      mask_.narrow(0, 0, s_ * cols_)
          .copy_(host_mask_.narrow(0, 0, s_ * cols_),
                 /*non_blocking=*/true);
    }
  }
  return in;
}

}  // namespace specplan::runtime
