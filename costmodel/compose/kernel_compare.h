// One folder of kernel tables against another on the shapes both measured: e.g. `calibrate
// --kernels` on a GPU (LibTorch's kernels) against aiconfigurator's tables for the same GPU
// (data/kernels/), or one engine's tables against another's. Times are compared as the composer
// reads them (repeats averaged, isotonic along the token axis: kernel_tables.h).
//
//   auto ours = LoadEngineKernelTables("kernels/h100_sxm/specplan-libtorch2.11.0");
//   auto theirs = LoadEngineKernelTables("data/kernels/h100_sxm/sglang-0.5.14");
//   KernelComparison cmp = CompareKernelTables(*ours, *theirs, 0.10);
#ifndef SPECPLAN_COSTMODEL_KERNEL_COMPARE_H_
#define SPECPLAN_COSTMODEL_KERNEL_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/compose/kernel_tables.h"

namespace specplan::costmodel {

// One shape both tables measured.
struct SharedKernelShape {
  std::string shape;  // "m = 64, n = 4096, k = 4096" or "32/8/128, b = 1, kv_len = 1024"
  int64_t m = 0;      // GEMM rows (tokens); for attention, 0
  double ours_s = 0, theirs_s = 0;
  double ratio() const { return ours_s / theirs_s; }  // ours / theirs
};

// A summary of ratios ours / theirs over some shared shapes.
struct RatioSummary {
  size_t count = 0;
  double median = 0;       // median ratio
  double geomean = 0;      // geometric mean ratio
  double within = 0;       // fraction with |ratio - 1| <= the tolerance
  double worst_error = 0;  // ratio - 1 of the shape with the largest |ratio - 1|
};
RatioSummary SummarizeRatios(const std::vector<SharedKernelShape>& shapes, double tolerance);

struct KernelTableComparison {
  std::string table;  // "gemm", "generation_attention", "context_attention"
  size_t ours_points = 0, theirs_points = 0;
  std::vector<SharedKernelShape> shared;  // in the order of `ours`' points
  RatioSummary all;
  // GEMMs only, by tokens: "m <= 16" (weight streaming), "16 < m <= 512", "m > 512" (compute);
  // bands without shared shapes are left out.
  std::vector<std::pair<std::string, RatioSummary>> bands;
};

struct KernelComparison {
  double tolerance = 0.10;
  std::vector<KernelTableComparison> tables;  // gemm, generation_attention, context_attention
};

// Compares the GEMM, generation- and context-attention tables on their shared shapes (exact
// matches of (m, n, k), or of (heads, batch size, length)). tolerance > 0.
KernelComparison CompareKernelTables(const EngineKernelTables& ours,
                                     const EngineKernelTables& theirs, double tolerance);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_KERNEL_COMPARE_H_
