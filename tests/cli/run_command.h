// Runs the built `specplan` binary in a shell and captures its output, for CLI tests.
#ifndef SPECPLAN_TESTS_CLI_RUN_COMMAND_H_
#define SPECPLAN_TESTS_CLI_RUN_COMMAND_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace specplan::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline std::string SpecplanBinary() { return std::string(SPECPLAN_BINARY_DIR) + "/cli/specplan"; }
inline std::string SourcePath(const std::string& rel) {
  return std::string(SPECPLAN_SOURCE_DIR) + "/" + rel;
}

// `args` is appended to the binary path as shell words.
inline CommandResult RunSpecplan(const std::string& args) {
  CommandResult r;
  const std::string cmd = SpecplanBinary() + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
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
