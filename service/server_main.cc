// specplan-server: the planner service over gRPC. Flags and behaviour: service/server_cli.h.
#include "service/server_cli.h"
#include "util/env.h"

int main(int argc, char** argv) {
  return specplan::service::ServerMain(argc, argv, specplan::Env::Default());
}
