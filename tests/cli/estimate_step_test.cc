// `specplan estimate` with a drafter architecture (cli/estimate_command.cc): the engine's whole
// step in --json (its terms, the plain step, against the step model in-process on the same
// profile), --draft-steps, --topk, the host overrides, refused flags, and the speedup with
// --acceptance over a small step trace written here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "costmodel/cost_spec.h"
#include "costmodel/step/step_model.h"
#include "planner/acceptance/engine_acceptance.h"
#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

const std::string kBase = "estimate --model llama-3.1-8b --gpu h100 --engine vllm ";

nlohmann::json Json(const std::string& args) {
  nlohmann::json j;
  RunJson(kBase + args + " --json", &j);
  return j;
}

void ExpectTermsSum(const nlohmann::json& step) {
  const double sum = step["verify_s"].get<double>() + step["draft_s"].get<double>() +
                     step["sample_s"].get<double>() + step["host_s"].get<double>();
  EXPECT_EQ(step["step_s"].get<double>(), sum) << step.dump();
}

TEST(EstimateStep, JsonStepTermsSumAndAreTheStepModels) {
  const nlohmann::json j = Json("--drafter eagle3 --b 64 --s 4 --c 1024");
  ASSERT_TRUE(j.contains("step")) << j.dump();
  const nlohmann::json& step = j["step"];
  for (const char* key : {"verify_s", "draft_s", "sample_s", "host_s", "step_s"}) {
    ASSERT_TRUE(step[key].is_number()) << key;
    EXPECT_GT(step[key].get<double>(), 0) << key;
  }
  ExpectTermsSum(step);
  EXPECT_EQ(step["drafter"], "eagle3");
  EXPECT_EQ(step["draft_steps"], 3);
  EXPECT_EQ(step["topk"], 1);
  EXPECT_EQ(step["draft_forwards"], 3);
  EXPECT_EQ(step["draft_priced_by"], "kernel tables");
  EXPECT_EQ(step["host"]["step_s"], 1.207e-3);
  ASSERT_TRUE(j["ar_step_s"].is_number());
  EXPECT_EQ(j["ar_step_s"], j["ar_step"]["step_s"]);
  ExpectTermsSum(j["ar_step"]);
  EXPECT_EQ(j["ar_step"]["draft_s"], 0.0);
  EXPECT_LT(j["ar_step_s"].get<double>(), step["step_s"].get<double>());

  // The same profile in-process: the step model's numbers, bit for bit through JSON.
  costmodel::CostSpec spec;
  spec.profile_path = j["profile"].get<std::string>();
  spec.engine = "vllm";
  auto resolved = costmodel::ResolveCost(spec);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  auto model = costmodel::StepModel::Create(resolved->model.get(), resolved->model_spec,
                                            resolved->gpu_spec, &resolved->drafters, "vllm", {});
  ASSERT_TRUE(model.ok()) << model.status();
  const costmodel::StepBreakdown want = model->Step(64, 4, 1024);
  EXPECT_EQ(step["verify_s"].get<double>(), want.verify_s);
  EXPECT_EQ(step["draft_s"].get<double>(), want.draft_s);
  EXPECT_EQ(step["sample_s"].get<double>(), want.sample_s);
  EXPECT_EQ(step["host_s"].get<double>(), want.host_s);
  EXPECT_EQ(j["ar_step_s"].get<double>(), model->ArStep(64, 1024).step_s());
}

TEST(EstimateStep, TextShowsTheStepAndItsShares) {
  ExpectSucceeds({{kBase + "--b 8 --s 4 --c 1024",
                   "step (eagle3, D = 3, topk = 1; draft priced by kernel tables): verify "},
                  {kBase + "--b 8 --s 4 --c 1024", "plain decoding step "},
                  {kBase + "--b 8 --s 4 --c 1024", "    shares: verify "},
                  {kBase + "--s 4 --c 1024 --drafter ngram", "draft priced by host only"}});
}

TEST(EstimateStep, DraftStepsAndTopkChangeTheDraftForwards) {
  const nlohmann::json chain = Json("--b 8 --s 4 --c 1024");
  const nlohmann::json longer = Json("--b 8 --s 4 --c 1024 --draft-steps 5");
  EXPECT_EQ(longer["step"]["draft_forwards"], 5);
  EXPECT_EQ(longer["step"]["draft_steps"], 5);
  EXPECT_GT(longer["step"]["draft_s"].get<double>(), chain["step"]["draft_s"].get<double>());
  EXPECT_EQ(longer["step"]["verify_s"], chain["step"]["verify_s"]);  // the pass is the same
  EXPECT_GT(longer["step"]["sample_s"].get<double>(), chain["step"]["sample_s"].get<double>());

  const nlohmann::json tree = Json("--b 8 --s 4 --c 1024 --topk 4");
  EXPECT_EQ(tree["step"]["topk"], 4);
  EXPECT_EQ(tree["step"]["draft_forwards"], 3);
  EXPECT_GT(tree["step"]["draft_s"].get<double>(), chain["step"]["draft_s"].get<double>());

  const nlohmann::json none = Json("--b 8 --s 4 --c 1024 --draft-steps 0");
  EXPECT_EQ(none["step"]["draft_forwards"], 0);
  EXPECT_EQ(none["step"]["draft_s"], 0.0);
  ExpectTermsSum(none["step"]);
}

