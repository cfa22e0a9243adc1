#include "plot/chart.h"

#include <cairo.h>  // only to decode the PNGs (plot/ draws with PLplot)

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace specplan::plot {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A decoded PNG as 0xRRGGBB pixels, row-major.
struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> px;
  uint32_t At(int x, int y) const { return px[static_cast<size_t>(y) * width + x]; }
};

struct ReadState {
  const std::string* data;
  size_t pos = 0;
};

Image Decode(const std::string& png) {
  ReadState st{&png};
  cairo_surface_t* s = cairo_image_surface_create_from_png_stream(
      [](void* closure, unsigned char* out, unsigned int length) {
        auto* r = static_cast<ReadState*>(closure);
        if (r->pos + length > r->data->size()) return CAIRO_STATUS_READ_ERROR;
        r->data->copy(reinterpret_cast<char*>(out), length, r->pos);
        r->pos += length;
        return CAIRO_STATUS_SUCCESS;
      },
      &st);
  Image img;
  EXPECT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS) << "not a PNG";
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(s);
    img.width = cairo_image_surface_get_width(s);
    img.height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    for (int y = 0; y < img.height; ++y) {
      const auto* row = reinterpret_cast<const uint32_t*>(data + static_cast<size_t>(y) * stride);
      for (int x = 0; x < img.width; ++x) img.px.push_back(row[x] & 0xFFFFFF);  // opaque image
    }
  }
  cairo_surface_destroy(s);
  return img;
}

bool Near(uint32_t a, uint32_t b, int tol) {
  for (int shift : {0, 8, 16}) {
    if (std::abs(static_cast<int>((a >> shift) & 0xFF) - static_cast<int>((b >> shift) & 0xFF)) >
        tol) {
      return false;
    }
  }
  return true;
}

// Pixels within `tol` (per channel) of `rgb`, as (x, y) pairs.
std::vector<std::pair<int, int>> Find(const Image& img, uint32_t rgb, int tol = 6) {
  std::vector<std::pair<int, int>> hits;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      if (Near(img.At(x, y), rgb, tol)) hits.push_back({x, y});
    }
  }
  return hits;
}

// Mean column of the hits with x in [lo, hi).
double MeanColumn(const std::vector<std::pair<int, int>>& hits, int lo, int hi) {
  double sum = 0;
  int n = 0;
  for (const auto& [x, y] : hits) {
    if (x >= lo && x < hi) {
      sum += x;
      ++n;
    }
  }
  EXPECT_GT(n, 0) << "no hits in columns [" << lo << ", " << hi << ")";
  return n ? sum / n : -1;
}

Image RenderOk(const std::vector<Chart>& panels, int w = 600, int h = 400) {
  absl::StatusOr<std::string> png = RenderPng(panels, w, h);
  EXPECT_TRUE(png.ok()) << png.status();
  if (!png.ok()) return {};
  return Decode(*png);
}

Series Points(std::vector<double> x, std::vector<double> y, uint32_t rgb, std::string label = "") {
  Series s;
  s.label = std::move(label);
  s.x = std::move(x);
  s.y = std::move(y);
  s.style = SeriesStyle::kPoints;
  s.rgb = rgb;
  return s;
}

TEST(RenderPngTest, DecodesToRequestedSize) {
  Chart c;
  c.title = "speedup vs budget";
  c.x.label = "tree budget N";
  c.y.label = "speedup";
  c.series.push_back(
      {"model", {1, 2, 3, 4}, {1.0, 1.8, 2.2, 2.1}, SeriesStyle::kLinePoints, std::nullopt});
  const Image a = RenderOk({c}, 900, 600);
  EXPECT_EQ(a.width, 900);
  EXPECT_EQ(a.height, 600);
  const Image b = RenderOk({c, c, c}, 333, 777);
  EXPECT_EQ(b.width, 333);
  EXPECT_EQ(b.height, 777);
  // White background: the corners are white.
  EXPECT_EQ(a.At(0, 0), 0xFFFFFFu);
  EXPECT_EQ(a.At(899, 599), 0xFFFFFFu);
}

