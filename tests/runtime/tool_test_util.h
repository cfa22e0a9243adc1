// Helpers of the tests that run the runtime's built tools (specplan-bench, specplan-logits): the
// tool's path, a shell, a scratch directory per test and reading back what a tool wrote.
#ifndef SPECPLAN_TESTS_RUNTIME_TOOL_TEST_UTIL_H_
#define SPECPLAN_TESTS_RUNTIME_TOOL_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "tests/paths/test_paths.h"
#include "tests/util/temp_dir.h"

namespace specplan::runtime::testing {

// The built binary runtime/NAME of this build.
inline std::string RuntimeTool(const std::string& name) {
  return ::specplan::test_paths::BinaryDir() + "/runtime/" + name;
}

// std::system: the shell's exit status.
inline int RunShell(const std::string& cmd) { return std::system(cmd.c_str()); }

// The text of the file at `path` ("" when it cannot be read).
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A directory unique to the running test and process, removed when the object goes out of scope
// (whether the test passed or not).
class TempDir {
 public:
  TempDir()
      : path_(::specplan::test::FreshTestDir(
            std::string("specplan_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_")) {}
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // NAME inside the directory.
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A fixture for the tests of a tool: each test gets its own scratch directory.
class ToolTest : public ::testing::Test {
 protected:
  // NAME inside the test's scratch directory.
  std::string Path(const std::string& name) const { return dir_.File(name); }

  TempDir dir_;
};

}  // namespace specplan::runtime::testing

#endif  // SPECPLAN_TESTS_RUNTIME_TOOL_TEST_UTIL_H_
