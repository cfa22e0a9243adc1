// Per-step inputs of Transformer::Forward -- token ids, positions and an additive mask block --
// held in tensors allocated once on the model's device and reused every step (they grow when a
// step needs more room, never shrink).
//
// On the CPU the caller writes straight into the tensors Forward reads: nothing is allocated or
// copied per step. On CUDA it writes into pinned host staging, and Upload copies the step's prefix
// to the device with non_blocking copies ordered before the forward on the current stream. The
// staging is rewritten by the next Begin, so the caller must have waited for the previous step's
// forward before then (the decoder and the drafters do: they read each step's logits back to the
// host).
#ifndef SPECPLAN_RUNTIME_STEP_BUFFERS_H_
#define SPECPLAN_RUNTIME_STEP_BUFFERS_H_

#include <torch/types.h>

#include <cstdint>

#include "planner/tree/token.h"

namespace specplan::runtime {

// One step's Forward arguments: views of StepBuffers, valid until the next Begin.
struct StepInputs {
  torch::Tensor tokens;     // [s] int32 (planner::TokenId)
  torch::Tensor positions;  // [s] int64
  torch::Tensor mask;       // [s][cols] float32; undefined when cols == 0
};

class StepBuffers {
 public:
  explicit StepBuffers(torch::Device device = torch::kCPU, int64_t rows = 1, int64_t mask_cols = 0);

  // Starts a step of s >= 1 rows with an [s][cols] mask (cols = 0: none), growing the buffers if
  // needed. The host pointers below are valid until the next Begin.
  void Begin(int64_t s, int64_t cols);
  planner::TokenId* tokens() const { return tokens_ptr_; }  // [s]
  int64_t* positions() const { return positions_ptr_; }     // [s]
  float* mask() const { return mask_ptr_; }                 // [s][cols] row-major
  // The step's tensors on the device (copied there first on CUDA).
  StepInputs Upload();

  torch::Device device() const { return device_; }
  int64_t row_capacity() const { return row_cap_; }
  int64_t mask_capacity() const { return mask_cap_; }  // mask elements (s * cols)

 private:
  void Allocate(int64_t rows, int64_t mask_elems);

  torch::Device device_;
  bool staged_ = false;  // CUDA: host staging separate from the device tensors
  int64_t row_cap_ = 0, mask_cap_ = 0;
  int64_t s_ = 0, cols_ = 0;
  torch::Tensor tokens_, positions_, mask_;                 // on device_
  torch::Tensor host_tokens_, host_positions_, host_mask_;  // pinned staging (CUDA only)
  planner::TokenId* tokens_ptr_ = nullptr;
  int64_t* positions_ptr_ = nullptr;
  float* mask_ptr_ = nullptr;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STEP_BUFFERS_H_
