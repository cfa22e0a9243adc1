// Correlation of paired samples, as the what-if sweep reports the surrogate's quality (sweep.h).
#ifndef SPECPLAN_WHATIF_STATISTICS_H_
#define SPECPLAN_WHATIF_STATISTICS_H_

#include <vector>

namespace specplan::whatif {

// Pearson and Spearman (average ranks for ties) correlation of paired samples; NaN when fewer
// than 2 pairs or either side has zero variance. Sizes must match (SPECPLAN_CHECK).
double PearsonCorrelation(const std::vector<double>& x, const std::vector<double>& y);
double SpearmanCorrelation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_STATISTICS_H_
