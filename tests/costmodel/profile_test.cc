#include "costmodel/profile/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "costmodel/cost_spec.h"
#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/per_term_latency.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "tests/costmodel/cost_test_util.h"
#include "tests/util/temp_dir.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<LatencySample> GridSamples() {
  const RooflineLatency r(*LookupModel("qwen3-4b"), *LookupGpu("a100"));
  const PerTermLatency truth(r, {1.8, 0.8e-3, 1.4, 2.5});
  std::mt19937_64 rng(42);
  std::normal_distribution<double> eps(0, 0.01);
  std::vector<LatencySample> out;
  for (int64_t c : {64, 256, 1024}) {
    for (int64_t s : {1, 4, 16, 64, 256, 1024}) {
      for (int rep = 0; rep < 2; ++rep)
        out.push_back({s, c, truth.VerifySeconds(s, c) * (1 + eps(rng))});
    }
  }
  return out;
}

Profile Fitted() {
  FitOptions options;
  options.heldout_fraction = 0.25;
  auto p = FitProfile(*LookupModel("qwen3-4b"), *LookupGpu("a100"), GridSamples(), options);
  EXPECT_TRUE(p.ok()) << p.status();
  p->device_name = "synthetic";
  p->timer = "external";
  p->software["generator"] = "profile_test";
  return *p;
}

fs::path TempDir() { return test::FreshTestDir("specplan_profile_test_"); }

TEST(Profile, FitScoresEveryModelAndPicksACalibratedDefault) {
  const Profile p = Fitted();
  ASSERT_TRUE(p.linear && p.per_term && p.overlap && p.kernel_sum && p.table);
  for (const char* kind : {"roofline", "linear", "per_term", "overlap", "kernel_sum", "table"}) {
    ASSERT_TRUE(p.heldout.count(kind)) << kind;
    EXPECT_TRUE(std::isfinite(p.heldout.at(kind).mape)) << kind;
    EXPECT_GT(p.heldout.at(kind).n, 0);
  }
  EXPECT_NE(p.default_model, "roofline");
  EXPECT_LT(p.heldout.at("per_term").mape, 0.03);
  EXPECT_LT(p.heldout.at("per_term").mape, p.heldout.at("roofline").mape);
  int held = 0;
  for (const auto& s : p.samples) held += s.heldout;
  EXPECT_EQ(held, p.heldout.at("roofline").n);
  // Cross-validation runs over the fitted samples, leave-one-out at this size; the default is the
  // calibrated model with the lowest cross-validated MAPE.
  EXPECT_EQ(p.cv_method, "leave-one-out");
  double best = 1e9;
  std::string best_kind;
  for (const char* kind : {"linear", "per_term", "overlap", "kernel_sum"}) {
    ASSERT_TRUE(p.cv.count(kind)) << kind;
    EXPECT_EQ(p.cv.at(kind).n, static_cast<int64_t>(p.samples.size()) - held) << kind;
    if (p.cv.at(kind).mape < best) {
      best = p.cv.at(kind).mape;
      best_kind = kind;
    }
  }
  EXPECT_EQ(p.default_model, best_kind);
  EXPECT_FALSE(p.cv.count("table"));  // a table cannot lose a cell and stay a grid
}

TEST(Profile, HoldoutZeroFitsEverySampleAndStillCrossValidates) {
  auto p = FitProfile(*LookupModel("qwen3-4b"), *LookupGpu("a100"), GridSamples());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->heldout.empty());
  for (const ProfileSample& x : p->samples) EXPECT_FALSE(x.heldout);
  ASSERT_TRUE(p->cv.count(p->default_model)) << p->default_model;
  EXPECT_EQ(p->cv.at(p->default_model).n, static_cast<int64_t>(GridSamples().size()));
  FitOptions bad;
  bad.heldout_fraction = 1;
  auto refused = FitProfile(*LookupModel("qwen3-4b"), *LookupGpu("a100"), GridSamples(), bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("heldout_fraction = 1"));
}

