// ResolveCost: the engine a profile describes, in its JSON and in the choice of a bundled profile.
#include "costmodel/cost_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "tests/costmodel/cost_test_util.h"
#include "tests/util/temp_dir.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CostSpecTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::FreshTestDir("specplan_cost_spec_test_"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `p` where the bundled lookup finds it for its engine; returns the path.
  std::string Ship(const Profile& p) {
    const std::string path =
        BundledProfilePath(dir_.string(), "h100-sxm", "qwen3-8b", DType::kBFloat16, 1, p.engine);
    EXPECT_TRUE(SaveProfile(p, path).ok());
    return path;
  }
  CostSpec Spec(const std::string& engine = "") const {
    CostSpec spec;
    spec.model = "qwen3-8b";
    spec.gpu = "h100";
    spec.engine = engine;
    spec.calib_dir = dir_.string();
    return spec;
  }

  fs::path dir_;
};

TEST(Engine, NamesAliasesAndUnknownValues) {
  EXPECT_EQ(KnownEngines(), (std::vector<std::string>{"sglang", "vllm", "trtllm", "specplan"}));
  EXPECT_EQ(std::string(kRuntimeEngine), "specplan");
  EXPECT_EQ(*ParseEngine("SGLang"), "sglang");
  EXPECT_EQ(*ParseEngine("vllm"), "vllm");
  EXPECT_EQ(*ParseEngine("TensorRT-LLM"), "trtllm");
  EXPECT_EQ(*ParseEngine("trt-llm"), "trtllm");
  EXPECT_EQ(*ParseEngine("specplan"), "specplan");
  auto bad = ParseEngine("foo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "engine 'foo': unknown (known: sglang, vllm, trtllm, specplan)");
  EXPECT_FALSE(ParseEngine("").ok());
}

TEST(Engine, IdsAndPathsCarryEveryEngineButSpecplans) {
  EXPECT_EQ(ProfileId("h100-sxm", "qwen3-8b", DType::kBFloat16), "h100-sxm/qwen3-8b-bf16");
  EXPECT_EQ(ProfileId("h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "specplan"),
            "h100-sxm/qwen3-8b-bf16");
  EXPECT_EQ(ProfileId("h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "sglang"),
            "h100-sxm/qwen3-8b-bf16@sglang");
  EXPECT_EQ(ProfileId("h100-sxm", "llama-3.3-70b", DType::kBFloat16, 4, "vllm"),
            "h100-sxm/llama-3.3-70b-bf16-tp4@vllm");
  EXPECT_EQ(BundledProfilePath("calib", "h100-sxm", "qwen3-8b", DType::kBFloat16),
            "calib/h100-sxm/qwen3-8b-bf16.json");
  EXPECT_EQ(BundledProfilePath("calib", "h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "sglang"),
            "calib/h100-sxm/qwen3-8b-bf16@sglang.json");
  EXPECT_EQ(BundledProfilePath("calib", "h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "specplan"),
            "calib/h100-sxm/qwen3-8b-bf16.json");
}

TEST(CostErrorInNames, LeadingFieldBecomesTheFrontEndsName) {
  const std::vector<CostFieldName> names = {{"engine", "engine="}, {"profile_path", "profile="}};
  absl::Status s = CostErrorInNames(
      absl::NotFoundError("engine = 'sglang': no profile for x (or set profile_path)"), names);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "engine= sglang: no profile for x (or pass profile=)");
  EXPECT_EQ(CostErrorInNames(absl::InvalidArgumentError("tp = 3: must divide 64"),
                             {{"engine", "--engine"}, {"tp", "--tp"}})
                .message(),
            "--tp 3: must divide 64");
  // A field the table does not list, and a message without a leading field, pass unchanged.
  EXPECT_EQ(CostErrorInNames(absl::InvalidArgumentError("tp = 3: x"), names).message(),
            "tp = 3: x");
  EXPECT_EQ(CostErrorInNames(absl::InternalError("disk on fire"), names).message(), "disk on fire");
  EXPECT_TRUE(CostErrorInNames(absl::OkStatus(), names).ok());
}

TEST(ProfileNames, AModelOrGpuNamedByAFileStaysInsideTheCalibDir) {
  // An HF config (the file or its folder) stands by its folder's name, a GPU spec file by its stem;
  // an absolute path must not replace calib_dir.
  EXPECT_EQ(BundledProfilePath("calib", "cpu", "/m/hf/qwen3/config.json", DType::kFloat32),
            "calib/cpu/qwen3-fp32.json");
  EXPECT_EQ(BundledProfilePath("calib", "cpu", "/m/hf/qwen3/", DType::kFloat32),
            "calib/cpu/qwen3-fp32.json");
  EXPECT_EQ(BundledProfilePath("calib", "/specs/l4.json", "qwen3-8b", DType::kBFloat16, 2, "vllm"),
            "calib/l4/qwen3-8b-bf16-tp2@vllm.json");
}

TEST(Engine, JsonRoundTripAndDefault) {
  const Profile p = EngineProfile("sglang", 1.5, "0.5.14");
  const nlohmann::json j = ProfileToJson(p);
  EXPECT_EQ(j.at("engine"), "sglang");
  EXPECT_EQ(j.at("engine_version"), "0.5.14");
  auto back = ProfileFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->engine, "sglang");
  EXPECT_EQ(back->engine_version, "0.5.14");
  EXPECT_EQ(ProfileToJson(*back), j);

  // Files written before engines: specplan's runtime, no version.
  nlohmann::json old = j;
  old.erase("engine");
  old.erase("engine_version");
  auto runtime = ProfileFromJson(old);
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  EXPECT_EQ(runtime->engine, "specplan");
  EXPECT_EQ(runtime->engine_version, "");
  EXPECT_FALSE(ProfileToJson(*runtime).contains("engine_version"));  // written only when known

  // An alias is stored under its canonical name.
  nlohmann::json alias = j;
  alias["engine"] = "TensorRT-LLM";
  EXPECT_EQ(ProfileFromJson(alias)->engine, "trtllm");
}

TEST(Engine, BadValuesAreNamed) {
  const nlohmann::json good = ProfileToJson(EngineProfile("vllm", 1.2));
  nlohmann::json j = good;
  j["engine"] = "tgi";
  auto p = ProfileFromJson(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "engine = 'tgi': unknown (known: sglang, vllm, trtllm, specplan)");
  j = good;
  j["engine"] = 3;
  p = ProfileFromJson(j);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("engine"));
  j = good;
  j["engine_version"] = 0.5;
  p = ProfileFromJson(j);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("engine_version"));
}

TEST_F(CostSpecTest, NoEngineTakesTheFirstShippedInTheKnownOrder) {
  // Nothing shipped: the bare roofline, no engine.
  auto bare = ResolveCost(Spec());
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->model->Kind(), "roofline");
  EXPECT_EQ(bare->profile_path, "");
  EXPECT_EQ(bare->engine, "");

  const std::string runtime = Ship(EngineProfile("specplan", 1.4));
  auto r = ResolveCost(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile_path, runtime);
  EXPECT_EQ(r->engine, "specplan");
  EXPECT_EQ(r->profile_id, "h100-sxm/qwen3-8b-bf16");

  const std::string trtllm = Ship(EngineProfile("trtllm", 1.1));
  EXPECT_EQ(ResolveCost(Spec())->profile_path, trtllm);
  const std::string vllm = Ship(EngineProfile("vllm", 1.2, "0.11.0"));
  EXPECT_EQ(ResolveCost(Spec())->profile_path, vllm);
  const std::string sglang = Ship(EngineProfile("sglang", 1.3, "0.5.14"));
  r = ResolveCost(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile_path, sglang);
  EXPECT_EQ(r->engine, "sglang");
  EXPECT_EQ(r->engine_version, "0.5.14");
  EXPECT_EQ(r->profile_id, "h100-sxm/qwen3-8b-bf16@sglang");
  EXPECT_EQ(BundledEngines(dir_.string(), "h100-sxm", "qwen3-8b", DType::kBFloat16),
            (std::vector<std::string>{"sglang", "vllm", "trtllm", "specplan"}));
}