TEST(RenderPngTest, EachSeriesColourIsDrawn) {
  Chart c;
  // Default palette (Okabe-Ito blue, vermillion, bluish green), all three styles.
  c.series.push_back({"line", {0, 1, 2, 3}, {0, 0, 0, 0}, SeriesStyle::kLine, std::nullopt});
  c.series.push_back({"points", {0, 1, 2, 3}, {1, 1, 1, 1}, SeriesStyle::kPoints, std::nullopt});
  c.series.push_back({"both", {0, 1, 2, 3}, {2, 2, 2, 2}, SeriesStyle::kLinePoints, std::nullopt});
  c.series.push_back(Points({1.5}, {1.5}, 0x8000FF));
  const Image img = RenderOk({c});
  EXPECT_GT(Find(img, 0x0072B2).size(), 100u);
  EXPECT_GT(Find(img, 0xD55E00).size(), 20u);
  EXPECT_GT(Find(img, 0x009E73).size(), 100u);
  EXPECT_GT(Find(img, 0x8000FF).size(), 10u);
  EXPECT_EQ(Find(img, 0xFF00FF).size(), 0u);  // a colour nobody drew
}

TEST(RenderPngTest, SeriesWithoutFinitePointsIsAbsentEvenFromTheLegend) {
  Chart c;
  c.series.push_back(Points({0, 1, 2}, {0, 1, 2}, 0x0072B2, "ok"));
  c.series.push_back(Points({kNaN, 1, kInf}, {0, kNaN, 2}, 0xFF00FF, "all bad"));
  Series line = Points({kNaN, -kInf}, {1, 2}, 0x00FF00, "bad line");
  line.style = SeriesStyle::kLinePoints;
  c.series.push_back(line);
  const Image img = RenderOk({c});
  EXPECT_GT(Find(img, 0x0072B2).size(), 10u);
  EXPECT_EQ(Find(img, 0xFF00FF).size(), 0u);
  EXPECT_EQ(Find(img, 0x00FF00).size(), 0u);
}

TEST(RenderPngTest, DataOutsideTheAxisRangeIsClipped) {
  Chart c;
  c.x.min = 0;
  c.x.max = 10;
  c.y.min = 0;
  c.y.max = 10;
  // Markers at the left and right edges of the plot area mark its columns.
  c.series.push_back(Points({0, 10}, {5, 5}, 0x0000FF));
  // Entirely outside (unlabelled, so not in the legend either): nothing drawn.
  c.series.push_back(Points({20, 30, -5}, {5, 5, 5}, 0xFF00FF));
  Series far = Points({50, 60}, {20, 30}, 0x00FF00);
  far.style = SeriesStyle::kLine;
  c.series.push_back(far);
  // A line from far left to far right, crossing the plot area: drawn only inside it.
  Series across = Points({-1e12, 1e12}, {2, 2}, 0xFF0000);
  across.style = SeriesStyle::kLine;
  c.series.push_back(across);
  const Image img = RenderOk({c});
  EXPECT_EQ(Find(img, 0xFF00FF).size(), 0u);
  EXPECT_EQ(Find(img, 0x00FF00).size(), 0u);

  const auto edges = Find(img, 0x0000FF);
  const auto red = Find(img, 0xFF0000);
  ASSERT_FALSE(edges.empty());
  ASSERT_FALSE(red.empty());
  int left = img.width, right = 0, red_left = img.width, red_right = 0;
  for (const auto& [x, y] : edges) left = std::min(left, x), right = std::max(right, x);
  for (const auto& [x, y] : red)
    red_left = std::min(red_left, x), red_right = std::max(red_right, x);
  EXPECT_GE(red_left, left - 1);
  EXPECT_LE(red_right, right + 1);
  EXPECT_GT(red_right - red_left, 0.9 * (right - left));
}

