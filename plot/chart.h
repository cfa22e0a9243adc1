// Small PNG charts (line and scatter plots with axes, ticks, legend and marker lines), rendered
// by PLplot's cairo PNG device (pngcairo) in memory. Used by `specplan whatif --plot` and
// `calibrate` (measured vs predicted). The caller writes the returned bytes (atomically, via
// util/atomic_file.h).
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
  std::string label;  // legend entry; empty = not in the legend
  // (a series without any finite point is not in the legend either)
  std::vector<double> x, y;  // same length; non-finite points are skipped
  SeriesStyle style = SeriesStyle::kLinePoints;
  std::optional<uint32_t> rgb;  // 0xRRGGBB; default: the palette colour of the series index
                                // (Okabe-Ito: 0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7, 0xE69F00,
                                // 0x56B4E9, 0x000000, 0xF0E442, then repeating)
};

// A vertical reference line at x (e.g. "oracle", "controller"), dashed, labelled at the top (the
// labels of successive lines are staggered over three rows).
struct VerticalLine {
  double x = 0;
  std::string label;
  std::optional<uint32_t> rgb;  // default: dark grey 0x404040
};

struct Axis {
  std::string label;
  bool log = false;           // log10 scale (every value must then be > 0), labelled 10^k
  std::optional<double> min;  // default: data range (x: including vlines) with a 5% margin;
  std::optional<double> max;  // a single point is widened. Data outside [min, max] is clipped.
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
// with mismatched x/y lengths, a log axis with a value <= 0, or a panel with no finite point;
// also for fewer than 90 pixels of height per panel, a non-finite axis bound or vline x, an
// axis with min >= max, and an rgb above 0xFFFFFF. Panels share the width and the plot area's
// left edge (a fixed margin, not fitted to the tick labels: PLplot places the ticks). The output
// is deterministic (same input, same bytes, on one machine's fonts). Thread-safe: calls are
// serialised on one mutex, each on a PLplot stream of its own; nothing else in the process may
// use PLplot's current stream or error handlers while a call runs. PLplot prints nothing.
// Internal when PLplot has no pngcairo device (plplot-driver-cairo) or reports an error.
absl::StatusOr<std::string> RenderPng(const std::vector<Chart>& panels, int width = 900,
                                      int height = 600);

}  // namespace specplan::plot

#endif  // SPECPLAN_PLOT_CHART_H_
