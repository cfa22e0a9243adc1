// Runs the built `specplan` binary in a shell and captures its output, for CLI tests.
#ifndef SPECPLAN_TESTS_CLI_RUN_COMMAND_H_
#define SPECPLAN_TESTS_CLI_RUN_COMMAND_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/run_binary.h"

namespace specplan::testing {

inline std::string SpecplanBinary() { return std::string(SPECPLAN_BINARY_DIR) + "/cli/specplan"; }
inline std::string SourcePath(const std::string& rel) {
  return std::string(SPECPLAN_SOURCE_DIR) + "/" + rel;
}

// `args` is appended to the binary path as shell words.
inline CommandResult RunSpecplan(const std::string& args) {
  return RunBinary(SpecplanBinary(), args);
}

// Writes `text` to ::testing::TempDir()/name and returns the path.
inline std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  fputs(text.c_str(), f);
  fclose(f);
  return path;
}

}  // namespace specplan::testing

#endif  // SPECPLAN_TESTS_CLI_RUN_COMMAND_H_
