#include "costmodel/latency/latency_model.h"

#include <cmath>

#include "util/check.h"

namespace specplan::costmodel {

double LatencyModel::VerifyBatchSeconds(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  if (batch.size() == 1) return VerifySeconds(batch[0].s, batch[0].c);
  const PassTotals& t = batch.totals();
  return VerifySeconds(static_cast<int64_t>(t.tokens),
                       std::llround(t.context / static_cast<double>(batch.size())));
}

}  // namespace specplan::costmodel
