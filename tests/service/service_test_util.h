// Shared helpers of the service tests: temp dirs, synthetic profiles, random marginals, a real
// server on a loopback port with a real stub, and a raw grpc.health.v1 client.
#ifndef SPECPLAN_TESTS_SERVICE_SERVICE_TEST_UTIL_H_
#define SPECPLAN_TESTS_SERVICE_SERVICE_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "costmodel/latency_models.h"
#include "costmodel/model_registry.h"
#include "costmodel/model_spec.h"
#include "costmodel/profile.h"
#include "service/server.h"
#include "specplan/v1/planner.grpc.pb.h"

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

inline std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fitted profile for (a100, qwen3-4b, bf16); `scale` multiplies the synthetic measurements so
// that two versions predict different latencies.
inline costmodel::Profile SyntheticProfile(double scale = 1.0) {
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
