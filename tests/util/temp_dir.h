// A scratch directory of the running test, for the suites that write files.
#ifndef SPECPLAN_TESTS_UTIL_TEMP_DIR_H_
#define SPECPLAN_TESTS_UTIL_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace specplan::test {

// <temp>/<prefix><pid>_<test name>, emptied and created: unique to the running test, so that
// suites run in parallel (ctest -j) and repeated runs do not see each other's files.
inline std::filesystem::path FreshTestDir(const std::string& prefix) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (prefix + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace specplan::test

#endif  // SPECPLAN_TESTS_UTIL_TEMP_DIR_H_
