// Hostile input through the `specplan` command line (issue 55's probes): deeply nested JSON in
// every reader, endless and huge inputs, a directory, a missing or unreadable file, numbers that
// mean nothing (NaN, infinities, 1e308 ms, a 2^31 vocabulary), and writers pointed into the shipped
// profiles or at a directory that does not exist. Each probe must end in a named error with a
// failing exit status (1 from the command, 105 from the flag parser; not a signal, not the
// timeout's 124), within 10 s, writing nothing; and none of them may take 1 GB of memory (the
// largest resident size of the children this test waited for).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/run_command.h"

namespace specplan::testing {
namespace {

namespace fs = std::filesystem;

const std::string kTarget = "--model qwen3-8b --gpu h100";

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A scratch directory of this test process.
fs::path Scratch() {
  const fs::path dir = fs::temp_directory_path() / ("specplan_hostile_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const fs::path p = Scratch() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

struct Probe {
  std::string args;       // after `specplan`
  std::string message;    // a piece of the named error
  std::string unwritten;  // a path the probe must not create ("" for none)
};

// Runs each probe (under `timeout 20`, so a hang is a failure and not a stuck suite) and checks:
// a failing exit status below 124, the message, at most 10 s, nothing written.
void ExpectNamedErrors(const std::vector<Probe>& probes) {
  for (const Probe& p : probes) {
    SCOPED_TRACE(p.args);
    const auto t0 = std::chrono::steady_clock::now();
    const CommandResult r = RunBinary("timeout 20 " + SpecplanBinary(), p.args);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.exit_code > 0 && r.exit_code < 124)
        << r.exit_code << ": " << r.output.substr(0, 2000);
    EXPECT_THAT(r.output, HasSubstr(p.message));
    EXPECT_LT(seconds, 10.0);
    EXPECT_LT(r.output.size(), 4000u) << "an error message must not quote a whole input";
    if (!p.unwritten.empty()) {
      EXPECT_FALSE(fs::exists(p.unwritten)) << p.unwritten << " was written";
    }
  }
}

// No child this process waited for (the probes, their shells) held 1 GB resident.
void ExpectUnderOneGigabyte() {
  rusage ru{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &ru), 0);
  EXPECT_LT(ru.ru_maxrss, 1024L * 1024L) << "KiB, the largest child";  // ru_maxrss is in KiB
}

TEST(HostileCli, NestedJsonIsRefusedByEveryReader) {
  // The repro (100,000 levels under root_token), and the same nesting in each reader.
  const std::string marginals = WriteFile("nested.json", "{\"root_token\":" + Nested(100000) + "}");
  const std::string line = WriteFile("nested.jsonl", "{\"c\": " + Nested(100000) + "}\n");
  const std::string deep = WriteFile("deep.json", Nested(100000));
  const std::string limit = "JSON nested deeper than 64 levels (the limit)";
  ExpectNamedErrors({
      {"plan --marginals " + marginals + " " + kTarget + " --c 1024 --n-max 256",
       marginals + ":1:78: " + limit, ""},
      {"plan-batch --requests " + line + " " + kTarget + " --n-max 64", limit, ""},
      {"merge --a " + deep + " --b " + deep, limit, ""},
      {"whatif --trace " + line + " " + kTarget, limit, ""},
      {"plan --marginals " + SourcePath("examples/marginals.json") + " " + kTarget +
           " --c 1024 --n-max 64 --profile " + deep,
       limit, ""},
      {"plan --marginals " + SourcePath("examples/marginals.json") + " " + kTarget +
           " --c 1024 --n-max 64 --host-file " + deep,
       limit, ""},
      {"plan --marginals " + SourcePath("examples/marginals.json") + " --model " + deep +
           " --gpu h100 --c 1024 --n-max 64",
       limit, ""},
  });
  ExpectUnderOneGigabyte();
}

TEST(HostileCli, EndlessHugeDirectoryMissingAndUnreadableInputs) {
  const fs::path dir = Scratch() / "a_directory";
  fs::create_directories(dir);
  // 65 MiB of a valid prefix: refused by its size, before it is parsed.
  const std::string huge = WriteFile("huge.json", "[" + std::string(65u << 20, ' ') + "]");
  const std::string missing = (Scratch() / "missing.json").string();
  const std::string plan = "plan " + kTarget + " --c 1024 --n-max 256 --marginals ";
  std::vector<Probe> probes = {
      {plan + "/dev/zero", "/dev/zero: more than the 64 MiB (67108864 bytes)", ""},
      {plan + huge, huge + ": more than the 64 MiB", ""},
      {plan + dir.string(), dir.string() + ": is a directory, not a file", ""},
      {plan + missing, missing + ": no such file", ""},
      {"plan-batch --requests " + dir.string() + " " + kTarget + " --n-max 64", "is a directory",
       ""},
  };
  const std::string locked = WriteFile("locked.json", "{}");
  chmod(locked.c_str(), 0);
  if (access(locked.c_str(), R_OK) != 0) {  // not root: the OS's reason is named
    probes.push_back({plan + locked, locked + ": cannot read: Permission denied", ""});
  }
  ExpectNamedErrors(probes);
  fs::remove(huge);
  ExpectUnderOneGigabyte();
}

TEST(HostileCli, NumbersThatMeanNothingAreRefused) {
  const std::string plan = "plan --marginals " + SourcePath("examples/marginals.json") + " " +
                           kTarget + " --c 1024 --n-max 256 ";
  const std::string batch = "plan-batch --requests " + SourcePath("examples/batch_requests.jsonl") +
                            " " + kTarget + " --n-max 64 ";
  ExpectNamedErrors({
      {plan + "--host-step-ms nan", "--host-step-ms: value = nan: must be in [0, 1000] (ms)", ""},
      {plan + "--sample-ms nan", "--sample-ms: value = nan", ""},
      {plan + "--host-per-seq-ms nan", "--host-per-seq-ms: value = nan", ""},
      {plan + "--host-per-draft-ms inf", "--host-per-draft-ms: value = inf", ""},
      {plan + "--t-aux-ms 1e308", "--t-aux-ms: value = 1e+308: must be in [0, 10000] (ms)", ""},
      {plan + "--t-draft-ms nan", "--t-draft-ms: value = nan", ""},
      {plan + "--draft-vocab 2147483647", "--draft-vocab", ""},
      {batch + "--max-ms-per-token nan", "--max-ms-per-token: value = nan", ""},
      {batch + "--max-ms-per-token 0", "--max-ms-per-token: value = 0: must be in (0, 10000] (ms)",
       ""},
      {"estimate " + kTarget + " --s 16 --c 1024 --t-net-ms nan", "--t-net-ms: value = nan", ""},
  });
}

// Replies sized from the request before they are built: an SGLang layout whose JSON would hold
// hundreds of millions of entries (it aborted with bad_alloc past 10 GB) is refused up front.
TEST(HostileCli, HugeLayoutsAreRefusedBeforeTheyAreBuilt) {
  const std::string batch = "plan-batch --requests " + SourcePath("examples/batch_requests.jsonl") +
                            " " + kTarget + " --n-max 512 --json --layout sglang ";
  ExpectNamedErrors({
      {batch + "--draft-token-num 8192",
       "--layout sglang: its JSON would hold 537198592 entries, over the limit of 16777216", ""},
      {batch + "--draft-token-num 8192 --tree-mask-mode FULL_MASK", "over the limit of 16777216",
       ""},
  });
  ExpectUnderOneGigabyte();
}

TEST(HostileCli, WritersAreGuardedAndNeverCreateDirectoriesUnasked) {
  const std::string shipped = SourcePath("calib/h100-sxm/hostile-probe.json");
  const std::string nodir = (Scratch() / "no" / "such" / "dir" / "x.json").string();
  const std::string points = WriteFile("points.csv", "batch,k,context,step_ms\n1,0,1024,10\n");
  const std::string step = "step fit " + kTarget + " --engine sglang --points " + points;
  const std::string schedule = "schedule --format sglang " + kTarget + " --quiet";
  const std::string whatif = "whatif " + kTarget + " --strategies ar";
  const std::string inside = "inside the shipped profiles directory";
  const std::string missing = "does not exist (pass --mkdir to create it)";
  ExpectNamedErrors({
      {step + " --out " + shipped, inside, shipped},
      {schedule + " --out " + shipped, inside, shipped},
      {whatif + " --plot " + SourcePath("calib/h100-sxm/hostile-probe.png"), inside,
       SourcePath("calib/h100-sxm/hostile-probe.png")},
      {schedule + " --out " + nodir, missing, Scratch() / "no"},
      {whatif + " --plot " + nodir + ".png", missing, Scratch() / "no"},
      {"schedule --format sglang " + kTarget + " --out " + Scratch().string(), "is a directory",
       ""},
  });
  // With --mkdir the directory is created and the schedule written.
  const CommandResult made = RunSpecplan(schedule + " --mkdir --out " + nodir);
  EXPECT_EQ(made.exit_code, 0) << made.output;
  EXPECT_TRUE(fs::exists(nodir));
  fs::remove_all(Scratch() / "no");
}

}  // namespace
}  // namespace specplan::testing
