// TableLatency: a measured grid over (s, c) (and optionally the batch size), bilinear inside,
// roofline-scaled outside.
#ifndef SPECPLAN_COSTMODEL_TABLE_LATENCY_H_
#define SPECPLAN_COSTMODEL_TABLE_LATENCY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/latency_model.h"
#include "costmodel/roofline_latency.h"

namespace specplan::costmodel {

// Measured grid: seconds[ci][si] at (s_grid[si], c_grid[ci]); grids strictly increasing. An
// optional batch axis adds layers: batch_seconds[bi][ci][si] is the pass of b_grid[bi] sequences,
// each of (batch_s_grid[si], batch_c_grid[ci]); b_grid is strictly increasing with every entry
// >= 2 (b = 1 is `seconds`). The batch layers share one (s, c) grid of their own, usually coarser
// than the single-sequence one (a batch of long contexts holds b caches); empty batch grids mean
// the single-sequence grid.
struct LatencyTable {
  std::vector<int64_t> s_grid;
  std::vector<int64_t> c_grid;
  std::vector<std::vector<double>> seconds;                     // [c_grid.size()][s_grid.size()]
  std::vector<int64_t> b_grid;                                  // empty: single sequences only
  std::vector<std::vector<std::vector<double>>> batch_seconds;  // [b][batch c][batch s]
  std::vector<int64_t> batch_s_grid;                            // empty: s_grid
  std::vector<int64_t> batch_c_grid;                            // empty: c_grid

  const std::vector<int64_t>& layer_s_grid(size_t k) const {  // k = 0: b = 1, else b_grid[k - 1]
    return k == 0 || batch_s_grid.empty() ? s_grid : batch_s_grid;
  }
  const std::vector<int64_t>& layer_c_grid(size_t k) const {
    return k == 0 || batch_c_grid.empty() ? c_grid : batch_c_grid;
  }
};
absl::Status ValidateLatencyTable(const LatencyTable& table);  // names the bad field

// Bilinear interpolation inside the grid; outside, the nearest grid value scaled by the bare
// roofline's ratio R(s, c) / R(s_clamped, c_clamped), so extrapolation follows the physics.
// A batch of B sequences is priced as its mean sequence: s_eq = S / B and c_eq = Σ c_i / B.
//   With batch layers: the two layers around B are each read at (s_eq, c_eq) clamped to that
//   layer's grid (bilinear) and divided by the roofline of the uniform batch B x (s_cl, c_cl) it
//   read; those ratios are linear in B between the layers, and the result is that ratio times
//   R(batch), the roofline of the real batch. A uniform batch on the grid reads its measured cell
//   exactly.
//   Without: the single sequence T(S, round(c_eq)) times R(batch) / R(S, round(c_eq)).
class TableLatency : public LatencyModel {
 public:
  TableLatency(RooflineLatency roofline, LatencyTable table)
      : roofline_(std::move(roofline)), table_(std::move(table)) {}
  double VerifySeconds(int64_t s, int64_t c) const override;
  double VerifyBatchSeconds(const BatchShape& batch) const override;
  std::string Kind() const override { return "table"; }
  const LatencyTable& table() const { return table_; }

 private:
  // Bilinear inside one layer ([c][s]) on its grids; s and c must lie within them (callers clamp).
  static double Interpolate(const std::vector<std::vector<double>>& layer,
                            const std::vector<int64_t>& s_grid, const std::vector<int64_t>& c_grid,
                            double s, double c);
  RooflineLatency roofline_;
  LatencyTable table_;
};

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_TABLE_LATENCY_H_
