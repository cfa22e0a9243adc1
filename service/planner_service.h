// The specplan.v1.Planner gRPC service: PlanTree, PlanBatch, PlanSession, MergeTrees,
// EstimateLatency, the profile RPCs, ReportAcceptance, GetStats, Ping and WhatIf (whatif::RunWhatIf
// over a trace the client sends, or the server's bundled trace).
//
// The per-step hot paths, PlanTree and PlanBatch (and their baseline Ping), use gRPC's callback
// API: the handler runs inline on the thread that read the request (no hand-off to a worker pool),
// and PlanTree's request and reply live on a pooled protobuf arena (arena_allocator.h), so a call
// allocates nothing in the steady state. The other methods use the synchronous API.
//
// Every handler validates the request completely before acting (see convert.h for the codes and
// message format), never aborts on client input, and logs one line per call:
//   2025-01-01T12:00:00.123456Z req=17 method=PlanTree peer=ipv4:127.0.0.1:40000 code=OK us=52.1
// The request id is the client's `x-request-id` metadata when present, else a server counter; it
// is echoed in the trailing metadata `x-request-id`.
//
// Thread-safety: handlers run concurrently on gRPC's threads; planning scratch is thread_local,
// profiles live in a ProfileStore (shared_mutex), stats in RequestStats.
#ifndef SPECPLAN_SERVICE_PLANNER_SERVICE_H_
#define SPECPLAN_SERVICE_PLANNER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "service/arena_allocator.h"
#include "service/convert.h"
#include "service/cost_resolver.h"
#include "service/metrics.h"
#include "service/profile_store.h"
#include "service/request_stats.h"
#include "specplan/v1/planner.grpc.pb.h"

