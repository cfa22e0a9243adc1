// specplan's public cost surface: what an engine includes to price a verification pass and the
// engine's whole step for a (GPU, target model, engine), from the bundled or its own profiles.
//   costmodel::ResolveCost(CostSpec)        the front door: a profile's latency model and drafters
//   costmodel::StepModel                    T_step = verify + draft + sample + host, and the
//                                           plain step (docs/step-model.md)
//   costmodel::CycleCost, BatchCycleCost    the cycle a planner maximises against
//   costmodel::CheckFitsInMemory            whether a pass's weights and KV cache fit the GPU
//   costmodel::LookupModel, LookupGpu       the registries of targets and GPUs
// Installed with its includes only (scripts/public_headers.py); Torch-, gRPC- and CUDA-free.
#ifndef SPECPLAN_INCLUDE_SPECPLAN_COST_H_
#define SPECPLAN_INCLUDE_SPECPLAN_COST_H_

#include "costmodel/cost_spec.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/memory_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/step/step_model.h"

#endif  // SPECPLAN_INCLUDE_SPECPLAN_COST_H_
