// RenderPng for builds without PLplot (-DSPECPLAN_WITH_PLOT=OFF).
#include "absl/status/status.h"
#include "plot/chart.h"

namespace specplan::plot {

absl::StatusOr<std::string> RenderPng(const std::vector<Chart>&, int, int) {
  return absl::UnimplementedError("built without PLplot (-DSPECPLAN_WITH_PLOT=OFF): no PNG");
}

}  // namespace specplan::plot
