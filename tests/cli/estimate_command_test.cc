#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "run_command.h"
#include "tests/paths/test_paths.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

TEST(EstimateCommand, JsonHasTheContractFields) {
  auto r =
      RunSpecplan("estimate --model qwen3-8b --gpu h100 --engine specplan --s 64 --c 1024 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  for (const char* key : {"flops", "bytes", "bound", "roofline_s", "predicted_s"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  const costmodel::RooflineLatency ref(*costmodel::LookupModel("qwen3-8b"),
                                       *costmodel::LookupGpu("h100-sxm"));
  const auto e = ref.Estimate(64, 1024);
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), e.terms.total_flops());
  EXPECT_DOUBLE_EQ(j["bytes"].get<double>(), e.terms.total_bytes());
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_DOUBLE_EQ(j["roofline_s"].get<double>(), e.seconds);
  EXPECT_GT(j["predicted_s"].get<double>(), 0);
  EXPECT_EQ(j["gpu"], "h100-sxm");
}

TEST(EstimateCommand, ComputeBoundAtLargeS) {
  auto r = RunSpecplan(
      "estimate --model llama-3.1-8b --gpu a100 --engine specplan --s 4096 --c 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["bound"], "compute");
}

TEST(EstimateCommand, CycleCostAddsDrafterClass) {
  auto r = RunSpecplan(
      "estimate --model qwen3-8b --gpu h100 --engine specplan --s 17 --c 512 --drafter ar --gamma "
      "4 --t-net-ms 1 "
      "--t-head-ms 0.5 --t-aux-ms 0.25 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_DOUBLE_EQ(j["cycle"]["draft_s"].get<double>(), 4 * 1.5e-3);
  EXPECT_NEAR(j["cycle"]["cycle_s"].get<double>(), 6e-3 + 0.25e-3 + j["predicted_s"].get<double>(),
              1e-12);
  EXPECT_EQ(j["cycle"]["n"], 16);
}

// --b B: one ragged pass of B sequences, each s tokens over c cached, priced by the profile's
// VerifyBatchSeconds; per sequence and per token besides. B = 1 prints what it always printed.
TEST(EstimateCommand, BatchOfSequencesInOnePass) {
  const std::string base = "estimate --model qwen3-8b --gpu h100 --engine specplan --s 16 --c 1024";
  auto plain = RunSpecplan(base);
  auto one = RunSpecplan(base + " --b 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(one.output, plain.output);
  EXPECT_THAT(plain.output, HasSubstr("s = 16 new tokens over c = 1024 cached\n"));
  EXPECT_THAT(plain.output, Not(HasSubstr("batch b =")));

  auto r = RunSpecplan(base + " --b 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  auto profile = costmodel::LoadProfile(::specplan::test_paths::SourceDir() +
                                        "/calib/h100-sxm/qwen3-8b-bf16.json");
  ASSERT_TRUE(profile.ok()) << profile.status();
  auto model = costmodel::MakeLatencyModel(*profile);
  ASSERT_TRUE(model.ok()) << model.status();
  const costmodel::BatchShape pass({{16, 1024}, {16, 1024}, {16, 1024}, {16, 1024}});
  const double want = (*model)->VerifyBatchSeconds(pass);
  EXPECT_EQ(j["b"], 4);
  EXPECT_DOUBLE_EQ(j["predicted_s"].get<double>(), want);
  EXPECT_DOUBLE_EQ(j["per_sequence_s"].get<double>(), want / 4);
  EXPECT_DOUBLE_EQ(j["per_token_s"].get<double>(), want / 64);
  EXPECT_DOUBLE_EQ(j["cycle"]["verify_s"].get<double>(), want);
  // A pass of 4 costs less than 4 passes of 1 (the weights stream once).
  const double single = (*model)->VerifySeconds(16, 1024);
  EXPECT_LT(want, 4 * single);
  // The roofline terms are the whole pass's: 4 x 16 tokens, the weights once.
  const auto one_json = nlohmann::json::parse(RunSpecplan(base + " --json").output);
  EXPECT_EQ(one_json["b"], 1);
  EXPECT_DOUBLE_EQ(j["bytes_terms"]["weights"].get<double>(),
                   one_json["bytes_terms"]["weights"].get<double>());
  EXPECT_NEAR(j["flops_terms"]["ffn"].get<double>(),
              4 * one_json["flops_terms"]["ffn"].get<double>(),
              1e-6 * j["flops_terms"]["ffn"].get<double>());

  auto text = RunSpecplan(base + " --b 4");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(
      text.output,
      HasSubstr("b = 4 sequences in one pass, each s = 16 new tokens over c = 1024 cached"));
  EXPECT_THAT(text.output, HasSubstr("  batch b = 4: "));
  EXPECT_THAT(text.output, HasSubstr("ms per sequence"));
  EXPECT_THAT(text.output, HasSubstr("ms per token (64 tokens)"));

  for (const char* bad : {"0", "-3"}) {
    auto e = RunSpecplan(base + " --b " + bad);
    EXPECT_EQ(e.exit_code, 1) << bad;
    EXPECT_THAT(e.output, HasSubstr(std::string("--b ") + bad + ": must be in [1, 65536]")) << bad;
  }
  auto remote = RunSpecplan(base + " --b 2 --server 127.0.0.1:1");
  EXPECT_EQ(remote.exit_code, 1);
  EXPECT_THAT(remote.output, HasSubstr("--b 2: local only"));
}

TEST(EstimateCommand, UnknownNamesFailListingKnownOnes) {
  auto r = RunSpecplan("estimate --model gpt-9 --gpu h100 --s 1 --c 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("gpt-9"));
  EXPECT_THAT(r.output, HasSubstr("qwen3-8b"));
  ExpectRefused({
      {"estimate --model qwen3-8b --gpu tpu9 --s 1 --c 0", "h100-sxm", kAnyFailure},
      {"estimate --model qwen3-8b --gpu h100 --s 0 --c 0", "--s", kAnyFailure},
  });
}

TEST(EstimateCommand, APassThatCannotFitIsRefusedOrWarnedWithTheNumbers) {
  ExpectRefused({{"estimate --model qwen3-8b --gpu h100 --s 1 --c 10000000",
                  "c = 10000000: the KV cache of 1e+07 tokens", 1}});
  const CommandResult warned =
      RunSpecplan("estimate --model qwen3-8b --gpu h100 --s 1 --c 10000000 --warn-memory");
  EXPECT_EQ(warned.exit_code, 0) << warned.output;
  EXPECT_THAT(warned.output, HasSubstr("warning: b = 1, s = 1, c = 10000000"));
}

TEST(EstimateCommand, ReadsHfConfigAndUserGpuSpec) {
  const std::string dir = ::testing::TempDir();
  {
    FILE* f = fopen((dir + "/config.json").c_str(), "w");
    fputs(R"({"model_type":"qwen2","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,
             "num_key_value_heads":2,"intermediate_size":128,"vocab_size":1000})",
          f);
    fclose(f);
    f = fopen((dir + "/gpu.json").c_str(), "w");
    fputs(R"({"name":"lab-gpu","peak_flops":1e13,"mem_bw":5e11,"mem_bytes":1.6e10})", f);
    fclose(f);
  }
  auto r = RunSpecplan("estimate --model " + dir + "/config.json --gpu " + dir +
                       "/gpu.json --s 8 --c 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["gpu"], "lab-gpu");
  EXPECT_EQ(j["latency_model"], "roofline");
}

TEST(ProfilesCommand, ChecksAProfileFile) {
  const std::string bad = ::testing::TempDir() + "/bad_profile.json";
  FILE* f = fopen(bad.c_str(), "w");
  fputs(R"({"format":"specplan.profile","version":7})", f);
  fclose(f);
  auto r = RunSpecplan("profiles --check " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("version = 7"));
}

// Passes of b = 4 sequences over the (s, c) grid {1, 64} x {0, 4096} ("b,s,c,latency_ms" rows):
// fitted beside b = 1 and b = 16 passes, and added to a profile of b = 1 passes.
constexpr char kBatch4Rows[] = "4,1,0,6.3\n4,64,0,8.1\n4,1,4096,7.0\n4,64,4096,11.2\n";
// A samples file refused at its line 2 (b = 0).
constexpr char kZeroBatchCsv[] = "b,s,c,seconds\n0,1,0,0.01\n";

// Samples with a b column fit with the rest; --score scores the written profile on other samples,
// and a bad --score file fails before anything is written.
TEST(FitCommand, BatchSamplesAndScoringOnOtherSamples) {
  const std::string rows = std::string("1,1,0,6.2\n1,64,0,6.5\n1,1,4096,6.4\n1,64,4096,7.3\n") +
                           kBatch4Rows +
                           "16,1,0,6.5\n16,64,0,19.0\n16,1,4096,9.1\n16,64,4096,30.5\n";
  const std::string csv = WriteTemp("fit_batch.csv", "b,s,c,latency_ms\n" + rows);
  const std::string score = WriteTemp("fit_score.csv",
                                      "b,s,c,latency_ms\n8,16,1024,7.4\n"
                                      "8,64,0,12.0\n");
  const std::string out = ::testing::TempDir() + "/fit_batch.json";
  auto r = RunSpecplan("fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --score " +
                       score + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("batches  b=1: 4, b=4: 4, b=16: 4"));
  EXPECT_THAT(r.output, HasSubstr("score    " + score + " (2 samples)"));
  EXPECT_THAT(r.output, HasSubstr("  roofline    MAPE"));
  EXPECT_THAT(r.output, HasSubstr("  table       MAPE"));  // a full grid per b: batch layers
  auto p = specplan::costmodel::LoadProfile(out);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->b_grid, (std::vector<int64_t>{4, 16}));

  const std::string bad_score = WriteTemp("fit_bad_score.csv", kZeroBatchCsv);
  const std::string unwritten = ::testing::TempDir() + "/fit_unwritten.json";
  ExpectRefused({{"fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --score " +
                      bad_score + " --out " + unwritten,
                  "--score: " + bad_score + ":2: b = 0", kAnyFailure, unwritten}});
}

// --refit --add-samples: batch passes measured later join a profile's own samples.
TEST(FitCommand, RefitAddsSamplesMeasuredApart) {
  const std::string single = WriteTemp("refit_single.csv",
                                       "s,c,latency_ms\n1,0,6.2\n64,0,6.5\n1,4096,6.4\n"
                                       "64,4096,7.3\n");
  const std::string batch =
      WriteTemp("refit_batch.csv", std::string("b,s,c,latency_ms\n") + kBatch4Rows);
  const std::string out = ::testing::TempDir() + "/refit_base.json";
  ASSERT_EQ(
      RunSpecplan("fit --model qwen3-8b --gpu h100 --from-samples " + single + " --out " + out)
          .exit_code,
      0);
  const std::string refit = ::testing::TempDir() + "/refit_added.json";
  auto r = RunSpecplan("fit --refit " + out + " --add-samples " + batch + " --out " + refit);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("batches  b=1: 4, b=4: 4"));
  EXPECT_THAT(r.output, HasSubstr("and 4 added from " + batch));
  auto p = specplan::costmodel::LoadProfile(refit);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->samples.size(), 8u);
  ASSERT_TRUE(p->table.has_value());
  EXPECT_EQ(p->table->b_grid, (std::vector<int64_t>{4}));

  // Only with --refit, and a bad file is named before anything is written.
  const std::string bad = WriteTemp("refit_bad.csv", kZeroBatchCsv);
  const std::string unwritten = ::testing::TempDir() + "/refit_unwritten.json";
  ExpectRefused({
      {"fit --model qwen3-8b --gpu h100 --from-samples " + single + " --add-samples " + batch +
           " --out " + refit,
       "--add-samples: only with --refit", kAnyFailure},
      {"fit --refit " + out + " --add-samples " + bad + " --out " + unwritten,
       "--add-samples: " + bad + ":2: b = 0", kAnyFailure, unwritten},
  });
}