// Regression (issue 14): from these 7 points of an A100 x Qwen3-8B set the non-negative linear fit
// has slope a = 0, and FitProfile wrote a profile the loader then refused
// ("models.linear.a = 0: must be > 0"). Degenerate fits are now dropped with a note.
TEST(Profile, DegenerateFitsAreDroppedSoEveryFittedProfileLoads) {
  const std::vector<LatencySample> samples = {{16, 0, 9.0e-3},  {32, 0, 9.0e-3},  {64, 0, 9.0e-3},
                                              {256, 0, 8.9e-3}, {1, 511, 9.0e-3}, {1, 1023, 9.0e-3},
                                              {1, 2047, 9.0e-3}};
  const RooflineLatency roofline(*LookupModel("qwen3-8b"), *LookupGpu("a100"));
  auto lin = FitLinear(roofline, samples);
  ASSERT_TRUE(lin.ok());
  ASSERT_EQ(lin->a, 0) << "the data no longer reproduces the degenerate slope";

  auto p = FitProfile(*LookupModel("qwen3-8b"), *LookupGpu("a100"), samples);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->linear.has_value());
  EXPECT_THAT(p->notes, ::testing::Contains(HasSubstr("linear: dropped: models.linear.a = 0")));
  EXPECT_NE(p->default_model, "linear");
  const fs::path dir = TempDir();
  const std::string path = (dir / "degenerate.json").string();
  ASSERT_TRUE(SaveProfile(*p, path).ok());
  auto loaded = LoadProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->notes, p->notes);
  EXPECT_TRUE(MakeLatencyModel(*loaded).ok());
  fs::remove_all(dir);
}

TEST(Profile, ScatteredSamplesSkipTheTableWithANote) {
  std::vector<LatencySample> samples = GridSamples();
  samples.erase(samples.begin());  // (s = 1, c = 64) twice: drop both, the grid has a hole
  samples.erase(samples.begin());
  auto p = FitProfile(*LookupModel("qwen3-4b"), *LookupGpu("a100"), samples);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->table.has_value());
  EXPECT_THAT(
      p->notes,
      ::testing::Contains(HasSubstr("table: skipped: samples: no measurement at (s = 1, c = 64)")));
}

TEST(Profile, ProfilesWithoutTheNewKeysStillLoad) {
  nlohmann::json j = ProfileToJson(Fitted());
  j["models"].erase("overlap");
  j["models"].erase("kernel_sum");
  for (const char* key : {"cv", "cv_method", "provenance", "notes"}) j.erase(key);
  if (j["default_model"] == "overlap" || j["default_model"] == "kernel_sum") {
    j["default_model"] = "per_term";
  }
  auto p = ProfileFromJson(j);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->cv.empty());
  EXPECT_EQ(p->provenance, "");
}

TEST(Profile, ProvenanceRoundTrips) {
  Profile p = Fitted();
  p.provenance = "derived from public measurements: microsoft/vidur@7d47513";
  auto back = ProfileFromJson(ProfileToJson(p));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->provenance, p.provenance);
  EXPECT_THAT(DescribeFit(*back), HasSubstr("source   derived from public measurements"));
}

TEST(Profile, JsonRoundTripIsLossless) {
  const Profile p = Fitted();
  const nlohmann::json j = ProfileToJson(p);
  auto back = ProfileFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ProfileToJson(*back), j);
  for (const char* kind : {"roofline", "linear", "per_term", "overlap", "kernel_sum", "table"}) {
    auto a = MakeLatencyModel(p, kind);
    auto b = MakeLatencyModel(*back, kind);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_DOUBLE_EQ((*a)->VerifySeconds(33, 700), (*b)->VerifySeconds(33, 700)) << kind;
    EXPECT_EQ((*a)->Kind(), kind);
  }
}

TEST(Profile, SaveLoadAndAtomicReplace) {
  const fs::path dir = TempDir();
  const std::string path = (dir / "a100-80g" / "qwen3-4b-bf16.json").string();
  Profile p = Fitted();
  ASSERT_TRUE(SaveProfile(p, path).ok());
  auto loaded = LoadProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(ProfileToJson(*loaded), ProfileToJson(p));

  p.device_name = "second";
  ASSERT_TRUE(SaveProfile(p, path).ok());
  EXPECT_EQ(LoadProfile(path)->device_name, "second");
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir / "a100-80g")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);

  // A failing write (parent "directory" is a regular file) leaves the old profile intact.
  const std::string blocker = (dir / "blocker").string();
  std::ofstream(blocker) << "x";
  EXPECT_FALSE(SaveProfile(p, blocker + "/p.json").ok());
  EXPECT_EQ(LoadProfile(path)->device_name, "second");
  fs::remove_all(dir);
}

struct Corruption {
  std::string name;
  std::function<void(nlohmann::json&)> mutate;
  std::string expect;  // substring of the error
};