TEST(RenderPngTest, VerticalLineAtExpectedColumn) {
  Chart c;
  c.x.min = -1;
  c.x.max = 11;
  c.series.push_back(Points({0, 10}, {0, 0}, 0x0000FF));
  c.vlines.push_back({2.5, "oracle", 0xFF00FF});
  c.vlines.push_back({100, "off-scale", 0x00FF00});  // outside the explicit range: not drawn
  const Image img = RenderOk({c});
  const auto markers = Find(img, 0x0000FF);
  const double x0 = MeanColumn(markers, 0, img.width / 2);
  const double x10 = MeanColumn(markers, img.width / 2, img.width);
  const double expected = x0 + 0.25 * (x10 - x0);

  const auto line = Find(img, 0xFF00FF);
  std::vector<std::pair<int, int>> dashes;  // the line itself, not its label text
  for (const auto& p : line) {
    if (std::abs(p.first - expected) < 4) dashes.push_back(p);
  }
  EXPECT_NEAR(MeanColumn(dashes, 0, img.width), expected, 1.5);
  EXPECT_GT(dashes.size(), img.height / 3u);  // a long (dashed) vertical run
  // Its label, in its colour, right of the line and in the top quarter of the image.
  size_t label = 0;
  for (const auto& [x, y] : line) label += x > expected + 3 && y < img.height / 4;
  EXPECT_GT(label, 5u);
  EXPECT_EQ(Find(img, 0x00FF00).size(), 0u);
}

TEST(RenderPngTest, LogAxisSpacesDecadesEvenly) {
  Chart c;
  c.x.log = true;
  c.y.log = true;
  c.x.label = "batch";
  c.series.push_back(Points({1, 10, 100, 1000}, {1, 10, 100, 1000}, 0x0000FF));
  const Image img = RenderOk({c}, 800, 400);
  auto hits = Find(img, 0x0000FF);
  ASSERT_FALSE(hits.empty());
  std::sort(hits.begin(), hits.end());
  // Split the marker pixels into clusters by column gaps.
  std::vector<double> centres;
  double sum = 0;
  int n = 0, last = -100;
  for (const auto& [x, y] : hits) {
    if (x - last > 3 && n > 0) {
      centres.push_back(sum / n);
      sum = 0;
      n = 0;
    }
    sum += x;
    ++n;
    last = x;
  }
  centres.push_back(sum / n);
  ASSERT_EQ(centres.size(), 4u);
  const double d = centres[1] - centres[0];
  EXPECT_GT(d, 100);
  EXPECT_NEAR(centres[2] - centres[1], d, 1.5);
  EXPECT_NEAR(centres[3] - centres[2], d, 1.5);
}

// PLplot labels log axes at powers of ten only; a log axis spanning less than a decade still
// gets tick labels (text left of the plot area) from chart.cc.
TEST(RenderPngTest, ShortLogAxisHasTickLabels) {
  Chart c;
  c.y.log = true;
  c.x.min = 0;  // the markers at x = 0 sit on the left edge of the plot area
  c.series.push_back(Points({0, 1}, {1270, 2070}, 0x0000FF));
  const Image img = RenderOk({c});
  const auto edge = Find(img, 0x0000FF);
  ASSERT_FALSE(edge.empty());
  int left = img.width;
  for (const auto& [x, y] : edge) left = std::min(left, x);
  size_t dark = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < left - 4; ++x) dark += (img.At(x, y) & 0xFF) < 0x80;
  }
  EXPECT_GT(dark, 40u);
}

