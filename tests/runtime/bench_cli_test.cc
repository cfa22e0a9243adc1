// specplan-bench end to end: runs the built binary on the tiny random pair and checks the JSON
// report (one output per prompt, greedy outputs identical to AR's, metrics present).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string Bench() { return std::string(SPECPLAN_BINARY_DIR) + "/runtime/specplan-bench"; }

int RunShell(const std::string& cmd) { return std::system(cmd.c_str()); }

TEST(BenchCliTest, TinyPairJsonReport) {
  const fs::path dir = fs::temp_directory_path() / ("specplan_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string prompts = (dir / "p.jsonl").string();
  std::ofstream(prompts) << "{\"ids\": [1, 2, 3, 1, 2, 3]}\n\n{\"ids\": [9, 8, 7, 6]}\n";
  const std::string out = (dir / "out.json").string();
  const std::string cmd = Bench() +
                          " --target random:tiny --draft truncate:2 --strategies "
                          "ar,linear,dynatree,bestfirst,lookup,merged --prompts " +
                          prompts + " --max-new-tokens 12 --threads 1 --json " + out +
                          " > /dev/null 2>&1";
  ASSERT_EQ(RunShell(cmd), 0) << cmd;
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  const auto& s = j.at("strategies");
  ASSERT_EQ(s.size(), 6u);
  const auto& ar = s.at("ar").at("outputs");
  ASSERT_EQ(ar.size(), 2u);
  EXPECT_EQ(ar[0].size(), 12u);
  for (const char* name : {"linear", "dynatree", "bestfirst", "lookup", "merged"}) {
    EXPECT_EQ(s.at(name).at("outputs"), ar) << name;
    EXPECT_EQ(s.at(name).at("greedy_equals_ar"), true) << name;
    for (const char* key :
         {"tokens_per_s", "speedup_vs_ar", "acceptance_rate", "tokens_per_iteration",
          "mean_committed_path_length", "iterations", "ttft_s", "tpot_s", "peak_rss_bytes"}) {
      EXPECT_TRUE(s.at(name).contains(key)) << name << "." << key;
    }
  }
  fs::remove_all(dir);
}

TEST(BenchCliTest, BadPromptFileNamesTheLine) {
  const fs::path dir =
      fs::temp_directory_path() / ("specplan_bench_bad_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string prompts = (dir / "p.jsonl").string();
  std::ofstream(prompts) << "{\"ids\": [1, 2]}\n{\"ids\": [1, 999]}\n";
  const std::string err = (dir / "err.txt").string();
  const std::string cmd = Bench() + " --strategies ar --prompts " + prompts +
                          " --max-new-tokens 2 > /dev/null 2> " + err;
  EXPECT_NE(RunShell(cmd), 0);
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("p.jsonl:2: ids[1] = 999: must be an integer in [0, 256)"), std::string::npos)
      << text;
  fs::remove_all(dir);
}

}  // namespace
