#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_command.h"
#include "tests/paths/test_paths.h"
#include "tests/server_process.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

const std::string kTrace = SourcePath("tests/whatif/data/small.jsonl");

TEST(WhatIfCommand, TableNamesOracleControllerAndSurrogate) {
  auto r = RunSpecplan("whatif --trace " + kTrace +
                       " --model qwen3-8b --gpu h100 --engine specplan --budgets 1,2,4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("qwen3-8b on h100"));
  EXPECT_THAT(r.output, HasSubstr("3 steps over 2 prompts (2 with marginals, 2 with nodes)"));
  for (const char* s : {"bestfirst", "controller", "scan", "dynatree", "fixed", "linear"}) {
    EXPECT_THAT(r.output, HasSubstr(s));
  }
  EXPECT_THAT(r.output, HasSubstr("oracle: bestfirst budget"));
  EXPECT_THAT(r.output, HasSubstr("of the oracle"));
  EXPECT_THAT(r.output, HasSubstr("surrogate: Pearson"));
}

TEST(WhatIfCommand, JsonRowsAndSummaries) {
  auto r =
      RunSpecplan("whatif --trace " + kTrace +
                  " --model qwen3-8b --gpu h100 --engine specplan --budgets 4,1,2 --strategies "
                  "bestfirst,controller,linear --json --per-step");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["model"], "qwen3-8b");
  EXPECT_THAT(j["gpu"].get<std::string>(), HasSubstr("h100"));
  EXPECT_EQ(j["trace"]["path"], kTrace);
  EXPECT_EQ(j["options"]["budgets"], nlohmann::json({1, 2, 4}));
  ASSERT_EQ(j["rows"].size(), 3u + 1u + 3u);
  for (const auto& row : j["rows"]) {
    for (const char* key : {"strategy", "budget", "accepted_per_step", "cycle_s", "speedup",
                            "mean_tree_size", "predicted_accepted_per_step", "steps_used"}) {
      ASSERT_TRUE(row.contains(key)) << key;
    }
    EXPECT_EQ(row["per_step"].size(), row["steps_used"].get<size_t>());
    EXPECT_EQ(row["steps_skipped"], 1);  // each strategy lacks its data on one fixture step
  }
  // Hand-worked (tests/whatif/sweep_test.cc): best_first accepted 0.5, 1, 2.5 at budgets 1, 2, 4.
  EXPECT_DOUBLE_EQ(j["rows"][0]["accepted_per_step"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["rows"][1]["accepted_per_step"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["rows"][2]["accepted_per_step"].get<double>(), 2.5);
  const int oracle = j["oracle"]["budget"];
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, j["rows"][i]["speedup"].get<double>());
  EXPECT_DOUBLE_EQ(j["oracle"]["speedup"].get<double>(), best);
  EXPECT_TRUE(oracle == 1 || oracle == 2 || oracle == 4);
  EXPECT_NEAR(j["controller"]["ratio_to_oracle"].get<double>(),
              j["controller"]["speedup"].get<double>() / best, 1e-12);
  EXPECT_TRUE(j["scan"].is_null());  // not requested
}

TEST(WhatIfCommand, DraftCostLowersSpeedup) {
  auto speedup = [](const std::string& extra) {
    auto r = RunSpecplan(
        "whatif --trace " + kTrace +
        " --model qwen3-8b --gpu h100 --engine specplan --budgets 4 --strategies best_first "
        "--json " +
        extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output)["rows"][0]["speedup"].get<double>();
  };
  const double free = speedup("");
  EXPECT_LT(speedup("--t-draft-ms 5"), free);
  EXPECT_LT(speedup("--t-aux-ms 5"), free);
}

TEST(WhatIfCommand, BadFlagsAndInputsNameTheCulprit) {
  struct Case {
    std::string args;
    const char* expect;
  };
  const std::string bad_line = WriteTemp(
      "whatif_bad.jsonl",
      R"({"format":"specplan.trace","version":1,"target":"t","draft":"d","vocab":50})"
      "\n"
      R"({"prompt":0,"c":1,"root":2,"continuation":[3],"marginals":{"tokens":[[3]],"probs":[[0.5]]}})"
      "\n"
      R"({"prompt":0,"c":1,"root":2,"continuation":[70],"marginals":{"tokens":[[3]],"probs":[[0.5]]}})"
      "\n");
  const Case cases[] = {
      {"--budgets 1,x", "--budgets 'x': not an integer"},
      {"--budgets 0", "--budgets '0': budget must be in [1, 8191]"},
      {"--strategies best_first,nope", "--strategies 'nope': unknown strategy"},
      {"--drafter warp", "--drafter warp: unknown (known: eagle, eagle3, mtp"},
      {"--trace /nonexistent/t.jsonl", "--trace"},
      {"--trace " + bad_line, "whatif_bad.jsonl:3: continuation[0] = 70"},
      {"--fixed-tau 2", "--fixed-tau"},
  };
  for (const Case& c : cases) {
    auto r =
        RunSpecplan("whatif --model qwen3-8b --gpu h100 " +
                    (c.args.rfind("--trace", 0) == 0 ? "" : "--trace " + kTrace + " ") + c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_THAT(r.output, HasSubstr(c.expect)) << c.args << "\n" << r.output;
  }
  auto r = RunSpecplan("whatif --trace " + kTrace + " --model nosuchmodel --gpu h100");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("nosuchmodel"));
}

TEST(WhatIfCommand, PlotWritesAPngAtomically) {
  const std::string out = ::testing::TempDir() + "/whatif_plot/sweep.png";
  // The plot's directory must exist (a writer never creates one unless --mkdir is given).
  std::filesystem::create_directories(::testing::TempDir() + "/whatif_plot");
  if (!ExpectPlotWritten("whatif --trace " + kTrace + " --model qwen3-8b --gpu h100", out)) {
    GTEST_SKIP() << "built without PLplot";
  }
  // No temp file is left next to it.
  auto ls = ::testing::TempDir() + "/whatif_plot";
  FILE* p = popen(("ls " + ls).c_str(), "r");
  char buf[4096] = {0};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, p);
  pclose(p);
  EXPECT_THAT(std::string(buf, n), Not(HasSubstr(".tmp")));
}

