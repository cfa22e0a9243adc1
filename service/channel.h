// Channels to one or several specplan-server replicas (library specplan_channel), shared by the C++
// client (client.h), the CLI's --server and specplan-loadgen --targets. Replicas need no scheme of
// ours: the channel balances with gRPC's own round_robin policy over every address of the target,
// checks each replica's grpc.health.v1 status for "specplan.v1.Planner" (a replica that is loading
// its profiles or draining reports NOT_SERVING and gets no new calls), and retries idempotent RPCs
// that fail UNAVAILABLE (a replica killed or draining mid-call) on another replica. All of it is
// the gRPC service config below; Debian's gRPC 1.51 enables retries by default.
#ifndef SPECPLAN_SERVICE_CHANNEL_H_
#define SPECPLAN_SERVICE_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace specplan::service {

// A --server / --targets value as a gRPC target:
//   "HOST:PORT"                       as given (one server)
//   "A:P,B:Q,..." (IPv4 literals or localhost)   "ipv4:A:P,B:Q,..." (one channel, round robin)
//   "[V6]:P,[W6]:Q,..."              "ipv6:[V6]:P,[W6]:Q,..."
//   "dns:///NAME:PORT", "ipv4:...", "ipv6:...", "unix:..."   as given (a headless Kubernetes
//                                     Service's DNS name resolves to every ready pod)
// Empty entries, a missing port, or host names in a list (gRPC resolves one name per target: use
// dns:///) are INVALID_ARGUMENT naming `flag` and the value.
absl::StatusOr<std::string> PlannerTarget(absl::string_view servers, absl::string_view flag);

// The service config JSON: loadBalancingConfig round_robin, healthCheckConfig for
// "specplan.v1.Planner", and a retryPolicy (5 attempts, 10 ms .. 200 ms backoff, UNAVAILABLE) for
// the idempotent methods PlanTree, PlanBatch, MergeTrees, EstimateLatency, ListProfiles,
// GetProfile, GetStats, Ping and WhatIf. Not retried: PlanSession (a stream with state),
// ReportAcceptance (counts would double) and PutProfile (a write). examples/python_client.py
// carries the same JSON.
const std::string& PlannerServiceConfigJson();

// Channel arguments carrying that service config (and a 1 s cap on reconnect backoff, so a
// restarted replica rejoins within about a second).
grpc::ChannelArguments PlannerChannelArguments();

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_CHANNEL_H_