TEST(EstimateStep, DrafterChoosesHowDraftingIsPriced) {
  EXPECT_EQ(Json("--s 4 --c 1024 --drafter mtp")["step"]["draft_priced_by"], "kernel tables");
  EXPECT_EQ(Json("--s 4 --c 1024 --drafter draft:llama-3.2-1b")["step"]["draft_priced_by"],
            "roofline");
  EXPECT_EQ(Json("--s 4 --c 1024 --drafter eagle3 --draft-vocab 64000")["step"]["draft_priced_by"],
            "roofline");
  const nlohmann::json ngram = Json("--b 4 --s 4 --c 1024 --drafter ngram");
  EXPECT_EQ(ngram["step"]["draft_priced_by"], "host only");
  // The n-gram proposal: vLLM's fraction of the verify pass, as drafting; the host term is the
  // plain step's.
  EXPECT_DOUBLE_EQ(ngram["step"]["draft_s"].get<double>(),
                   0.005875 * ngram["step"]["verify_s"].get<double>());
  EXPECT_DOUBLE_EQ(ngram["step"]["host_s"].get<double>(), 1.207e-3);
  const nlohmann::json given = Json("--s 4 --c 1024 --t-net-ms 2");
  EXPECT_EQ(given["step"]["draft_priced_by"], "given");
  EXPECT_DOUBLE_EQ(given["step"]["draft_s"].get<double>(), 2e-3);
  // A cost class is the planner's cycle only: no step.
  EXPECT_FALSE(Json("--s 4 --c 1024 --drafter parallel").contains("step"));
}

TEST(EstimateStep, HostOverridesReplaceTheEnginesDefaults) {
  const nlohmann::json j = Json(
      "--b 16 --s 4 --c 1024 --host-step-ms 2 --host-per-seq-ms 0.01 --sample-ms 0.1 "
      "--host-per-draft-ms 0");
  const nlohmann::json& step = j["step"];
  EXPECT_DOUBLE_EQ(step["host"]["step_s"].get<double>(), 2e-3);
  EXPECT_DOUBLE_EQ(step["host_s"].get<double>(), 2e-3 + 16 * 1e-5);
  EXPECT_DOUBLE_EQ(step["sample_s"].get<double>(), 1e-4 * (1 + 3));
  EXPECT_THAT(step["host"]["provenance"].get<std::string>(),
              HasSubstr("given on the command line"));
  EXPECT_DOUBLE_EQ(j["ar_step"]["host_s"].get<double>(), 2e-3 + 16 * 1e-5);
  // The per-forward host time is gone from drafting.
  const nlohmann::json defaults = Json("--b 16 --s 4 --c 1024");
  EXPECT_NEAR(defaults["step"]["draft_s"].get<double>() - step["draft_s"].get<double>(),
              3 * 0.355e-3, 1e-12);
}

TEST(EstimateStep, BadDrafterFlagsAreRefusedByName) {
  const std::string trace = WriteTemp("estimate_step_trace.jsonl", kTwoRequestStepTrace);
  ExpectRefused({
      Refused(kBase + "--s 4 --c 1024 --drafter nonsense",
              "--drafter nonsense: unknown (known: eagle, eagle3, mtp, draft:MODEL, block:MODEL, "
              "ngram, "
              "suffix); or a cost class: ar, parallel, causal"),
      Refused(kBase + "--s 4 --c 1024 --drafter draft:qwen3-0.6b",
              "--drafter draft:qwen3-0.6b: its vocabulary (151936)"),
      Refused(kBase + "--s 4 --c 1024 --topk 0", "--topk 0: must be in [1, 64]"),
      Refused(kBase + "--s 4 --c 1024 --draft-steps 65", "--draft-steps 65"),
      Refusal{kBase + "--s 4 --c 1024 --host-step-ms 2000",
              "--host-step-ms: value = 2000: must be in [0, 1000] (ms)", kAnyFailure, ""},
      Refused(kBase + "--s 5 --c 1024 --acceptance " + trace,
              "--s 5: a chain of 4 drafts, but --acceptance " + trace +
                  " holds positions up to 3 (pass --s 4 or less)"),
      Refused(
          kBase + "--s 4 --c 1024 --acceptance " + ::testing::TempDir() + "/no-such-trace.jsonl",
          "--acceptance"),
  });
}

