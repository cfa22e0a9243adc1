// Small PNG charts (line and scatter plots with axes, ticks, legend and marker lines), rendered
// with cairo. Used by `specplan whatif --plot` and `calibrate` (measured vs predicted). The caller
// writes the returned bytes (atomically, via costmodel/atomic_file.h).
#ifndef SPECPLAN_PLOT_CHART_H_
#define SPECPLAN_PLOT_CHART_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace specplan::plot {

enum class SeriesStyle { kLine, kPoints, kLinePoints };

struct Series {
  std::string label;         // legend entry; empty = not in the legend
  std::vector<double> x, y;  // same length; non-finite points are skipped
  SeriesStyle style = SeriesStyle::kLinePoints;
  std::optional<uint32_t> rgb;  // 0xRRGGBB; default: the palette colour of the series index
};

// A vertical reference line at x (e.g. "oracle", "controller"), dashed, labelled at the top.
struct VerticalLine {
  double x = 0;
  std::string label;
  std::optional<uint32_t> rgb;
};

struct Axis {
  std::string label;
  bool log = false;           // log10 scale (every value must then be > 0)
  std::optional<double> min;  // default: data range with a margin
  std::optional<double> max;
};

struct Chart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<VerticalLine> vlines;
  bool identity_line = false;  // draw y = x (measured vs predicted plots)
};

// Renders `panels` stacked vertically into one width x height PNG and returns its bytes.
// InvalidArgument naming the panel/series/field for: no panels, size out of [100, 8000], series
// with mismatched x/y lengths, a log axis with a value <= 0, or a panel with no finite point.
absl::StatusOr<std::string> RenderPng(const std::vector<Chart>& panels, int width = 900,
                                      int height = 600);

}  // namespace specplan::plot

#endif  // SPECPLAN_PLOT_CHART_H_
