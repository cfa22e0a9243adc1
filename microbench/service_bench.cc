// Loopback gRPC cost of the planner service: an empty RPC (Ping) against PlanTree at
// gamma = 16, K = 8, N_max = 256 (controller mode, inline roofline, all default outputs), on one
// in-process server (real TCP on 127.0.0.1, real stubs). items_per_second = calls/s per client
// thread; the /threads:N variants run N concurrent clients on separate channels.
//
//   service_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "service/server.h"
#include "specplan/v1/planner.grpc.pb.h"

namespace specplan::service {
namespace {

RunningServer& Server() {
  static std::unique_ptr<RunningServer> server = [] {
    ConfigureServingProcess();  // measure what specplan-server runs (no deadlock detector)
    ServerConfig config;
    config.listen = "127.0.0.1:0";
    config.profiles_dir = "/nonexistent-specplan-bench";
    config.service.log_requests = false;
    auto s = StartServer(config);
    if (!s.ok()) std::abort();
    return *std::move(s);
  }();
  return *server;
}

std::unique_ptr<v1::Planner::Stub> NewStub() {
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);  // one connection per client thread
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(Server().port),
                                           grpc::InsecureChannelCredentials(), args);
  return v1::Planner::NewStub(channel);
}

v1::PlanTreeRequest PlanRequest() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  v1::PlanTreeRequest req;
  v1::Marginals* m = req.mutable_marginals();
  const int gamma = 16, k = 8;
  m->set_root_token(1);
  m->set_gamma(gamma);
  m->set_k(k);
  for (int d = 0; d < gamma; ++d) {
    std::vector<float> row(k);
    float sum = 0;
    for (float& x : row) sum += (x = u(rng));
    for (float& x : row) x = x / sum * 0.9f;
    std::sort(row.begin(), row.end(), std::greater<float>());
    for (int r = 0; r < k; ++r) {
      m->add_tokens(100 * d + r);
      m->add_probs(row[r]);
    }
  }
  req.mutable_cost()->mutable_inline_model()->set_gpu("h100");
  req.mutable_cost()->mutable_inline_model()->set_model("qwen3-8b");
  req.mutable_cost()->set_context_tokens(2048);
  req.set_mode(v1::BUDGET_MODE_CONTROLLER);
  req.set_n_max(256);
  return req;
}

void BM_Ping(benchmark::State& state) {
  auto stub = NewStub();
  v1::PingRequest req;
  v1::PingResponse resp;
  for (auto _ : state) {
    grpc::ClientContext ctx;
    if (!stub->Ping(&ctx, req, &resp).ok()) state.SkipWithError("Ping failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ping)->UseRealTime()->ThreadRange(1, 2);

void BM_PlanTree(benchmark::State& state) {
  auto stub = NewStub();
  const v1::PlanTreeRequest req = PlanRequest();
  v1::PlanTreeResponse resp;
  for (auto _ : state) {
    grpc::ClientContext ctx;
    resp.Clear();
    if (!stub->PlanTree(&ctx, req, &resp).ok()) state.SkipWithError("PlanTree failed");
  }
  state.counters["n_star"] = benchmark::Counter(resp.plan().n(), benchmark::Counter::kAvgThreads);
  state.counters["server_plan_us"] =
      benchmark::Counter(resp.plan_us(), benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlanTree)->UseRealTime()->ThreadRange(1, 2);

// The same PlanTree without the network: the service's handler body only.
void BM_PlanTreeInProcess(benchmark::State& state) {
  const v1::PlanTreeRequest req = PlanRequest();
  v1::PlanTreeResponse resp;
  for (auto _ : state) {
    resp.Clear();
    if (!Server().service->DoPlanTree(req, &resp).ok()) state.SkipWithError("failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlanTreeInProcess);

// Wire coding of one PlanTree call without the network: the client serialises the request, the
// server parses it, serialises the reply (ByteSizeLong + serialise, as gRPC does) and the client
// parses that into a reused message. items_per_second = calls/s; reply_bytes = reply size.
void BM_PlanTreeWireCoding(benchmark::State& state) {
  const v1::PlanTreeRequest req = PlanRequest();
  v1::PlanTreeResponse reply;
  if (!Server().service->DoPlanTree(req, &reply).ok()) state.SkipWithError("failed");
  std::string req_bytes, reply_bytes;
  v1::PlanTreeRequest req_in;
  v1::PlanTreeResponse reply_in;
  for (auto _ : state) {
    req_bytes.clear();
    req.SerializeToString(&req_bytes);
    if (!req_in.ParseFromString(req_bytes)) state.SkipWithError("request parse failed");
    reply_bytes.clear();
    reply.SerializeToString(&reply_bytes);
    if (!reply_in.ParseFromString(reply_bytes)) state.SkipWithError("reply parse failed");
    benchmark::DoNotOptimize(reply_in.outputs().retrieve_size());
  }
  state.counters["request_bytes"] = static_cast<double>(req_bytes.size());
  state.counters["reply_bytes"] = static_cast<double>(reply_bytes.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlanTreeWireCoding);

}  // namespace
}  // namespace specplan::service

BENCHMARK_MAIN();