// --calibrate: the controller and scan plan with the surrogate calibrated online; the trained
// heads are under-confident, so the final scale is above 1 and the trees grow.
TEST(WhatIfCommand, CalibrateFlagCalibratesTheControllers) {
  const std::string base =
      "whatif --model qwen3-8b --gpu h100 --engine specplan --budgets 64 --strategies "
      "controller,scan --json";
  auto raw = RunSpecplan(base);
  auto cal = RunSpecplan(base + " --calibrate");
  ASSERT_EQ(raw.exit_code, 0) << raw.output;
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  const auto r = nlohmann::json::parse(raw.output);
  const auto c = nlohmann::json::parse(cal.output);
  EXPECT_EQ(r["options"]["calibrate"], false);
  EXPECT_EQ(c["options"]["calibrate"], true);
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(c["rows"][i]["params"].get<std::string>(), HasSubstr("calibrated: s="));
    EXPECT_GT(c["rows"][i]["mean_tree_size"].get<double>(),
              r["rows"][i]["mean_tree_size"].get<double>());
  }
  ExpectSucceeds(
      {{"whatif --model qwen3-8b --gpu h100 --engine specplan --t-draft-ms 1 "
        "--concurrency 1,8 --calibrate",
        "surrogate calibrated online: controller's final scale"}});
}