TEST(EstimateStep, AcceptanceGivesTheSpeedupOverThePlainStep) {
  const std::string trace = WriteTemp("estimate_step_trace.jsonl", kTwoRequestStepTrace);
  auto acceptance = planner::LoadEngineAcceptance(trace);
  ASSERT_TRUE(acceptance.ok()) << acceptance.status();
  for (int s : {2, 3, 4}) {
    SCOPED_TRACE(s);
    const nlohmann::json j =
        Json("--b 8 --c 1024 --s " + std::to_string(s) + " --acceptance " + trace);
    ASSERT_TRUE(j.contains("speedup")) << j.dump();
    EXPECT_EQ(j["acceptance"]["format"], "step-trace");
    EXPECT_EQ(j["acceptance"]["k"], s - 1);
    const double tokens = j["acceptance"]["tokens_per_step"].get<double>();
    EXPECT_EQ(tokens, acceptance->TokensPerStep(s - 1));
    EXPECT_DOUBLE_EQ(j["speedup"].get<double>(),
                     tokens * j["ar_step_s"].get<double>() / j["step"]["step_s"].get<double>());
  }
  EXPECT_EQ(Json("--b 8 --c 1024 --s 4 --acceptance " + trace)["acceptance"]["tokens_per_step"],
            2.5);
  ExpectSucceeds({{kBase + "--b 8 --s 4 --c 1024 --acceptance " + trace,
                   "tokens per step at K = 3 -> speedup "}});
}

// CUDA-graph buckets (costmodel/step/cuda_graphs.h): vLLM's ladder at K = 3 pads 65 requests (260
// tokens) to the 272-token graph and leaves 64 (256) as it is; --cuda-graphs off prices the exact
// pass; bad values are refused naming the flag.
TEST(EstimateStep, CudaGraphBucketsPadTheVerifyPass) {
  auto verify = [](const std::string& args) {
    return Json("--drafter eagle3 --s 4 --c 1024 " + args)["step"]["verify_s"].get<double>();
  };
  EXPECT_EQ(verify("--b 64"), verify("--b 64 --cuda-graphs off"));
  EXPECT_GT(verify("--b 65"), verify("--b 65 --cuda-graphs off"));
  EXPECT_LT(verify("--b 65"), verify("--b 68"));  // the padded rows hold no context
  EXPECT_EQ(verify("--b 68"), verify("--b 68 --cuda-graphs off"));
  // Sizes given as the engine names them: 65 requests (260 tokens) above a 256-token ladder run
  // eagerly, and with 100 us per launch the launches (32 layers x 10 x 100 us = 32 ms) bound the
  // pass; the per-token host term still counts the real tokens.
  const double per_token =
      Json("--drafter eagle3 --s 4 --c 1024 --b 1")["step"]["host"]["verify_per_token_s"]
          .get<double>();
  EXPECT_NEAR(
      verify("--b 65 --cudagraph-capture-sizes 64,128,256 --eager-launch-us 100") - per_token * 260,
      0.032, 1e-9);
  EXPECT_NEAR(verify("--b 1 --enforce-eager --eager-launch-us 100") - per_token * 4, 0.032, 1e-9);
  // At the default 10 us the launches (3.2 ms) are below the pass: eager changes nothing.
  EXPECT_EQ(verify("--b 1 --disable-cuda-graph"), verify("--b 1 --cuda-graphs off"));
  // The JSON and the text say which graph ran.
  const nlohmann::json padded = Json("--drafter eagle3 --s 4 --c 1024 --b 65");
  EXPECT_EQ(padded["cuda_graph"]["ladder"], "vllm");
  EXPECT_EQ(padded["cuda_graph"]["graphed"], true);
  EXPECT_EQ(padded["cuda_graph"]["padded_requests"], 68);
  EXPECT_EQ(Json("--drafter eagle3 --s 4 --c 1024 --b 129")["cuda_graph"]["graphed"], false);
  EXPECT_FALSE(
      Json("--drafter eagle3 --s 4 --c 1024 --b 65 --cuda-graphs off").contains("cuda_graph"));
  ExpectRun(kBase + "--drafter eagle3 --s 4 --c 1024 --b 65", 0,
            "cuda graph (vllm ladder): 65 x 4 tokens run the graph of 68 requests (padded)");
  ExpectRun(kBase + "--s 4 --c 1024 --cuda-graphs maybe", kAnyFailure, "--cuda-graphs");
  ExpectRun(kBase + "--drafter eagle3 --s 4 --c 1024 --cuda-graph-sizes 8,4", kAnyFailure,
            "cuda_graph_sizes[1] = 4: must be above the size before it (8)");
  ExpectRun(kBase + "--s 4 --c 1024 --eager-launch-us -1", kAnyFailure, "--eager-launch-us");
}

}  // namespace
}  // namespace specplan
