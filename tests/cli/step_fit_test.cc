// specplan step fit: the fitted host file is what --host-file prices with.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "util/file.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;
using ::testing::HasSubstr;

constexpr char kCost[] = " --model llama-3.1-8b --gpu h100 --engine vllm";

TEST(StepFit, WritesAHostFileThatEstimatePricesWith) {
  const std::string points = WriteTemp("points.csv",
                                       "batch,k,context,step_ms\n1,0,1024,7.6\n16,0,1024,8.4\n"
                                       "64,0,1024,12.3\n1,3,1024,10.3\n16,3,1024,11.6\n"
                                       "64,3,1024,18.2\n");
  const std::string out = WriteTemp("host.json", "");
  const CommandResult fit =
      ExpectRun(std::string("step fit") + kCost + " --points " + points + " --out " + out, 0, "");
  EXPECT_THAT(fit.output, HasSubstr("MAPE"));
  EXPECT_THAT(fit.output, HasSubstr("wrote " + out));
  const CommandResult est = ExpectRun(
      std::string("estimate") + kCost + " --b 16 --s 4 --c 1024 --json --host-file " + out, 0, "");
  const nlohmann::json j = nlohmann::json::parse(est.output);
  const nlohmann::json host = nlohmann::json::parse(*ReadFileToString(out));
  EXPECT_DOUBLE_EQ(j["step"]["host"]["step_s"].get<double>(), host["step_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["step"]["host_s"].get<double>(),
                   host["step_s"].get<double>() + 16 * host["per_sequence_s"].get<double>());
}

TEST(StepFit, BadInputsNameTheFlag) {
  ExpectRun(std::string("step fit") + kCost + " --points /nonexistent.csv", 1, "--points");
  const std::string bad = WriteTemp("bad.csv", "batch,k,context,step_ms\n1,0,5,x\n");
  ExpectRun(std::string("step fit") + kCost + " --points " + bad, 1, "bad.csv:2:");
  const std::string host = WriteTemp("bad-host.json", "{\"step_s\": 1e-3}");
  ExpectRun(std::string("estimate") + kCost + " --s 4 --c 0 --host-file " + host, 1, "--host-file");
}

}  // namespace
}  // namespace specplan
