// Client of a specplan-server (library specplan_client), shared by the CLI's `--server HOST:PORT`
// (through its flag-shaped adapter, cli/remote.h) and specplan-bench's `--planner HOST:PORT`:
//   * PlannerClient keeps one channel and stub to a server, so a decoding loop that calls it every
//     step reuses one HTTP/2 connection (no reconnect per step). The channel connects lazily on
//     the first call and reconnects by itself after a server restart.
//   * The command-level calls (PlanTree, PlanBatch, MergeTrees, EstimateLatency, ListProfiles,
//     Profiles, WhatIf) send the requests the in-process commands run and turn the responses back
//     into the planner's (or the what-if sweep's) plain structs, so the CLI prints exactly what it
//     prints in-process. Their cost is a CostRequest: what the request names, already resolved.
//   * RemotePlanBackend is the planner::PlanBackend over PlanTree / MergeTrees: the plans equal
//     InProcessPlanBackend's for the same inputs. It sends the caller's latency model as a dense
//     cost.latency_grid (T_verify at s = 1..n_max + 1, c = the cost's context), so any
//     costmodel::LatencyModel works remotely, e.g. the runtime's measured latency of a CPU model.
//
// Errors: gRPC failures become absl::Status with the same code and "server HOST:PORT: <message>".
// This header needs neither gRPC nor the generated protobuf headers. Not thread-safe per object
// (one client / backend per decoding loop; gRPC channels themselves are thread-safe).
#ifndef SPECPLAN_CLIENT_CLIENT_H_
#define SPECPLAN_CLIENT_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/profile/profile.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"
#include "planner/batch/batch_plan.h"
#include "planner/batch/plan_backend.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree_outputs.h"
#include "whatif/sweep.h"

namespace specplan::v1 {
class PlanTreeRequest;
class PlanTreeResponse;
class PlanBatchRequest;
class PlanBatchResponse;
class MergeTreesRequest;
class MergeTreesResponse;
class WhatIfRequest;
class WhatIfResponse;
}  // namespace specplan::v1