TEST_F(CostSpecTest, ANamedEngineTakesOnlyItsFile) {
  const std::string runtime = Ship(EngineProfile("specplan", 1.4));
  const std::string sglang = Ship(EngineProfile("sglang", 2.5, "0.5.14"));
  auto r = ResolveCost(Spec("specplan"));  // the file without "@"
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile_path, runtime);
  EXPECT_EQ(r->engine, "specplan");
  auto s = ResolveCost(Spec("SGLang"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->profile_path, sglang);
  EXPECT_EQ(s->engine, "sglang");
  // Different kernels, different costs.
  EXPECT_GT(s->model->VerifySeconds(64, 1024), 1.5 * r->model->VerifySeconds(64, 1024));
  // The profile's other models are reachable per engine.
  CostSpec linear = Spec("sglang");
  linear.latency_model = "linear";
  auto l = ResolveCost(linear);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->model->Kind(), "linear");
}

TEST_F(CostSpecTest, AMissingEngineIsNotFoundNeverTheRoofline) {
  Ship(EngineProfile("specplan", 1.4));
  Ship(EngineProfile("sglang", 2.5));
  const std::string vllm =
      BundledProfilePath(dir_.string(), "h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "vllm");
  auto r = ResolveCost(Spec("vllm"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "engine = 'vllm': no profile for h100-sxm x qwen3-8b (bf16) at " + vllm +
                "; shipped for this GPU and model: sglang, specplan (or set profile_path)");
  // The roofline was asked for by name: still not an engine's cost.
  CostSpec roofline = Spec("vllm");
  roofline.latency_model = "roofline";
  EXPECT_EQ(ResolveCost(roofline).status().code(), absl::StatusCode::kNotFound);
  // A fitted model of a missing engine names latency_model, the engine and the path.
  CostSpec linear = Spec("trtllm");
  linear.latency_model = "linear";
  auto l = ResolveCost(linear);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr("latency_model = 'linear': no profile for h100-sxm x qwen3-8b (bf16) of "
                        "engine trtllm at "));
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("qwen3-8b-bf16@trtllm.json"));

  // Nothing shipped at all: the list says so.
  fs::remove_all(dir_ / "h100-sxm");
  r = ResolveCost(Spec("specplan"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("engine = 'specplan': no profile for h100-sxm x qwen3-8b (bf16) at "));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("shipped for this GPU and model: none"));
  // Without an engine the old wording stands.
  CostSpec any = Spec();
  any.latency_model = "overlap";
  EXPECT_THAT(
      std::string(ResolveCost(any).status().message()),
      HasSubstr("latency_model = 'overlap': no profile for h100-sxm x qwen3-8b (bf16) at "));
}

