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

#include "tests/run_binary.h"

namespace specplan::profiler::testing {

// A directory unique to the running test, removed when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("specplan_profiler_" + std::to_string(::getpid()) + "_" + info->test_suite_name() +
             "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

using specplan::testing::ReadAll;

inline void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

using specplan::testing::CommandResult;

// Runs the built calibrate binary with `args` (shell words).
inline CommandResult RunCalibrate(const std::string& args) {
  return specplan::testing::RunBinary(SPECPLAN_CALIBRATE_BINARY, args);
}

}  // namespace specplan::profiler::testing

#endif  // SPECPLAN_TESTS_PROFILER_TEST_UTIL_H_