TEST(RenderPngTest, DegenerateRangesAreWidened) {
  Chart c;
  c.series.push_back(Points({3, 3, 3}, {7, 7, 7}, 0x0000FF));
  c.series.push_back(Points({kNaN}, {1}, 0xFF00FF));
  const Image img = RenderOk({c});
  const auto hits = Find(img, 0x0000FF);
  ASSERT_FALSE(hits.empty());
  const double col = MeanColumn(hits, 0, img.width);
  EXPECT_GT(col, 0.3 * img.width);
  EXPECT_LT(col, 0.8 * img.width);

  Chart log = c;
  log.x.log = log.y.log = true;
  EXPECT_FALSE(Find(RenderOk({log}), 0x0000FF).empty());

  Chart one_sided = c;  // only a min above the data: the range is widened upwards
  one_sided.x.min = 5;
  EXPECT_TRUE(RenderPng({one_sided}).ok());
}

TEST(RenderPngTest, IdentityLineAndLegend) {
  Chart c;
  c.identity_line = true;
  c.series.push_back(Points({1, 2, 3}, {1.1, 1.9, 3.2}, 0x0000FF, "measured"));
  Chart without = c;
  without.identity_line = false;
  const size_t with_grey = Find(RenderOk({c}), 0x999999, 3).size();
  const size_t without_grey = Find(RenderOk({without}), 0x999999, 3).size();
  EXPECT_GT(with_grey, without_grey + 100);

  // A labelled series entirely off-scale still gets a legend entry (its colour appears once).
  Chart off = without;
  off.x.max = 10;
  off.series.push_back(Points({20}, {2}, 0xFF00FF, "off-scale"));
  EXPECT_FALSE(Find(RenderOk({off}), 0xFF00FF).empty());
  off.series.back().label.clear();
  EXPECT_TRUE(Find(RenderOk({off}), 0xFF00FF).empty());
}

TEST(RenderPngTest, StackedPanelsShareTheWidth) {
  Chart a, b;
  a.title = "top";
  b.title = "bottom";
  a.x.min = b.x.min = 0;
  a.x.max = b.x.max = 10;
  a.y.max = 1e6;  // wide y tick labels in one panel only
  a.series.push_back(Points({0}, {0}, 0x0000FF));
  b.series.push_back(Points({0}, {0.5}, 0xFF0000));
  const Image img = RenderOk({a, b}, 600, 600);
  const auto blue = Find(img, 0x0000FF), red = Find(img, 0xFF0000);
  for (const auto& [x, y] : blue) EXPECT_LT(y, 300);
  for (const auto& [x, y] : red) EXPECT_GE(y, 300);
  // Same x value, same column in both panels.
  EXPECT_NEAR(MeanColumn(blue, 0, 600), MeanColumn(red, 0, 600), 1.0);
}

TEST(RenderPngTest, OutputIsDeterministic) {
  Chart c;
  c.title = "t";
  c.series.push_back({"a", {1, 2, 3}, {3, 1, 2}, SeriesStyle::kLinePoints, std::nullopt});
  c.vlines.push_back({2, "ref", std::nullopt});
  absl::StatusOr<std::string> p1 = RenderPng({c, c});
  absl::StatusOr<std::string> p2 = RenderPng({c, c});
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(*p1, *p2);
  EXPECT_EQ(p1->substr(1, 3), "PNG");
  c.series[0].y[0] = 4;
  EXPECT_NE(*RenderPng({c, c}), *p1);
}

TEST(RenderPngTest, ConcurrentCallsAgreeWithASerialOne) {
  Chart c;
  c.title = "concurrent";
  c.x.log = true;
  c.x.label = "x";
  c.y.label = "y";
  c.series.push_back({"a", {1, 10, 100}, {3, 1, 2}, SeriesStyle::kLinePoints, std::nullopt});
  c.vlines.push_back({20, "ref", std::nullopt});
  const absl::StatusOr<std::string> serial = RenderPng({c, c});
  ASSERT_TRUE(serial.ok()) << serial.status();
  std::vector<absl::StatusOr<std::string>> results(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = RenderPng({c, c}); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::StatusOr<std::string>& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, *serial);
  }
}