TEST_F(CostSpecTest, AnExplicitProfileMustDescribeTheNamedEngine) {
  const std::string sglang = Ship(EngineProfile("sglang", 2.5, "0.5.14"));
  CostSpec spec = Spec("sglang");
  spec.profile_path = sglang;
  auto ok = ResolveCost(spec);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->engine, "sglang");
  EXPECT_EQ(ok->profile_id, "h100-sxm/qwen3-8b-bf16@sglang");
  spec.engine = "vllm";
  auto bad = ResolveCost(spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "engine = 'vllm': profile " + sglang + " describes engine 'sglang'");
  spec.engine = "";  // no engine: any profile file
  EXPECT_TRUE(ResolveCost(spec).ok());
}

TEST_F(CostSpecTest, UnknownEnginesAndMislabelledFilesAreRefused) {
  auto r = ResolveCost(Spec("tgi"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "engine = 'tgi': unknown (known: sglang, vllm, trtllm, specplan)");
  // A vllm profile saved under sglang's name: its costs are not sglang's.
  Profile vllm = EngineProfile("vllm", 1.2);
  const std::string path =
      BundledProfilePath(dir_.string(), "h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "sglang");
  ASSERT_TRUE(SaveProfile(vllm, path).ok());
  r = ResolveCost(Spec());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": engine = 'vllm': the file name says engine 'sglang'");
}

TEST_F(CostSpecTest, WithoutCalibDirTheDefaultCalibDirIsSearched) {
  // No calib_dir: DefaultCalibDir() (SPECPLAN_CALIB_DIR), with the engine rule of no engine named.
  setenv("SPECPLAN_CALIB_DIR", dir_.c_str(), 1);
  const std::string sglang = Ship(EngineProfile("sglang", 2.5));
  Ship(EngineProfile("specplan", 1.4));
  auto r = ResolveModelOn("qwen3-8b", "h100");
  unsetenv("SPECPLAN_CALIB_DIR");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile_path, sglang);
  EXPECT_EQ(r->engine, "sglang");
}

