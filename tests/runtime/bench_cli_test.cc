// specplan-bench end to end: runs the built binary on the tiny random pair and checks the JSON
// report (one output per prompt, greedy outputs identical to AR's, metrics present), a batch run
// (--batch: batch fields, plain progress lines without a terminal), and
// --record-trace (a loadable trace of the first strategy's run; sampling refused).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "tests/paths/test_paths.h"
#include "tests/runtime/tool_test_util.h"
#include "whatif/trace.h"

namespace {

namespace fs = std::filesystem;

std::string Bench() { return specplan::runtime::testing::RuntimeTool("specplan-bench"); }

using specplan::runtime::testing::ReadText;
using specplan::runtime::testing::RunShell;
using BenchCliTest = specplan::runtime::testing::ToolTest;

TEST_F(BenchCliTest, TinyPairJsonReport) {
  const std::string prompts = Path("p.jsonl");
  std::ofstream(prompts) << "{\"ids\": [1, 2, 3, 1, 2, 3]}\n\n{\"ids\": [9, 8, 7, 6]}\n";
  const std::string out = Path("out.json");
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
}

// The shipped family (models/): {"text": ...} prompts through its tokenizer, the draft-heads
// strategies and merged with the heads' tree keep AR's tokens, and --print-text decodes them.
TEST_F(BenchCliTest, TextPromptsWithTheShippedFamily) {
  const fs::path bin_dir = ::specplan::test_paths::BinaryDir();
  if (!fs::exists(bin_dir / "tokenizer" / "specplan-tokenizer")) {
    GTEST_SKIP() << "built without the tokenizer (SPECPLAN_WITH_TOKENIZER=OFF)";
  }
  const fs::path models = fs::path(::specplan::test_paths::SourceDir()) / "models";
  const std::string prompts = Path("p.jsonl");
  std::ofstream(prompts) << "{\"text\": \"And God said, Let there be light\"}\n"
                         << "{\"text\": \"The quick brown fox\"}\n";
  const std::string out = Path("out.json");
  const std::string common = Bench() + " --target " + (models / "target").string() + " --draft " +
                             (models / "draft").string() + " --heads " +
                             (models / "heads").string() + " --tokenizer " +
                             (models / "tokenizer.model").string() + " --prompts " + prompts +
                             " --max-new-tokens 8 --threads 1";
  const std::string cmd = common + " --strategies ar,heads,causal,merged --merged-b heads " +
                          "--print-text --json " + out + " > /dev/null 2>&1";
  ASSERT_EQ(RunShell(cmd), 0) << cmd;
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  const auto& s = j.at("strategies");
  for (const char* name : {"heads", "causal", "merged"}) {
    EXPECT_EQ(s.at(name).at("greedy_equals_ar"), true) << name;
  }
  ASSERT_EQ(j.at("texts").size(), 2u);
  EXPECT_EQ(j["texts"][0]["prompt"], "And God said, Let there be light");
  EXPECT_FALSE(j["texts"][0]["output"].get<std::string>().empty());
  // The heads strategies without --heads are refused by name; text without --tokenizer too.
  EXPECT_NE(RunShell(Bench() + " --target " + (models / "target").string() +
                     " --strategies causal --prompts " + prompts + " > /dev/null 2>&1"),
            0);
}

// --batch 3 over 5 prompts: every strategy's outputs equal AR's, the batch fields are in the
// report, and without a terminal the progress is plain lines.
TEST_F(BenchCliTest, BatchRunReportsBatchFields) {
  const std::string out = Path("out.json");
  const std::string err = Path("err.txt");
  const std::string cmd = Bench() +
                          " --target random:tiny --draft truncate:2 --strategies "
                          "ar,fixed,bestfirst,batch --max-prompts 5 --batch 3 "
                          "--max-new-tokens 10 --threads 1 --json " +
                          out + " > /dev/null 2> " + err;
  ASSERT_EQ(RunShell(cmd), 0) << cmd;
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("batch"), 3);
  const auto& s = j.at("strategies");
  const auto& ar = s.at("ar").at("outputs");
  ASSERT_EQ(ar.size(), 5u);
  for (const char* name : {"fixed", "bestfirst", "batch"}) {
    EXPECT_EQ(s.at(name).at("outputs"), ar) << name;
    EXPECT_EQ(s.at(name).at("greedy_equals_ar"), true) << name;
  }
  for (const char* name : {"ar", "fixed", "bestfirst", "batch"}) {
    for (const char* key :
         {"tokens_per_s", "tpot_p50_s", "tpot_p99_s", "acceptance_rate", "tokens_per_iteration",
          "mean_tree_size", "undrafted_fraction", "passes", "mean_batch", "peak_rss_bytes"}) {
      EXPECT_TRUE(s.at(name).contains(key)) << name << "." << key;
    }
    EXPECT_LE(s.at(name).at("mean_batch").get<double>(), 3.0) << name;
    EXPECT_LE(s.at(name).at("tpot_p50_s").get<double>(), s.at(name).at("tpot_p99_s").get<double>())
        << name;
  }
  EXPECT_EQ(s.at("ar").at("undrafted_fraction"), 1.0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("batch: 5/5 prompts\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "a progress bar without a terminal";
}

TEST_F(BenchCliTest, BadPromptFileNamesTheLine) {
  const std::string prompts = Path("p.jsonl");
  std::ofstream(prompts) << "{\"ids\": [1, 2]}\n{\"ids\": [1, 999]}\n";
  const std::string err = Path("err.txt");
  const std::string cmd = Bench() + " --strategies ar --prompts " + prompts +
                          " --max-new-tokens 2 > /dev/null 2> " + err;
  EXPECT_NE(RunShell(cmd), 0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("p.jsonl:2: ids[1] = 999: must be an integer in [0, 256)"), std::string::npos)
      << text;
}

// --gpu prices the controllers with the target's bundled profile, chosen by --dtype, --engine and
// --latency-model through costmodel::ResolveCost (as the specplan CLI chooses one): the report
// names the profile and model; an engine without a file is refused; without --gpu or --profile
// T_verify is measured.
TEST_F(BenchCliTest, GpuPricesWithTheBundledProfileOfTheTarget) {
  const std::string target = ::specplan::test_paths::SourceDir() + "/tests/runtime/data/hf/qwen3";
  auto model = specplan::costmodel::ResolveModel(target);
  auto gpu = specplan::costmodel::ResolveGpu("cpu");
  ASSERT_TRUE(model.ok() && gpu.ok());
  specplan::costmodel::Profile p;
  p.gpu = gpu->name;
  p.model = model->name;
  p.dtype = specplan::costmodel::DType::kFloat32;
  p.gpu_spec = *gpu;
  p.model_spec = *model;
  p.model_spec.dtype = p.dtype;
  p.linear = specplan::costmodel::LinearCoefficients{2.0, 1e-4};
  p.default_model = "roofline";
  const std::string calib = Path("calib");
  ASSERT_TRUE(specplan::costmodel::SaveProfile(
                  p, specplan::costmodel::BundledProfilePath(calib, p.gpu, p.model, p.dtype))
                  .ok());
  const std::string prompts = Path("p.jsonl");
  std::ofstream(prompts) << "{\"ids\": [1, 2, 3, 1, 2, 3]}\n";
  const std::string out = Path("out.json");
  const std::string err = Path("err.txt");
  const std::string run = "SPECPLAN_CALIB_DIR=" + calib + " " + Bench() + " --target " + target +
                          " --draft truncate:1 --strategies ar,bestfirst --prompts " + prompts +
                          " --max-new-tokens 8 --threads 1 --dtype fp32 --json " + out;
  ASSERT_EQ(RunShell(run + " --gpu cpu --latency-model linear > /dev/null 2> " + err), 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(j.at("cost").at("latency_model"), "linear");
  EXPECT_EQ(j.at("cost").at("profile"), specplan::costmodel::ProfileId(p.gpu, p.model, p.dtype));
  EXPECT_EQ(j.at("cost").at("engine"), "specplan");
  EXPECT_EQ(j.at("strategies").at("bestfirst").at("greedy_equals_ar"), true);

  EXPECT_NE(RunShell(run + " --gpu cpu --engine sglang > /dev/null 2> " + err), 0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("--engine sglang: no profile for " + p.gpu + " x " + p.model),
            std::string::npos)
      << text;

  ASSERT_EQ(RunShell(run + " > /dev/null 2> " + err), 0);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(out)).at("cost"), "measured");
}

// A built-in runtime target is not a cost-model registry model: --gpu (which prices it from the
// registry) is refused naming both flags and what works instead.
TEST_F(BenchCliTest, GpuWithARuntimeOnlyTargetNamesBothFlags) {
  const std::string err = Path("err.txt");
  EXPECT_NE(RunShell(Bench() + " --target random:tiny --gpu h100 > /dev/null 2> " + err), 0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("--target random:tiny with --gpu h100: model: unknown name 'tiny'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--profile FILE"), std::string::npos) << text;
}

TEST_F(BenchCliTest, RecordTraceWritesALoadableTrace) {
  const std::string prompts = Path("p.jsonl");
  std::ofstream(prompts) << "{\"ids\": [1, 2, 3, 1, 2, 3]}\n{\"ids\": [9, 8, 7, 6]}\n";
  const std::string out = Path("out.json");
  const std::string trace_path = Path("trace.jsonl");
  const std::string cmd = Bench() +
                          " --target random:tiny --draft truncate:2 --strategies linear,ar"
                          " --prompts " +
                          prompts + " --max-new-tokens 12 --threads 1 --trace-nodes 24 --json " +
                          out + " --record-trace " + trace_path + " > /dev/null 2>&1";
  ASSERT_EQ(RunShell(cmd), 0) << cmd;
  auto trace = specplan::whatif::LoadTrace(trace_path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->header.target, "random:tiny");
  EXPECT_EQ(trace->header.draft, "truncate:2");
  EXPECT_EQ(trace->header.vocab, 256);
  EXPECT_NE(trace->header.source.find("--record-trace"), std::string::npos);
  EXPECT_FALSE(trace->header.created_utc.empty());
  nlohmann::json j = nlohmann::json::parse(std::ifstream(out));
  const auto& linear = j.at("strategies").at("linear");
  // The first listed strategy is recorded: one step per iteration.
  ASSERT_EQ(static_cast<int64_t>(trace->steps.size()), linear.at("iterations").get<int64_t>());
  const auto& outputs = linear.at("outputs");
  const size_t prompt_len[] = {6, 4};
  for (const auto& s : trace->steps) {
    ASSERT_GE(s.prompt, 0);
    ASSERT_LT(s.prompt, 2);
    const auto& o = outputs[s.prompt];
    const size_t root_at = static_cast<size_t>(s.c) - prompt_len[s.prompt];
    ASSERT_LT(root_at, o.size());
    EXPECT_EQ(o[root_at].get<int32_t>(), s.root);
    for (size_t i = 0; i < s.continuation.size(); ++i) {
      EXPECT_EQ(o[root_at + 1 + i].get<int32_t>(), s.continuation[i]);
    }
    EXPECT_LE(s.nodes->size(), 24);
  }
}

// With --batch 2 every recorded step names its verification pass: a pass holds at most 2 prompts,
// each once, and each prompt's passes increase with its context.
TEST_F(BenchCliTest, RecordTraceOfABatchRunRecordsThePasses) {
  const std::string trace_path = Path("trace.jsonl");
  const std::string cmd = Bench() +
                          " --target random:tiny --draft truncate:2 --strategies bestfirst"
                          " --max-prompts 5 --batch 2 --max-new-tokens 10 --threads 1"
                          " --trace-nodes 8 --record-trace " +
                          trace_path + " > /dev/null 2>&1";
  ASSERT_EQ(RunShell(cmd), 0) << cmd;
  auto trace = specplan::whatif::LoadTrace(trace_path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::map<int64_t, std::set<int64_t>> prompts_of_pass;
  std::map<int64_t, std::pair<int64_t, int64_t>> last;  // prompt -> (pass, c)
  for (const auto& s : trace->steps) {
    ASSERT_GE(s.pass, 0);
    EXPECT_TRUE(prompts_of_pass[s.pass].insert(s.prompt).second);
    if (last.count(s.prompt)) {
      EXPECT_GT(s.pass, last[s.prompt].first);
      EXPECT_GT(s.c, last[s.prompt].second);
    }
    last[s.prompt] = {s.pass, s.c};
  }
  bool shared = false;
  for (const auto& [pass, prompts] : prompts_of_pass) {
    EXPECT_LE(prompts.size(), 2u) << "pass " << pass;
    shared = shared || prompts.size() == 2;
  }
  EXPECT_TRUE(shared) << "no pass verified two prompts together";
  EXPECT_EQ(last.size(), 5u);
}

TEST_F(BenchCliTest, RecordTraceRefusesSampling) {
  const std::string trace_path = Path("trace.jsonl");
  const std::string err = Path("err.txt");
  const std::string cmd = Bench() + " --strategies linear --max-prompts 1 --max-new-tokens 4" +
                          " --temperature 0.8 --record-trace " + trace_path + " > /dev/null 2> " +
                          err;
  EXPECT_NE(RunShell(cmd), 0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("--record-trace needs greedy decoding, got --temperature = 0.8"),
            std::string::npos)
      << text;
  EXPECT_FALSE(fs::exists(trace_path));
}

}  // namespace

// --planner to an address where nothing listens: refused before the first step, naming it (a
// build without gRPC refuses it too, naming the flag and the address).
TEST_F(BenchCliTest, UnreachablePlannerIsAnErrorNamingTheAddress) {
  const std::string err = Path("err.txt");
  const std::string cmd = Bench() +
                          " --strategies bestfirst --max-prompts 1 --max-new-tokens 2 "
                          "--planner 127.0.0.1:1 --planner-connect-s 0.5 > /dev/null 2> " +
                          err;
  EXPECT_NE(RunShell(cmd), 0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("127.0.0.1:1"), std::string::npos) << text;
}
