#include "costmodel/profile/profile.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace specplan::costmodel {

namespace {
constexpr const char* kModelKinds[] = {"roofline", "linear",     "per_term",
                                       "overlap",  "kernel_sum", "table"};
}  // namespace

Profile ProfileFor(const ModelSpec& model, const GpuSpec& gpu) {
  Profile p;
  p.gpu = gpu.name;
  p.model = model.name;
  p.dtype = model.dtype;
  p.gpu_spec = gpu;
  p.model_spec = model;
  return p;
}

absl::StatusOr<std::unique_ptr<LatencyModel>> MakeLatencyModel(const Profile& p,
                                                               const std::string& kind_in) {
  const std::string kind = kind_in.empty() ? p.default_model : kind_in;
  ModelSpec model = p.model_spec;
  RooflineLatency roofline(model, p.gpu_spec);
  if (kind == "roofline") return std::make_unique<RooflineLatency>(roofline);
  if (kind == "linear" && p.linear) {
    return std::make_unique<LinearCalibratedLatency>(roofline, *p.linear);
  }
  if (kind == "per_term" && p.per_term) {
    return std::make_unique<PerTermLatency>(roofline, *p.per_term);
  }
  if (kind == "overlap" && p.overlap) {
    return std::make_unique<OverlapLatency>(roofline, *p.overlap);
  }
  if (kind == "kernel_sum" && p.kernel_sum) {
    return std::make_unique<KernelSumLatency>(roofline, *p.kernel_sum);
  }
  if (kind == "table" && p.table) return std::make_unique<TableLatency>(roofline, *p.table);
  if (std::find(std::begin(kModelKinds), std::end(kModelKinds), kind) != std::end(kModelKinds)) {
    return absl::NotFoundError(absl::StrCat("latency model '", kind, "': not in this profile"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("latency model '", kind,
                   "': unknown kind (known: ", absl::StrJoin(LatencyModelKinds(), ", "), ")"));
}

const std::vector<std::string>& LatencyModelKinds() {
  static const std::vector<std::string> kinds(std::begin(kModelKinds), std::end(kModelKinds));
  return kinds;
}

}  // namespace specplan::costmodel