namespace specplan::service {

struct ServiceOptions {
  ServiceLimits limits;
  // The largest reply a call may build (the server's --max-message-bytes, StartServer sets it):
  // PlanBatch sizes its outputs from the planned trees and refuses past it before building them
  // (RESOURCE_EXHAUSTED). 0 = no bound.
  int64_t max_reply_bytes = 0;
  // The writes that change what every client sees (PutProfile, ReportAcceptance: the shared
  // acceptance statistics and EMA correction) need "authorization: Bearer <token>"; empty =
  // writes disabled (PERMISSION_DENIED).
  std::string auth_token;
  bool log_requests = true;  // one line per call on stderr
  // --engine: the engine preferred for profile references that name none (ProfileRef.engine "");
  // a canonical name (costmodel::ParseEngine; StartServer canonicalises and checks it) or "" for
  // the order sglang, vllm, trtllm, specplan alone.
  std::string default_engine;
  // Sent back in every call's trailing metadata `x-replica` (which replica answered; the load
  // generator counts calls per replica by it); "" = not sent.
  std::string replica_id;
};

// Whether the service answers: while kLoading (profiles being read at start-up) and kDraining
// (shutdown begun) every RPC but Ping and GetStats is refused with UNAVAILABLE, which the clients'
// retry policy (service/channel.h) retries on another replica.
enum class ServingState { kLoading, kServing, kDraining };

class PlannerService final
    : public v1::Planner::WithCallbackMethod_PlanTree<v1::Planner::WithCallbackMethod_PlanBatch<
          v1::Planner::WithCallbackMethod_Ping<v1::Planner::Service>>> {
 public:
  // `store` must outlive the service.
  PlannerService(ProfileStore* store, ServiceOptions options);

  // The handlers, declared by name. PlanTree, PlanBatch and Ping run on the callback API, the
  // other unary ones are sync, PlanSession is a bidirectional stream:
  //   grpc::ServerUnaryReactor* NAME(grpc::CallbackServerContext*, const v1::NAMERequest*,
  //                                  v1::NAMEResponse*) override;
  //   grpc::Status NAME(grpc::ServerContext*, const v1::NAMERequest*, v1::NAMEResponse*) override;
#define SPECPLAN_CALLBACK_RPC(NAME)                                                              \
  grpc::ServerUnaryReactor* NAME(grpc::CallbackServerContext* ctx, const v1::NAME##Request* req, \
                                 v1::NAME##Response* resp) override
#define SPECPLAN_SYNC_RPC(NAME)                                             \
  grpc::Status NAME(grpc::ServerContext* ctx, const v1::NAME##Request* req, \
                    v1::NAME##Response* resp) override
  SPECPLAN_CALLBACK_RPC(PlanTree);
  SPECPLAN_CALLBACK_RPC(PlanBatch);
  SPECPLAN_CALLBACK_RPC(Ping);
  SPECPLAN_SYNC_RPC(MergeTrees);
  SPECPLAN_SYNC_RPC(EstimateLatency);
  SPECPLAN_SYNC_RPC(ListProfiles);
  SPECPLAN_SYNC_RPC(GetProfile);
  SPECPLAN_SYNC_RPC(PutProfile);
  SPECPLAN_SYNC_RPC(ReportAcceptance);
  SPECPLAN_SYNC_RPC(GetStats);
  SPECPLAN_SYNC_RPC(WhatIf);
  SPECPLAN_SYNC_RPC(WhatIfOnline);
#undef SPECPLAN_CALLBACK_RPC
#undef SPECPLAN_SYNC_RPC
  grpc::Status PlanSession(grpc::ServerContext* ctx,
                           grpc::ServerReaderWriter<v1::SessionServerMessage,
                                                    v1::SessionClientMessage>* stream) override;

  // The in-process forms the handlers wrap (no logging / stats); public for tests and benches.
  absl::Status DoPlanTree(const v1::PlanTreeRequest& req, v1::PlanTreeResponse* resp);
  // PlanBatch: validates the whole request (convert.h BatchRequestsFromProto /
  // BatchOptionsFromProto, the cost through CostResolver), plans with planner::BatchPlanner and
  // fills each request's outputs and, when asked for, the batch's engine layout.
  absl::Status DoPlanBatch(const v1::PlanBatchRequest& req, v1::PlanBatchResponse* resp);
  absl::Status DoMergeTrees(const v1::MergeTreesRequest& req, v1::MergeTreesResponse* resp);
  absl::Status DoEstimateLatency(const v1::EstimateLatencyRequest& req,
                                 v1::EstimateLatencyResponse* resp);
  // WhatIf: validates the request (convert.h WhatIfOptionsFromProto, CostResolver, the trace with
  // whatif::ParseTrace: INVALID_ARGUMENT naming the line and field; more than
  // limits.max_whatif_steps steps: RESOURCE_EXHAUSTED), runs whatif::RunWhatIf and fills *resp.
  // An empty trace_jsonl reads the bundled trace (whatif::DefaultTracePath()) on every call;
  // FAILED_PRECONDITION when it cannot be read.
  absl::Status DoWhatIf(const v1::WhatIfRequest& req, v1::WhatIfResponse* resp);
  // WhatIfOnline: translates the request into ops::WhatIfOnlineRequest (the acceptance bytes
  // parsed by ops::ParseAcceptance, errors naming acceptance_name's line and column), resolves
  // the cost through CostResolver (cost.drafter.architecture required), bounds the work at
  // limits.max_online_tokens (RESOURCE_EXHAUSTED) and runs ops::WhatIfOnline; the reply is its
  // JSON and table.
  absl::Status DoWhatIfOnline(const v1::WhatIfOnlineRequest& req, v1::WhatIfOnlineResponse* resp);

  // Resolves request costs (cost_resolver.h); PlanSession streams share it.
  const CostResolver& costs() const { return costs_; }

  const RequestStats& stats() const { return stats_; }
  const ServiceMetrics& metrics() const { return metrics_; }
  // The Prometheus exposition (metrics.h) of this service and its store.
  std::string MetricsText() const;
  // Starts kServing (a service built directly, as in tests and benches, serves at once);
  // StartServer sets kLoading until the profiles are read.
  void set_state(ServingState state) { state_.store(state, std::memory_order_release); }
  ServingState state() const { return state_.load(std::memory_order_acquire); }
  // Calls (including open PlanSession streams) currently being handled.
  int in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  // When the latest call (refused ones included) started; the epoch before any.
  std::chrono::steady_clock::time_point last_call_start() const {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(last_call_start_.load(std::memory_order_relaxed)));
  }
  const ServiceLimits& limits() const { return options_.limits; }

 private:
  // Runs `fn` as one logged, counted call of `method`.
  template <class Fn>
  grpc::Status Serve(Method method, grpc::ServerContextBase* ctx, Fn&& fn);
  // The same on the callback API, finished on ctx's default reactor.
  template <class Fn>
  grpc::ServerUnaryReactor* ServeReactor(Method method, grpc::CallbackServerContext* ctx, Fn&& fn);
  // PlanTree / PlanBatch: (this->*plan)(req, resp) served as ServeReactor does; an OK call adds the
  // draft nodes it returned, nodes(*resp), to the metrics.
  template <class Req, class Resp, class Nodes>
  grpc::ServerUnaryReactor* ServePlan(Method method, grpc::CallbackServerContext* ctx,
                                      absl::Status (PlannerService::*plan)(const Req&, Resp*),
                                      const Req& req, Resp* resp, Nodes nodes);
  // OK when the call carries the write token; `method` names the refused call.
  absl::Status CheckWriteAuth(const grpc::ServerContext& ctx, absl::string_view method) const;

  ProfileStore* store_;
  ServiceOptions options_;
  CostResolver costs_;
  PooledArenaAllocator<v1::PlanTreeRequest, v1::PlanTreeResponse> plan_tree_allocator_;
  RequestStats stats_;
  ServiceMetrics metrics_;
  std::atomic<ServingState> state_{ServingState::kServing};
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<int> in_flight_{0};
  std::atomic<int> sessions_{0};  // PlanSession streams open (ServiceLimits::max_sessions)
  std::atomic<std::chrono::steady_clock::rep> last_call_start_{0};
};

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_PLANNER_SERVICE_H_
