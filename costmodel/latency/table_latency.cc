#include "costmodel/latency/table_latency.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace specplan::costmodel {

absl::Status ValidateLatencyTable(const LatencyTable& t) {
  auto check_grid = [](const std::vector<int64_t>& g, const char* name,
                       int64_t min_value) -> absl::Status {
    if (g.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": empty grid"));
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] < min_value) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "[", i, "] = ", g[i], ": must be >= ", min_value));
      }
      if (i > 0 && g[i] <= g[i - 1]) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "[", i, "] = ", g[i], ": grid must be strictly increasing"));
      }
    }
    return absl::OkStatus();
  };
  if (auto st = check_grid(t.s_grid, "s", 1); !st.ok()) return st;
  if (auto st = check_grid(t.c_grid, "c", 0); !st.ok()) return st;
  // One [c][s] layer on the grids (s_grid, c_grid), named `name` in errors.
  auto check_layer = [](const std::vector<std::vector<double>>& layer,
                        const std::vector<int64_t>& s_grid, const std::vector<int64_t>& c_grid,
                        const std::string& name) -> absl::Status {
    if (layer.size() != c_grid.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": ", layer.size(), " rows, expected one per c (", c_grid.size(), ")"));
    }
    for (size_t ci = 0; ci < layer.size(); ++ci) {
      if (layer[ci].size() != s_grid.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, "[", ci, "]: ", layer[ci].size(),
                                                       " entries, expected one per s (",
                                                       s_grid.size(), ")"));
      }
      for (size_t si = 0; si < s_grid.size(); ++si) {
        const double v = layer[ci][si];
        if (!std::isfinite(v) || v <= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(name, "[", ci, "][", si, "] = ", v, ": must be finite and > 0"));
        }
      }
    }
    return absl::OkStatus();
  };
  if (auto st = check_layer(t.seconds, t.s_grid, t.c_grid, "seconds"); !st.ok()) return st;
  if (t.b_grid.empty() && t.batch_seconds.empty()) {
    if (!t.batch_s_grid.empty() || !t.batch_c_grid.empty()) {
      return absl::InvalidArgumentError("batch_s and batch_c: only with batch layers (b)");
    }
    return absl::OkStatus();
  }
  if (auto st = check_grid(t.b_grid, "b", 2); !st.ok()) return st;
  if (!t.batch_s_grid.empty()) {
    if (auto st = check_grid(t.batch_s_grid, "batch_s", 1); !st.ok()) return st;
  }
  if (!t.batch_c_grid.empty()) {
    if (auto st = check_grid(t.batch_c_grid, "batch_c", 0); !st.ok()) return st;
  }
  if (t.batch_seconds.size() != t.b_grid.size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch_seconds: ", t.batch_seconds.size(),
                                                   " layers, expected one per b (", t.b_grid.size(),
                                                   ")"));
  }
  for (size_t bi = 0; bi < t.batch_seconds.size(); ++bi) {
    if (auto st = check_layer(t.batch_seconds[bi], t.layer_s_grid(1), t.layer_c_grid(1),
                              absl::StrCat("batch_seconds[", bi, "]"));
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

namespace {
// Index i and weight w such that x lies between grid[i] and grid[i + 1] (w = 0 at grid[i]).
// Requires grid.front() <= x <= grid.back().
void Bracket(const std::vector<int64_t>& grid, double x, size_t* i, double* w) {
  if (grid.size() == 1) {
    *i = 0;
    *w = 0;
    return;
  }
  size_t hi = std::upper_bound(grid.begin(), grid.end(), x,
                               [](double v, int64_t g) { return v < static_cast<double>(g); }) -
              grid.begin();
  hi = std::clamp<size_t>(hi, 1, grid.size() - 1);
  *i = hi - 1;
  *w = (x - grid[*i]) / static_cast<double>(grid[hi] - grid[*i]);
}
}  // namespace

namespace {
// Bilinear inside one layer ([c][s]) at the bracketed cell.
double Cell(const std::vector<std::vector<double>>& T, size_t si, size_t si1, double ws, size_t ci,
            size_t ci1, double wc) {
  const double lo = (1 - ws) * T[ci][si] + ws * T[ci][si1];
  const double hi = (1 - ws) * T[ci1][si] + ws * T[ci1][si1];
  return (1 - wc) * lo + wc * hi;
}

const std::vector<std::vector<double>>& Layer(const LatencyTable& t, size_t k) {
  return k == 0 ? t.seconds : t.batch_seconds[k - 1];
}
}  // namespace

double TableLatency::Interpolate(const std::vector<std::vector<double>>& T,
                                 const std::vector<int64_t>& s_grid,
                                 const std::vector<int64_t>& c_grid, double s, double c) {
  size_t si, ci;
  double ws, wc;
  Bracket(s_grid, s, &si, &ws);
  Bracket(c_grid, c, &ci, &wc);
  return Cell(T, si, std::min(si + 1, s_grid.size() - 1), ws, ci,
              std::min(ci + 1, c_grid.size() - 1), wc);
}

bool TableLatency::Locate(int64_t b, int64_t s, int64_t c, GridPoint* p) const {
  if (b < 1) return false;
  int layers = 1;
  if (b > 1) {
    const std::vector<int64_t>& bg = table_.b_grid;
    if (bg.empty() || b > bg.back()) return false;
    size_t k = 0;
    while (bg[k] < b) ++k;  // bg[k] >= b: layers k (b_grid[k - 1], or 1) and k + 1 bracket b
    const double b_lo = k == 0 ? 1.0 : static_cast<double>(bg[k - 1]);
    p->layer[0] = k;
    p->layer[1] = k + 1;
    p->wb = (static_cast<double>(b) - b_lo) / (static_cast<double>(bg[k]) - b_lo);
    layers = 2;
  } else {
    p->layer[0] = p->layer[1] = 0;
    p->wb = 0;
  }
  for (int j = 0; j < layers; ++j) {
    const std::vector<int64_t>& sg = table_.layer_s_grid(p->layer[j]);
    const std::vector<int64_t>& cg = table_.layer_c_grid(p->layer[j]);
    if (s < sg.front() || s > sg.back() || c < cg.front() || c > cg.back()) return false;
    Bracket(sg, static_cast<double>(s), &p->si[j], &p->ws[j]);
    Bracket(cg, static_cast<double>(c), &p->ci[j], &p->wc[j]);
    p->si1[j] = std::min(p->si[j] + 1, sg.size() - 1);
    p->ci1[j] = std::min(p->ci[j] + 1, cg.size() - 1);
  }
  return true;
}

double TableLatency::ReadAt(const LatencyTable& t, const GridPoint& p) {
  const double lo =
      Cell(Layer(t, p.layer[0]), p.si[0], p.si1[0], p.ws[0], p.ci[0], p.ci1[0], p.wc[0]);
  if (p.layer[1] == p.layer[0]) return lo;
  const double hi =
      Cell(Layer(t, p.layer[1]), p.si[1], p.si1[1], p.ws[1], p.ci[1], p.ci1[1], p.wc[1]);
  return (1 - p.wb) * lo + p.wb * hi;
}

double TableLatency::VerifySeconds(int64_t s, int64_t c) const {
  const int64_t sc = std::clamp(s, table_.s_grid.front(), table_.s_grid.back());
  const int64_t cc = std::clamp(c, table_.c_grid.front(), table_.c_grid.back());
  const double inside = Interpolate(table_.seconds, table_.s_grid, table_.c_grid,
                                    static_cast<double>(sc), static_cast<double>(cc));
  if (sc == s && cc == c) return inside;
  return inside * roofline_.VerifySeconds(s, c) / roofline_.VerifySeconds(sc, cc);
}

double TableLatency::VerifyBatchSeconds(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  if (batch.size() == 1) return VerifySeconds(batch[0].s, batch[0].c);
  const PassTotals& t = batch.totals();
  const double n = static_cast<double>(batch.size());
  if (table_.b_grid.empty()) {
    // Measured one sequence at a time: price the equivalent single sequence (all S tokens over
    // the mean context), then scale by how the roofline prices the real batch against it.
    const int64_t s_eq = static_cast<int64_t>(t.tokens);
    const int64_t c_eq = std::llround(t.context / n);
    return VerifySeconds(s_eq, c_eq) * roofline_.VerifyBatchSeconds(batch) /
           roofline_.VerifySeconds(s_eq, c_eq);
  }
  // The mean sequence, read from the two layers around B (b = 1 is `seconds`), each clamped to
  // its own grid and taken relative to the roofline of the uniform batch it read; the roofline of
  // the real batch carries the rest (see the header).
  const double s_mean = t.tokens / n, c_mean = t.context / n;
  const double b_eq = std::min(n, static_cast<double>(table_.b_grid.back()));
  auto relative = [&](size_t k) {  // layer k's reading over its uniform batch's roofline
    const std::vector<int64_t>& sg = table_.layer_s_grid(k);
    const std::vector<int64_t>& cg = table_.layer_c_grid(k);
    const double s_cl =
        std::clamp(s_mean, static_cast<double>(sg.front()), static_cast<double>(sg.back()));
    const double c_cl =
        std::clamp(c_mean, static_cast<double>(cg.front()), static_cast<double>(cg.back()));
    const auto& layer = k == 0 ? table_.seconds : table_.batch_seconds[k - 1];
    return Interpolate(layer, sg, cg, s_cl, c_cl) /
           roofline_.Estimate(UniformPass(b_eq, s_cl, c_cl)).seconds;
  };
  size_t k = 0;
  while (k < table_.b_grid.size() && static_cast<double>(table_.b_grid[k]) < b_eq) ++k;
  // Layers k (b_grid[k - 1], or 1 when k = 0) and k + 1 bracket b_eq; k + 1 is exact at b_eq.
  const double b_lo = k == 0 ? 1.0 : static_cast<double>(table_.b_grid[k - 1]);
  const double b_hi = static_cast<double>(table_.b_grid[k]);
  const double w = (b_eq - b_lo) / (b_hi - b_lo);
  return ((1 - w) * relative(k) + w * relative(k + 1)) * roofline_.VerifyBatchSeconds(batch);
}

}  // namespace specplan::costmodel
