// Helpers shared by the profiler tests: a fresh temporary directory and running the built
// `calibrate` binary.
#ifndef SPECPLAN_TESTS_PROFILER_TEST_UTIL_H_
#define SPECPLAN_TESTS_PROFILER_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/paths/test_paths.h"
#include "tests/run_binary.h"
#include "tests/runtime/tool_test_util.h"

namespace specplan::profiler::testing {

// A directory unique to the running test (shared with the runtime's tool tests).
using specplan::runtime::testing::TempDir;

using specplan::testing::ReadAll;

inline void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

using specplan::testing::CommandResult;

// Runs the built calibrate binary with `args` (shell words).
inline CommandResult RunCalibrate(const std::string& args) {
  return specplan::testing::RunBinary(::specplan::test_paths::BinaryDir() + "/profiler/calibrate",
                                      args);
}

}  // namespace specplan::profiler::testing

#endif  // SPECPLAN_TESTS_PROFILER_TEST_UTIL_H_
