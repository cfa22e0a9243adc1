// PNG line charts drawn by PLplot's cairo PNG device (pngcairo): validation of a chart spec (every
// bad field named), axis ranges, and one PLplot viewport per panel. PLplot draws the frame, ticks,
// grid, text and legend. Over 500 lines because about 110 are the validation (unchanged from the
// hand-drawn version) and PLplot has no call for four things chart.h promises or the old charts
// had, done here: clipping in world coordinates (PLplot converts points to integer device units
// first, which overflow far off-scale), round markers of a fixed pixel size (filled polygons), a
// legend in the corner that covers the fewest points, and tick labels on log axes that span fewer
// than two powers of ten (PLplot labels powers of ten only, so such an axis had none or one).

#include "plot/chart.h"

#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/check.h"

namespace specplan::plot {
namespace {

// Okabe-Ito (colour-blind safe), ordered so that the first colours contrast most on white; the
// yellow comes last because it is faint on a white background.
constexpr uint32_t kPalette[] = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7,
                                 0xE69F00, 0x56B4E9, 0x000000, 0xF0E442};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr uint32_t kVLineDefault = 0x404040;
constexpr uint32_t kIdentityColour = 0x999999;
constexpr uint32_t kGridColour = 0xE6E6E6;
constexpr uint32_t kMinorGridColour = 0xF3F3F3;
constexpr uint32_t kLegendFrameColour = 0xB0B0B0;

// cmap0 slots: 0 background, 1 the current drawing colour, 2 the legend background, 3 its frame,
// kFirstSeriesSlot + i series i of the panel being drawn (pllegend takes colours as slots).
constexpr int kDrawSlot = 1, kLegendBgSlot = 2, kLegendFrameSlot = 3, kFirstSeriesSlot = 4;

// Sizes in pixels; pngcairo works at 72 dpi, so a pixel is 25.4 / 72 mm.
constexpr double kMmPerPx = 25.4 / 72;
constexpr double kTitleFont = 14, kTextFont = 11;
constexpr double kLineWidth = 2, kMarkerRadius = 3.5;
constexpr int kMinPanelHeight = 90;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

bool FinitePoint(const Series& s, size_t i) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
}

uint32_t SeriesColour(const Series& s, size_t index) {
  return s.rgb ? *s.rgb : kPalette[index % kPaletteSize];
}

bool HasLine(SeriesStyle st) { return st != SeriesStyle::kPoints; }
bool HasMarkers(SeriesStyle st) { return st != SeriesStyle::kLine; }

// ---------------------------------------------------------------------------------------------
// Validation.

absl::Status ValidateAxis(const Axis& axis, const std::string& where) {
  const auto check = [&](const char* name, const std::optional<double>& value) -> absl::Status {
    if (!value) return absl::OkStatus();
    if (!std::isfinite(*value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".", name, " = ", Num(*value), ": must be finite"));
    }
    if (axis.log && *value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".", name, " = ", Num(*value), ": must be > 0 on a log axis"));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = check("min", axis.min); !s.ok()) return s;
  if (absl::Status s = check("max", axis.max); !s.ok()) return s;
  if (axis.min && axis.max && *axis.min >= *axis.max) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": min = ", Num(*axis.min), " must be < max = ", Num(*axis.max)));
  }
  return absl::OkStatus();
}