TEST(WhatIfCommand, BundledTraceIsTheDefault) {
  auto r = RunSpecplan("whatif --model qwen3-8b --gpu h100 --budgets 1,8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_THAT(j["trace"]["path"].get<std::string>(), HasSubstr("family.jsonl"));
  EXPECT_GT(j["trace"]["steps"].get<int>(), 0);
}

// The real server binary (tests/server_process.h) on a free loopback port with an empty
// profiles directory (so both sides use the bare roofline) or the one it is given.
class WhatIfServer {
 public:
  // Serves the profiles in `profiles_dir` ("" = an empty temporary directory).
  explicit WhatIfServer(const std::string& profiles_dir = "")
      : dir_(profiles_dir.empty() ? MakeTempDir() : profiles_dir),
        owns_dir_(profiles_dir.empty()),
        server_({"--listen", "127.0.0.1:0", "--profiles-dir", dir_, "--quiet"}) {}
  ~WhatIfServer() {
    if (owns_dir_) std::filesystem::remove_all(dir_);  // never a directory it was given
  }
  std::string address() const { return server_.address(); }
  bool binary_missing() const { return server_.binary_missing(); }

 private:
  static std::string MakeTempDir() {
    const std::string dir = ::testing::TempDir() + "/whatif_server_" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    return dir;
  }
  const std::string dir_;
  const bool owns_dir_;  // dir_ is a temporary directory made here
  test::ServerProcess server_;
};

TEST(WhatIfCommand, ServerOutputIsByteIdenticalToInProcess) {
  // The bundled profiles on both sides (the in-process CLI reads them by default).
  WhatIfServer server(::specplan::test_paths::SourceDir() + "/calib");
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string base = "whatif --trace " + kTrace + " --model qwen3-8b --gpu h100 ";
  const std::string runs[] = {
      base + "--budgets 1,2,4",
      base + "--budgets 4,1,2 --strategies best_first,controller,linear --json --per-step",
      base +
          "--budgets 1,3,8 --drafter ar --t-draft-ms 0.5 --t-aux-ms 0.2 "
          "--policy-forward-ms 0.3 --fixed-depth 3 --fixed-branch 2 --fixed-tau 0 --n-max 6 "
          "--dtype fp8 --json",
  };
  for (const std::string& args : runs) {
    const auto local = RunSpecplan(args);
    const auto remote = RunSpecplan(args + " --server " + server.address());
    ASSERT_EQ(local.exit_code, 0) << local.output;
    ASSERT_EQ(remote.exit_code, 0) << remote.output;
    EXPECT_EQ(local.output, remote.output) << args;
  }
  // Without --trace: the server's bundled trace, reported under its path, as in-process.
  const std::string bundled =
      "whatif --model qwen3-8b --gpu h100 --budgets 1,8 "
      "--strategies best_first,controller";
  for (const std::string& args : {bundled, bundled + " --calibrate --json"}) {
    const auto local = RunSpecplan(args);
    ASSERT_EQ(local.exit_code, 0) << local.output;
    const auto remote = RunSpecplan(args + " --server " + server.address());
    ASSERT_EQ(remote.exit_code, 0) << remote.output;
    EXPECT_EQ(local.output, remote.output) << args;
  }
  // The plot comes from the same report: the same PNG bytes.
  const std::string png_local = ::testing::TempDir() + "/whatif_local.png";
  const std::string png_remote = ::testing::TempDir() + "/whatif_remote.png";
  auto r = RunSpecplan(base + "--budgets 1,2,4 --plot " + png_local);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSpecplan(base + "--budgets 1,2,4 --plot " + png_remote + " --server " + server.address());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadAll(png_local), ReadAll(png_remote));
}

TEST(WhatIfCommand, ServerErrorsNameTheCulprit) {
  WhatIfServer server;
  if (server.binary_missing()) GTEST_SKIP() << "built without the gRPC service";
  ASSERT_FALSE(server.address().empty());
  const std::string bad_line = WriteTemp(
      "whatif_bad_remote.jsonl",
      R"({"format":"specplan.trace","version":1,"target":"t","draft":"d","vocab":50})"
      "\n"
      R"({"prompt":0,"c":1,"root":2,"continuation":[70],"marginals":{"tokens":[[3]],"probs":[[0.5]]}})"
      "\n");
  const std::string empty = WriteTemp("whatif_empty_remote.jsonl", "");
  struct Case {
    std::string args;
    std::string expect;
  };
  const Case cases[] = {
      {"--trace " + bad_line, "whatif_bad_remote.jsonl):2: continuation[0] = 70"},
      {"--trace " + empty, "whatif_empty_remote.jsonl: empty trace"},
      {"--trace /nonexistent/t.jsonl", "--trace /nonexistent/t.jsonl: no such file"},
      {"--trace " + kTrace + " --profile /x.json", "--profile and --latency-model are local"},
      {"--trace " + kTrace + " --latency-model linear", "--profile and --latency-model are local"},
      {"--trace " + kTrace + " --budgets 9000", "'9000': budget must be in [1, 8191]"},
  };
  for (const Case& c : cases) {
    auto r = RunSpecplan("whatif --model qwen3-8b --gpu h100 " + c.args + " --server " +
                         server.address());
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_THAT(r.output, HasSubstr(c.expect)) << c.args << "\n" << r.output;
  }
  auto r = RunSpecplan("whatif --trace " + kTrace + " --model nosuchmodel --gpu h100 --server " +
                       server.address());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("nosuchmodel"));
}

}  // namespace
}  // namespace specplan
