// Runs the built `specplan` binary in a shell and captures its output, for CLI tests, and the
// helpers every CLI test shares: tables of refused and of successful command lines, a command's
// JSON output, and a plot written. A test file says `using namespace ::specplan::testing;` to have
// them all, ReadAll, HasSubstr and Not too.
#ifndef SPECPLAN_TESTS_CLI_RUN_COMMAND_H_
#define SPECPLAN_TESTS_CLI_RUN_COMMAND_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/paths/test_paths.h"
#include "tests/run_binary.h"

namespace specplan::testing {

inline std::string SpecplanBinary() {
  return ::specplan::test_paths::BinaryDir() + "/cli/specplan";
}
inline std::string SourcePath(const std::string& rel) {
  return ::specplan::test_paths::SourceDir() + "/" + rel;
}

// `args` is appended to the binary path as shell words.
inline CommandResult RunSpecplan(const std::string& args) {
  return RunBinary(SpecplanBinary(), args);
}

// Writes `text` to ::testing::TempDir()/name and returns the path. CTest runs test cases in
// parallel processes, and several write the same file: it is written under a name of this
// process's own and renamed into place, so a reader never sees it half-written.
inline std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  const std::string staged = path + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(staged.c_str(), "w");
  fputs(text.c_str(), f);
  fclose(f);
  std::filesystem::rename(staged, path);
  return path;
}

// A SpecDecode-Bench per-step trace (planner/acceptance/engine_acceptance.h) of two requests, for
// the tests of --acceptance; k_max = 3 (the largest acc_len is 4).
inline constexpr char kTwoRequestStepTrace[] =
    "{\"id\": \"a\", \"prompt_tokens\": 10, \"acc_len\": [1, 3, 1, 2, 4, 1, 1]}\n"
    "{\"id\": \"b\", \"prompt_tokens\": 20, \"acc_len\": [1, 2, 2, 1]}\n";

// Any non-zero exit status (a flag refused by the argument parser rather than by the command).
constexpr int kAnyFailure = -1;

// Runs `args` and checks its exit status (kAnyFailure: any non-zero one) and that `message` is in
// its output; returns the result.
inline CommandResult ExpectRun(const std::string& args, int exit_code, const std::string& message) {
  SCOPED_TRACE(args);
  CommandResult r = RunSpecplan(args);
  if (exit_code == kAnyFailure) {
    EXPECT_NE(r.exit_code, 0) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, exit_code) << r.output;
  }
  EXPECT_THAT(r.output, ::testing::HasSubstr(message));
  return r;
}

// A command line the CLI must refuse: its arguments, a piece of the message that names why, the
// exit status (1, or kAnyFailure for any non-zero one), and a path it must not have written ("" for
// none).
// A constructor rather than an aggregate: the tables brace-initialise two, three or four of the
// fields, and GCC's -Wmissing-field-initializers warns about an aggregate's left-out ones even
// when they have defaults.
struct Refusal {
  Refusal(std::string args, std::string message, int exit_code = 1, std::string unwritten = "")
      : args(std::move(args)),
        message(std::move(message)),
        exit_code(exit_code),
        unwritten(std::move(unwritten)) {}

  std::string args;
  std::string message;
  int exit_code;
  std::string unwritten;
};

// A command line refused with exit status 1 and `message`, writing nothing.
inline Refusal Refused(const std::string& args, const std::string& message) {
  return Refusal(args, message);
}

// Runs every refusal and checks its exit status, its message and that it wrote nothing.
inline void ExpectRefused(const std::vector<Refusal>& refusals) {
  for (const Refusal& want : refusals) {
    ExpectRun(want.args, want.exit_code, want.message);
    if (!want.unwritten.empty()) {
      EXPECT_FALSE(std::filesystem::exists(want.unwritten)) << want.unwritten << " was written";
    }
  }
}

// A command line that must succeed, and a piece of what it must print.
struct Success {
  std::string args;
  std::string output;
};

inline void ExpectSucceeds(const std::vector<Success>& runs) {
  for (const Success& want : runs) ExpectRun(want.args, 0, want.output);
}

// Runs `args`, which must succeed and print JSON, into *json.
inline void RunJson(const std::string& args, nlohmann::json* json) {
  const CommandResult r = RunSpecplan(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  *json = nlohmann::json::parse(r.output);
}

// Runs `args --plot <png>` and checks that the PNG is written whole and named in the output. False
// (nothing checked) when the binary was built without PLplot: the caller skips.
inline bool ExpectPlotWritten(const std::string& args, const std::string& png) {
  std::remove(png.c_str());
  const CommandResult r = RunSpecplan(args + " --plot " + png);
  if (r.exit_code != 0 && r.output.find("-DSPECPLAN_WITH_PLOT=OFF") != std::string::npos) {
    return false;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("plot: " + png));
  const std::string bytes = ReadAll(png);
  EXPECT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  return true;
}

using ::testing::HasSubstr;
using ::testing::Not;

}  // namespace specplan::testing

#endif  // SPECPLAN_TESTS_CLI_RUN_COMMAND_H_
