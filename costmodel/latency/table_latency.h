// TableLatency: a measured grid over (s, c) (and optionally the batch size), bilinear inside,
// roofline-scaled outside.
#ifndef SPECPLAN_COSTMODEL_TABLE_LATENCY_H_
#define SPECPLAN_COSTMODEL_TABLE_LATENCY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/latency/roofline_latency.h"

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

  // Where the uniform pass of b sequences, each s tokens over c cached, lies on the table's
  // grids: the two layers around b (one for b = 1) and the cell around (s, c) in each, with the
  // weights. So several quantities tabulated on the same grids (ReadAt) are read with one search.
  // Filled by Locate (left uninitialised here: a step prices one per call); index 1 of the
  // per-layer fields only when layer[1] != layer[0].
  struct GridPoint {
    size_t layer[2];  // 0: b = 1 (`seconds`), k: b_grid[k - 1]
    size_t si[2], si1[2], ci[2], ci1[2];
    double ws[2], wc[2];
    double wb;  // weight of layer[1]; 0 for b = 1
  };
  // False when the pass is off the grids (b above the last layer, b > 1 on a table without batch
  // layers, s or c outside a layer's grid): VerifySeconds / VerifyBatchSeconds then extrapolate
  // with the roofline. On the grids, ReadAt(table(), point) is VerifySeconds(s, c) for b = 1
  // (bit for bit) and VerifyBatchSeconds of the uniform batch for b > 1 (up to rounding: there
  // the roofline of the batch and of the uniform pass it reads cancel).
  bool Locate(int64_t b, int64_t s, int64_t c, GridPoint* point) const;
  // `values` at `point`, for a table laid on the same grids as the one that located it (the same
  // s, c, b and batch grids): bilinear in (s, c) inside each layer, linear in b between them.
  static double ReadAt(const LatencyTable& values, const GridPoint& point);

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
