// ops/compose_op.h: the validator names fields; a profile composed for real from the repository's
// H100 SGLang kernel tables, written where asked and read back; nothing written inside a protected
// directory unless forced.
#include "ops/compose_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "costmodel/profile/profile_json.h"
#include "tests/paths/test_paths.h"
#include "tests/util/temp_dir.h"

namespace specplan::ops {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

ComposeRequest Request(const std::string& out_dir) {
  ComposeRequest req;
  req.kernel_dirs = {test_paths::SourceDir() + "/data/kernels/h100_sxm/sglang-0.5.14"};
  req.models = {"qwen3-8b"};
  req.out_dir = out_dir;
  // A small grid keeps the test fast; the defaults are exercised by the CLI's tests.
  req.options.b_grid = {1, 64};
  req.options.s_grid = {1, 8};
  req.options.c_grid = {0, 1024, 4096};
  req.options.drafters = {"none"};
  return req;
}

TEST(ComposeOp, ValidatorNamesFields) {
  ComposeRequest req = Request("/tmp/x");
  req.kernel_dirs.clear();
  EXPECT_EQ(Validate(req).message(), "kernel_dirs: none given");
  req = Request("/tmp/x");
  req.models.clear();
  EXPECT_EQ(Validate(req).message(), "models: none given");
  req = Request("/tmp/x");
  req.out_file = "/tmp/x.json";
  EXPECT_THAT(Validate(req).message(), HasSubstr("out_file /tmp/x.json and out_dir /tmp/x"));
  req = Request("");
  req.out_file = "/tmp/x.json";
  req.models = {"qwen3-8b", "llama-3.1-8b"};
  EXPECT_THAT(Validate(req).message(),
              HasSubstr("takes one kernel folder and one model (got 1 and 2)"));
  req = Request("/tmp/x");
  req.dtype = "int3";
  EXPECT_THAT(Validate(req).message(), HasSubstr("int3"));
  req = Request("/tmp/x");
  req.options.tp = 0;
  EXPECT_EQ(Validate(req).message(), "tp = 0: must be >= 1");
}

TEST(ComposeOp, ComposesWritesAndReadsBack) {
  const fs::path dir = test::FreshTestDir("compose_op_");
  auto r = Compose(Request(dir.string()));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->profiles.size(), 1u);
  const ComposedProfile& c = r->profiles[0];
  EXPECT_EQ(c.profile.engine, "sglang");
  EXPECT_EQ(c.path, (dir / "h100-sxm" / "qwen3-8b-bf16@sglang.json").string());
  EXPECT_FALSE(fs::exists(c.path)) << "Compose must not write";
  // 64 sequences in one pass cost more than one, and less than 64 passes.
  EXPECT_GT(c.t1_ms, 0);
  EXPECT_GT(c.t64_ms, c.t1_ms);
  EXPECT_LT(c.t64_ms, 64 * c.t1_ms);
  EXPECT_THAT(WrittenLine(c), HasSubstr("wrote " + c.path + ": sglang"));

  ASSERT_TRUE(Write(*r).ok());
  auto back = costmodel::LoadProfile(c.path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model, "qwen3-8b");
  EXPECT_EQ(back->engine, "sglang");
  const nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["profiles"][0]["path"], c.path);
  EXPECT_EQ(j["profiles"][0]["dtype"], "bf16");
  EXPECT_DOUBLE_EQ(j["profiles"][0]["t64_ms"].get<double>(), c.t64_ms);
}

TEST(ComposeOp, ProtectedDirectoryIsRefusedUnlessForced) {
  const fs::path dir = test::FreshTestDir("compose_op_");
  ComposeRequest req = Request(dir.string());
  req.protected_dirs = {dir.string()};
  auto refused = Compose(req);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("inside the shipped profiles directory"));
  EXPECT_TRUE(fs::is_empty(dir)) << "nothing is written on a refusal";
  req.force = true;
  auto forced = Compose(req);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_TRUE(Write(*forced).ok());
  EXPECT_TRUE(fs::exists(forced->profiles[0].path));
}

TEST(ComposeOp, ErrorsNameTheFolderAndModel) {
  ComposeRequest req = Request("");
  req.models = {"no-such-model"};
  auto r = Compose(req);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("sglang-0.5.14 x no-such-model: "));
  req = Request("");
  req.kernel_dirs = {"/nonexistent/kernels"};
  EXPECT_THAT(Compose(req).status().message(), HasSubstr("/nonexistent/kernels"));
}

}  // namespace
}  // namespace specplan::ops
