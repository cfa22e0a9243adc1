#include "costmodel/profile/profile_validate.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

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

namespace {

// The first of `fields` that is not finite and >= 0, named "models.<kind>.<name>".
absl::Status NonNegativeFields(const char* kind,
                               std::initializer_list<std::pair<const char*, double>> fields) {
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.", kind, ".", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

// The smooth-max kinds (overlap, kernel_sum): p >= 1 and a GEMM tile in [1, 4096] (bounded so s
// rounded up to the tile cannot overflow).
absl::Status ExponentAndTile(const char* kind, double p, int64_t tile) {
  if (!std::isfinite(p) || p < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.", kind, ".p = ", p, ": must be finite and >= 1"));
  }
  if (tile < 1 || tile > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.", kind, ".tile = ", tile, ": must be in [1, 4096]"));
  }
  return absl::OkStatus();
}

// ... and a cost that grows with the model's size.
absl::Status GrowsWithModelSize(const char* kind, double gemm, double weights) {
  if (gemm == 0 && weights == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.", kind,
                     ": gemm and weights are both 0 (the model would not grow with the model "
                     "size)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePerTerm(const PerTermCoefficients& c) {
  SPECPLAN_RETURN_IF_ERROR(
      NonNegativeFields("per_term", {{"compute", c.compute},
                                     {"compute_overhead_s", c.compute_overhead_s},
                                     {"weights", c.weights},
                                     {"kv_attention", c.kv_attention}}));
  if (c.compute == 0 && c.weights == 0 && c.kv_attention == 0) {
    return absl::InvalidArgumentError(
        "models.per_term: all multipliers are 0 (the model would predict no cost)");
  }
  return absl::OkStatus();
}

absl::Status ValidateOverlap(const OverlapCoefficients& c) {
  SPECPLAN_RETURN_IF_ERROR(NonNegativeFields("overlap", {{"gemm", c.gemm},
                                                         {"attention", c.attention},
                                                         {"weights", c.weights},
                                                         {"kv_attention", c.kv_attention},
                                                         {"overhead_s", c.overhead_s}}));
  SPECPLAN_RETURN_IF_ERROR(ExponentAndTile("overlap", c.p, c.tile));
  return GrowsWithModelSize("overlap", c.gemm, c.weights);
}

absl::Status ValidateKernelSum(const KernelSumCoefficients& c) {
  SPECPLAN_RETURN_IF_ERROR(
      NonNegativeFields("kernel_sum", {{"overhead_s", c.overhead_s},
                                       {"gemm", c.gemm},
                                       {"weights", c.weights},
                                       {"decode", c.decode},
                                       {"verify", c.verify},
                                       {"verify_overhead_s", c.verify_overhead_s},
                                       {"attention", c.attention},
                                       {"elementwise", c.elementwise}}));
  SPECPLAN_RETURN_IF_ERROR(ExponentAndTile("kernel_sum", c.p, c.tile));
  if (c.attention_tile < 1 || c.attention_tile > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models.kernel_sum.attention_tile = ", c.attention_tile, ": must be in [1, 65536]"));
  }
  return GrowsWithModelSize("kernel_sum", c.gemm, c.weights);
}

}  // namespace specplan::costmodel
