// Hostile input against the real specplan-server binary on a loopback port (issue 55's gRPC
// probes): a 200 KB WhatIf whose trace line nests 100,000 deep (it used to kill the server with
// a stack overflow), the same nesting in a WhatIfOnline acceptance and in PutProfile,
// ReportAcceptance without the write token, 20,000 absurd acceptance reports with it (the EMA
// correction stays within its clamp), and a nested profile dropped into the watched profiles
// directory (refused; the old one keeps serving). The server answers Ping after every probe.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "costmodel/latency/ema_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "tests/server_process.h"
#include "tests/service/service_test_util.h"

namespace specplan::service {
namespace {

using ::testing::HasSubstr;
using namespace specplan::service::testing;
using test::ServerProcess;

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

class HostileService : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("hostile");
    profiles_ = dir_ / "profiles";
    profile_ = SyntheticProfile(1.0);
    profile_path_ = costmodel::BundledProfilePath(profiles_.string(), profile_.gpu, profile_.model,
                                                  profile_.dtype);
    ASSERT_TRUE(costmodel::SaveProfile(profile_, profile_path_).ok());
    std::ofstream(dir_ / "token") << "tok-55\n";
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--listen", "127.0.0.1:0", "--profiles-dir", profiles_.string(), "--auth-token-file",
        (dir_ / "token").string(), "--reload-interval-s", "1", "--quiet"});
    ASSERT_GT(server_->port(), 0) << server_->first_line();
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    ASSERT_TRUE(
        channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
    stub_ = v1::Planner::NewStub(channel_);
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
    server_.reset();
    fs::remove_all(dir_);
  }

  // A context with a 10 s deadline (a probe that hangs fails), with the token when `token`.
  static std::unique_ptr<grpc::ClientContext> Context(const char* token = nullptr) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (token != nullptr) ctx->AddMetadata("authorization", std::string("Bearer ") + token);
    return ctx;
  }
  void ExpectAlive() {
    v1::PingRequest req;
    v1::PingResponse resp;
    const grpc::Status st = stub_->Ping(Context().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << "the server stopped answering Ping: " << st.error_message();
  }
  v1::ProfileRef Ref() const {
    v1::ProfileRef ref;
    ref.set_gpu(profile_.gpu);
    ref.set_model(profile_.model);
    return ref;
  }
  v1::GetProfileResponse Get() {
    v1::GetProfileRequest req;
    *req.mutable_profile() = Ref();
    v1::GetProfileResponse resp;
    const grpc::Status st = stub_->GetProfile(Context().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }
  // `steps` reports of 15 draft nodes at context 512, each verify pass `verify_s` seconds.
  v1::ReportAcceptanceRequest Reports(int steps, double verify_s) const {
    v1::ReportAcceptanceRequest req;
    *req.mutable_profile() = Ref();
    for (int i = 0; i < steps; ++i) {
      v1::AcceptanceStep* s = req.add_steps();
      s->set_accepted_length(2);
      s->set_draft_nodes(15);
      s->set_context_tokens(512);
      s->set_verify_s(verify_s);
    }
    return req;
  }

  fs::path dir_, profiles_;
  costmodel::Profile profile_;
  std::string profile_path_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Planner::Stub> stub_;
};

TEST_F(HostileService, NestedJsonIsANamedErrorNotACrash) {
  v1::WhatIfRequest whatif;
  whatif.set_trace_jsonl("{\"c\": " + Nested(100000) + "}\n");  // 200 KB, unauthenticated
  *whatif.mutable_cost() = InlineCost(1024);
  v1::WhatIfResponse wr;
  grpc::Status st = stub_->WhatIf(Context().get(), whatif, &wr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("JSON nested deeper than 64 levels (the limit)"));
  ExpectAlive();

  // The same nesting as a WhatIfOnline request's step-trace acceptance.
  v1::WhatIfOnlineRequest online;
  online.set_acceptance("{\"id\": \"a\", \"acc_len\": " + Nested(100000) + "}\n");
  online.set_acceptance_name("run.jsonl");
  online.set_acceptance_format("step-trace");
  *online.mutable_cost() = InlineCost(1024);
  online.mutable_cost()->mutable_drafter()->set_architecture("eagle3");
  online.add_rates(1);
  v1::WhatIfOnlineResponse or_;
  st = stub_->WhatIfOnline(Context().get(), online, &or_);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("acceptance (run.jsonl):1"));
  EXPECT_THAT(st.error_message(), HasSubstr("nested deeper than"));
  ExpectAlive();

  v1::PutProfileRequest put;
  put.set_profile_json("{\"format\": " + Nested(100000) + "}");
  v1::PutProfileResponse pr;
  st = stub_->PutProfile(Context("tok-55").get(), put, &pr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(),
              HasSubstr("profile_json:1:75: JSON nested deeper than 64 levels (the limit)"));
  ExpectAlive();
}

