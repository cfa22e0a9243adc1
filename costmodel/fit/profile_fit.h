// FitProfile: samples of one (gpu, model) -> a Profile with every calibrated model fitted, scored
// and cross-validated, and the default chosen; DescribeFit says what it produced.
#ifndef SPECPLAN_COSTMODEL_PROFILE_FIT_H_
#define SPECPLAN_COSTMODEL_PROFILE_FIT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/fit/fit.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/profile.h"

namespace specplan::costmodel {

// Holds out a random `heldout_fraction` of the samples (0 = none), fits every calibrated model
// (linear, per_term, overlap, kernel_sum) on the rest, cross-validates each fitting procedure on
// the rest (leave-one-out up to kMaxLeaveOneOut samples, else 10-fold), scores every model on the
// held-out samples, and picks default_model = the calibrated model with the lowest cross-validated
// MAPE. A model whose fit fails or whose coefficients the loader would reject is dropped with a
// note in Profile::notes, as is a model whose cross-validation fails (it cannot be the default);
// the table is built from all samples when they form a full (s, c) grid, else skipped with a note.
// Samples with b > 1 (passes of b sequences) are fitted and scored with the rest, each priced as
// PredictSample prices it; they become table layers when every b covers the grid (else the table
// keeps the b = 1 samples, with a note).
// If no calibrated model survives, the default is the roofline. The returned profile always passes
// ProfileFromJson(ProfileToJson(profile)). Needs >= 3 valid samples, and >= 3 left to fit.
inline constexpr size_t kMaxLeaveOneOut = 60;
struct FitOptions {
  double heldout_fraction = 0;  // in [0, 1)
  uint64_t seed = 1;            // held-out split and k-fold shuffle
};
absl::StatusOr<Profile> FitProfile(const ModelSpec& model, const GpuSpec& gpu,
                                   const std::vector<LatencySample>& samples,
                                   const FitOptions& options = {});

// What a fit produced, for people: the default model, each model's cross-validated and held-out
// MAPE and RMSE, the fitted samples, and the notes. Lines end in '\n'.
std::string DescribeFit(const Profile& profile);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_PROFILE_FIT_H_
