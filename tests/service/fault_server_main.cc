// specplan-fault-server: specplan-server (service/server_cli.h) whose PutProfile saves through a
// FaultEnv (tests/util/fault_env.h), for the crash tests in server_binary_test.cc.
//
//   specplan-fault-server [--fault abort_mid_tmp_write|abort_after_tmp_write|abort_before_rename|
//                                  abort_after_rename] SERVER-FLAGS...
//
// An unknown fault name exits 1 before the server starts.
#include <cstring>
#include <iostream>

#include "service/server_cli.h"
#include "tests/util/fault_env.h"

int main(int argc, char** argv) {
  const char* fault = "";
  if (argc >= 3 && std::strcmp(argv[1], "--fault") == 0) {
    fault = argv[2];
    argv[2] = argv[0];  // the server's own flags follow
    argc -= 2;
    argv += 2;
  }
  auto crash = specplan::test::ParseCrashPoint(fault);
  if (!crash.ok()) {
    std::cerr << "specplan-fault-server: " << crash.status().message() << "\n";
    return 1;
  }
  if (*crash != specplan::test::CrashPoint::kNone) {
    std::cerr << "specplan-fault-server: --fault " << fault
              << ": PutProfile will abort the process (crash test)\n";
  }
  specplan::test::FaultEnv env(*crash);
  return specplan::service::ServerMain(argc, argv, &env);
}
