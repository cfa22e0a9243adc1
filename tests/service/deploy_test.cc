// deploy/: the container recipe and Kubernetes manifests checked against the real server's flags
// (deploy/check_manifests.py, run with Debian's /usr/bin/python3 and its yaml module): probes call
// the gRPC health service on the listening port, ports and args match the flags, the Service is
// headless, the calib volume is mounted at --calib-dir, non-root everywhere; and
// scripts/replicas.sh starts, reports and stops real replicas.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "service_test_util.h"
#include "tests/paths/test_paths.h"

namespace specplan::service {
namespace {

using namespace specplan::service::testing;

std::string Shell(const std::string& command, int* status) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int rc = pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::string Server() { return ::specplan::test_paths::BinaryDir() + "/service/specplan-server"; }

TEST(Deploy, ManifestsAndDockerfileMatchTheServerFlags) {
  int status = 0;
  Shell("/usr/bin/python3 -c 'import yaml' 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "/usr/bin/python3 with the yaml module (python3-yaml) needed";
  const fs::path dir = TempDir("deploy");
  const std::string help = (dir / "help.txt").string();
  Shell(Server() + " --help > " + help, &status);
  ASSERT_EQ(status, 0);
  const std::string out = Shell("/usr/bin/python3 " + ::specplan::test_paths::SourceDir() +
                                    "/deploy/check_manifests.py " + help + " 2>&1",
                                &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("0 problems"));
}

TEST(Deploy, ReplicasScriptStartsReportsAndStopsReplicas) {
  const fs::path dir = TempDir("replicas_sh");
  const std::string env = "RUN_DIR=" + (dir / "run").string() +
                          " BASE_PORT=" + std::to_string(52000 + getpid() % 5000) +
                          " METRICS_BASE=" + std::to_string(57100 + getpid() % 5000) +
                          " SERVER=" + Server() + " ";
  const std::string script =
      env + "bash " + ::specplan::test_paths::SourceDir() + "/scripts/replicas.sh ";
  int status = 0;
  std::string out = Shell(script + "2 2>&1", &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("targets: 127.0.0.1:"));
  out = Shell(script + "status 2>&1", &status);
  EXPECT_THAT(out, ::testing::HasSubstr("replica 1: pid"));
  out = Shell(script + "stop 2>&1", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("replica 0: stopped, exit status 0"));
  EXPECT_THAT(out, ::testing::HasSubstr("replica 1: stopped, exit status 0"));
}

}  // namespace
}  // namespace specplan::service
