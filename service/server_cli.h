// The specplan-server command line: flags, --config FILE, start, and a graceful stop on SIGTERM /
// SIGINT. server_main.cc calls it with Env::Default(); the crash tests link it into a test binary
// (tests/service/fault_server_main.cc) with an Env that aborts inside PutProfile's write.
//
//   specplan-server [--listen HOST:PORT] [--profiles-dir DIR] [--engine NAME] [--threads N]
//                   [--max-message-bytes B] [--max-gamma G] [--max-k K] [--max-n N]
//                   [--max-whatif-steps S] [--max-whatif-budgets B]
//                   [--auth-token-file FILE] [--tls-cert PEM --tls-key PEM] [--ema-alpha A]
//                   [--quiet] [--config FILE]
//
// --engine NAME (sglang, vllm, trtllm, specplan) is the engine preferred for requests whose
// profile names none (planner.proto ProfileRef.engine); an unknown name exits 1 naming --engine.
// Every flag can also come from --config FILE (TOML/INI: `listen = "0.0.0.0:50051"`). On start it
// prints one line "specplan-server listening on HOST:PORT (N profiles from DIR)" to stdout (the
// real port when --listen ends in :0). SIGTERM / SIGINT shut it down gracefully: health turns
// NOT_SERVING, new calls are refused, calls in flight get --grace-s seconds to finish; exit 0.
#ifndef SPECPLAN_SERVICE_SERVER_CLI_H_
#define SPECPLAN_SERVICE_SERVER_CLI_H_

#include "util/env.h"

namespace specplan::service {

// Runs the server until SIGTERM / SIGINT; the process exit status (0 after a graceful stop, 1 when
// a flag or file is refused). PutProfile saves through `env`, which must outlive the call.
int ServerMain(int argc, char** argv, Env* env);

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_SERVER_CLI_H_
