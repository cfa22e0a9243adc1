#include "ops/step_fit_op.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

absl::Status InPoints(const absl::Status& st, const std::string& prefix) {
  return absl::Status(st.code(), absl::StrCat("points ", prefix, st.message()));
}

}  // namespace

absl::Status Validate(const StepFitRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(req.cost.Parse(0).status());
  if (req.cost.model.empty()) return absl::InvalidArgumentError("model: required");
  if (req.cost.gpu.empty()) return absl::InvalidArgumentError("gpu: required");
  if (req.points.empty()) return absl::InvalidArgumentError("points: required (a CSV file)");
  return absl::OkStatus();
}

absl::StatusOr<StepFitResult> StepFit(const StepFitRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  const CostRequest::Parsed parsed = *req.cost.Parse(0);
  auto text = ReadFileToString(req.points);
  if (!text.ok()) return InPoints(text.status(), "");
  auto points = costmodel::ParseStepPoints(*text, req.points);
  if (!points.ok()) return InPoints(points.status(), "");
  SPECPLAN_ASSIGN_OR_RETURN(const costmodel::ResolvedLatencyModel resolved,
                            req.cost.ResolveSpec(parsed.dtype));
  SPECPLAN_ASSIGN_OR_RETURN(const costmodel::StepOptions options,
                            req.cost.StepOptionsFor(resolved.engine, 0));
  auto fit = costmodel::FitHostTime(resolved.model.get(), resolved.model_spec, resolved.gpu_spec,
                                    &resolved.drafters, resolved.engine, options, *points);
  if (!fit.ok()) return InPoints(fit.status(), req.points + ": ");
  StepFitResult out;
  out.fit = *std::move(fit);
  out.points = *std::move(points);
  out.source.trace_path = req.points;
  NameCost(req.cost, resolved, parsed.dtype, &out.source);
  return out;
}

nlohmann::json ToJson(const StepFitResult& result) {
  nlohmann::json j = costmodel::HostFitToJson(result.fit);
  j["points"] = result.source.trace_path;
  j["profile"] = result.source.profile;
  return j;
}

std::string ToText(const StepFitResult& r) {
  std::string out = absl::StrFormat("host terms fitted to %d measured steps (%s on %s, %s):\n",
                                    r.points.size(), r.source.model, r.source.gpu,
                                    r.source.engine.empty() ? "no engine" : r.source.engine);
  const costmodel::HostTime& h = r.fit.host;
  absl::StrAppendFormat(
      &out,
      "  step %.4f ms, per sequence %.4f ms, per draft forward %.4f ms, per verified token "
      "%.4f us; sampling call %.4f ms (kept)\n",
      h.step_s * 1e3, h.per_sequence_s * 1e3, h.per_draft_forward_s * 1e3,
      h.verify_per_token_s * 1e6, h.sample_call_s * 1e3);
  absl::StrAppend(&out, "  fitted: ", absl::StrJoin(r.fit.fitted, ", "), "\n");
  if (!r.fit.kept.empty()) absl::StrAppend(&out, "  kept: ", absl::StrJoin(r.fit.kept, "; "), "\n");
  absl::StrAppendFormat(&out, "  %6s %3s %8s %12s %12s\n", "batch", "k", "context", "measured ms",
                        "fitted ms");
  for (size_t i = 0; i < r.points.size(); ++i) {
    const costmodel::StepPoint& p = r.points[i];
    absl::StrAppendFormat(&out, "  %6d %3d %8d %12.4f %12.4f\n", p.b, p.k, p.c, p.step_s * 1e3,
                          r.fit.predicted_s[i] * 1e3);
  }
  absl::StrAppendFormat(&out, "  MAPE %.2f %%\n", 100 * r.fit.mape);
  return out;
}

}  // namespace specplan::ops
