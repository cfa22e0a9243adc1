#include "costmodel/fit/profile_fit.h"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "costmodel/profile/profile_json.h"
#include "costmodel/profile/profile_validate.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::costmodel {

namespace {

// Fits one calibrated kind on `fit` into `p` (the model alone, for cross-validation fitters).
absl::Status FitKind(const std::string& kind, const RooflineLatency& roofline,
                     const std::vector<LatencySample>& fit, Profile* p) {
  if (kind == "linear") {
    SPECPLAN_ASSIGN_OR_RETURN(LinearCoefficients c, FitLinear(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidateLinear(c, roofline));
    p->linear = c;
  } else if (kind == "per_term") {
    SPECPLAN_ASSIGN_OR_RETURN(PerTermCoefficients c, FitPerTerm(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidatePerTerm(c));
    p->per_term = c;
  } else if (kind == "overlap") {
    SPECPLAN_ASSIGN_OR_RETURN(OverlapCoefficients c, FitOverlap(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidateOverlap(c));
    p->overlap = c;
  } else if (kind == "kernel_sum") {
    SPECPLAN_ASSIGN_OR_RETURN(KernelSumCoefficients c, FitKernelSum(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidateKernelSum(c));
    p->kernel_sum = c;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("latency model '", kind, "': not fittable"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Profile> FitProfile(const ModelSpec& model, const GpuSpec& gpu,
                                   const std::vector<LatencySample>& samples,
                                   const FitOptions& options) {
  SPECPLAN_RETURN_IF_ERROR(ValidateSamples(samples));
  if (samples.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "samples: need >= 3 measurements to fit and cross-validate, got ", samples.size()));
  }
  if (!(options.heldout_fraction >= 0 && options.heldout_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("heldout_fraction = ", options.heldout_fraction, ": must be in [0, 1)"));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateModelSpec(model));
  if (const std::string why = TensorParallelProblem(model, gpu, model.tp); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", model.tp, ": ", why));
  }
  Profile p = ProfileFor(model, gpu);
  p.created_utc = UtcTimestamp();

  std::vector<LatencySample> fit, held;
  SplitHoldout(samples, options.heldout_fraction, options.seed, &fit, &held);
  if (fit.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat("heldout_fraction = ", options.heldout_fraction,
                                                   ": leaves ", fit.size(), " of ", samples.size(),
                                                   " samples to fit; need >= 3"));
  }
  RooflineLatency roofline(model, gpu);
  for (const LatencySample& x : held) p.samples.push_back({x, true});
  for (const LatencySample& x : fit) p.samples.push_back({x, false});

  const int folds = fit.size() <= kMaxLeaveOneOut ? static_cast<int>(fit.size()) : 10;
  p.cv_method =
      folds == static_cast<int>(fit.size()) ? "leave-one-out" : absl::StrCat(folds, "-fold");
  // The roofline has nothing to fit: its cross-validated score is its plain score.
  p.cv["roofline"] = Evaluate(roofline, fit);
  double best = std::numeric_limits<double>::infinity();
  for (const std::string kind : {"linear", "per_term", "overlap", "kernel_sum"}) {
    if (absl::Status st = FitKind(kind, roofline, fit, &p); !st.ok()) {
      p.notes.push_back(absl::StrCat(kind, ": dropped: ", st.message()));
      continue;
    }
    LatencyFitter fitter = [&](const std::vector<LatencySample>& part)
        -> absl::StatusOr<std::unique_ptr<LatencyModel>> {
      Profile q;
      q.model_spec = model;
      q.gpu_spec = gpu;
      SPECPLAN_RETURN_IF_ERROR(FitKind(kind, roofline, part, &q));
      return MakeLatencyModel(q, kind);
    };
    absl::StatusOr<FitStats> cv = CrossValidate(fitter, fit, folds, options.seed);
    if (!cv.ok()) {
      p.notes.push_back(absl::StrCat(kind, ": not cross-validated (", p.cv_method,
                                     "), so not a default candidate: ", cv.status().message()));
      continue;
    }
    p.cv[kind] = *cv;
    if (cv->mape < best) {
      best = cv->mape;
      p.default_model = kind;
    }
  }
  if (!std::isfinite(best)) {
    p.notes.push_back("no calibrated model survived: the default is the bare roofline");
  }
  // The table needs the full grid, so it is built from all samples; its held-out score is then
  // an in-sample figure, it is not cross-validated and never the default.
  // Batch samples add layers when they cover the grid; else the table keeps the b = 1 layer.
  absl::StatusOr<LatencyTable> table = BuildTable(samples);
  if (!table.ok()) {
    const std::string why = std::string(table.status().message());
    std::vector<LatencySample> single;  // the b = 1 samples: the table without batch layers
    for (const LatencySample& x : samples) {
      if (x.b == 1) single.push_back(x);
    }
    if (single.size() < samples.size()) table = BuildTable(single);
    p.notes.push_back(
        table.ok() ? absl::StrCat("table: single sequences only, batch layers skipped: ", why)
                   : absl::StrCat("table: skipped: ", why));
  }
  if (table.ok()) p.table = *std::move(table);
  if (!held.empty()) {
    for (const std::string& kind : LatencyModelKinds()) {
      auto m = MakeLatencyModel(p, kind);
      if (m.ok()) p.heldout[kind] = Evaluate(**m, held);
    }
  }
  // What is returned must load: a last check with the loader itself.
  if (auto back = ProfileFromJson(ProfileToJson(p)); !back.ok()) {
    return absl::InternalError(
        absl::StrCat("fit produced a profile the loader rejects: ", back.status().message()));
  }
  return p;
}

std::string DescribeFit(const Profile& p) {
  int64_t held = 0;
  for (const ProfileSample& x : p.samples) held += x.heldout ? 1 : 0;
  std::string out = absl::StrFormat("samples  %d fitted, %d held out\n",
                                    static_cast<int64_t>(p.samples.size()) - held, held);
  std::map<int64_t, int64_t> per_b;  // samples per batch size
  for (const ProfileSample& x : p.samples) ++per_b[x.sample.b];
  if (per_b.size() > 1 || per_b.count(1) == 0) {
    std::vector<std::string> parts;
    for (const auto& [b, n] : per_b) parts.push_back(absl::StrCat("b=", b, ": ", n));
    absl::StrAppend(&out, "batches  ", absl::StrJoin(parts, ", "), " (passes of b sequences)\n");
  }
  if (!p.provenance.empty()) absl::StrAppendFormat(&out, "source   %s\n", p.provenance);
  if (p.model_spec.tp > 1) {
    absl::StrAppendFormat(&out, "tp       %d GPUs (per-GPU terms + all-reduces)\n",
                          p.model_spec.tp);
  }
  absl::StrAppendFormat(&out, "default  %s (lowest %s MAPE)\n", p.default_model,
                        p.cv_method.empty() ? "cross-validated" : p.cv_method);
  for (const std::string& kind : LatencyModelKinds()) {
    auto cv = p.cv.find(kind);
    auto ho = p.heldout.find(kind);
    if (cv == p.cv.end() && ho == p.heldout.end()) continue;
    std::string line = absl::StrFormat("  %-10s", kind);
    if (cv != p.cv.end()) {
      absl::StrAppendFormat(&line, "  cv MAPE %6.2f%%  RMSE %.4f ms  max %.4f ms",
                            100 * cv->second.mape, cv->second.rmse_s * 1e3,
                            cv->second.max_abs_s * 1e3);
    } else {
      absl::StrAppend(&line, "  cv --- (not cross-validated)                     ");
    }
    if (ho != p.heldout.end()) {
      absl::StrAppendFormat(
          &line, "  held-out MAPE %6.2f%%  RMSE %.4f ms (n=%d)%s", 100 * ho->second.mape,
          ho->second.rmse_s * 1e3, ho->second.n,
          std::string(kind) == "table" ? " in-sample: the table holds every cell" : "");
    }
    absl::StrAppend(&out, line, "\n");
  }
  for (const std::string& note : p.notes) absl::StrAppend(&out, "note     ", note, "\n");
  return out;
}

}  // namespace specplan::costmodel