absl::Status ValidateRgb(const std::optional<uint32_t>& rgb, const std::string& where) {
  if (rgb && *rgb > 0xFFFFFF) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".rgb = 0x", absl::Hex(*rgb, absl::kNoPad), ": must be <= 0xFFFFFF"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePanel(const Chart& c, const std::string& where) {
  if (absl::Status s = ValidateAxis(c.x, where + ".x"); !s.ok()) return s;
  if (absl::Status s = ValidateAxis(c.y, where + ".y"); !s.ok()) return s;
  bool any_finite = false;
  for (size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    const std::string sw = absl::StrCat(where, ".series[", si, "]");
    if (s.x.size() != s.y.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(sw, ": x has ", s.x.size(), " values, y has ", s.y.size()));
    }
    if (absl::Status st = ValidateRgb(s.rgb, sw); !st.ok()) return st;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!FinitePoint(s, i)) continue;
      any_finite = true;
      if (c.x.log && s.x[i] <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(sw, ".x[", i, "] = ", Num(s.x[i]), ": must be > 0 on a log x axis"));
      }
      if (c.y.log && s.y[i] <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(sw, ".y[", i, "] = ", Num(s.y[i]), ": must be > 0 on a log y axis"));
      }
    }
  }
  for (size_t vi = 0; vi < c.vlines.size(); ++vi) {
    const VerticalLine& v = c.vlines[vi];
    const std::string vw = absl::StrCat(where, ".vlines[", vi, "]");
    if (!std::isfinite(v.x)) {
      return absl::InvalidArgumentError(absl::StrCat(vw, ".x = ", Num(v.x), ": must be finite"));
    }
    if (c.x.log && v.x <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(vw, ".x = ", Num(v.x), ": must be > 0 on a log x axis"));
    }
    if (absl::Status st = ValidateRgb(v.rgb, vw); !st.ok()) return st;
  }
  if (!any_finite) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": no finite (x, y) point in any of its ", c.series.size(), " series"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Ranges and world coordinates (log10 of the value on log axes: PLplot's log axes label a
// window given in decades).

// Widens [lo, hi] when it is empty (all values equal).
void Widen(double& lo, double& hi, bool log) {
  if (hi > lo) return;
  const double v = lo;
  if (log) {
    lo = v / std::sqrt(10.0);
    hi = v * std::sqrt(10.0);
  } else {
    const double d = v == 0 ? 1.0 : std::abs(v) * 0.1;
    lo = v - d;
    hi = v + d;
  }
}

// Axis window in world units: the data range plus a 5% margin (in log space on log axes),
// overridden by the explicit bounds; one-sided bounds that leave an empty range are widened on
// the free side.
std::pair<double, double> Window(const std::vector<double>& values, const Axis& axis) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (double v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  SPECPLAN_CHECK(lo <= hi, "validation guarantees a finite point");
  Widen(lo, hi, axis.log);
  if (axis.log) {
    const double l = std::log10(lo), h = std::log10(hi), m = 0.05 * (h - l);
    lo = std::pow(10.0, l - m);
    hi = std::pow(10.0, h + m);
  } else {
    const double m = 0.05 * (hi - lo);
    lo -= m;
    hi += m;
  }
  if (axis.min) lo = *axis.min;
  if (axis.max) hi = *axis.max;
  if (hi <= lo) {
    if (axis.min && !axis.max) {
      hi = axis.log ? lo * 10 : lo + std::max(1.0, std::abs(lo) * 0.1);
    } else {
      lo = axis.log ? hi / 10 : hi - std::max(1.0, std::abs(hi) * 0.1);
    }
  }
  return axis.log ? std::pair{std::log10(lo), std::log10(hi)} : std::pair{lo, hi};
}

// One panel's window (world units) and viewport size (pixels).
struct Frame {
  bool xlog = false, ylog = false;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  double w_px = 1, h_px = 1, left_px = 0, page_w_px = 1;

  double X(double v) const { return xlog ? std::log10(v) : v; }
  double Y(double v) const { return ylog ? std::log10(v) : v; }
  double XPerPx() const { return (x1 - x0) / w_px; }
  double YPerPx() const { return (y1 - y0) / h_px; }
  bool Inside(double x, double y) const {
    const double ex = 1e-9 * (x1 - x0), ey = 1e-9 * (y1 - y0);
    return x >= x0 - ex && x <= x1 + ex && y >= y0 - ey && y <= y1 + ey;
  }
};

// Liang-Barsky: clips segment (ax,ay)-(bx,by) to the frame's window; false when it misses it.
bool ClipSegment(const Frame& f, double& ax, double& ay, double& bx, double& by) {
  double t0 = 0, t1 = 1;
  const double dx = bx - ax, dy = by - ay;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {ax - f.x0, f.x1 - ax, ay - f.y0, f.y1 - ay};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
      continue;
    }
    const double r = q[i] / p[i];
    if (p[i] < 0) {
      t0 = std::max(t0, r);
    } else {
      t1 = std::min(t1, r);
    }
    if (t0 > t1) return false;
  }
  const double ox = ax, oy = ay;
  ax = ox + t0 * dx;
  ay = oy + t0 * dy;
  bx = ox + t1 * dx;
  by = oy + t1 * dy;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Drawing (the stream is current and the panel's viewport and window are set).

void SetSlot(int slot, uint32_t rgb, double alpha = 1.0) {
  plscol0a(slot, (rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, alpha);
}

void UseColour(uint32_t rgb) {
  SetSlot(kDrawSlot, rgb);
  plcol0(kDrawSlot);
}

// PLplot has no public call to measure text: an estimate for DejaVu Sans (Debian's default sans).
double TextWidthPx(const std::string& text, double font_px, bool bold = false) {
  return (bold ? 0.75 : 0.62) * font_px * text.size();
}

void SetFont(double px, bool bold = false) {
  plschr(px * kMmPerPx, 1.0);
  plsfont(PL_FCI_SANS, PL_FCI_UPRIGHT, bold ? PL_FCI_BOLD : PL_FCI_MEDIUM);
}

// A polyline through world points, split where consecutive points are not both finite and
// clipped to the window segment by segment.
void DrawPolyline(const Frame& f, const std::vector<std::pair<double, double>>& pts) {
  std::vector<PLFLT> xs, ys;
  const auto flush = [&] {
    if (xs.size() >= 2) plline(static_cast<PLINT>(xs.size()), xs.data(), ys.data());
    xs.clear();
    ys.clear();
  };
  for (size_t i = 1; i < pts.size(); ++i) {
    double ax = pts[i - 1].first, ay = pts[i - 1].second, bx = pts[i].first, by = pts[i].second;
    const bool finite =
        std::isfinite(ax) && std::isfinite(ay) && std::isfinite(bx) && std::isfinite(by);
    if (!finite || !ClipSegment(f, ax, ay, bx, by)) {
      flush();
      continue;
    }
    if (xs.empty() || xs.back() != ax || ys.back() != ay) {
      flush();
      xs.push_back(ax);
      ys.push_back(ay);
    }
    xs.push_back(bx);
    ys.push_back(by);
  }
  flush();
}

void DrawMarker(const Frame& f, double x, double y) {
  constexpr int kSides = 16;
  PLFLT xs[kSides], ys[kSides];
  for (int k = 0; k < kSides; ++k) {
    const double a = 2 * M_PI * k / kSides;
    xs[k] = x + kMarkerRadius * std::cos(a) * f.XPerPx();
    ys[k] = y + kMarkerRadius * std::sin(a) * f.YPerPx();
  }
  plfill(kSides, xs, ys);
}

// A tick label: the value itself, e.g. 200000, 0.25 or 1e6.
std::string TickText(double value) {
  std::string text = absl::StrFormat("%.6g", value);
  // "1e+06" -> "1e6", "2.5e-05" -> "2.5e-5".
  if (const size_t e = text.find('e'); e != std::string::npos) {
    const bool minus = text[e + 1] == '-';
    const size_t digits = text.find_first_not_of("+-0", e + 1);
    text = absl::StrCat(text.substr(0, e + 1), minus ? "-" : "", text.substr(digits));
  }
  return text;
}

// Tick labels of linear axes ("o" in plbox), instead of PLplot's default of mantissas plus a
// separate "(x10^6)" above the axis, which falls outside the panel. Ticks PLplot places at zero
// can carry rounding noise: they print as "0".
void LinearTickLabel(PLINT axis, PLFLT value, char* label, PLINT length, void* data) {
  const Frame& f = *static_cast<const Frame*>(data);
  const double span = axis == PL_X_AXIS ? f.x1 - f.x0 : f.y1 - f.y0;
  const std::string text = TickText(std::abs(value) < 1e-9 * span ? 0.0 : value);
  std::snprintf(label, static_cast<size_t>(length), "%s", text.c_str());
}

// PLplot labels a log axis at powers of ten only. When the window [l0, l1] (in decades) holds
// fewer than two, these values get labels too: 1-2-5 or 1..9 mantissas, else nice linear steps.
// Powers of ten are left out (PLplot labels them).
std::vector<double> ExtraLogTicks(double l0, double l1) {
  if (std::floor(l1) - std::ceil(l0) >= 1) return {};
  const double lo = std::pow(10.0, l0) * (1 - 1e-9), hi = std::pow(10.0, l1) * (1 + 1e-9);
  const auto power_of_ten = [](double v) {
    return std::abs(std::log10(v) - std::round(std::log10(v))) < 1e-9;
  };
  std::vector<double> ticks;
  for (const int max_mantissa : {5, 9}) {
    ticks.clear();
    for (int k = static_cast<int>(std::floor(l0)); k <= static_cast<int>(std::ceil(l1)); ++k) {
      for (int m = 1; m <= max_mantissa; m += max_mantissa == 5 && m > 1 ? 3 : 1) {
        const double v = m * std::pow(10.0, k);
        if (v >= lo && v <= hi) ticks.push_back(v);
      }
    }
    if (ticks.size() >= 3) break;
  }
  if (ticks.size() < 3) {
    const double raw = (hi - lo) / 5, p = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
    ticks.clear();
    for (double v = std::ceil(lo / step) * step; v <= hi; v += step) ticks.push_back(v);
  }
  ticks.erase(std::remove_if(ticks.begin(), ticks.end(), power_of_ten), ticks.end());
  return ticks;
}

// Grid lines (pass 0) or tick marks and labels (pass 1) at ExtraLogTicks.
void DrawExtraLogTicks(const Chart& c, const Frame& f, int pass) {
  for (const bool x_axis : {true, false}) {
    if (!(x_axis ? c.x.log : c.y.log)) continue;
    for (const double v : x_axis ? ExtraLogTicks(f.x0, f.x1) : ExtraLogTicks(f.y0, f.y1)) {
      const double w = std::log10(v);
      const double len = pass == 0 ? 1.0 : 5 / (x_axis ? f.h_px : f.w_px);  // of the plot area
      const PLFLT xs[2] = {x_axis ? w : f.x0, x_axis ? w : f.x0 + len * (f.x1 - f.x0)};
      const PLFLT ys[2] = {x_axis ? f.y0 : w, x_axis ? f.y0 + len * (f.y1 - f.y0) : w};
      plline(2, xs, ys);
      // At PLplot's own label positions (plmtex displacements in character heights).
      const double pos = (w - (x_axis ? f.x0 : f.y0)) / (x_axis ? f.x1 - f.x0 : f.y1 - f.y0);
      if (pass == 1)
        plmtex(x_axis ? "b" : "lv", x_axis ? 1.5 : 0.5, pos, x_axis ? 0.5 : 1, TickText(v).c_str());
    }
  }
}

void DrawAxes(const Chart& c, Frame& f) {
  const std::string lx = c.x.log ? "l" : "o", ly = c.y.log ? "l" : "o";
  plslabelfunc(LinearTickLabel, &f);
  plwidth(1);
  UseColour(kMinorGridColour);  // minor grid (log axes only: PLplot draws it at 2..9 x 10^k)
  plbox(c.x.log ? "lh" : "", 0, 0, c.y.log ? "lh" : "", 0, 0);
  UseColour(kGridColour);
  plbox((lx + "g").c_str(), 0, 0, (ly + "g").c_str(), 0, 0);
  DrawExtraLogTicks(c, f, 0);
  UseColour(0x000000);
  SetFont(kTextFont);
  plbox(("bcnst" + lx).c_str(), 0, 0, ("bcnstv" + ly).c_str(), 0, 0);
  DrawExtraLogTicks(c, f, 1);
  plslabelfunc(nullptr, nullptr);
}

void DrawVLines(const Chart& c, const Frame& f) {
  // Dash and gap lengths are in micrometres.
  const PLINT mark = static_cast<PLINT>(6 * kMmPerPx * 1000), space = mark * 2 / 3;
  int shown = 0;
  for (const VerticalLine& v : c.vlines) {
    const double x = f.X(v.x);
    if (!f.Inside(x, f.y0)) continue;
    UseColour(v.rgb ? *v.rgb : kVLineDefault);
    plwidth(kLineWidth);
    plstyl(1, &mark, &space);
    const PLFLT xs[2] = {x, x}, ys[2] = {f.y0, f.y1};
    plline(2, xs, ys);
    plstyl(0, nullptr, nullptr);
    if (!v.label.empty()) {
      // Labels are staggered over three rows under the top edge, on a translucent white box,
      // right of the line unless (by an estimate of the text width) they would leave the plot.
      const double row_px = 8 + kTextFont / 2 + (shown % 3) * (kTextFont + 4);
      const double w_px = TextWidthPx(v.label, kTextFont), h_px = kTextFont / 2 + 2;
      const bool left = (f.x1 - x) / f.XPerPx() < w_px + 6;
      const double tx = x + (left ? -4 : 4) * f.XPerPx(), ty = f.y1 - row_px * f.YPerPx();
      const double bx = tx + (left ? -w_px - 1 : -1) * f.XPerPx(), bw = (w_px + 2) * f.XPerPx();
      const PLFLT xs[4] = {bx, bx + bw, bx + bw, bx};
      const PLFLT ys[4] = {ty - h_px * f.YPerPx(), ty - h_px * f.YPerPx(), ty + h_px * f.YPerPx(),
                           ty + h_px * f.YPerPx()};
      SetSlot(kDrawSlot, 0xFFFFFF, 0.8);
      plcol0(kDrawSlot);
      plfill(4, xs, ys);
      UseColour(v.rgb ? *v.rgb : kVLineDefault);
      SetFont(kTextFont);
      plptex(tx, ty, 1, 0, left ? 1 : 0, v.label.c_str());
    }
    ++shown;
  }
}

// Legend of the labelled series with a finite point, in the plot corner that (by an estimate of
// the legend size) covers the fewest points.
void DrawLegend(const Chart& c, const Frame& f) {
  std::vector<PLINT> opts, colours;
  std::vector<const char*> texts;
  size_t longest = 0;
  for (size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    bool finite = false;
    for (size_t i = 0; i < s.x.size() && !finite; ++i) finite = FinitePoint(s, i);
    if (s.label.empty() || !finite) continue;
    opts.push_back((HasLine(s.style) ? PL_LEGEND_LINE : 0) |
                   (HasMarkers(s.style) ? PL_LEGEND_SYMBOL : 0));
    colours.push_back(kFirstSeriesSlot + static_cast<PLINT>(si));
    texts.push_back(s.label.c_str());
    longest = std::max(longest, s.label.size());
  }
  if (texts.empty()) return;
  const size_t n = texts.size();
  const std::vector<PLINT> black(n, kDrawSlot), ones(n, 1);
  const std::vector<PLFLT> widths(n, kLineWidth), scales(n, 0.8);
  const std::vector<const char*> symbols(n, "\u25CF");  // a filled circle, like the markers
  const double w_px = 0.06 * f.w_px + 40 + TextWidthPx(std::string(longest, 'x'), kTextFont),
               h_px = 12 + 1.6 * kTextFont * texts.size();
  const PLINT corners[4] = {PL_POSITION_TOP | PL_POSITION_RIGHT, PL_POSITION_TOP | PL_POSITION_LEFT,
                            PL_POSITION_BOTTOM | PL_POSITION_RIGHT,
                            PL_POSITION_BOTTOM | PL_POSITION_LEFT};
  int best = 0;
  long best_count = -1;
  for (int k = 0; k < 4; ++k) {
    const bool right = corners[k] & PL_POSITION_RIGHT, top = corners[k] & PL_POSITION_TOP;
    const double bx0 = right ? f.x1 - (w_px + 8) * f.XPerPx() : f.x0;
    const double bx1 = right ? f.x1 : f.x0 + (w_px + 8) * f.XPerPx();
    const double by0 = top ? f.y1 - (h_px + 8) * f.YPerPx() : f.y0;
    const double by1 = top ? f.y1 : f.y0 + (h_px + 8) * f.YPerPx();
    long count = 0;
    for (const Series& s : c.series) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!FinitePoint(s, i)) continue;
        const double x = f.X(s.x[i]), y = f.Y(s.y[i]);
        count += x >= bx0 && x <= bx1 && y >= by0 && y <= by1;
      }
    }
    for (const VerticalLine& v : c.vlines) {  // a top corner would hide the vlines' labels
      const double x = f.X(v.x);
      const double label_w = TextWidthPx(v.label, kTextFont) + 16;
      count += top && !v.label.empty() && x >= bx0 - label_w * f.XPerPx() && x <= bx1 ? 1000 : 0;
    }
    if (best_count < 0 || count < best_count) {
      best = k;
      best_count = count;
    }
  }
  SetSlot(kLegendBgSlot, 0xFFFFFF, 0.9);
  SetSlot(kLegendFrameSlot, kLegendFrameColour);
  SetFont(kTextFont);
  plwidth(1);
  UseColour(0x000000);
  PLFLT legend_w = 0, legend_h = 0;
  pllegend(&legend_w, &legend_h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           corners[best] | PL_POSITION_INSIDE | PL_POSITION_VIEWPORT, 8 / f.w_px, 8 / f.h_px,
           /*plot_width=*/0.06, kLegendBgSlot, kLegendFrameSlot, 1, 0, 0,
           static_cast<PLINT>(texts.size()), opts.data(), /*text_offset=*/1.0, /*text_scale=*/1.0,
           /*text_spacing=*/2.0, /*text_justification=*/0, black.data(), texts.data(), nullptr,
           nullptr, nullptr, nullptr, colours.data(), ones.data(), widths.data(), colours.data(),
           scales.data(), ones.data(), symbols.data());
}

