// Shared helpers of the service tests: temp dirs, synthetic profiles, random marginals, a real
// server on a loopback port with a real stub, and a raw grpc.health.v1 client.
#ifndef SPECPLAN_TESTS_SERVICE_SERVICE_TEST_UTIL_H_
#define SPECPLAN_TESTS_SERVICE_SERVICE_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "planner/marginals/marginals.h"
#include "planner/tree/tree.h"
#include "service/convert.h"
#include "service/server.h"
#include "specplan/v1/planner.grpc.pb.h"
#include "tests/run_binary.h"

namespace specplan::service::testing {

namespace fs = std::filesystem;

inline fs::path TempDir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() /
                 ("specplan_service_" + tag + "_" + std::to_string(::getpid()) + "_" +
                  (info ? std::string(info->test_suite_name()) + "_" + info->name() : "x"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

using ::specplan::testing::ReadAll;

// A fitted profile for (a100, qwen3-4b, bf16); `scale` multiplies the synthetic measurements so
// that two versions predict different latencies. The fit (an overlap Levenberg-Marquardt fit, about
// 5 s) is deterministic, so each scale is fitted once per test binary (SyntheticProfile) and every
// caller gets a copy.
inline costmodel::Profile FitSyntheticProfile(double scale) {
  const costmodel::RooflineLatency r(*costmodel::LookupModel("qwen3-4b"),
                                     *costmodel::LookupGpu("a100"));
  const costmodel::LinearCalibratedLatency truth(r, {1.6 * scale, 0.7e-3 * scale});
  std::mt19937_64 rng(7);
  std::normal_distribution<double> eps(0, 0.005);
  std::vector<costmodel::LatencySample> samples;
  for (int64_t c : {64, 256, 1024}) {
    for (int64_t s : {1, 4, 16, 64, 256}) {
      for (int rep = 0; rep < 2; ++rep) {
        samples.push_back({s, c, truth.VerifySeconds(s, c) * (1 + eps(rng))});
      }
    }
  }
  auto p = costmodel::FitProfile(*costmodel::LookupModel("qwen3-4b"), *costmodel::LookupGpu("a100"),
                                 samples);
  EXPECT_TRUE(p.ok()) << p.status();
  p->device_name = "synthetic";
  p->timer = "external";
  p->created_utc = "2025-01-01T00:00:00Z";
  p->software["generator"] = "service_test";
  return *p;
}

// FitSyntheticProfile(scale) through a file beside the test binary. CTest runs every test in a
// process of its own, so a per-process cache alone paid the fit in each of some thirty tests (and
// more under the sanitizers); the file is named by the binary's modification time, so a rebuilt
// binary fits again, and written by SaveProfile's rename, so parallel tests read a whole file or
// none. A file that does not load is fitted again and replaced.
inline costmodel::Profile CachedSyntheticProfile(double scale) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return FitSyntheticProfile(scale);
  const auto mtime = fs::last_write_time(exe, ec).time_since_epoch().count();
  if (ec) return FitSyntheticProfile(scale);
  const fs::path file = exe.parent_path() / "synthetic_profiles" /
                        (exe.filename().string() + "-" + std::to_string(mtime) + "-x" +
                         std::to_string(scale) + ".json");
  if (fs::exists(file, ec)) {
    auto loaded = costmodel::LoadProfile(file.string());
    if (loaded.ok()) return *std::move(loaded);
  }
  costmodel::Profile p = FitSyntheticProfile(scale);
  fs::create_directories(file.parent_path(), ec);
  if (!ec) (void)costmodel::SaveProfile(p, file.string());  // best effort: a cache
  return p;
}

inline costmodel::Profile SyntheticProfile(double scale = 1.0) {
  static std::mutex mu;
  static std::map<double, costmodel::Profile> fitted;
  std::lock_guard<std::mutex> lock(mu);
  auto it = fitted.find(scale);
  if (it == fitted.end()) it = fitted.emplace(scale, CachedSyntheticProfile(scale)).first;
  return it->second;
}

// Random marginals: rows sorted by descending prob, distinct tokens, row sums <= 1.
inline v1::Marginals RandomMarginals(int gamma, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  v1::Marginals m;
  m.set_root_token(11);
  m.set_gamma(gamma);
  m.set_k(k);
  for (int d = 0; d < gamma; ++d) {
    std::vector<float> row(k);
    float sum = 0;
    for (float& x : row) sum += (x = u(rng));
    const float mass = 0.5f + 0.45f * u(rng);
    for (float& x : row) x = x / sum * mass;
    std::sort(row.begin(), row.end(), std::greater<float>());
    for (int r = 0; r < k; ++r) {
      m.add_tokens(1000 + d * 100 + r * 7);
      m.add_probs(row[r]);
    }
  }
  return m;
}

// The wire marginals as the planner's struct (the server's own conversion, default limits).
inline planner::Marginals ToPlanner(const v1::Marginals& m) {
  planner::Marginals out;
  EXPECT_TRUE(MarginalsFromProto(m, ServiceLimits{}, "marginals", &out).ok());
  return out;
}

// A tree on the wire equal, node for node, to an in-process one.
inline void ExpectTreeEq(const planner::Tree& want, const v1::Tree& got) {
  EXPECT_THAT(got.tokens(), ::testing::ElementsAreArray(want.tokens));
  EXPECT_THAT(got.parents(), ::testing::ElementsAreArray(want.parents));
  EXPECT_THAT(got.depths(), ::testing::ElementsAreArray(want.depths));
  EXPECT_THAT(got.path_probs(), ::testing::ElementsAreArray(want.path_probs));
}

inline v1::CostSpec InlineCost(int64_t c) {
  v1::CostSpec cost;
  cost.mutable_inline_model()->set_gpu("h100");
  cost.mutable_inline_model()->set_model("qwen3-8b");
  cost.set_context_tokens(c);
  return cost;
}

// A real server on 127.0.0.1:<free port> plus a stub connected to it.
struct TestServer {
  std::unique_ptr<RunningServer> running;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Planner::Stub> stub;

  static std::unique_ptr<TestServer> Start(ServerConfig config) {
    config.listen = "127.0.0.1:0";
    config.service.log_requests = false;
    auto running = StartServer(config);
    EXPECT_TRUE(running.ok()) << running.status();
    if (!running.ok()) return nullptr;
    auto ts = std::make_unique<TestServer>();
    ts->running = *std::move(running);
    ts->channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(ts->running->port),
                                      grpc::InsecureChannelCredentials());
    ts->stub = v1::Planner::NewStub(ts->channel);
    return ts;
  }
};

// A server with default settings over the profiles directory `dir`.
inline std::unique_ptr<TestServer> StartServerOn(const fs::path& dir) {
  ServerConfig config;
  config.profiles_dir = dir.string();
  return TestServer::Start(config);
}

// A real server over the profiles directory dir_ (the test's to fill), stopped and dir_ removed
// after each test.
class ServerFixture : public ::testing::Test {
 protected:
  void StartServer(ServerConfig config) {
    config.profiles_dir = dir_.string();
    server_ = TestServer::Start(config);
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  v1::Planner::Stub& stub() { return *server_->stub; }
  std::string address() const { return "127.0.0.1:" + std::to_string(server_->running->port); }

  fs::path dir_;
  std::unique_ptr<TestServer> server_;
};

// grpc.health.v1.Health/Check over raw bytes (no generated health stubs ship with Debian's gRPC).
// Returns the ServingStatus (1 = SERVING, 2 = NOT_SERVING) or -1 with *status set on error.
inline int HealthCheck(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                       grpc::Status* status) {
  std::string req;
  if (!service.empty()) {
    req.push_back(0x0a);  // field 1, length-delimited
    req.push_back(static_cast<char>(service.size()));
    req += service;
  }
  grpc::Slice slice(req);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  const grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                         grpc::internal::RpcMethod::NORMAL_RPC);
  *status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), method, &ctx, request, &response);
  if (!status->ok()) return -1;
  std::vector<grpc::Slice> slices;
  (void)response.Dump(&slices);
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  if (bytes.size() == 2 && bytes[0] == 0x08) return bytes[1];
  return bytes.empty() ? 0 : -2;  // empty = UNKNOWN (0)
}

}  // namespace specplan::service::testing

#endif  // SPECPLAN_TESTS_SERVICE_SERVICE_TEST_UTIL_H_
