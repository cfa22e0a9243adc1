// ops/step_fit_op.h: the validator names fields; host terms fitted for real on the bundled H100
// Llama-3.1-8B vLLM profile; the JSON and text forms.
#include "ops/step_fit_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/ops/refusal_cases.h"

namespace specplan::ops {
namespace {

using testing::ExpectRefusals;
using ::testing::HasSubstr;
using testing::RefusalCase;

StepFitRequest Request() {
  StepFitRequest req;
  req.cost.model = "llama-3.1-8b";
  req.cost.gpu = "h100";
  req.cost.engine = "vllm";
  req.points = ::testing::TempDir() + "/step_fit_op_points.csv";
  std::ofstream(req.points) << "batch,k,context,step_ms\n1,0,1024,7.6\n16,0,1024,8.4\n"
                               "64,0,1024,12.3\n1,3,1024,10.3\n16,3,1024,11.6\n64,3,1024,18.2\n";
  return req;
}

TEST(StepFitOp, ValidatorNamesFields) {
  StepFitRequest req = Request();
  req.cost.model.clear();
  EXPECT_EQ(Validate(req).message(), "model: required");
  const std::vector<RefusalCase<StepFitRequest>> refusals = {
      {[](StepFitRequest& r) { r.points.clear(); }, "points: required"},
      {[](StepFitRequest& r) { r.cost.drafter = "nosuch"; }, "drafter = 'nosuch'"},
  };
  ExpectRefusals(Request(), refusals);
}

TEST(StepFitOp, FitsHostTermsOnTheBundledProfile) {
  auto r = StepFit(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->points.size(), 6u);
  EXPECT_EQ(r->source.engine, "vllm");
  EXPECT_FALSE(r->fit.fitted.empty());
  EXPECT_LT(r->fit.mape, 0.5);
  const nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["points"], Request().points);
  EXPECT_THAT(ToText(*r), HasSubstr("MAPE"));
}

TEST(StepFitOp, ErrorsNameThePoints) {
  StepFitRequest req = Request();
  req.points = "/nonexistent/points.csv";
  EXPECT_THAT(StepFit(req).status().message(), HasSubstr("points /nonexistent/points.csv"));
}

}  // namespace
}  // namespace specplan::ops