void DrawPanel(const Chart& c, Frame& f) {
  DrawAxes(c, f);
  if (c.identity_line) {
    // y = x is straight in world units when both axes share a scale type; otherwise sampled.
    const double lo =
        std::max(c.x.log ? std::pow(10, f.x0) : f.x0, c.y.log ? std::pow(10, f.y0) : f.y0);
    const double hi =
        std::min(c.x.log ? std::pow(10, f.x1) : f.x1, c.y.log ? std::pow(10, f.y1) : f.y1);
    if (lo < hi) {
      const int n = c.x.log == c.y.log ? 1 : 256;
      std::vector<std::pair<double, double>> pts;
      for (int i = 0; i <= n; ++i) {
        const double v =
            c.x.log || c.y.log
                ? std::pow(10.0, std::log10(lo) + (std::log10(hi) - std::log10(lo)) * i / n)
                : lo + (hi - lo) * i / n;
        pts.push_back({f.X(v), f.Y(v)});
      }
      UseColour(kIdentityColour);
      plwidth(1.5);
      DrawPolyline(f, pts);
    }
  }
  for (size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    const uint32_t rgb = SeriesColour(s, si);
    SetSlot(kFirstSeriesSlot + static_cast<int>(si), rgb);
    UseColour(rgb);
    if (HasLine(s.style)) {
      std::vector<std::pair<double, double>> pts;
      for (size_t i = 0; i < s.x.size(); ++i) {
        pts.push_back(FinitePoint(s, i) ? std::pair{f.X(s.x[i]), f.Y(s.y[i])}
                                        : std::pair{kNaN, kNaN});  // breaks the line
      }
      plwidth(kLineWidth);
      DrawPolyline(f, pts);
    }
    if (HasMarkers(s.style)) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (FinitePoint(s, i) && f.Inside(f.X(s.x[i]), f.Y(s.y[i]))) {
          DrawMarker(f, f.X(s.x[i]), f.Y(s.y[i]));
        }
      }
    }
  }
  DrawVLines(c, f);
  DrawLegend(c, f);
  UseColour(0x000000);  // the frame again, over the data
  plwidth(1);
  plbox("bc", 0, 0, "bc", 0, 0);
  if (!c.title.empty()) {  // centred on the page, smaller when (by an estimate) it is too wide
    SetFont(std::min(kTitleFont,
                     kTitleFont * (f.page_w_px - 8) / TextWidthPx(c.title, kTitleFont, true)),
            true);
    plmtex("t", 1.0, (f.page_w_px / 2 - f.left_px) / f.w_px, 0.5, c.title.c_str());
  }
  SetFont(kTextFont);
  if (!c.x.label.empty()) plmtex("b", 3.2, 0.5, 0.5, c.x.label.c_str());
  if (!c.y.label.empty()) {  // near the left edge of the page (disp is in character heights)
    PLFLT def_mm = 0, ht_mm = 0;
    plgchr(&def_mm, &ht_mm);
    plmtex("l", (f.left_px - 10) * kMmPerPx / ht_mm, 0.5, 0.5, c.y.label.c_str());
  }
}