TEST(Profile, EveryMalformedClassIsRejectedWithTheField) {
  const nlohmann::json good = ProfileToJson(Fitted());
  ASSERT_TRUE(ProfileFromJson(good).ok());
  std::vector<Corruption> cases = {
      {"not an object", [](nlohmann::json& j) { j = nlohmann::json::array(); },
       "expected a JSON object"},
      {"wrong format", [](nlohmann::json& j) { j["format"] = "other"; }, "format = 'other'"},
      {"wrong version", [](nlohmann::json& j) { j["version"] = 99; }, "version = 99"},
      {"missing gpu", [](nlohmann::json& j) { j.erase("gpu"); }, "gpu: missing"},
      {"bad dtype", [](nlohmann::json& j) { j["dtype"] = "int4"; }, "int4"},
      {"dtype mismatch", [](nlohmann::json& j) { j["dtype"] = "fp32"; }, "model_spec.dtype"},
      {"gpu_spec negative", [](nlohmann::json& j) { j["gpu_spec"]["mem_bw"] = -1; },
       "gpu_spec.mem_bw = -1"},
      {"model_spec zero", [](nlohmann::json& j) { j["model_spec"]["layers"] = 0; },
       "model_spec.layers = 0"},
      {"model_spec type", [](nlohmann::json& j) { j["model_spec"]["vocab"] = "big"; },
       "model_spec.vocab"},
      {"unknown timer", [](nlohmann::json& j) { j["timer"] = "sundial"; }, "timer = 'sundial'"},
      {"software type", [](nlohmann::json& j) { j["software"]["cuda"] = 13; }, "software.cuda"},
      {"linear nan", [](nlohmann::json& j) { j["models"]["linear"]["a"] = nullptr; },
       "models.linear.a"},
      {"linear slope", [](nlohmann::json& j) { j["models"]["linear"]["a"] = -2.0; },
       "models.linear.a = -2"},
      // Regression (profile_fuzzer): a 100x faster gpu_spec under a fitted negative intercept
      // made the linear model predict negative seconds, which the loader accepted.
      {"linear negative floor",
       [](nlohmann::json& j) {
         j["models"]["linear"]["b_s"] = -1e-3;
         j["gpu_spec"]["mem_bw"] = j["gpu_spec"]["mem_bw"].get<double>() * 100;
       },
       "models.linear.b_s = -0.001: predicts -"},
      {"per_term negative", [](nlohmann::json& j) { j["models"]["per_term"]["weights"] = -0.5; },
       "models.per_term.weights = -0.5"},
      {"per_term missing", [](nlohmann::json& j) { j["models"]["per_term"].erase("compute"); },
       "models.per_term.compute: missing"},
      {"unknown model", [](nlohmann::json& j) { j["models"]["magic"] = nlohmann::json::object(); },
       "models.magic"},
      {"table ragged", [](nlohmann::json& j) { j["models"]["table"]["seconds"][1].erase(0); },
       "models.table.seconds[1]"},
      {"table grid order", [](nlohmann::json& j) { j["models"]["table"]["s"][1] = 1; },
       "models.table.s[1] = 1"},
      {"table zero", [](nlohmann::json& j) { j["models"]["table"]["seconds"][0][0] = 0.0; },
       "models.table.seconds[0][0] = 0"},
      {"default unknown", [](nlohmann::json& j) { j["default_model"] = "oracle"; },
       "default_model = 'oracle'"},
      {"default absent",
       [](nlohmann::json& j) {
         j["default_model"] = "linear";
         j["models"].erase("linear");
       },
       "models.linear is missing"},
      {"heldout negative", [](nlohmann::json& j) { j["heldout"]["linear"]["mape"] = -1; },
       "heldout.linear.mape = -1"},
      {"cv negative", [](nlohmann::json& j) { j["cv"]["overlap"]["rmse_s"] = -1; },
       "cv.overlap.rmse_s = -1"},
      {"overlap p", [](nlohmann::json& j) { j["models"]["overlap"]["p"] = 0.5; },
       "models.overlap.p = 0.5: must be finite and >= 1"},
      {"overlap tile", [](nlohmann::json& j) { j["models"]["overlap"]["tile"] = 0; },
       "models.overlap.tile = 0: must be in [1, 4096]"},
      {"overlap tile huge",
       [](nlohmann::json& j) { j["models"]["overlap"]["tile"] = int64_t{1} << 62; },
       "models.overlap.tile = 4611686018427387904"},
      {"overlap negative", [](nlohmann::json& j) { j["models"]["overlap"]["gemm"] = -1; },
       "models.overlap.gemm = -1"},
      {"kernel_sum p", [](nlohmann::json& j) { j["models"]["kernel_sum"]["p"] = 0.5; },
       "models.kernel_sum.p = 0.5: must be finite and >= 1"},
      {"kernel_sum attention_tile",
       [](nlohmann::json& j) { j["models"]["kernel_sum"]["attention_tile"] = 0; },
       "models.kernel_sum.attention_tile = 0: must be in [1, 65536]"},
      {"kernel_sum tile", [](nlohmann::json& j) { j["models"]["kernel_sum"]["tile"] = 5000; },
       "models.kernel_sum.tile = 5000: must be in [1, 4096]"},
      {"kernel_sum negative", [](nlohmann::json& j) { j["models"]["kernel_sum"]["verify"] = -2; },
       "models.kernel_sum.verify = -2: must be >= 0"},
      {"kernel_sum missing", [](nlohmann::json& j) { j["models"]["kernel_sum"].erase("decode"); },
       "models.kernel_sum.decode: missing"},
      {"provenance type", [](nlohmann::json& j) { j["provenance"] = 3; }, "provenance = 3"},
      {"notes type", [](nlohmann::json& j) { j["notes"] = {1}; }, "notes[0] = 1"},
      {"sample s", [](nlohmann::json& j) { j["samples"][3]["s"] = 0; }, "samples[3].s = 0"},
      {"sample seconds null", [](nlohmann::json& j) { j["samples"][2]["seconds"] = nullptr; },
       "samples[2].seconds"},
      {"sample float s", [](nlohmann::json& j) { j["samples"][0]["s"] = 1.5; }, "samples[0].s"},
      {"samples type", [](nlohmann::json& j) { j["samples"] = 5; }, "samples: expected an array"},
  };
  // Both calibrated forms refuse a model whose GEMM and weight terms are both zero.
  for (const std::string form : {"overlap", "kernel_sum"}) {
    cases.push_back({form + " all zero",
                     [form](nlohmann::json& j) {
                       j["models"][form]["gemm"] = 0;
                       j["models"][form]["weights"] = 0;
                     },
                     "models." + form + ": gemm and weights are both 0"});
  }
  for (const Corruption& c : cases) {
    nlohmann::json j = good;
    c.mutate(j);
    auto p = ProfileFromJson(j);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.expect)) << c.name;
  }
}

