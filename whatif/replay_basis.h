// What every what-if report names besides its rows (sweep.h WhatIfReport, concurrency.h
// ConcurrencyReport): the trace's models, the latency model that priced it, and the cost options
// both replays share.
#ifndef SPECPLAN_WHATIF_REPLAY_BASIS_H_
#define SPECPLAN_WHATIF_REPLAY_BASIS_H_

#include <string>

#include "costmodel/cycle_cost.h"

namespace specplan::whatif {

struct ReplayBasis {
  std::string target, draft;  // the trace header's models
  std::string latency_model;  // LatencyModel::Kind()
  int n_max = 0;              // draft nodes: the controllers' search end (per request)
  costmodel::DrafterCost drafter;
  double t_aux_s = 0;      // seconds per cycle (batch step)
  bool calibrate = false;  // the surrogate calibrated online
};

}  // namespace specplan::whatif

#endif  // SPECPLAN_WHATIF_REPLAY_BASIS_H_