// ChooseProfile, the engine rule ResolveCost and the server's CostResolver share, over a lookup
// that holds no files: it records what it is asked and holds the engines in `held`.
TEST(ChooseProfileTest, AppliesTheEngineRuleOverAnyLookup) {
  std::vector<std::string> asked;
  std::vector<std::string> held = {"vllm", "specplan"};
  const ProfileLookup lookup = [&](const ProfileKey& key) -> absl::StatusOr<FoundProfile> {
    asked.push_back(key.engine);
    EXPECT_EQ(key.gpu, "h100-sxm");
    EXPECT_EQ(key.tp, 2);
    if (std::find(held.begin(), held.end(), key.engine) == held.end()) {
      return absl::NotFoundError(key.engine);
    }
    auto p = std::make_shared<Profile>();
    p->engine = key.engine;
    return FoundProfile{p, "id@" + key.engine, ""};
  };
  const ProfileKey none{"h100-sxm", "qwen3-8b", DType::kBFloat16, 2, ""};

  // No engine: KnownEngines() order, stopping at the first held.
  auto found = ChooseProfile(lookup, none);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->engine, "vllm");
  EXPECT_EQ(found->source, "id@vllm");
  EXPECT_EQ(asked, (std::vector<std::string>{"sglang", "vllm"}));

  // A preferred engine goes first when held, and is not asked twice when it is not.
  asked.clear();
  EXPECT_EQ(ChooseProfile(lookup, none, "specplan")->engine, "specplan");
  EXPECT_EQ(asked, (std::vector<std::string>{"specplan"}));
  EXPECT_EQ(EngineCandidates("", "trtllm"),
            (std::vector<std::string>{"trtllm", "sglang", "vllm", "specplan"}));
  EXPECT_EQ(ChooseProfile(lookup, none, "trtllm")->engine, "vllm");

  // A named engine: only that one, whatever is preferred.
  asked.clear();
  ProfileKey named = none;
  named.engine = "sglang";
  found = ChooseProfile(lookup, named, "vllm");
  EXPECT_TRUE(absl::IsNotFound(found.status())) << found.status();
  EXPECT_EQ(asked, (std::vector<std::string>{"sglang"}));
  EXPECT_EQ(HeldEngines(lookup, named), held);

  // An error other than NOT_FOUND stops the choice.
  const ProfileLookup broken = [](const ProfileKey&) -> absl::StatusOr<FoundProfile> {
    return absl::InvalidArgumentError("bad file");
  };
  EXPECT_EQ(ChooseProfile(broken, none).status(), absl::InvalidArgumentError("bad file"));
}

TEST_F(CostSpecTest, CalibDirLookupReadsTheBundledFile) {
  const std::string sglang = Ship(EngineProfile("sglang", 2.5));
  const ProfileLookup lookup = CalibDirLookup(dir_.string());
  auto found = lookup(ProfileKey{"h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "sglang"});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->source, sglang);
  EXPECT_EQ(found->profile->engine, "sglang");
  EXPECT_TRUE(absl::IsNotFound(
      lookup(ProfileKey{"h100-sxm", "qwen3-8b", DType::kBFloat16, 1, "vllm"}).status()));
}

}  // namespace
}  // namespace specplan::costmodel
