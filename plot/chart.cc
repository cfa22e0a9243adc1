#include "plot/chart.h"

#include "absl/status/status.h"

namespace specplan::plot {

absl::StatusOr<std::string> RenderPng(const std::vector<Chart>&, int, int) {
  return absl::UnimplementedError("RenderPng: not written yet");
}

}  // namespace specplan::plot