TEST(FitCommand, FitsExternalSamplesAndTheProfileServesEveryModel) {
  // Not a full (s, c) grid: the table is skipped, with a note.
  const std::string csv = WriteTemp("fit_samples.csv",
                                    "s,c,latency_ms\n1,0,6.2\n16,0,6.3\n64,0,6.5\n256,0,7.6\n"
                                    "1024,0,20.2\n1,1023,6.29\n1,4095,6.38\n1,16383,7.1\n");
  const std::string out = ::testing::TempDir() + "/fit_profile.json";
  auto r = RunSpecplan("fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --out " + out +
                       " --provenance 'derived from public measurements: test set, abc123'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(lowest leave-one-out MAPE)"));
  EXPECT_THAT(r.output, HasSubstr("  overlap     cv MAPE"));
  EXPECT_THAT(r.output, HasSubstr("note     table: skipped"));

  auto check = RunSpecplan("profiles --check " + out);
  ASSERT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output,
              HasSubstr("provenance: derived from public measurements: test set, abc123"));
  EXPECT_THAT(check.output, HasSubstr(" cv MAPE:"));

  for (const char* kind : {"roofline", "linear", "per_term", "overlap", "kernel_sum"}) {
    auto e = RunSpecplan(std::string("estimate --model qwen3-8b --gpu h100 --s 8 --c 512 --json ") +
                         "--profile " + out + " --latency-model " + kind);
    ASSERT_EQ(e.exit_code, 0) << kind << ": " << e.output;
    EXPECT_EQ(nlohmann::json::parse(e.output)["latency_model"], kind);
  }
  auto table = RunSpecplan("estimate --model qwen3-8b --gpu h100 --s 8 --c 512 --profile " + out +
                           " --latency-model table");
  EXPECT_NE(table.exit_code, 0);
  EXPECT_THAT(table.output,
              HasSubstr("--latency-model table: latency model 'table': not in this profile"));
  auto bad = RunSpecplan("fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --out " + out +
                         " --holdout 0.99");
  EXPECT_NE(bad.exit_code, 0);
}

