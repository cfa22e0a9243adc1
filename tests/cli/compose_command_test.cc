// `specplan profiles compose` end to end: the files it writes, what it refuses, and that a refused
// run writes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "costmodel/profile/profile_json.h"
#include "run_command.h"

namespace specplan {
namespace {

namespace fs = std::filesystem;
using namespace ::specplan::testing;

fs::path Scratch(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("compose_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ComposeCommand, WritesOneProfileThatLoads) {
  const fs::path out = Scratch("one") / "p.json";
  auto r =
      RunSpecplan("profiles compose --kernels " + SourcePath("data/kernels/h100_sxm/vllm-0.24.0") +
                  " --model qwen3-8b --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("vllm 0.24.0 on h100-sxm"));
  auto p = costmodel::LoadProfile(out.string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->engine, "vllm");
  EXPECT_EQ(p->default_model, "table");
  // `specplan profiles --check` reads it as a vllm profile.
  r = RunSpecplan("profiles --check " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("vllm 0.24.0"));
}

TEST(ComposeCommand, OutDirWritesTheBundledNames) {
  const fs::path dir = Scratch("dir");
  auto r =
      RunSpecplan("profiles compose --kernels " + SourcePath("data/kernels/l40s/sglang-0.5.14") +
                  " --kernels " + SourcePath("data/kernels/l40s/trtllm-1.3.0rc20") +
                  " --model qwen3-8b,qwen3-4b --out-dir " + dir.string() + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
  for (const char* name : {"qwen3-8b-bf16@sglang.json", "qwen3-4b-bf16@sglang.json",
                           "qwen3-8b-bf16@trtllm.json", "qwen3-4b-bf16@trtllm.json"}) {
    EXPECT_TRUE(fs::exists(dir / "l40s" / name)) << name;
  }
  // The listing groups them by engine.
  r = RunSpecplan("profiles --dir " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("engine sglang"));
  EXPECT_THAT(r.output, HasSubstr("engine trtllm"));
}

TEST(ComposeCommand, BadInputWritesNothing) {
  const fs::path dir = Scratch("bad");
  // The second model fails: the first one's file must not appear either.
  auto r = RunSpecplan("profiles compose --kernels " +
                       SourcePath("data/kernels/h100_sxm/sglang-0.5.14") +
                       " --model qwen3-8b,llama-3.3-70b --out-dir " + dir.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("64/8/128"));
  EXPECT_FALSE(fs::exists(dir / "h100-sxm"));
  ExpectRefused({
      {"profiles compose --kernels " + SourcePath("data/kernels/h100_sxm/sglang-0.5.14") +
           " --model qwen3-8b,qwen3-4b --out " + (dir / "p.json").string(),
       "use --out-dir", kAnyFailure},
      {"profiles compose --kernels " + (dir / "nowhere").string() + " --model qwen3-8b --out " +
           (dir / "p.json").string(),
       "not a directory", kAnyFailure},
      {"profiles compose --kernels " + SourcePath("data/kernels/a100_sxm/sglang-0.5.10") +
           " --model qwen3-8b --no-extrapolate --out " + (dir / "p.json").string(),
       "largest measured kv_len 8191", kAnyFailure},
      {"profiles compose --kernels " + SourcePath("data/kernels/a100_sxm/sglang-0.5.10") +
           " --model qwen3-8b --engine specplan --out " + (dir / "p.json").string(),
       "--engine specplan", kAnyFailure},
  });
  EXPECT_FALSE(fs::exists(dir / "p.json"));
}

// `specplan profiles compare-kernels`: vLLM's H100 GEMM table against SGLang's (both
// aiconfigurator's) shares their shapes; a folder against itself agrees everywhere; bad folders
// and options are named.
TEST(CompareKernelsCommand, ReportsSharedShapesAndRefusesBadInput) {
  const std::string vllm = SourcePath("data/kernels/h100_sxm/vllm-0.24.0");
  const std::string sglang = SourcePath("data/kernels/h100_sxm/sglang-0.5.14");
  ExpectSucceeds({
      {"profiles compare-kernels --ours " + vllm + " --theirs " + sglang, "gemm: "},
      {"profiles compare-kernels --ours " + vllm + " --theirs " + sglang, "  m <= 16: "},
      {"profiles compare-kernels --ours " + vllm + " --theirs " + vllm,
       "median ours/theirs 1.000, geometric mean 1.000, 100 % within 10 %"},
  });
  nlohmann::json j;
  RunJson("profiles compare-kernels --ours " + vllm + " --theirs " + sglang + " --json", &j);
  const nlohmann::json& gemm = j["tables"]["gemm"];
  EXPECT_GT(gemm["summary"]["shapes"].get<int>(), 1000);
  EXPECT_EQ(gemm["shapes"].size(), gemm["summary"]["shapes"].get<size_t>());
  EXPECT_TRUE(gemm["bands"].contains("m > 512"));
  ExpectRefused({
      Refused("profiles compare-kernels --ours /no/such --theirs " + sglang, "--ours /no/such"),
      Refused("profiles compare-kernels --ours " + vllm + " --theirs /no/such",
              "--theirs /no/such"),
      Refused("profiles compare-kernels --ours " + vllm + " --theirs " + sglang + " --tolerance 0",
              "--tolerance 0: must be in (0, 10)"),
  });
}

}  // namespace
}  // namespace specplan

namespace specplan {
namespace {

// With --gpu alone the default is an engine-grade profile, and plan / plan-batch say which.
TEST(DefaultEngine, PlanAndPlanBatchNameTheProfileThatPricedThePass) {
  const std::string plan = "plan --marginals " + SourcePath("examples/marginals.json");
  ExpectSucceeds({
      {plan + " --model qwen3-8b --gpu h100 --c 1024 --n-max 64",
       "(table latency model, profile h100-sxm/qwen3-8b-bf16@sglang)"},
      {plan + " --model qwen3-8b --gpu h100 --c 1024 --n-max 64 --engine specplan --json",
       "\"profile\": \"h100-sxm/qwen3-8b-bf16\""},
      {"plan-batch --requests " + SourcePath("examples/batch_requests.jsonl") +
           " --model qwen3-8b --gpu l40s --engine trtllm --n-max 64",
       "profile l40s/qwen3-8b-bf16@trtllm)"},
      // A model without a profile: the bare roofline, and no profile named.
      {plan + " --model qwen3-32b --gpu h100 --c 1024 --n-max 64", "(roofline latency model)"},
  });
}

}  // namespace
}  // namespace specplan