namespace specplan::client {

struct ClientOptions {
  double deadline_s = 30;                    // per call, seconds (> 0)
  int max_receive_message_bytes = 64 << 20;  // largest reply accepted
  double whatif_deadline_s = 600;            // per WhatIf call (a whole sweep), seconds (> 0)
};

// The engine's whole step a cost prices (planner.proto DrafterCost.architecture and the fields
// after it; costmodel/step/step_model.h StepOptions), as a request names it. The server builds
// the step model from its profile (composed drafter tables, engine) and applies the host
// overrides over that engine's defaults.
struct StepRequest {
  std::string architecture;  // "eagle3", "draft:llama-3.2-1b", "ngram", ...; "" = none: the
                             // drafter's cost class prices drafting (older servers' behaviour)
  int draft_steps = -1;      // D; -1 = the chain's s - 1 (a plan's gamma)
  int topk = 1;              // beams per draft forward
  int64_t draft_vocab = 0;   // eagle3's draft vocabulary; 0 = 32000
  // Host-time overrides, seconds; unset = the engine's default (costmodel/step/host_time.h).
  std::optional<double> host_step_s, host_per_sequence_s, host_per_draft_forward_s, sample_call_s;
  std::string host_provenance;  // where the overrides come from; "" = "given in the request"
  // The whole host terms to start from instead of the engine's defaults (a `specplan step fit
  // --out` file's, ops::ReadHostFile); the overrides above apply over them. Unset: the engine's.
  std::optional<costmodel::HostTime> host_base;
};

// The cost a request names (planner.proto CostSpec): the server's stored profile of (gpu, model,
// dtype, engine), or the bare roofline of a registry model on a registry GPU or on an inline GPU
// spec.
struct CostRequest {
  bool stored_profile = false;  // true: cost.profile; false: cost.inline_model
  std::string model;            // registry name (profile names are registry names too)
  std::string gpu;              // registry name; unused when gpu_spec is set
  std::optional<costmodel::GpuSpec> gpu_spec;  // inline only: a GPU outside the registry
  costmodel::DType dtype = costmodel::DType::kBFloat16;
  costmodel::DrafterCost drafter;
  double t_aux_s = 0;
  int64_t context = 0;  // c
  // Whose kernels the stored profile prices (ProfileRef.engine): "sglang", "vllm", "trtllm",
  // "specplan"; "" = the server's choice (its --engine default, else the first of sglang, vllm,
  // trtllm, specplan it holds). Stored profiles only.
  std::string engine;
  // Tensor parallelism (--tp). The server's stored profiles are fitted at tp = 1, so tp > 1 always
  // sends the cost inline (InlineCostModel.tp).
  int64_t tp = 1;
  // The drafter architecture and the rest of the step (sent in cost.drafter): plans price their
  // cycle through the step model, EstimateLatency returns the step.
  StepRequest step;
};

// One profile a server holds (ListProfiles).
struct ProfileKey {
  std::string id;  // "<gpu>/<model>-<dtype>[-tp<N>][@<engine>]"
  std::string gpu, model, dtype;
  std::string engine;  // "" from a server older than engines (= "specplan")
  int64_t tp = 1;      // tensor parallelism the profile was made at (1 from a server before tp)
};

struct RemoteResult {
  std::string latency_model;  // kind the server used
  std::string profile;        // profile id the server used, "" for the bare roofline
};

// EstimateLatency at one (s, c): predicted verify seconds and the cycle cost of n = s - 1; with
// an architecture (CostRequest::step) the engine's whole step and the plain step.
struct RemoteEstimate {
  RemoteResult used;
  double verify_s = 0;
  double cycle_s = 0;
  double draft_s = 0;
  double aux_s = 0;
  std::optional<costmodel::StepBreakdown> step;     // one sequence, s tokens over c
  std::optional<costmodel::StepBreakdown> ar_step;  // one plain decoding step over c
  std::string draft_priced_by;                      // "kernel tables", "roofline", "given", ...
  costmodel::HostTime host;                         // the host time the steps used
};

// A WhatIf sweep run by the server.
struct RemoteWhatIfResult {
  whatif::WhatIfReport report;  // equal, field for field, to whatif::RunWhatIf's in-process report
                                // for the same trace, latency model and options
  RemoteResult used;            // latency model kind and profile id the server used
  std::string bundled_trace;    // the server's bundled trace file when no trace was sent, else ""
  double run_us = 0;            // server time parsing and sweeping, microseconds
};

class PlannerClient {
 public:
  // `server` is one server "HOST:PORT", several replicas "A:P,B:Q,..." (IP addresses), or any gRPC
  // target such as "dns:///NAME:PORT" (service/channel.h PlannerTarget): calls are balanced round
  // robin over the healthy replicas and the idempotent ones (all but PlanSession, ReportAcceptance
  // and PutProfile) are retried on UNAVAILABLE within their deadline, so a replica that dies or
  // drains costs no failed call. Creates the channel (no I/O yet); a malformed list makes every
  // call return INVALID_ARGUMENT naming --server and the value.
  explicit PlannerClient(std::string server, ClientOptions options = {});
  ~PlannerClient();
  PlannerClient(const PlannerClient&) = delete;
  PlannerClient& operator=(const PlannerClient&) = delete;

  const std::string& server() const { return server_; }

  // Waits up to timeout_s seconds for the connection, then Pings. UNAVAILABLE (naming the server)
  // when it cannot be reached: lets a binary fail before its first step, not in the middle.
  absl::Status WaitReady(double timeout_s);

