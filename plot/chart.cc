// PNG line charts on cairo: validation of a chart spec (every bad field named), axis ranges and
// nice ticks (linear and log), text measurement, and panel drawing with clipped segments, markers
// and a legend. Over 500 lines because tick placement and layout depend on measured text sizes, so
// the three stages share the cairo context and the layout structs declared here.

#include "plot/chart.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
constexpr uint32_t kAxisColour = 0x000000;
constexpr uint32_t kTextColour = 0x000000;

constexpr char kFontFace[] = "sans-serif";
constexpr double kTitleFont = 14;
constexpr double kLabelFont = 12;
constexpr double kTickFont = 11;
constexpr double kLegendFont = 11;
constexpr double kLineWidth = 2;
constexpr double kMarkerRadius = 3.5;
constexpr int kMinPanelHeight = 90;  // pixels

// "1e+06" -> "1e6", "2.5e-05" -> "2.5e-5": shorter tick labels.
std::string TidyExponent(std::string s) {
  const size_t e = s.find('e');
  if (e == std::string::npos) return s;
  size_t i = e + 1;
  const bool negative = i < s.size() && s[i] == '-';
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t j = i;
  while (j + 1 < s.size() && s[j] == '0') ++j;
  return s.substr(0, e + 1) + (negative ? "-" : "") + s.substr(j);
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string Rgb(uint32_t rgb) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%X", static_cast<unsigned>(rgb));
  return buf;
}

void SetColour(cairo_t* cr, uint32_t rgb, double alpha = 1.0) {
  cairo_set_source_rgba(cr, ((rgb >> 16) & 0xFF) / 255.0, ((rgb >> 8) & 0xFF) / 255.0,
                        (rgb & 0xFF) / 255.0, alpha);
}

bool FinitePoint(const Series& s, size_t i) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
}

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
        absl::StrCat(where, ".rgb = ", Rgb(*rgb), ": must be <= 0xFFFFFF"));
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
// Scales and ticks.

struct Scale {
  double lo = 0, hi = 1;  // data units
  bool log = false;
  double px0 = 0, px1 = 1;  // pixel positions of lo and hi

  double T(double v) const { return log ? std::log10(v) : v; }
  double ToPx(double v) const {
    const double t = (T(v) - T(lo)) / (T(hi) - T(lo));
    return px0 + t * (px1 - px0);
  }
  bool Contains(double v) const {
    const double eps = 1e-9 * (T(hi) - T(lo));
    return T(v) >= T(lo) - eps && T(v) <= T(hi) + eps;
  }
};

// Widens [lo, hi] in transformed space when it is empty or inverted (all values equal).
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

// Axis range: the data range plus a 5% margin (in log space on log axes), overridden by the
// explicit bounds; one-sided bounds that leave an empty range are widened on the free side.
void ComputeRange(const std::vector<double>& values, const Axis& axis, double* lo_out,
                  double* hi_out) {
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
  *lo_out = lo;
  *hi_out = hi;
}

struct Tick {
  double value;
  std::string label;  // empty: minor tick (grid only)
};

// The smallest 1/2/5 x 10^k step >= raw.
double NiceStep(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

std::string FormatLinear(double v, double step) {
  if (std::abs(v) < step * 1e-6) return "0";
  char buf[64];
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-4) {
    const int digits = std::clamp(
        static_cast<int>(std::floor(std::log10(a)) - std::floor(std::log10(step) + 1e-9)) + 1, 1,
        15);
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    return TidyExponent(buf);
  } else {
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  }
  return buf;
}

std::vector<Tick> LinearTicks(double lo, double hi, double step) {
  std::vector<Tick> ticks;
  const long first = static_cast<long>(std::ceil(lo / step - 1e-9));
  const long last = static_cast<long>(std::floor(hi / step + 1e-9));
  for (long i = first; i <= last && ticks.size() < 1000; ++i) {
    const double v = static_cast<double>(i) * step;
    ticks.push_back({v, FormatLinear(v, step)});
  }
  return ticks;
}

