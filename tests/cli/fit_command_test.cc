// Commands that write a profile (fit, fit --refit, profiles compose) never write into the shipped
// profiles directory (calib/) unless --force: they refuse, naming the path, --out and --force, and
// the shipped files keep their bytes. These tests never write into the real calib/.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "tests/cli/run_command.h"

namespace {

using namespace ::specplan::testing;
namespace fs = std::filesystem;

std::string Shipped(const std::string& rel) { return SourcePath("calib/" + rel); }

constexpr char kSamples[] =
    "s,c,latency_ms\n1,0,6.2\n16,0,6.3\n64,0,6.5\n256,0,7.6\n1,1023,6.29\n1,4095,6.38\n";

TEST(FitShipped, NewFitWithoutOutIsRefusedAndTheShippedProfileKeepsItsBytes) {
  const std::string csv = WriteTemp("shipped_fit.csv", kSamples);
  const std::string shipped = Shipped("h100-sxm/qwen3-8b-bf16.json");
  const std::string before = ReadAll(shipped);
  ASSERT_FALSE(before.empty()) << shipped;
  const std::string calib = specplan::costmodel::DefaultCalibDir();
  ExpectRefused({
      {"fit --model qwen3-8b --gpu h100 --from-samples " + csv,
       "no --out: default path " + calib +
           "/h100-sxm/qwen3-8b-bf16.json: inside the shipped "
           "profiles directory"},
      {"fit --model qwen3-8b --gpu h100 --from-samples " + csv,
       "pass --out FILE to write elsewhere, or --force to write there"},
      {"fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --out " +
           Shipped("h100-sxm/mine.json"),
       "--out " + Shipped("h100-sxm/mine.json") + ": inside the shipped profiles directory", 1,
       Shipped("h100-sxm/mine.json")},
      // A path that reaches calib/ through ".." is the same directory.
      {"fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --out " +
           SourcePath("docs/../calib/h100-sxm/mine.json"),
       "inside the shipped profiles directory", 1, Shipped("h100-sxm/mine.json")},
  });
  EXPECT_EQ(ReadAll(shipped), before);
}

TEST(FitShipped, RefitOfAShippedProfileNeedsOutOrForce) {
  const std::string shipped = Shipped("h100-sxm/qwen3-8b-bf16.json");
  const std::string before = ReadAll(shipped);
  ExpectRefused({{"fit --refit " + shipped, "--refit (no --out: writes over) " + shipped +
                                                ": inside the shipped profiles directory"}});
  EXPECT_EQ(ReadAll(shipped), before);
  // With --out the refit goes where the user says.
  const std::string out = ::testing::TempDir() + "/refit_of_shipped.json";
  fs::remove(out);
  ExpectRun("fit --refit " + shipped + " --out " + out, 0, "profile  " + out);
  EXPECT_TRUE(specplan::costmodel::LoadProfile(out).ok());
  EXPECT_EQ(ReadAll(shipped), before);
}

// A profiles directory named by $SPECPLAN_CALIB_DIR is protected the same way; --force writes
// there (a temporary directory here, never the real calib/).
TEST(FitShipped, ForceWritesIntoTheProfilesDirectory) {
  const std::string csv = WriteTemp("shipped_force.csv", kSamples);
  const std::string dir = ::testing::TempDir() + "/fit_shipped_calib";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(setenv("SPECPLAN_CALIB_DIR", dir.c_str(), 1), 0);
  const std::string path = dir + "/h100-sxm/qwen3-8b-bf16.json";
  ExpectRefused({{"fit --model qwen3-8b --gpu h100 --from-samples " + csv,
                  "no --out: default path " + path, 1, path}});
  ExpectRun("fit --model qwen3-8b --gpu h100 --from-samples " + csv + " --force", 0,
            "profile  " + path);
  EXPECT_TRUE(specplan::costmodel::LoadProfile(path).ok());
  unsetenv("SPECPLAN_CALIB_DIR");
}

TEST(FitShipped, ComposeIntoTheShippedDirectoryNeedsForce) {
  const std::string shipped = Shipped("h100-sxm/qwen3-8b-bf16@sglang.json");
  const std::string before = ReadAll(shipped);
  ASSERT_FALSE(before.empty()) << shipped;
  const std::string kernels = SourcePath("data/kernels/h100_sxm/sglang-0.5.14");
  ExpectRefused({
      {"profiles compose --kernels " + kernels + " --engine sglang --model qwen3-8b --out-dir " +
           SourcePath("calib"),
       "--out-dir writes " + SourcePath("calib") +
           "/h100-sxm/qwen3-8b-bf16@sglang.json: inside "
           "the shipped profiles directory"},
      {"profiles compose --kernels " + kernels + " --engine sglang --model qwen3-8b --out " +
           shipped,
       "--out " + shipped + ": inside the shipped profiles directory"},
  });
  EXPECT_EQ(ReadAll(shipped), before);
}

}  // namespace