// PLplot's error hooks are process-wide; the messages of the render in progress land here.
std::string* g_plplot_errors = nullptr;  // guarded by PlplotMutex()

std::mutex& PlplotMutex() {
  static std::mutex m;
  return m;
}

bool HavePngCairo() {
  const char *menus[128], *names[128], **pm = menus, **pn = names;
  int n = 128;
  plgDevs(&pm, &pn, &n);
  return std::find_if(pn, pn + n, [](const char* d) { return std::string(d) == "pngcairo"; }) !=
         pn + n;
}

}  // namespace

absl::StatusOr<std::string> RenderPng(const std::vector<Chart>& panels, int width, int height) {
  if (panels.empty()) return absl::InvalidArgumentError("panels: empty, need at least one chart");
  if (width < 100 || width > 8000) {
    return absl::InvalidArgumentError(absl::StrCat("width = ", width, ": must be in [100, 8000]"));
  }
  if (height < 100 || height > 8000) {
    return absl::InvalidArgumentError(
        absl::StrCat("height = ", height, ": must be in [100, 8000]"));
  }
  const int n = static_cast<int>(panels.size());
  if (height / n < kMinPanelHeight) {
    return absl::InvalidArgumentError(absl::StrCat("height = ", height, ": too small for ", n,
                                                   " panels (need ", kMinPanelHeight,
                                                   " pixels per panel)"));
  }
  size_t max_series = 0;
  for (int p = 0; p < n; ++p) {
    if (absl::Status s = ValidatePanel(panels[p], absl::StrCat("panels[", p, "]")); !s.ok()) {
      return s;
    }
    max_series = std::max(max_series, panels[p].series.size());
  }

  std::lock_guard<std::mutex> lock(PlplotMutex());
  // Without the device PLplot would prompt on stdin for another one.
  if (!HavePngCairo()) {
    return absl::InternalError("PLplot has no pngcairo device (install plplot-driver-cairo)");
  }
  // The PNG goes to memory; PLplot closes the stream in plend1, which sets png_data/png_size.
  char* png_data = nullptr;
  size_t png_size = 0;
  FILE* out = open_memstream(&png_data, &png_size);
  if (out == nullptr) return absl::InternalError("open_memstream failed");
  // Recoverable PLplot errors (plabort) are collected instead of printed; fatal ones (plexit, which
  // ends the process) come from a missing font or driver file or a bad argument, and validated
  // input does not make the latter.
  std::string errors;
  g_plplot_errors = &errors;
  plsabort([](const char* msg) { absl::StrAppend(g_plplot_errors, msg, "; "); });

  PLINT previous = 0, stream = 0;
  plgstrm(&previous);
  plmkstrm(&stream);
  if (stream < 0) {
    std::fclose(out);
    std::free(png_data);
    plsabort(nullptr);
    g_plplot_errors = nullptr;
    return absl::InternalError(absl::StrCat("plmkstrm: no free PLplot stream: ", errors));
  }
  plsdev("pngcairo");
  plsfile(out);
  plspage(0, 0, width, height, 0, 0);
  plscmap0n(kFirstSeriesSlot + static_cast<int>(max_series));
  plscolbg(255, 255, 255);
  plinit();
  pladv(0);

  // Panels share the width and the plot area's left edge; margins in pixels.
  bool any_ylabel = false;
  for (const Chart& c : panels) any_ylabel |= !c.y.label.empty();
  const double left = any_ylabel ? 84 : 64, right = width - 16.0;
  const double panel_h = static_cast<double>(height) / n;
  for (int p = 0; p < n; ++p) {
    const Chart& c = panels[p];
    std::vector<double> xv, yv;
    for (const Series& s : c.series) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!FinitePoint(s, i)) continue;
        xv.push_back(s.x[i]);
        yv.push_back(s.y[i]);
      }
    }
    for (const VerticalLine& v : c.vlines) xv.push_back(v.x);
    Frame f;
    f.xlog = c.x.log;
    f.ylog = c.y.log;
    std::tie(f.x0, f.x1) = Window(xv, c.x);
    std::tie(f.y0, f.y1) = Window(yv, c.y);
    const double top = std::round(p * panel_h + (c.title.empty() ? 14 : 30));
    const double bottom = std::round((p + 1) * panel_h - (c.x.label.empty() ? 26 : 44));
    f.w_px = right - left;
    f.left_px = left;
    f.page_w_px = width;
    f.h_px = bottom - top;
    plvpor(left / width, right / width, 1 - bottom / height, 1 - top / height);
    plwind(f.x0, f.x1, f.y0, f.y1);
    DrawPanel(c, f);
  }
  plend1();
  plsstrm(previous);
  plsabort(nullptr);
  g_plplot_errors = nullptr;

  std::string png(png_data == nullptr ? "" : std::string(png_data, png_size));
  std::free(png_data);
  if (!errors.empty()) return absl::InternalError(absl::StrCat("PLplot: ", errors));
  if (png.size() < 8) return absl::InternalError("PLplot's pngcairo device wrote no PNG");
  return png;
}

}  // namespace specplan::plot