// Ticks with at most about `max_ticks` labels: nice linear steps, or decades on log axes (with
// 2 and 5 multiples, or 1..9, when the range spans less than two decades).
std::vector<Tick> MakeTicks(const Scale& s, int max_ticks) {
  max_ticks = std::max(max_ticks, 2);
  if (!s.log) {
    double step = NiceStep((s.hi - s.lo) / max_ticks);
    std::vector<Tick> ticks = LinearTicks(s.lo, s.hi, step);
    while (static_cast<int>(ticks.size()) > max_ticks + 1) {
      step = NiceStep(step * 1.5);
      ticks = LinearTicks(s.lo, s.hi, step);
    }
    return ticks;
  }
  const double llo = std::log10(s.lo), lhi = std::log10(s.hi);
  const int kmin = static_cast<int>(std::ceil(llo - 1e-9));
  const int kmax = static_cast<int>(std::floor(lhi + 1e-9));
  std::vector<Tick> ticks;
  if (kmax - kmin + 1 >= 2) {
    const int decades = kmax - kmin + 1;
    const int stride = (decades + max_ticks - 1) / max_ticks;
    for (int k = kmin; k <= kmax; ++k) {
      const double v = std::pow(10.0, k);
      const bool major = (k - kmin) % stride == 0;
      ticks.push_back({v, major ? TidyExponent(Num(v)) : ""});
    }
    if (stride == 1 && decades <= 8) {  // minor grid at 2..9 x 10^k
      for (int k = kmin - 1; k <= kmax; ++k) {
        for (int m = 2; m <= 9; ++m) {
          const double v = m * std::pow(10.0, k);
          if (s.Contains(v)) ticks.push_back({v, ""});
        }
      }
    }
    return ticks;
  }
  for (const std::vector<int>& mantissas :
       {std::vector<int>{1, 2, 5}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    ticks.clear();
    for (int k = kmin - 1; k <= kmax + 1; ++k) {
      for (int m : mantissas) {
        const double v = m * std::pow(10.0, k);
        if (s.Contains(v)) ticks.push_back({v, TidyExponent(Num(v))});
      }
    }
    if (ticks.size() >= 2 && static_cast<int>(ticks.size()) <= max_ticks + 1) return ticks;
  }
  // Less than a factor ~2 in range: linear nice steps mapped through the log scale.
  Scale lin = s;
  lin.log = false;
  return MakeTicks(lin, max_ticks);
}

// ---------------------------------------------------------------------------------------------
// Drawing helpers.

struct TextSize {
  double w = 0, h = 0;
};

TextSize Measure(cairo_t* cr, const std::string& text, double size, bool bold = false) {
  cairo_select_font_face(cr, kFontFace, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, text.c_str(), &e);
  return {e.x_advance, size};
}

// Draws `text` with its anchor at (x, y): ax/ay in {0, 0.5, 1} pick left/centre/right and
// top/middle/baseline-ish bottom of the font box.
void DrawText(cairo_t* cr, const std::string& text, double x, double y, double ax, double ay,
              double size, bool bold = false, uint32_t rgb = kTextColour) {
  if (text.empty()) return;
  cairo_select_font_face(cr, kFontFace, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  cairo_text_extents_t te;
  cairo_text_extents(cr, text.c_str(), &te);
  const double h = fe.ascent + fe.descent;
  SetColour(cr, rgb);
  cairo_move_to(cr, x - ax * te.x_advance, y - ay * h + fe.ascent);
  cairo_show_text(cr, text.c_str());
  cairo_new_path(cr);
}

// Pixel-crisp coordinate for a 1-px line.
double Crisp(double v) { return std::floor(v) + 0.5; }

void DrawMarker(cairo_t* cr, double x, double y) {
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, kMarkerRadius, 0, 2 * M_PI);
  cairo_fill(cr);
}

// Liang-Barsky: clips segment (x0,y0)-(x1,y1) to the box; false when it misses the box.
bool ClipSegment(double& x0, double& y0, double& x1, double& y1, double bx0, double by0, double bx1,
                 double by1) {
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {x0 - bx0, bx1 - x0, y0 - by0, by1 - y0};
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
  const double ox0 = x0, oy0 = y0;
  x0 = ox0 + t0 * dx;
  y0 = oy0 + t0 * dy;
  x1 = ox0 + t1 * dx;
  y1 = oy0 + t1 * dy;
  return true;
}

uint32_t SeriesColour(const Series& s, size_t index) {
  return s.rgb ? *s.rgb : kPalette[index % kPaletteSize];
}

bool HasLine(SeriesStyle st) { return st != SeriesStyle::kPoints; }
bool HasMarkers(SeriesStyle st) { return st != SeriesStyle::kLine; }

// ---------------------------------------------------------------------------------------------
// Layout and rendering of one panel.

struct Rect {
  double x0, y0, x1, y1;
  double W() const { return x1 - x0; }
  double H() const { return y1 - y0; }
};

struct PanelLayout {
  Scale xs, ys;
  std::vector<Tick> yticks;
  double top = 0, bottom = 0;  // plot area rows
  double ytick_width = 0;      // widest y tick label, pixels
};

void DrawPanel(cairo_t* cr, const Chart& c, const PanelLayout& lay, const Rect& plot,
               const std::vector<Tick>& xticks) {
  const Scale& xs = lay.xs;
  const Scale& ys = lay.ys;

  // Grid: minor first, then major.
  cairo_set_line_width(cr, 1);
  for (int pass = 0; pass < 2; ++pass) {
    const bool major = pass == 1;
    SetColour(cr, major ? kGridColour : kMinorGridColour);
    for (const Tick& t : xticks) {
      if (t.label.empty() == major || !xs.Contains(t.value)) continue;
      const double px = Crisp(xs.ToPx(t.value));
      cairo_move_to(cr, px, plot.y0);
      cairo_line_to(cr, px, plot.y1);
    }
    for (const Tick& t : lay.yticks) {
      if (t.label.empty() == major || !ys.Contains(t.value)) continue;
      const double py = Crisp(ys.ToPx(t.value));
      cairo_move_to(cr, plot.x0, py);
      cairo_line_to(cr, plot.x1, py);
    }
    cairo_stroke(cr);
  }

  // Everything data-driven is clipped to the plot area.
  cairo_save(cr);
  cairo_rectangle(cr, plot.x0, plot.y0, plot.W(), plot.H());
  cairo_clip(cr);
  const double pad = 8;  // segments are clipped in double precision to a slightly larger box
  const double bx0 = plot.x0 - pad, by0 = plot.y0 - pad, bx1 = plot.x1 + pad, by1 = plot.y1 + pad;

  if (c.identity_line) {
    // y = x is a straight line in pixel space when both axes share a scale type; otherwise
    // sample it densely.
    SetColour(cr, kIdentityColour);
    cairo_set_line_width(cr, 1.5);
    const double lo = std::max(xs.lo, ys.lo), hi = std::min(xs.hi, ys.hi);
    if (lo < hi) {
      const int n = xs.log == ys.log ? 1 : 256;
      bool pen = false;
      for (int i = 0; i <= n; ++i) {
        const double v =
            xs.log ? std::pow(10.0, std::log10(lo) + (std::log10(hi) - std::log10(lo)) * i / n)
                   : lo + (hi - lo) * i / n;
        const double px = xs.ToPx(v), py = ys.ToPx(v);
        if (!std::isfinite(px) || !std::isfinite(py)) continue;
        if (pen) {
          cairo_line_to(cr, px, py);
        } else {
          cairo_move_to(cr, px, py);
          pen = true;
        }
      }
      cairo_stroke(cr);
    }
  }

  for (size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    SetColour(cr, SeriesColour(s, si));
    if (HasLine(s.style)) {
      cairo_set_line_width(cr, kLineWidth);
      cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
      cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
      bool have_prev = false;
      double prev_x = 0, prev_y = 0;    // previous finite point, pixels
      double pen_x = NAN, pen_y = NAN;  // current path end
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!FinitePoint(s, i)) {
          have_prev = false;  // non-finite points break the line
          continue;
        }
        const double px = xs.ToPx(s.x[i]), py = ys.ToPx(s.y[i]);
        if (have_prev) {
          double ax = prev_x, ay = prev_y, bx = px, by = py;
          if (ClipSegment(ax, ay, bx, by, bx0, by0, bx1, by1)) {
            if (ax != pen_x || ay != pen_y) cairo_move_to(cr, ax, ay);
            cairo_line_to(cr, bx, by);
            pen_x = bx;
            pen_y = by;
          }
        }
        prev_x = px;
        prev_y = py;
        have_prev = true;
      }
      cairo_stroke(cr);
    }
    if (HasMarkers(s.style)) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!FinitePoint(s, i)) continue;
        const double px = xs.ToPx(s.x[i]), py = ys.ToPx(s.y[i]);
        if (px < bx0 || px > bx1 || py < by0 || py > by1) continue;
        DrawMarker(cr, px, py);
      }
    }
  }

  // Dashed vertical reference lines with staggered labels at the top of the plot area.
  int shown = 0;
  for (const VerticalLine& v : c.vlines) {
    if (!xs.Contains(v.x)) continue;
    const uint32_t rgb = v.rgb ? *v.rgb : kVLineDefault;
    const double px = std::round(xs.ToPx(v.x));
    const double dash[] = {6, 4};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_set_line_width(cr, 2);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    SetColour(cr, rgb);
    cairo_move_to(cr, px, plot.y0);
    cairo_line_to(cr, px, plot.y1);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
    if (!v.label.empty()) {
      const TextSize ts = Measure(cr, v.label, kTickFont);
      const double ty = plot.y0 + 3 + (shown % 3) * (kTickFont + 4);
      const bool left = px + 4 + ts.w > plot.x1;  // no room on the right: label on the left
      const double tx = left ? px - 4 - ts.w : px + 4;
      SetColour(cr, 0xFFFFFF, 0.8);
      cairo_rectangle(cr, tx - 1, ty - 1, ts.w + 2, ts.h + 3);
      cairo_fill(cr);
      DrawText(cr, v.label, tx, ty, 0, 0, kTickFont, false, rgb);
    }
    ++shown;
  }

  // Legend: labelled series with a finite point, in the plot corner covering the fewest points.
  std::vector<size_t> entries;
  double text_w = 0;
  for (size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    if (s.label.empty()) continue;
    bool finite = false;
    for (size_t i = 0; i < s.x.size() && !finite; ++i) finite = FinitePoint(s, i);
    if (!finite) continue;
    entries.push_back(si);
    text_w = std::max(text_w, Measure(cr, s.label, kLegendFont).w);
  }
  if (!entries.empty()) {
    const double lpad = 6, row = kLegendFont + 5, sample = 24;
    const double lw = lpad + sample + 6 + text_w + lpad;
    const double lh = lpad * 2 + row * entries.size() - 5;
    const double inset = 8;
    const Rect corners[4] = {
        {plot.x1 - inset - lw, plot.y0 + inset, plot.x1 - inset, plot.y0 + inset + lh},
        {plot.x0 + inset, plot.y0 + inset, plot.x0 + inset + lw, plot.y0 + inset + lh},
        {plot.x1 - inset - lw, plot.y1 - inset - lh, plot.x1 - inset, plot.y1 - inset},
        {plot.x0 + inset, plot.y1 - inset - lh, plot.x0 + inset + lw, plot.y1 - inset},
    };
    int best = 0;
    long best_count = -1;
    for (int k = 0; k < 4; ++k) {
      long count = 0;
      for (const Series& s : c.series) {
        for (size_t i = 0; i < s.x.size(); ++i) {
          if (!FinitePoint(s, i)) continue;
          const double px = xs.ToPx(s.x[i]), py = ys.ToPx(s.y[i]);
          count += px >= corners[k].x0 && px <= corners[k].x1 && py >= corners[k].y0 &&
                   py <= corners[k].y1;
        }
      }
      if (best_count < 0 || count < best_count) {
        best = k;
        best_count = count;
      }
    }
    const Rect& box = corners[best];
    cairo_rectangle(cr, Crisp(box.x0), Crisp(box.y0), std::round(box.W()), std::round(box.H()));
    SetColour(cr, 0xFFFFFF, 0.9);
    cairo_fill_preserve(cr);
    SetColour(cr, 0xB0B0B0);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (size_t e = 0; e < entries.size(); ++e) {
      const Series& s = c.series[entries[e]];
      const double cy = box.y0 + lpad + row * e + kLegendFont / 2 + 1;
      const double sx = box.x0 + lpad;
      SetColour(cr, SeriesColour(s, entries[e]));
      if (HasLine(s.style)) {
        cairo_set_line_width(cr, kLineWidth);
        cairo_move_to(cr, sx, cy);
        cairo_line_to(cr, sx + sample, cy);
        cairo_stroke(cr);
      }
      if (HasMarkers(s.style)) DrawMarker(cr, sx + sample / 2, cy);
      DrawText(cr, s.label, sx + sample + 6, cy, 0, 0.5, kLegendFont);
    }
  }
  cairo_restore(cr);

  // Frame, tick marks and tick labels.
  SetColour(cr, kAxisColour);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, Crisp(plot.x0), Crisp(plot.y0), std::round(plot.W()), std::round(plot.H()));
  cairo_stroke(cr);
  for (const Tick& t : xticks) {
    if (t.label.empty() || !xs.Contains(t.value)) continue;
    const double px = Crisp(xs.ToPx(t.value));
    cairo_move_to(cr, px, plot.y1);
    cairo_line_to(cr, px, plot.y1 + 4);
    cairo_stroke(cr);
    DrawText(cr, t.label, px, plot.y1 + 6, 0.5, 0, kTickFont);
  }
  for (const Tick& t : lay.yticks) {
    if (t.label.empty() || !ys.Contains(t.value)) continue;
    const double py = Crisp(ys.ToPx(t.value));
    SetColour(cr, kAxisColour);
    cairo_move_to(cr, plot.x0 - 4, py);
    cairo_line_to(cr, plot.x0, py);
    cairo_stroke(cr);
    DrawText(cr, t.label, plot.x0 - 6, py, 1, 0.5, kTickFont);
  }
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
  for (int p = 0; p < n; ++p) {
    if (absl::Status s = ValidatePanel(panels[p], absl::StrCat("panels[", p, "]")); !s.ok()) {
      return s;
    }
  }

  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("cairo_image_surface_create(", width, "x", height,
                     "): ", cairo_status_to_string(cairo_surface_status(surface.get()))));
  }
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> ctx(cairo_create(surface.get()),
                                                         cairo_destroy);
  cairo_t* cr = ctx.get();
  SetColour(cr, 0xFFFFFF);
  cairo_paint(cr);

  // Pass 1: ranges, vertical layout and y ticks per panel; the widest left margin is shared so
  // that stacked panels line up.
  const double panel_h = static_cast<double>(height) / n;
  std::vector<PanelLayout> layouts(n);
  double left = 0;
  bool any_ylabel = false;
  for (int p = 0; p < n; ++p) {
    const Chart& c = panels[p];
    PanelLayout& lay = layouts[p];
    std::vector<double> xv, yv;
    for (const Series& s : c.series) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!FinitePoint(s, i)) continue;
        xv.push_back(s.x[i]);
        yv.push_back(s.y[i]);
      }
    }
    for (const VerticalLine& v : c.vlines) xv.push_back(v.x);
    lay.xs.log = c.x.log;
    lay.ys.log = c.y.log;
    ComputeRange(xv, c.x, &lay.xs.lo, &lay.xs.hi);
    ComputeRange(yv, c.y, &lay.ys.lo, &lay.ys.hi);

    const double y0 = p * panel_h;
    lay.top = std::round(y0 + (c.title.empty() ? 12 : 30));
    lay.bottom = std::round(y0 + panel_h - (6 + kTickFont + 6 + (c.x.label.empty() ? 0 : 20)));
    lay.ys.px0 = lay.bottom;
    lay.ys.px1 = lay.top;
    lay.yticks = MakeTicks(lay.ys, static_cast<int>((lay.bottom - lay.top) / 40));
    for (const Tick& t : lay.yticks) {
      lay.ytick_width = std::max(lay.ytick_width, Measure(cr, t.label, kTickFont).w);
    }
    left = std::max(left, lay.ytick_width);
    any_ylabel |= !c.y.label.empty();
  }
  left = std::min(std::round(8 + (any_ylabel ? 20 : 0) + left + 8), width / 2.0);
  const double right = width - 16.0;

  // Pass 2: x ticks (they depend on the shared width) and drawing.
  for (int p = 0; p < n; ++p) {
    const Chart& c = panels[p];
    PanelLayout& lay = layouts[p];
    lay.xs.px0 = left;
    lay.xs.px1 = right;
    const Rect plot{left, lay.top, right, lay.bottom};
    std::vector<Tick> xticks;
    for (int max_ticks = static_cast<int>(plot.W() / 70);; --max_ticks) {
      xticks = MakeTicks(lay.xs, max_ticks);
      double widest = 0;
      int labelled = 0;
      for (const Tick& t : xticks) {
        if (t.label.empty()) continue;
        widest = std::max(widest, Measure(cr, t.label, kTickFont).w);
        ++labelled;
      }
      if (max_ticks <= 2 || labelled * (widest + 12) <= plot.W()) break;
    }
    DrawPanel(cr, c, lay, plot, xticks);

    const double y0 = p * panel_h;
    if (!c.title.empty()) {
      DrawText(cr, c.title, (plot.x0 + plot.x1) / 2, y0 + 8, 0.5, 0, kTitleFont, true);
    }
    if (!c.x.label.empty()) {
      DrawText(cr, c.x.label, (plot.x0 + plot.x1) / 2, plot.y1 + 6 + kTickFont + 6, 0.5, 0,
               kLabelFont);
    }
    if (!c.y.label.empty()) {
      cairo_save(cr);
      cairo_translate(cr, 8, (plot.y0 + plot.y1) / 2);
      cairo_rotate(cr, -M_PI / 2);
      DrawText(cr, c.y.label, 0, 0, 0.5, 0, kLabelFont);
      cairo_restore(cr);
    }
  }

  cairo_surface_flush(surface.get());
  std::string png;
  const cairo_status_t st = cairo_surface_write_to_png_stream(
      surface.get(),
      [](void* closure, const unsigned char* data, unsigned int length) {
        static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
        return CAIRO_STATUS_SUCCESS;
      },
      &png);
  if (st != CAIRO_STATUS_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("cairo_surface_write_to_png_stream: ", cairo_status_to_string(st)));
  }
  return png;
}

}  // namespace specplan::plot
