// `specplan schedule` (cli/schedule_command.cc) run as a real binary. The formats themselves are
// checked against the engines' documented lookup rules in tests/whatif/schedule_test.cc; here:
// the command end to end, --out, the summary, the engine each format defaults to, and errors that
// name the flag and value. The TensorRT-LLM YAML is also read with PyYAML's yaml.safe_load, the
// loader trtllm-serve uses for --extra_llm_api_options, where python3 has it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_command.h"

namespace specplan {
namespace {

using namespace ::specplan::testing;

const std::string kBase = "schedule --gpu h100 --model qwen3-8b --t-draft-ms 1 ";

TEST(ScheduleCommand, VllmJsonOnStdoutPricedByVllmsProfile) {
  auto r = RunSpecplan(kBase + "--format vllm --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);  // --quiet: stdout is the JSON alone
  const nlohmann::json& config = j.at("speculative_config");
  EXPECT_GE(config.at("num_speculative_tokens").get<int>(), 1);
  const nlohmann::json& table = config.at("num_speculative_tokens_per_batch_size");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(table.front()[0], 1);
  EXPECT_EQ(table.back()[1], 4096);
  EXPECT_EQ(j.at("specplan").at("profile"), "h100-sxm/qwen3-8b-bf16@vllm");
  EXPECT_EQ(j.at("specplan").at("engine"), "vllm");
  EXPECT_THAT(j.at("specplan").at("trace").at("path").get<std::string>(),
              HasSubstr("whatif/traces/family.jsonl"));
  EXPECT_EQ(j.at("specplan").at("expected_tokens_per_s").size(), 9u);
}

TEST(ScheduleCommand, SummaryGoesToStderrAndOutWritesTheFile) {
  const std::string out = ::testing::TempDir() + "/schedule_cli/sglang.json";
  std::remove(out.c_str());
  // --mkdir: the directory schedule_cli/ may not exist yet (a missing one is an error without it).
  auto r = RunSpecplan(kBase + "--format sglang --batch-sizes 1,8,64 --quiet --mkdir --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");  // with --out and --quiet nothing is printed
  const nlohmann::json j = nlohmann::json::parse(ReadAll(out));
  EXPECT_EQ(j.at("specplan").at("engine"), "sglang");
  EXPECT_EQ(j.at("sglang").at("ranges").front().at("batch_lo"), 1);
  EXPECT_EQ(j.at("specplan").at("replay").at("batch_sizes"), (std::vector<int>{1, 8, 64}));
  // Without --quiet the summary (stderr): the per-B table against the batch planner and the best
  // static setting; the schedule itself went to the file.
  auto s = RunSpecplan(kBase + "--format sglang --batch-sizes 1,8,64 --out " + out);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_THAT(s.output, Not(HasSubstr("\"sglang\"")));
  EXPECT_THAT(s.output, HasSubstr("profile h100-sxm/qwen3-8b-bf16@sglang (engine sglang"));
  EXPECT_THAT(s.output, HasSubstr("batch planner"));
  EXPECT_THAT(s.output, HasSubstr("best single static setting"));
  EXPECT_THAT(s.output, HasSubstr("wrote " + out));
}

TEST(ScheduleCommand, TrtllmYamlLoadsWithPyYaml) {
  const std::string out = ::testing::TempDir() + "/schedule_cli/trtllm.yaml";
  auto r = RunSpecplan(kBase + "--format trtllm --min-draft-len 1 --quiet --mkdir --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = ReadAll(out);
  EXPECT_THAT(text, HasSubstr("# cost: qwen3-8b on h100-sxm (bf16), profile "
                              "h100-sxm/qwen3-8b-bf16@trtllm"));
  EXPECT_THAT(text, HasSubstr("speculative_config:\n  max_draft_len: "));
  EXPECT_THAT(text, HasSubstr("PR #16888"));
  auto has_yaml = RunBinary("python3", "-c 'import yaml'");
  if (has_yaml.exit_code != 0) GTEST_SKIP() << "python3 with PyYAML is not installed";
  auto loaded = RunBinary(
      "python3",
      "-c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' " + out);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  const nlohmann::json j = nlohmann::json::parse(loaded.output);
  const nlohmann::json& spec = j.at("speculative_config");
  const nlohmann::json& schedule = spec.at("draft_len_schedule");
  ASSERT_TRUE(schedule.contains("1"));  // int keys, as json.dumps writes them
  EXPECT_EQ(schedule.at("1"), spec.at("max_draft_len"));
  // --min-draft-len 1: the last key covers every batch up to 4096 with K >= 1.
  ASSERT_TRUE(schedule.contains("4096"));
  EXPECT_GE(schedule.at("4096").get<int>(), 1);
}

TEST(ScheduleCommand, ErrorsNameTheFlagAndValue) {
  ExpectRefused({
      {kBase + "--format tgi",
       "specplan schedule: --format \"tgi\": unknown format (vllm, trtllm, sglang)"},
      {kBase, "--format is required", kAnyFailure},
      {kBase + "--format vllm --batch-sizes 1,x,8",
       "--batch-sizes 1,x,8: \"x\" must be a positive integer"},
      {kBase + "--format vllm --batch-sizes 2,4", "--batch-sizes 2,4: must start at 1"},
      {kBase + "--format sglang --min-draft-len 1",
       "--min-draft-len 1: applies to --format vllm and trtllm"},
      {"schedule --gpu h100 --model qwen3-8b --format vllm --engine foo", "--engine foo"},
      {kBase + "--format vllm --slo-ttft-ms 200",
       "--slo-ttft-ms: the schedule's replay keeps B requests in flight and has no arrivals"},
      {kBase + "--format vllm --slo-tpot-ms nan", "--slo-tpot-ms: value = nan", kAnyFailure},
  });
  // Nothing is written when the command fails.
  const std::string out = ::testing::TempDir() + "/schedule_cli/never.json";
  std::remove(out.c_str());
  ExpectRefused({{kBase + "--format vllm --batch-sizes 0 --mkdir --out " + out,
                  "\"0\" must be a positive integer", 1, out}});
}

// --slo-tpot-ms: the metadata names the SLO, each point its TPOT and whether it meets it.
TEST(ScheduleCommand, TpotSloInTheMetadata) {
  auto r = RunSpecplan(kBase + "--format vllm --batch-sizes 1,4,16,64 --slo-tpot-ms 8 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const nlohmann::json& m = j.at("specplan");
  EXPECT_DOUBLE_EQ(m.at("slo").at("tpot_s").get<double>(), 0.008);
  int last_met = 0;
  for (const nlohmann::json& p : m.at("expected_tokens_per_s")) {
    EXPECT_EQ(p.at("slo_met").get<bool>(), p.at("tpot_ms").get<double>() <= 8.0) << p.dump();
    if (p.at("slo_met").get<bool>()) last_met = p.at("batch").get<int>();
  }
  EXPECT_EQ(m.at("slo").at("max_batch"), last_met);
}

TEST(ScheduleCommand, ContextGridAddsTheRfcTableForVllmOnly) {
  auto r = RunSpecplan(kBase + "--format vllm --batch-sizes 1,64 --context-grid 0,16384 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(j.contains("speculative_config"));
  const nlohmann::json& table =
      j.at("speculative_config_context_axis").at("num_speculative_tokens_per_batch_size");
  ASSERT_FALSE(table.empty());
  for (const nlohmann::json& e : table) EXPECT_EQ(e.size(), 5u);
  EXPECT_EQ(j.at("specplan").at("context_axis").at("contexts"), (std::vector<int64_t>{0, 16384}));
  ExpectRefused({
      {kBase + "--format sglang --context-grid 0,1024",
       "--context-grid 0,1024: applies to --format vllm"},
      {kBase + "--format vllm --context-grid 0,lots",
       "--context-grid 0,lots: \"lots\": not a context length"},
      {kBase + "--format vllm --context-grid 512,1024",
       "--context-grid 512,1024: contexts: the grid starts at 512"},
  });
}

TEST(ScheduleCommand, HelpNamesEveryFlag) {
  auto r = RunSpecplan("schedule --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag :
       {"--format", "--gpu", "--model", "--engine", "--profile", "--trace", "--out",
        "--batch-sizes", "--n-max", "--t-draft-ms", "--draft-batch-growth", "--calibrate",
        "--min-draft-len", "--context-grid"}) {
    EXPECT_THAT(r.output, HasSubstr(flag));
  }
  EXPECT_THAT(r.output, Not(HasSubstr("--server")));
}

}  // namespace
}  // namespace specplan
