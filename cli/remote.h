// Client side of the CLI's `--server HOST:PORT`: the same requests the in-process commands run,
// sent to a specplan-server, with the responses turned back into the planner's plain structs so
// that the commands print exactly what they print in-process. A thin layer over the shared client
// library (service/client.h, specplan_client); without gRPC in the build every call returns
// UNIMPLEMENTED (remote_disabled.cc). service/client.h needs no gRPC headers, so this header
// compiles in both builds.
#ifndef SPECPLAN_CLI_REMOTE_H_
#define SPECPLAN_CLI_REMOTE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/profile.h"
#include "planner/best_first.h"
#include "planner/marginals.h"
#include "planner/merge.h"
#include "planner/tree_outputs.h"
#include "service/client.h"

namespace specplan::cli {

// The CLI calls the shared client's one-shot functions (service/client.h has their contracts):
//   RemotePlanTree    PlanTree; positions offset by c, packed mask, retrieve
//   RemoteMergeTrees  MergeTrees; outputs with dense mask
//   RemoteEstimateLatency, RemoteProfiles
//   RemoteWhatIf      WhatIf over a trace sent as text (empty: the server's bundled trace); the
//                     report equals whatif::RunWhatIf's, so the same table / JSON / plot code runs
// With gRPC they come from specplan_client; without it, remote_disabled.cc defines them to return
// UNIMPLEMENTED.
using client::RemoteCost;      // the cost side of a command, as given on the command line
using client::RemoteEstimate;  // EstimateLatency at one (s, c)
using client::RemoteEstimateLatency;
using client::RemoteMergeTrees;
using client::RemotePlanTree;
using client::RemoteProfiles;
using client::RemoteResult;  // latency model kind and profile id the server used
using client::RemoteWhatIf;
using client::RemoteWhatIfResult;  // the report, the cost used, the server's bundled trace path

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_REMOTE_H_
