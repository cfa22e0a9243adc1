// specplan's public planners: what an engine includes to plan draft trees every decoding step.
//   planner::BestFirstPlanner      one request's tree, grown best-first, stopped where the
//                                  estimated speedup peaks (docs/planner.md)
//   planner::BatchPlanner          every request of a batch under one verification pass
//   planner::SpeculationGate       whether a step drafts at all, and how deep
//   planner::ReadEngineAcceptance  the acceptance an engine reports (docs/acceptance.md)
// Trees and engine layouts are in specplan/tree.h; costs in specplan/cost.h.
#ifndef SPECPLAN_INCLUDE_SPECPLAN_PLANNER_H_
#define SPECPLAN_INCLUDE_SPECPLAN_PLANNER_H_

#include "planner/acceptance/engine_acceptance.h"
#include "planner/acceptance/speculation_gate.h"
#include "planner/batch/batch_plan.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "specplan/cost.h"
#include "specplan/tree.h"

#endif  // SPECPLAN_INCLUDE_SPECPLAN_PLANNER_H_