TEST(Profile, UnreadableFilesAreErrorsNotCrashes) {
  const fs::path dir = TempDir();
  EXPECT_FALSE(LoadProfile((dir / "absent.json").string()).ok());
  std::ofstream(dir / "trunc.json") << "{\"format\": \"specplan.pro";
  auto p = LoadProfile((dir / "trunc.json").string());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr((dir / "trunc.json").string() + ":1:24: not valid JSON"));
  std::ofstream(dir / "nan.json") << "{\"format\": \"specplan.profile\",\n  \"version\": NaN}";
  p = LoadProfile((dir / "nan.json").string());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr((dir / "nan.json").string() + ":2:14: not valid JSON"));
  fs::remove_all(dir);
}

TEST(Profile, ResolvePrefersExplicitThenBundledThenRoofline) {
  const fs::path dir = TempDir();
  setenv("SPECPLAN_CALIB_DIR", dir.c_str(), 1);
  auto bare = ResolveModelOn("qwen3-4b", "a100", "");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->model->Kind(), "roofline");
  EXPECT_TRUE(bare->profile_path.empty());

  const Profile p = Fitted();
  const std::string bundled =
      BundledProfilePath(dir.string(), "a100-80g", "qwen3-4b", DType::kBFloat16);
  ASSERT_TRUE(SaveProfile(p, bundled).ok());
  auto found = ResolveModelOn("qwen3-4b", "a100", "");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->profile_path, bundled);
  EXPECT_EQ(found->model->Kind(), p.default_model);

  auto explicit_ok = ResolveModelOn("qwen3-4b", "a100-80g", bundled);
  ASSERT_TRUE(explicit_ok.ok()) << explicit_ok.status();
  auto mismatch = ResolveModelOn("qwen3-8b", "a100", bundled);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("qwen3-4b"));

  // A profile of a model outside the registry (calibrate's runtime "tiny" on "cpu") is found by
  // its own names; another unknown name is still an error.
  Profile tiny = p;
  tiny.model = tiny.model_spec.name = "tiny";
  tiny.gpu = tiny.gpu_spec.name = "my-box";
  const std::string tiny_path = (dir / "tiny.json").string();
  ASSERT_TRUE(SaveProfile(tiny, tiny_path).ok());
  auto by_own_name = ResolveModelOn("tiny", "my-box", tiny_path);
  ASSERT_TRUE(by_own_name.ok()) << by_own_name.status();
  EXPECT_EQ(by_own_name->model_spec.name, "tiny");
  EXPECT_FALSE(ResolveModelOn("tinyx", "my-box", tiny_path).ok());
  unsetenv("SPECPLAN_CALIB_DIR");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::costmodel