TEST(FitCommand, RefitKeepsTheMeasurementMetadata) {
  const std::string csv = WriteTemp("refit_samples.csv",
                                    "s,c,latency_ms\n1,0,6.2\n16,0,6.3\n64,0,6.5\n256,0,7.6\n"
                                    "1024,0,20.2\n1,1023,6.29\n1,4095,6.38\n1,16383,7.1\n");
  const std::string first = ::testing::TempDir() + "/refit_first.json";
  ASSERT_EQ(RunSpecplan("fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --out " + first)
                .exit_code,
            0);
  // Dress it up as a measured profile, with a stale coefficient.
  nlohmann::json j;
  {
    std::ifstream in(first);
    in >> j;
  }
  j["timer"] = "cupti";
  j["device_name"] = "NVIDIA H100 80GB HBM3";
  j["software"] = {{"libtorch", "2.11.0"}};
  j["created_utc"] = "2026-01-02T03:04:05Z";
  j["provenance"] = "measured: test";
  j["models"]["linear"]["a"] = 123.0;
  const std::string measured = WriteTemp("refit_measured.json", j.dump(2));
  const std::string out = ::testing::TempDir() + "/refit_out.json";
  auto r = RunSpecplan("fit --refit " + measured + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(refit of " + measured + ")"));
  nlohmann::json back;
  {
    std::ifstream in(out);
    in >> back;
  }
  EXPECT_EQ(back["timer"], "cupti");
  EXPECT_EQ(back["device_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(back["software"]["libtorch"], "2.11.0");
  EXPECT_EQ(back["created_utc"], "2026-01-02T03:04:05Z");
  EXPECT_EQ(back["provenance"], "measured: test");
  EXPECT_EQ(back["samples"].size(), 8u);
  EXPECT_LT(back["models"]["linear"]["a"].get<double>(), 100.0);  // refitted, not copied
  EXPECT_THAT(back["notes"].dump(), HasSubstr("by `specplan fit --refit`"));
  // --refit takes everything from the profile.
  ExpectRefused({
      {"fit --refit " + measured + " --model qwen3-8b --out " + out,
       "--refit: takes the samples, model, GPU and provenance", kAnyFailure},
      {"fit --gpu h100 --out " + out, "--model, --gpu and --from-samples are required",
       kAnyFailure},
  });
}

TEST(LatencyModelFlag, PlanAndWhatIfTakeItAndNameItInErrors) {
  // No profile for qwen3-8b on a100 ships (calib/h100-sxm has one since the measured H100 sets):
  // only the roofline is available.
  auto est = RunSpecplan(
      "estimate --model qwen3-8b --gpu a100 --engine specplan --s 8 --c 512 "
      "--latency-model linear");
  EXPECT_NE(est.exit_code, 0);
  EXPECT_THAT(est.output, HasSubstr("--latency-model linear: no profile for a100-80g x qwen3-8b"));
  auto plan = RunSpecplan("plan --marginals " + ::specplan::test_paths::SourceDir() +
                          "/examples/marginals.json --model qwen3-8b --gpu a100 --c 0 --budget 8 "
                          "--engine specplan --latency-model per_term");
  EXPECT_NE(plan.exit_code, 0);
  EXPECT_THAT(plan.output, HasSubstr("--latency-model per_term: no profile"));
  auto ok = RunSpecplan("plan --marginals " + ::specplan::test_paths::SourceDir() +
                        "/examples/marginals.json --model qwen3-8b --gpu a100 --c 0 --budget 8 "
                        "--latency-model roofline --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto whatif = RunSpecplan(
      "whatif --model qwen3-8b --gpu a100 --engine specplan --budgets 1,2 --latency-model "
      "overlap");
  EXPECT_NE(whatif.exit_code, 0);
  EXPECT_THAT(whatif.output, HasSubstr("--latency-model overlap: no profile"));
}

// calib/a100-80g/llama-3.1-8b-bf16.json ships, derived from public measurements.
TEST(ShippedProfiles, A100Llama8bIsUsedAndNamesItsSource) {
  auto e = RunSpecplan(
      "estimate --model llama-3.1-8b --gpu a100 --engine specplan --s 64 --c 1024 --json");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const auto j = nlohmann::json::parse(e.output);
  EXPECT_THAT(j["profile"].get<std::string>(), HasSubstr("calib/a100-80g/llama-3.1-8b-bf16.json"));
  EXPECT_NE(j["latency_model"], "roofline");
  auto list = RunSpecplan("profiles");
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_THAT(list.output, HasSubstr("provenance: derived from public measurements: "
                                     "microsoft/vidur@7d47513363ec447a741ac5e47241580b47724fbf"));
}

// The shipped measured profiles say where they were measured (calibrate records no provenance
// string, so `profiles` reads it off the device, timer and pass mode).
TEST(ProfilesCommand, MeasuredProfilesShowTheirDeviceAndTimer) {
  const std::string dir = ::specplan::test_paths::SourceDir() + "/calib";
  auto r = RunSpecplan("profiles --dir " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("h100-sxm     qwen3-8b"));
  EXPECT_THAT(r.output, HasSubstr("default=kernel_sum"));
  EXPECT_THAT(r.output, HasSubstr("provenance: measured on NVIDIA H100 80GB HBM3 (timer cupti, "
                                  "cuda_graph_replay, 2026-11-23T"));
  EXPECT_THAT(r.output, HasSubstr("provenance: derived from public measurements"));
}

}  // namespace
}  // namespace specplan