TEST_F(HostileService, ReportAcceptanceNeedsTheTokenAndTheCorrectionIsClamped) {
  v1::ReportAcceptanceResponse resp;
  grpc::Status st = stub_->ReportAcceptance(Context().get(), Reports(3, 1e6), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("authorization: missing"));
  st = stub_->ReportAcceptance(Context("wrong").get(), Reports(3, 1e6), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ExpectAlive();
  EXPECT_EQ(Get().correction().observations(), 0);  // refused reports changed nothing
  EXPECT_EQ(Get().acceptance().steps(), 0);

  // With the token: 20,000 passes of 1e6 s (the probe drove the bias to 1.46e8).
  st = stub_->ReportAcceptance(Context("tok-55").get(), Reports(20000, 1e6), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.correction().observations(), 20000);
  EXPECT_LE(resp.correction().bias(), costmodel::EmaCorrectedLatency::kMaxBias);
  EXPECT_GT(resp.correction().bias(), 9.99);  // it did move, as far as the clamp
  ExpectAlive();
  // And as far the other way: passes of a picosecond.
  st = stub_->ReportAcceptance(Context("tok-55").get(), Reports(20000, 1e-12), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_GE(resp.correction().bias(), costmodel::EmaCorrectedLatency::kMinBias);
  EXPECT_LT(resp.correction().bias(), 0.101);
  ExpectAlive();
}

TEST_F(HostileService, NestedProfileInTheWatchedDirectoryIsRefusedAndTheOldOneServes) {
  const std::string before = Get().profile_json();
  ASSERT_FALSE(before.empty());
  {  // replaced whole (rename), as a deploy would drop it
    const std::string staged = profile_path_ + ".staged";
    std::ofstream(staged) << "{\"format\": " << Nested(100000) << "}";
    fs::rename(staged, profile_path_);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // > 3 reload intervals
  ExpectAlive();
  EXPECT_EQ(Get().profile_json(), before);
  v1::ListProfilesResponse list;
  ASSERT_TRUE(stub_->ListProfiles(Context().get(), v1::ListProfilesRequest(), &list).ok());
  EXPECT_EQ(list.profiles_size(), 1);
}

// A PlanBatch whose reply would take gigabytes (512 requests, fixed mode, n_max 2^20 over the
// batch, dense masks: it drove the server to 4.1 GB and an abort on protobuf's 2 GB limit) is
// sized from its planned trees and refused before any output is built; the server keeps serving.
TEST_F(HostileService, PlanBatchReplyIsSizedAndRefusedBeforeItIsBuilt) {
  v1::PlanBatchRequest req;
  for (int r = 0; r < 512; ++r) {
    v1::BatchEntry* e = req.add_requests();
    v1::Marginals* m = e->mutable_marginals();
    m->set_root_token(1);
    m->set_gamma(16);
    m->set_k(8);
    for (int d = 0; d < 16; ++d) {
      for (int j = 0; j < 8; ++j) {
        m->add_tokens(100 + j);
        m->add_probs(0.1f / static_cast<float>(j + 1));
      }
    }
    e->set_context_tokens(1024);
  }
  req.set_mode(v1::BUDGET_MODE_FIXED);
  req.set_n_max(1 << 20);
  req.mutable_outputs()->set_dense_mask(true);
  v1::PlanBatchResponse resp;
  const grpc::Status st = stub_->PlanBatch(Context().get(), req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("reply: the outputs and layout of 512 trees"));
  EXPECT_THAT(st.error_message(), HasSubstr("over the limit of 4194304 bytes"));
  ExpectAlive();
  // A small batch with the same outputs still plans.
  req.mutable_requests()->DeleteSubrange(2, 510);
  req.set_n_max(16);
  v1::PlanBatchResponse small;
  const grpc::Status ok = stub_->PlanBatch(Context().get(), req, &small);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(small.requests_size(), 2);
}

}  // namespace
}  // namespace specplan::service
