// Client side of the CLI's `--server HOST:PORT`: the flag-shaped adapter over the shared client
// library (client/client.h, specplan_client). A command's cost flags (RemoteCost) become the
// request's cost the way the in-process command picks its cost: the server's stored profile for
// (gpu, model, dtype) when it has one (of the engine --engine names; without --engine the server
// picks the first it holds of sglang, vllm, trtllm, specplan), else the bare roofline of the
// registry entries. The calls
// send the requests the in-process commands run and turn the responses back into the planner's
// plain structs, so that the commands print exactly what they print in-process. Without gRPC in
// the build every call returns UNIMPLEMENTED (remote_disabled.cc). client/client.h needs no gRPC
// headers, so this header compiles in both builds.
#ifndef SPECPLAN_CLI_REMOTE_H_
#define SPECPLAN_CLI_REMOTE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/profile/profile.h"
#include "planner/batch/batch_plan.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree_outputs.h"
#include "whatif/sweep.h"

namespace specplan::cli {

// The cost side of a command, as the user gave it on the command line.
struct RemoteCost {
  std::string model;  // registry name (HF config paths are local-only: INVALID_ARGUMENT)
  std::string gpu;    // registry name, or a path to a JSON GPU spec (sent inline)
  costmodel::DType dtype = costmodel::DType::kBFloat16;
  costmodel::DrafterCost drafter;
  double t_aux_s = 0;
  int64_t context = 0;  // c
  int64_t tp = 1;       // --tp; the server's stored profiles are tp = 1, so tp > 1 is sent inline
  // --engine: whose kernels price the pass ("sglang", "vllm", "trtllm", "specplan"; aliases as
  // costmodel::ParseEngine); "" = not given. Sent as ProfileRef.engine: a server that holds the
  // (gpu, model, dtype) under other engines only answers NOT_FOUND naming profile.engine and the
  // engines it holds. With a GPU spec file or tp > 1 (sent inline, no profile) it is
  // INVALID_ARGUMENT naming --engine.
  std::string engine;
  // --drafter as an architecture with --draft-steps, --topk, --draft-vocab and the host-time
  // overrides: the server prices the engine's whole step from its profile as the in-process
  // command does (plans through costmodel::PlannerTermsFor, estimate's step lines). Empty
  // architecture for a cost class.
  client::StepRequest step;
};

using client::RemoteEstimate;      // EstimateLatency at one (s, c)
using client::RemoteResult;        // latency model kind and profile id the server used
using client::RemoteWhatIfResult;  // the report, the cost used, the server's bundled trace path

// One-shot calls (a fresh channel per call); contracts as PlannerClient's in client/client.h.
//   RemotePlanTree    PlanTree; positions offset by c, packed mask, retrieve
//   RemotePlanBatch   PlanBatch; per request positions offset by its c, parents, retrieve; the
//                     cost's context is not used
//   RemoteMergeTrees  MergeTrees; outputs with dense mask
//   RemoteWhatIf      WhatIf over a trace sent as text (empty: the server's bundled trace); the
//                     report equals whatif::RunWhatIf's, so the same table / JSON / plot code runs
absl::StatusOr<RemoteResult> RemotePlanTree(const std::string& server,
                                            const planner::Marginals& marginals,
                                            const planner::BestFirstOptions& options,
                                            const RemoteCost* cost, int64_t c,
                                            planner::BestFirstPlan* plan,
                                            planner::TreeOutputs* outputs);
absl::StatusOr<RemoteResult> RemotePlanBatch(const std::string& server,
                                             const std::vector<planner::BatchRequest>& requests,
                                             const planner::BatchPlanOptions& options,
                                             const RemoteCost* cost, planner::BatchPlan* plan,
                                             std::vector<planner::TreeOutputs>* outputs);
absl::Status RemoteMergeTrees(const std::string& server, const planner::Tree& a,
                              const planner::Tree& b, const planner::MergeOptions& options,
                              int64_t c, planner::MergedTree* merged,
                              planner::TreeOutputs* outputs);
absl::StatusOr<RemoteEstimate> RemoteEstimateLatency(const std::string& server,
                                                     const RemoteCost& cost, int64_t s);
absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> RemoteProfiles(
    const std::string& server);
absl::StatusOr<RemoteWhatIfResult> RemoteWhatIf(const std::string& server,
                                                const std::string& trace_jsonl,
                                                const std::string& trace_name,
                                                const RemoteCost& cost,
                                                const whatif::WhatIfOptions& options);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_REMOTE_H_