  // PlanTree. `cost` may be null only in fixed mode. Fills *plan and *outputs (positions offset by
  // c, packed mask, retrieve) as BestFirstPlanner::Plan + ComputeTreeOutputs would.
  absl::StatusOr<RemoteResult> PlanTree(const planner::Marginals& marginals,
                                        const planner::BestFirstOptions& options,
                                        const CostRequest* cost, int64_t c,
                                        planner::BestFirstPlan* plan,
                                        planner::TreeOutputs* outputs);
  // PlanBatch. `cost` may be null only in fixed mode with the goodput objective; its context is
  // not used (each request carries its own c) and drafter.gamma = 0 means the batch's largest
  // gamma. Fills *plan as BatchPlanner::Plan would, and (*outputs)[i] for request i (positions
  // offset by its c, parents, retrieve; no mask) as ComputeTreeOutputs would. `options.validate`
  // is ignored (the server always validates). Every request must carry marginals: one with a
  // path-conditioned provider is INVALID_ARGUMENT before any RPC (a provider is an in-process
  // callback).
  absl::StatusOr<RemoteResult> PlanBatch(const std::vector<planner::BatchRequest>& requests,
                                         const planner::BatchPlanOptions& options,
                                         const CostRequest* cost, planner::BatchPlan* plan,
                                         std::vector<planner::TreeOutputs>* outputs);
  // MergeTrees with the same options as planner::MergeTrees; outputs with dense mask.
  absl::Status MergeTrees(const planner::Tree& a, const planner::Tree& b,
                          const planner::MergeOptions& options, int64_t c,
                          planner::MergedTree* merged, planner::TreeOutputs* outputs);
  // EstimateLatency at (s, cost.context).
  absl::StatusOr<RemoteEstimate> EstimateLatency(const CostRequest& cost, int64_t s);
  // The ids and names of the profiles the server holds.
  absl::StatusOr<std::vector<ProfileKey>> ListProfiles();
  // Every profile the server holds, as (id, profile); each profile's engine and engine_version are
  // the server's (ProfileInfo).
  absl::StatusOr<std::vector<std::pair<std::string, costmodel::Profile>>> Profiles();
  // WhatIf over `trace_jsonl` (a whole trace file, whatif/trace.h; empty = the server's bundled
  // trace). `trace_name` names it in the server's error messages (e.g. the local path). The cost
  // model comes from `cost`; cost.drafter, cost.t_aux_s and cost.context are not used. Everything
  // else comes from `options`: budgets, strategies, n_max, drafter, t_aux_s, policy_forward_s,
  // dynatree, fixed_tree, per_step (validate_trace and progress are ignored: the server always
  // validates and reports no progress). Options that the request cannot carry are INVALID_ARGUMENT
  // before any I/O (convert.h WhatIfOptionsToProto). The deadline is
  // ClientOptions::whatif_deadline_s.
  absl::StatusOr<RemoteWhatIfResult> WhatIf(const std::string& trace_jsonl,
                                            const std::string& trace_name, const CostRequest& cost,
                                            const whatif::WhatIfOptions& options);

  // One RPC on the wire messages (used by RemotePlanBackend; *resp is cleared first).
  absl::Status Call(const v1::PlanTreeRequest& req, v1::PlanTreeResponse* resp);
  absl::Status Call(const v1::PlanBatchRequest& req, v1::PlanBatchResponse* resp);
  absl::Status Call(const v1::MergeTreesRequest& req, v1::MergeTreesResponse* resp);
  absl::Status Call(const v1::WhatIfRequest& req, v1::WhatIfResponse* resp);  // whatif deadline

 private:
  struct Impl;
  std::string server_;
  std::unique_ptr<Impl> impl_;
};

// planner::PlanBackend over a specplan-server: PlanBestFirst -> PlanTree (cost sent as a dense
// latency_grid, outputs not requested, curve requested), Merge -> MergeTrees, PlanBatch ->
// PlanBatch (cost as a dense latency_grid, curve only). Requests and replies
// are reused across calls. Server-side limits apply (--max-gamma, --max-k, --max-n): a plan or
// merge beyond them fails with RESOURCE_EXHAUSTED where the in-process backend would succeed.
class RemotePlanBackend final : public planner::PlanBackend {
 public:
  explicit RemotePlanBackend(std::string server, ClientOptions options = {});
  ~RemotePlanBackend() override;

  // A backend whose server answered a Ping within timeout_s seconds (else UNAVAILABLE).
  static absl::StatusOr<std::unique_ptr<RemotePlanBackend>> Connect(const std::string& server,
                                                                    double timeout_s = 10,
                                                                    ClientOptions options = {});

  absl::Status PlanBestFirst(const planner::Marginals& marginals,
                             const planner::BestFirstOptions& options,
                             const planner::PlanCost* cost, planner::BestFirstPlan* plan) override;
  absl::Status Merge(const planner::Tree& a, const planner::Tree& b,
                     const planner::MergeOptions& options, planner::MergedTree* out) override;
  // PlanBatch RPC; the cost goes as a dense latency_grid (planner::BatchPlanCost says when that
  // prices a batch exactly as in-process). No per-request outputs are requested.
  absl::Status PlanBatch(const std::vector<planner::BatchRequest>& requests,
                         const planner::BatchPlanOptions& options,
                         const planner::BatchPlanCost* cost, planner::BatchPlan* plan) override;
  std::string Name() const override { return "remote " + client_.server(); }

  PlannerClient& client() { return client_; }
  int64_t calls() const { return calls_; }  // RPCs made (PlanTree + MergeTrees + PlanBatch)

 private:
  struct Scratch;
  PlannerClient client_;
  std::unique_ptr<Scratch> scratch_;
  int64_t calls_ = 0;
};

}  // namespace specplan::client

#endif  // SPECPLAN_CLIENT_CLIENT_H_
