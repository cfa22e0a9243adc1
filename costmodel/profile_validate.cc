#include "costmodel/profile_validate.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace specplan::costmodel {

absl::Status ValidateLinear(const LinearCoefficients& c, const RooflineLatency& roofline) {
  if (!std::isfinite(c.a) || c.a <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("models.linear.a = ", c.a, ": must be > 0"));
  }
  if (!std::isfinite(c.b_s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.linear.b_s = ", c.b_s, ": must be finite"));
  }
  const double floor_s = c.a * roofline.VerifySeconds(1, 0) + c.b_s;
  if (!(floor_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models.linear.b_s = ", c.b_s, ": predicts ", floor_s,
        " s for one token over an empty cache (a * roofline(1, 0) + b_s with this gpu_spec and "
        "model_spec); must be > 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePerTerm(const PerTermCoefficients& c) {
  const std::pair<const char*, double> fields[] = {{"compute", c.compute},
                                                   {"compute_overhead_s", c.compute_overhead_s},
                                                   {"weights", c.weights},
                                                   {"kv_attention", c.kv_attention}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.per_term.", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  if (c.compute == 0 && c.weights == 0 && c.kv_attention == 0) {
    return absl::InvalidArgumentError(
        "models.per_term: all multipliers are 0 (the model would predict no cost)");
  }
  return absl::OkStatus();
}

absl::Status ValidateOverlap(const OverlapCoefficients& c) {
  const std::pair<const char*, double> fields[] = {{"gemm", c.gemm},
                                                   {"attention", c.attention},
                                                   {"weights", c.weights},
                                                   {"kv_attention", c.kv_attention},
                                                   {"overhead_s", c.overhead_s}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.overlap.", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  if (!std::isfinite(c.p) || c.p < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.overlap.p = ", c.p, ": must be finite and >= 1"));
  }
  if (c.tile < 1 || c.tile > 4096) {  // bounded so s rounded up to the tile cannot overflow
    return absl::InvalidArgumentError(
        absl::StrCat("models.overlap.tile = ", c.tile, ": must be in [1, 4096]"));
  }
  if (c.gemm == 0 && c.weights == 0) {
    return absl::InvalidArgumentError(
        "models.overlap: gemm and weights are both 0 (the model would not grow with the model "
        "size)");
  }
  return absl::OkStatus();
}

absl::Status ValidateKernelSum(const KernelSumCoefficients& c) {
  const std::pair<const char*, double> fields[] = {
      {"overhead_s", c.overhead_s}, {"gemm", c.gemm},
      {"weights", c.weights},       {"decode", c.decode},
      {"verify", c.verify},         {"verify_overhead_s", c.verify_overhead_s},
      {"attention", c.attention},   {"elementwise", c.elementwise}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.kernel_sum.", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  if (!std::isfinite(c.p) || c.p < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.kernel_sum.p = ", c.p, ": must be finite and >= 1"));
  }
  if (c.tile < 1 || c.tile > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.kernel_sum.tile = ", c.tile, ": must be in [1, 4096]"));
  }
  if (c.attention_tile < 1 || c.attention_tile > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models.kernel_sum.attention_tile = ", c.attention_tile, ": must be in [1, 65536]"));
  }
  if (c.gemm == 0 && c.weights == 0) {
    return absl::InvalidArgumentError(
        "models.kernel_sum: gemm and weights are both 0 (the model would not grow with the model "
        "size)");
  }
  return absl::OkStatus();
}

}  // namespace specplan::costmodel
