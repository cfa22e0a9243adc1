// The server's inline cost at tensor parallelism: InlineCostModel.tp (0 = unset = 1, as older
// clients send it) against the in-process cost model, and errors naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "service_test_util.h"

namespace specplan::service {
namespace {

using ::testing::HasSubstr;
using namespace specplan::service::testing;

double VerifySeconds(v1::Planner::Stub& stub, const v1::CostSpec& cost, int64_t s,
                     grpc::Status* status) {
  v1::EstimateLatencyRequest req;
  *req.mutable_cost() = cost;
  req.add_s(s);
  req.add_c(cost.context_tokens());
  v1::EstimateLatencyResponse resp;
  grpc::ClientContext ctx;
  *status = stub.EstimateLatency(&ctx, req, &resp);
  return status->ok() ? resp.points(0).verify_s() : -1;
}

TEST(TensorParallelRpc, InlineTpMatchesInProcessAndDefaultsToOne) {
  const fs::path dir = TempDir("tp");
  auto server = StartServerOn(dir);
  ASSERT_NE(server, nullptr);

  v1::CostSpec cost;
  cost.mutable_inline_model()->set_gpu("h100");
  cost.mutable_inline_model()->set_model("llama-3.3-70b");
  cost.set_context_tokens(2048);
  auto model = costmodel::LookupModel("llama-3.3-70b");
  auto gpu = costmodel::LookupGpu("h100");
  ASSERT_TRUE(model.ok() && gpu.ok());

  grpc::Status st;
  // tp unset: one GPU, exactly as before the field existed.
  const double one = VerifySeconds(*server->stub, cost, 32, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_DOUBLE_EQ(one, costmodel::RooflineLatency(*model, *gpu).VerifySeconds(32, 2048));

  cost.mutable_inline_model()->set_tp(4);
  const double four = VerifySeconds(*server->stub, cost, 32, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  costmodel::ModelSpec split = *model;
  split.tp = 4;
  EXPECT_DOUBLE_EQ(four, costmodel::RooflineLatency(split, *gpu).VerifySeconds(32, 2048));
  EXPECT_LT(four, one / 2);  // a quarter of the weights per GPU, plus the all-reduces

  cost.mutable_inline_model()->set_tp(3);
  VerifySeconds(*server->stub, cost, 32, &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(),
              HasSubstr("cost.inline_model.tp = 3: must divide n_q = 64 (query heads)"));

  // A custom GPU without link_bw has no interconnect.
  cost.mutable_inline_model()->set_tp(2);
  cost.mutable_inline_model()->clear_gpu();
  v1::GpuSpec* g = cost.mutable_inline_model()->mutable_gpu_spec();
  g->set_name("box");
  g->set_peak_flops(1e15);
  g->set_mem_bw(3e12);
  g->set_mem_bytes(8e10);
  VerifySeconds(*server->stub, cost, 32, &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(),
              HasSubstr("cost.inline_model.tp = 2: gpu 'box' has no interconnect (link_bw = 0)"));
  g->set_link_bw(4.5e11);
  g->set_link_latency_s(1e-6);
  VerifySeconds(*server->stub, cost, 32, &st);
  EXPECT_TRUE(st.ok()) << st.error_message();
  server.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::service
