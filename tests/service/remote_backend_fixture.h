// The remote backend suites' fixture: one real specplan-server process on a loopback port for
// the whole suite (starting it is the slow part), with an empty profiles directory. Shared by
// tests/service/remote_backend_test.cc (the client library against the server) and
// tests/service_runtime/remote_decoder_test.cc (the runtime's decoders planning through it).
#ifndef SPECPLAN_TESTS_SERVICE_REMOTE_BACKEND_FIXTURE_H_
#define SPECPLAN_TESTS_SERVICE_REMOTE_BACKEND_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "specplan/v1/planner.grpc.pb.h"
#include "tests/server_process.h"

namespace specplan::client::testing {

// One server for the whole suite (starting it is the slow part).
class RemoteBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("specplan_remote_backend_" + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_ / "profiles");
    server_ = new test::ServerProcess(
        {"--listen", "127.0.0.1:0", "--quiet", "--profiles-dir", (*dir_ / "profiles").string()});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(test::ServerBinary())) << test::ServerBinary();
    ASSERT_GT(server_->port(), 0) << server_->first_line();
  }
  static std::string Address() { return server_->address(); }
  static std::unique_ptr<::specplan::v1::Planner::Stub> RawStub() {
    return ::specplan::v1::Planner::NewStub(
        grpc::CreateChannel(Address(), grpc::InsecureChannelCredentials()));
  }

  static inline std::filesystem::path* dir_ = nullptr;
  static inline test::ServerProcess* server_ = nullptr;
};

}  // namespace specplan::client::testing

#endif  // SPECPLAN_TESTS_SERVICE_REMOTE_BACKEND_FIXTURE_H_