TEST(RenderPngTest, PrintsNothing) {
  Chart c;
  c.title = "quiet";
  c.x.label = "x";
  c.y.label = "y";
  c.y.log = true;
  c.identity_line = true;
  c.series.push_back({"a", {1, 2, 3}, {1, 20, 300}, SeriesStyle::kLinePoints, std::nullopt});
  c.vlines.push_back({2, "ref", std::nullopt});
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const absl::StatusOr<std::string> png = RenderPng({c});
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

void ExpectInvalid(const std::vector<Chart>& panels, const std::string& substring, int w = 600,
                   int h = 400) {
  absl::StatusOr<std::string> png = RenderPng(panels, w, h);
  ASSERT_FALSE(png.ok()) << "expected an error naming " << substring;
  EXPECT_EQ(png.status().code(), absl::StatusCode::kInvalidArgument) << png.status();
  EXPECT_THAT(std::string(png.status().message()), HasSubstr(substring));
}

TEST(RenderPngTest, ValidationErrorsNameTheField) {
  Chart good;
  good.series.push_back({"s", {1, 2}, {1, 2}, SeriesStyle::kLinePoints, std::nullopt});

  ExpectInvalid({}, "panels");
  ExpectInvalid({good}, "width = 99", 99, 400);
  ExpectInvalid({good}, "width = 8001", 8001, 400);
  ExpectInvalid({good}, "height = 50", 600, 50);
  ExpectInvalid({good, good, good, good, good}, "height = 200: too small for 5 panels", 600, 200);

  Chart mismatch = good;
  mismatch.series.push_back(
      {"t", {1, 2, 3, 4, 5}, {1, 2, 3, 4}, SeriesStyle::kLinePoints, std::nullopt});
  ExpectInvalid({good, mismatch}, "panels[1].series[1]: x has 5 values, y has 4");

  Chart logx = good;
  logx.x.log = true;
  logx.series.push_back({"t", {1, 2, 0}, {1, 2, 3}, SeriesStyle::kLinePoints, std::nullopt});
  ExpectInvalid({logx}, "panels[0].series[1].x[2] = 0: must be > 0 on a log x axis");
  Chart logy = good;
  logy.y.log = true;
  logy.series[0].y[0] = -1;
  ExpectInvalid({logy}, "panels[0].series[0].y[0] = -1");
  // Non-finite points are skipped, not rejected, even on log axes.
  logy.series[0].y[0] = kNaN;
  EXPECT_TRUE(RenderPng({logy}).ok());

  Chart no_points;
  no_points.series.push_back({"nan", {kNaN, 1}, {1, kInf}, SeriesStyle::kLinePoints, std::nullopt});
  ExpectInvalid({good, no_points}, "panels[1]: no finite");
  ExpectInvalid({Chart{}}, "panels[0]: no finite");

  Chart bad_range = good;
  bad_range.x.min = 5;
  bad_range.x.max = 5;
  ExpectInvalid({bad_range}, "panels[0].x: min = 5 must be < max = 5");
  Chart log_min = good;
  log_min.y.log = true;
  log_min.y.min = 0;
  ExpectInvalid({log_min}, "panels[0].y.min = 0: must be > 0 on a log axis");
  Chart inf_max = good;
  inf_max.x.max = kInf;
  ExpectInvalid({inf_max}, "panels[0].x.max = inf");

  Chart vline = good;
  vline.vlines.push_back({kNaN, "oracle", std::nullopt});
  ExpectInvalid({vline}, "panels[0].vlines[0].x = nan");
  Chart log_vline = good;
  log_vline.x.log = true;
  log_vline.vlines.push_back({-2, "oracle", std::nullopt});
  ExpectInvalid({log_vline}, "panels[0].vlines[0].x = -2");

  Chart bad_rgb = good;
  bad_rgb.series[0].rgb = 0x1000000;
  ExpectInvalid({bad_rgb}, "panels[0].series[0].rgb = 0x1000000");
}

}  // namespace
}  // namespace specplan::plot
